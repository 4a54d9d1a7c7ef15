"""Identifiers Python reads with NFKC (`torch.ａｕｔｏｃａｓｔ`, `.ｌｏｇ_prob`) are the ASCII names (issue #54, N12).

Each front end through its real command: `amplint check FILE` alone and in its project, `amplint check DIR`,
flake8 with the plugin, and `--fix` (the file's own spellings stay, a second run changes nothing). The
columns are characters of the file as written, as for any other finding.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest

from amplint.identifiers import analysis_text, respelled, screen_text
from amplint.respell import matched, written_back
from conftest import run_amplint
from test_flake8 import _flake8_exe

Row = Tuple[str, int, int, str]

# The case: a fullwidth region, and a fullwidth method on a distribution of Linear outputs.
REGION = """\
import torch
from torch.distributions import Normal

lin = torch.nn.Linear(4, 2)


def step(x):
    with torch.ａｕｔｏｃａｓｔ("cpu", dtype=torch.float16):
        h = lin(x)
        mu, sigma = h[:, 0], h[:, 1].exp()
        lp = Normal(mu, sigma).ｌｏｇ_prob(x)
        other = Normal(mu, sigma).ｌｏｇ_prob(x)  # noqa: AMP001
        return lp + other
"""
# `import torch as ｔ` binds `t`: the region is `t.autocast`, the site a helper it calls.
ALIAS = """\
import torch as ｔ
from torch.distributions import Normal


def density(mu, sigma, x):
    return Normal(mu, sigma).ｌｏｇ_prob(x)


def step(lin, x):
    with ｔ.autocast("cpu", dtype=ｔ.float16):
        h = lin(x)
        return density(h[:, 0], h[:, 1].exp(), x)
"""
# Across files: the region file and the site's file are found by the text pass only through their copies.
CALLER = """\
import torch

from pkg.helpers import helper


def step(lin, x):
    with torch.ａｕｔｏｃａｓｔ("cpu", dtype=torch.float16):
        h = lin(x)
        return helper(h[:, 0], h[:, 1].exp(), x)
"""
HELPERS = """\
from torch.ｄｉｓｔｒｉｂｕｔｉｏｎｓ import Ｎｏｒｍａｌ


def helper(mu, sigma, x):
    return Ｎｏｒｍａｌ(mu, sigma).ｌｏｇ_prob(x)
"""
# A factory whose distribution the summary read from CPython's tree must see (`reading.analyze_file`).
FACTORY = """\
import torch


def make(mu, sigma):
    return torch.ｄｉｓｔｒｉｂｕｔｉｏｎｓ.Normal(mu, sigma)
"""
USES_FACTORY = """\
import torch

from pkg.factory import make


def step(lin, x):
    with torch.autocast("cpu", dtype=torch.float16):
        h = lin(x)
        return make(h[:, 0], h[:, 1].exp()).log_prob(x)
"""
# A project's own autocast spelling, defined fullwidth in a base class (`project.spellings`).
BASE = """\
import torch


class Base:
    def __init__(self):
        self.amp_cm = torch.ａｕｔｏｃａｓｔ
"""
MODEL = """\
import torch
from torch.distributions import Normal

from pkg.base import Base


class Model(Base):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    def step(self, x):
        with self.amp_cm("cpu", dtype=torch.float16):
            h = self.lin(x)
            return Normal(h[:, 0], h[:, 1].exp()).log_prob(x)
