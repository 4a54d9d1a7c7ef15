"""File-level guarantees of `--fix`/`--diff`: bytes, encodings, modes, atomic writes, errors, exit codes."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import libcst as cst
import pytest

import amplint.fix.apply as apply
import amplint.fix.write as write
from amplint.cli import main
from amplint.config import Config
from amplint.engine import analyze_source, check_source
from amplint.fix.apply import fix_file, fix_text
from amplint.fix.plan import SHARED_REASON

from conftest import OLD

BROKEN = '''\
import torch
import torch.distributions as D


def nll(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''
FIXED = BROKEN.replace("D.Normal(mu, sigma).log_prob(x)", "D.Normal(mu.float(), sigma.float()).log_prob(x.float())")
UNFIXABLE = '''\
import torch


def score(dist, x):
    return dist.log_prob(x)


def step(dist, x):
    with torch.autocast("cuda"):
        return score(dist, x)
'''


def _file(tmp_path: Path, text: str, name: str = "model.py", data: bytes = b"") -> Path:
    path = tmp_path / name
    path.write_bytes(data or text.encode("utf-8"))
    os.utime(path, (OLD, OLD))
    return path


def _untouched(path: Path, data: bytes) -> bool:
    return path.read_bytes() == data and path.stat().st_mtime == OLD


def test_fix_rewrites_only_the_expressions(tmp_path: Path) -> None:
    path = _file(tmp_path, BROKEN)
    outcome = fix_file(str(path))
    assert outcome.error is None and outcome.written
    assert path.read_text() == FIXED
    assert outcome.fix is not None and outcome.fix.fixed_count == 1 and outcome.fix.remaining == ()


@pytest.mark.parametrize("text", [UNFIXABLE, "import os\nprint(os.sep)\n", "x = 1  # autocast, but no region\n"])
def test_a_file_with_nothing_fixable_is_not_written(tmp_path: Path, text: str) -> None:
    path = _file(tmp_path, text)
    data = path.read_bytes()
    assert main(["check", "--fix", str(path)]) in (0, 1)
    assert _untouched(path, data)
    assert fix_file(str(path)).written is False


def test_bom_and_crlf_are_kept(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbf" + BROKEN.replace("\n", "\r\n").encode("utf-8")
    path = _file(tmp_path, "", data=data)
    assert fix_file(str(path)).written
    assert path.read_bytes() == b"\xef\xbb\xbf" + FIXED.replace("\n", "\r\n").encode("utf-8")


def test_encoding_declaration_is_kept(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n# Modèle: café\n" + BROKEN
    path = _file(tmp_path, "", data=text.encode("latin-1"))
    assert fix_file(str(path)).written
    data = path.read_bytes()
    assert data == ("# -*- coding: latin-1 -*-\n# Modèle: café\n" + FIXED).encode("latin-1")
    assert b"caf\xe9" in data


def test_disable_autocast_keeps_crlf_in_the_new_lines(tmp_path: Path) -> None:
    path = _file(tmp_path, "", data=BROKEN.replace("\n", "\r\n").encode("utf-8"))
    assert fix_file(str(path), Config(strategy="disable-autocast")).written
    data = path.read_bytes()
    assert b"enabled=False):\r\n" in data and data.count(b"\n") == data.count(b"\r\n")


@pytest.mark.parametrize("mode", [0o640, 0o755])
def test_file_mode_is_kept(tmp_path: Path, mode: int) -> None:
    path = _file(tmp_path, BROKEN)
    path.chmod(mode)
    assert fix_file(str(path)).written
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_write_is_a_rename_from_the_same_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path, BROKEN)
    renames = []
    real_replace = os.replace

    real_exchange = write.exchange

    def spy(src, dst):
        renames.append((src, dst))
        real_replace(src, dst)

    def exchange_spy(src, dst):  # Linux: the rename is an exchange, checked before the old file goes
        swapped = real_exchange(src, dst)
        renames.extend([(src, dst)] if swapped else [])
        return swapped

    monkeypatch.setattr(write.os, "replace", spy)
    monkeypatch.setattr(write, "exchange", exchange_spy)
    assert fix_file(str(path)).written
    [(src, dst)] = renames
    assert os.path.dirname(src) == os.path.dirname(dst) == str(tmp_path) and dst == str(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]  # no temp file left behind


def test_a_failed_write_leaves_the_file_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _file(tmp_path, BROKEN)
    data = path.read_bytes()

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write.os, "replace", fail)
    monkeypatch.setattr(write, "exchange", fail)  # Linux renames by an exchange
    outcome = fix_file(str(path))
    assert outcome.error is not None and "No space left" in outcome.error.message
    assert _untouched(path, data)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.py"]


def test_a_symlink_stays_a_symlink(tmp_path: Path) -> None:
    target = _file(tmp_path, BROKEN, "real.py")
    link = tmp_path / "link.py"
    link.symlink_to(target.name)
    assert fix_file(str(link)).written
    assert link.is_symlink() and target.read_text() == FIXED


def test_code_that_does_not_compile_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    path = _file(tmp_path, BROKEN)
    data = path.read_bytes()
    bad = cst.parse_module("def f():\n    return await g()\n")  # LibCST parses it, CPython rejects it
    monkeypatch.setattr(apply, "rewrite", lambda source, plan, strategy: bad)
    outcome = fix_file(str(path))
    assert outcome.error is not None and outcome.error.path == str(path)
    assert "does not parse or compile" in outcome.error.message
    assert _untouched(path, data)
    assert main(["check", "--fix", str(path)]) == 2
    assert str(path) in capsys.readouterr().err
    assert _untouched(path, data)


def test_diff_prints_a_patch_and_writes_nothing(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, BROKEN)
    data = path.read_bytes()
    assert main(["check", "--diff", str(path)]) == 1  # there is a diff to apply
    out, err = capsys.readouterr()
    assert out.startswith(f"--- {path}\n+++ {path}\n@@ ")
    assert "-        return -D.Normal(mu, sigma).log_prob(x)\n" in out
    assert "+        return -D.Normal(mu.float(), sigma.float()).log_prob(x.float())\n" in out
    assert "Would fix 1 finding, 0 remaining." in err
    assert _untouched(path, data)
    assert main(["check", "--diff", "--fix", str(path)]) == 2 and _untouched(path, data)  # one action at a time


def test_diff_of_a_clean_file_is_empty_and_exits_0(tmp_path: Path, capsys) -> None:
    path = _file(tmp_path, FIXED)
    assert main(["check", "--diff", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_exit_codes_and_summary_count_findings(tmp_path: Path, capsys) -> None:
    fixable = _file(tmp_path, BROKEN.replace("return -D", "a = D.Laplace(mu, sigma).log_prob(x)\n        return -D"))
    assert main(["check", "--fix", str(fixable)]) == 0
    assert capsys.readouterr().out.strip().endswith("Fixed 2 findings, 0 remaining.")
    assert main(["check", "--fix", str(fixable)]) == 0
    assert "Fixed 0 findings, 0 remaining." in capsys.readouterr().out

    stuck = _file(tmp_path, UNFIXABLE, "stuck.py")
    assert main(["check", "--fix", str(stuck)]) == 1
    out = capsys.readouterr().out
    assert f"{stuck}:5:12: AMP001" in out
    assert "Fixed 0 findings, 1 remaining (1 not fixable: the distribution's constructor is not visible" in out
    assert main(["check", "--fix", "--exit-zero", str(stuck)]) == 0
    capsys.readouterr()

    assert main(["check", "--fix", str(tmp_path / "missing.py")]) == 2


def test_json_output_with_fix_is_the_remaining_findings(tmp_path: Path, capsys) -> None:
    _file(tmp_path, BROKEN)
    stuck = _file(tmp_path, UNFIXABLE, "stuck.py")
    assert main(["check", "--fix", "--format", "json", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    findings = json.loads(out)
    assert [(f["path"], f["line"], f["fixable"]) for f in findings] == [(str(stuck), 5, False)]
    assert "Fixed 1 finding, 1 remaining" in err


def test_fixable_in_check_agrees_with_fix() -> None:
    """`fixable` drops strategies whose edit would touch a noqa line or a half-fixable statement."""
    noqa_ctor = BROKEN.replace(
        "        return -D.Normal(mu, sigma).log_prob(x)\n",
        "        dist = D.Normal(mu, sigma)  # noqa: AMP001\n        return -dist.log_prob(x)\n",
    )
    [finding] = check_source(noqa_ctor, "m.py").findings
    assert finding.fix_strategies == () and not finding.fixable
    assert fix_text(noqa_ctor, "m.py").changed is False

    shared = BROKEN.replace(
        "return -D.Normal(mu, sigma).log_prob(x)", "return -D.Normal(mu, sigma).log_prob(x) + score(x)"
    ) + "\n\ndef score(x, dist=None):\n    return dist.log_prob(x)\n"
    by_line = {f.line: f for f in check_source(shared, "m.py", Config(strategy="disable-autocast")).findings}
    assert by_line[8].fix_strategies == ("cast", "disable-autocast")  # the helper is in another statement
    mate = BROKEN.replace(
        "return -D.Normal(mu, sigma).log_prob(x)", "return -D.Normal(mu, sigma).log_prob(x) + d.log_prob(x)"
    )
    findings = check_source(mate, "m.py", Config(strategy="disable-autocast")).findings
    assert [f.fix_strategies for f in findings] == [("cast",), ()]
    fixed = fix_text(mate, "m.py", Config(strategy="disable-autocast"))
    assert not fixed.changed and fixed.skipped[0].reason.startswith(SHARED_REASON)
    assert fix_text(mate, "m.py", Config(strategy="cast")).fixed_count == 1


@pytest.mark.parametrize(
    "statement, reason",
    [
        ("yield D.Normal(mu, sigma).log_prob(x)", "`yield`"),
        ("f = lambda v: D.Normal(mu, sigma).log_prob(v)", "lambda"),
        ("g = (D.Normal(m, sigma).log_prob(x) for m in mu)", "generator"),
    ],
)
def test_fix_c_is_not_offered_where_a_with_block_would_change_meaning(statement: str, reason: str) -> None:
    text = BROKEN.replace("return -D.Normal(mu, sigma).log_prob(x)", statement)
    source = analyze_source(text, "m.py", Config(strategy="disable-autocast"))
    [(_, finding)] = source.pairs
    assert finding.fix_strategies == ("cast",)
    fixed = fix_text(text, "m.py", Config(strategy="disable-autocast"))
    assert not fixed.changed and reason in fixed.skipped[0].reason
    assert fix_text(text, "m.py", Config(strategy="cast")).changed


def test_project_mode_fixes_a_helper_reached_from_another_file(tmp_path: Path, capsys) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    losses = _file(package, "import torch.distributions as D\n\n\ndef nll(mu, sigma, x):\n"
                   "    return -D.Normal(mu, sigma).log_prob(x)\n", "losses.py")
    _file(package, "import torch\n\nfrom pkg.losses import nll\n\n\ndef step(model, h, x):\n"
          "    with torch.autocast(\"cuda\"):\n        mu, sigma = model(h)\n        return nll(mu, sigma, x)\n",
          "train.py")
    assert main(["check", str(tmp_path)]) == 1
    assert main(["check", "--fix", "--strategy", "disable-autocast", str(tmp_path)]) == 0
    assert "Fixed 1 finding, 0 remaining." in capsys.readouterr().out
    assert losses.read_text() == (
        "import torch\nimport torch.distributions as D\n\n\ndef nll(mu, sigma, x):\n"
        '    with torch.autocast(device_type="cuda", enabled=False):\n'
        "        return -D.Normal(mu.float(), sigma.float()).log_prob(x.float())\n"
    )
    assert main(["check", str(tmp_path)]) == 0


def test_fix_finding_fixes_only_that_finding(tmp_path: Path) -> None:
    """The hook a SARIF `fixes` entry can use: one finding's edit, nothing written."""
    text = BROKEN.replace("return -D", "a = D.Laplace(mu, sigma).log_prob(x)\n        return -D")
    path = _file(tmp_path, text)
    first, second = check_source(text, str(path)).findings
    fixed = apply.fix_finding(second, Config())
    cast = "D.Normal(mu.float(), sigma.float()).log_prob(x.float())"
    assert fixed.fixed == text.replace("D.Normal(mu, sigma).log_prob(x)", cast)
    assert [f.line for f in fixed.remaining] == [first.line]
    assert _untouched(path, text.encode())