"""
FILES = {"region.py": REGION, "alias.py": ALIAS, "caller.py": CALLER, "helpers.py": HELPERS,
         "factory.py": FACTORY, "uses_factory.py": USES_FACTORY, "base.py": BASE, "model.py": MODEL}
# What the project reports: line, column (characters, 1-based), code; the noqa'd line 12 of region.py is absent.
EXPECTED: List[Row] = [
    ("pkg/alias.py", 6, 12, "AMP001"),
    ("pkg/helpers.py", 5, 12, "AMP001"),
    ("pkg/model.py", 15, 20, "AMP001"),
    ("pkg/region.py", 11, 14, "AMP001"),
    ("pkg/uses_factory.py", 9, 16, "AMP001"),
]


def _project(root: Path, files: Dict[str, str] = FILES) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for name, text in files.items():
        (root / "pkg" / name).write_text(text, encoding="utf-8")
    return root


def _findings(args: Sequence[str], cwd: Path) -> List[dict]:
    proc = run_amplint(["check", "--format", "json", *args], cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    found = json.loads(proc.stdout)
    return found["findings"] if isinstance(found, dict) else found


def _rows(findings: Sequence[dict]) -> List[Row]:
    return sorted((Path(f["path"]).as_posix(), f["line"], f["column"], f["code"]) for f in findings)


def test_project_mode_reports_every_fullwidth_spelling(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _rows(_findings(["."], root)) == EXPECTED


def test_messages_read_the_names_as_python_does(tmp_path: Path) -> None:
    root = _project(tmp_path)
    messages = {Path(f["path"]).name: f["message"] for f in _findings(["."], root)}
    assert messages["region.py"].startswith("`Normal.log_prob` runs in the float16 autocast region at line 8 ")
    assert "reached from autocast region at pkg/caller.py:7" in messages["helpers.py"]
    assert messages["uses_factory.py"].startswith("`Normal.log_prob` runs")  # the factory's distribution is known
    assert "the distribution is built in `make`" in messages["uses_factory.py"]


@pytest.mark.parametrize("name", ["region.py", "helpers.py", "model.py", "uses_factory.py"])
def test_check_file_walks_its_project_as_check_dir_does(tmp_path: Path, name: str) -> None:
    root = _project(tmp_path)
    want = [row for row in EXPECTED if row[0] == f"pkg/{name}"]
    assert _rows(_findings([f"pkg/{name}"], root)) == want


def test_single_file_mode(tmp_path: Path) -> None:
    (tmp_path / "region.py").write_text(REGION, encoding="utf-8")
    (tmp_path / "alias.py").write_text(ALIAS, encoding="utf-8")
    rows = _rows(_findings(["--no-project", "region.py", "alias.py"], tmp_path))
    assert rows == [("alias.py", 6, 12, "AMP001"), ("region.py", 11, 14, "AMP001")]


def test_text_output_shows_the_line_as_written(tmp_path: Path) -> None:
    (tmp_path / "region.py").write_text(REGION, encoding="utf-8")
    proc = run_amplint(["check", "--no-project", "region.py"], cwd=tmp_path)
    assert "region.py:11:14: AMP001" in proc.stdout
    assert "        lp = Normal(mu, sigma).ｌｏｇ_prob(x)\n" in proc.stdout


def test_a_name_that_nfkc_lengthens_keeps_the_files_columns(tmp_path: Path) -> None:
    # `ﬁ` (one character) is read as `fi` (two): the copy's columns after it are one more than the file's.
    text = REGION.replace("        lp = Normal", "        ﬁ = Normal").replace("return lp", "return ﬁ")
    (tmp_path / "ligature.py").write_text(text, encoding="utf-8")
    found = _findings(["--no-project", "ligature.py"], tmp_path)
    assert [(f["line"], f["column"], f["end_column"], f["code"]) for f in found] == [(11, 13, 42, "AMP001")]
    line = text.splitlines()[10]
    assert line[12:41] == "Normal(mu, sigma).ｌｏｇ_prob(x)"


def _flake8(args: Sequence[str], cwd: Path) -> List[Row]:
    row = "--format=%(path)s|%(row)d|%(col)d|%(code)s"
    proc = subprocess.run([*_flake8_exe(), "--isolated", "--select", "AMP", row, *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    rows = []
    for line in proc.stdout.splitlines():
        path, row, col, code = line.split("|")
        rows.append((Path(path).as_posix(), int(row), int(col), code))
    return sorted(rows)


def test_flake8_reports_the_same_rows(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _flake8(["pkg"], root) == EXPECTED
    assert _flake8(["pkg/helpers.py"], root) == [row for row in EXPECTED if row[0] == "pkg/helpers.py"]
    # flake8 applies the noqa itself: with it off, the second call on line 12 of region.py is reported.
    assert ("pkg/region.py", 12, 17, "AMP001") in _flake8(["--disable-noqa", "pkg/region.py"], root)


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_fix_keeps_the_files_spellings_compiles_and_is_idempotent(tmp_path: Path, strategy: str) -> None:
    root = _project(tmp_path)
    first = run_amplint(["check", "--fix", "--strategy", strategy, "."], cwd=root)
    assert first.returncode in (0, 1), first.stderr
    fixed = {name: (root / "pkg" / name).read_text(encoding="utf-8") for name in FILES}
    for name, text in fixed.items():
        compile(text, name, "exec")
    # What the fix did not touch is as written; the noqa'd line is left alone.
    assert "    with torch.ａｕｔｏｃａｓｔ(\"cpu\", dtype=torch.float16):\n" in fixed["region.py"]
    assert "        other = Normal(mu, sigma).ｌｏｇ_prob(x)  # noqa: AMP001\n" in fixed["region.py"]
    assert "Normal(mu.float(), sigma.float()).ｌｏｇ_prob(x.float())" in fixed["region.py"]
    assert "    return Ｎｏｒｍａｌ(mu.float(), sigma.float()).ｌｏｇ_prob(x.float())\n" in fixed["helpers.py"]
    assert fixed["base.py"] == BASE and fixed["caller.py"] == CALLER
    second = run_amplint(["check", "--fix", "--strategy", strategy, "."], cwd=root)
    assert second.returncode in (0, 1), second.stderr
    assert {name: (root / "pkg" / name).read_text(encoding="utf-8") for name in FILES} == fixed
    diff = run_amplint(["check", "--diff", "--strategy", strategy, "."], cwd=root)
    assert diff.stdout == "" and diff.stderr.startswith("Would fix 0 findings"), diff.stderr


def test_fix_cast_leaves_nothing_to_report(tmp_path: Path) -> None:
    root = _project(tmp_path)
    run_amplint(["check", "--fix", "."], cwd=root)
    assert _findings(["."], root) == []


# ---------------------------------------------------------------------------
# The copy itself.


def test_ascii_and_normalised_texts_are_their_own_copy() -> None:
    for text in ("import torch\n", "# 名字，…\nx = '名字，ａ'  # ｎｏｑａ\n", "名字 = 1\n", "x = f'{ｌｏｇ}'\n"):
        assert respelled(text) is None
        assert analysis_text(text) is text


def test_only_identifiers_are_normalised() -> None:
    text = "ｘ = 'ｘ'  # ｘ\nｉｆ = ｘ.ｌｏｇ_prob\n"
    assert analysis_text(text) == "x = 'ｘ'  # ｘ\nｉｆ = x.log_prob\n"  # `if` would be the keyword to LibCST
    assert screen_text(text) == "x = 'x'  # x\nif = x.log_prob\n"


def test_names_the_old_tokenizer_splits_and_composed_accents() -> None:
    assert analysis_text("e\u0301 = a\u00b7ｂ\n") == "\u00e9 = a\u00b7b\n"


def test_written_back_keeps_the_files_spellings_where_the_rewrite_kept_them() -> None:
    found = respelled("ａ = ｂ(1)\nｃ = 2\n")
    assert found is not None
    assert written_back(found, "a = b(1).float()\nc = 2\nd = a\n") == "ａ = ｂ(1).float()\nｃ = 2\nd = a\n"



def test_written_back_aligns_a_fix_of_every_function_of_a_large_file() -> None:
    # Thousands of short matches: `difflib.SequenceMatcher` took seconds on this, the patience alignment does not.
    unit = "def f{i}(ｘ):\n    y = ｘ + 1\n\n    return y\n\n\n"
    text = "".join(unit.format(i=i) for i in range(3000))
    found = respelled(text)
    assert found is not None
    back = written_back(found, found.text.replace("y = x + 1", "y = x.float() + 1"))
    assert back == text.replace("y = ｘ + 1", "y = ｘ.float() + 1")


def test_matched_pairs_equal_items_in_order() -> None:
    old, new = list("abcabba"), list("cbabac")
    pairs = matched(old, new)
    assert pairs and all(old[i] == new[j] for i, j in pairs)
    assert all(a < c and b < d for (a, b), (c, d) in zip(pairs, pairs[1:]))
