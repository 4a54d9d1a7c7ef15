"""A project's own subclasses of torch distributions are distributions (`project/distsubclasses.py`,
`facts/distclasses.py`).

Reinforcement-learning code builds `class SquashedNormal(TransformedDistribution)` or `class
TruncatedNormal(Normal)` in one file and calls `log_prob` on them in another. Read as unknown classes, their
sites were opaque: risk unknown, never fixable, and still reported after the user cast the constructor's
arguments. Now a class derived from a distribution, through project classes in any file, is a configured
distribution: its constructor's tensor arguments are the inputs, and fix A casts them where it is built.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import LINEAR_NORMAL_HEAD, check_json, run_recording_normals, write_package

DISTS = '''\
from torch.distributions import Normal


class SquashedNormal(Normal):
    def __init__(self, loc, scale):
        super().__init__(loc, scale)
        self.low = -1.0


class TightNormal(SquashedNormal):
    pass
'''
HEADS = LINEAR_NORMAL_HEAD.replace(
    "from torch.distributions import Normal\n", "from pkg import dists\nfrom pkg.tight import Tighter\n").replace(
    "return Normal(loc, raw.exp())", "return dists.SquashedNormal(loc, raw.exp())") + '''

class TightHead(Head):
    def forward(self, h):
        loc, raw = self.lin(h).chunk(2, dim=-1)
        return Tighter(loc, raw.exp())
'''
TIGHT = '''\
from .dists import TightNormal


class Tighter(TightNormal):
    """Derived from a project class in another file, which derives from one in its own."""
'''
STEP = '''\
import torch


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return model(h).log_prob(y.float()).mean()
'''
RUN = '''\
from pkg.heads import Head, TightHead
from pkg.step import step


def main(h, y):
    return [step(Head(), h, y), step(TightHead(), h, y)]
'''


def _project(root: Path, files: Dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "run.py").write_text(RUN)
    write_package(root, files)
    return root


def _places(findings: List[Dict[str, object]]) -> List[Tuple[object, ...]]:
    return [(f["path"], f["line"], f["column"], f["code"], f["fixable"]) for f in findings]


FILES = {"dists.py": DISTS, "heads.py": HEADS, "tight.py": TIGHT, "step.py": STEP}


def test_a_subclass_built_in_another_file_is_a_distribution(tmp_path: Path) -> None:
    [finding] = check_json(_project(tmp_path, FILES))
    assert _places([finding]) == [("pkg/step.py", 6, 16, "AMP001", True)]
    message = str(finding["message"])
    assert "`SquashedNormal.log_prob`" in message and "inputs not cast to float32: `loc`, `raw.exp()`" in message
    assert "built in `Head.forward` at pkg/heads.py:14 and 1 other place" in message


def test_casting_the_constructors_arguments_clears_it(tmp_path: Path) -> None:
    heads = HEADS.replace("(loc, raw.exp())", "(loc.float(), raw.exp().float())")
    assert check_json(_project(tmp_path, {**FILES, "heads.py": heads})) == []


def test_a_class_of_no_distribution_base_is_not_one(tmp_path: Path) -> None:
    plain = DISTS.replace("from torch.distributions import Normal", "class Normal:\n    def __init__(self, *a):\n"
                          "        pass\n\n    def log_prob(self, y):\n        return y")
    [finding] = check_json(_project(tmp_path, {**FILES, "dists.py": plain}))
    assert finding["fixable"] is False and "cannot see it" in str(finding["message"])


def test_fix_a_casts_where_each_subclass_is_built_and_the_project_then_runs_in_float32(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    (tmp_path / "fixed").mkdir()
    root = _project(tmp_path / "fixed", FILES)
    shutil.copytree(root, tmp_path / "before")
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--fix", "."], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    heads = (root / "pkg" / "heads.py").read_text()
    assert "dists.SquashedNormal(loc.float(), raw.float().exp())" in heads
    assert "Tighter(loc.float(), raw.float().exp())" in heads
    assert check_json(root) == []
    before, _ = run_recording_normals(tmp_path / "before", monkeypatch, torch.randn(8, 4), torch.randn(8, 1))
    assert before == [torch.float16, torch.float16]
    after, losses = run_recording_normals(root, monkeypatch, torch.randn(8, 4), torch.randn(8, 1))
    assert after == [torch.float32, torch.float32] and all(bool(torch.isfinite(loss)) for loss in losses)


def test_in_one_file_alone_its_own_subclass_is_a_distribution(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text(DISTS + '''

def step(lin, h, y):
    import torch

    with torch.autocast("cpu", dtype=torch.float16):
        loc, raw = lin(h).chunk(2, dim=-1)
        return TightNormal(loc, raw.exp()).log_prob(y.float()).mean()
''')
    findings = check_json(tmp_path, "--no-project")
    assert [(f["line"], f["column"], f["code"], f["fixable"]) for f in findings] == [(19, 16, "AMP001", True)]
    assert "inputs not cast to float32: `loc`, `raw.exp()`" in str(findings[0]["message"])


def test_the_base_names_cover_every_measured_distribution() -> None:
    """`distsubclasses.BASE_NAMES` is read without loading the measured table (start-up): it must not fall behind
    it."""
    from amplint.project.distsubclasses import BASE_NAMES
    from amplint.risk import load_table

    measured = {str(row["dist"]) for row in load_table()["rows"]}  # type: ignore[index, union-attr]
    assert measured and measured <= BASE_NAMES, sorted(measured - BASE_NAMES)


NESTED = '''\
import torch
from torch.distributions import Normal


class Policy:
    class Squashed(Normal):
        pass

    def step(self, lin, h, y):
        with torch.autocast("cpu", dtype=torch.float16):
            loc, raw = lin(h).chunk(2, dim=-1)
            return Policy.Squashed(loc, raw.exp()).log_prob(y.float()).mean()
'''


def test_a_nested_subclass_is_one_in_both_modes(tmp_path: Path) -> None:
    """Single-file mode and the project pass read one rule (`facts.distclasses`): a class nested in another is
    found in both, under its dotted key."""
    (tmp_path / "one.py").write_text(NESTED)
    for mode in (("--no-project",), ()):
        findings = check_json(tmp_path, *mode)
        assert [(f["line"], f["column"], f["code"], f["fixable"]) for f in findings] == [
            (12, 20, "AMP001", True)], mode
        assert "inputs not cast to float32: `loc`, `raw.exp()`" in str(findings[0]["message"])


def test_facts_without_cpython_tree_read_the_same_classes() -> None:
    """A kept LibCST tree analysed again, or a retabbed copy, comes with no CPython tree: its code is parsed for
    the rule, and the facts name the same classes."""
    import ast

    import libcst as cst

    from amplint.facts.build import collect_facts
    from amplint.names import import_table
    from amplint.positions import SourceTree

    source = DISTS + "\n\nclass Plain:\n    pass\n"
    tree = ast.parse(source)
    with_tree = collect_facts(cst.parse_module(source), imports=import_table(tree), source=SourceTree(tree, source))
    parsed_again = collect_facts(cst.parse_module(source), imports=import_table(tree))
    assert with_tree.distributions == parsed_again.distributions == frozenset({"SquashedNormal", "TightNormal"})


KEEPS = '''\
from torch.distributions import Laplace, Normal


class TightLaplace(Laplace):
    def mode(self):
        return self.loc


class Squashed(Normal):
    def __init__(self, loc, scale):
        super().__init__(loc, scale)


class Tighter(Squashed):
    pass


class Summed(Normal):
    def log_prob(self, value):
        return super().log_prob(value).sum(-1)
'''
KEEPS_STEP = '''

def step(lin, h, y):
    import torch

    with torch.autocast("cpu", dtype=torch.float16):
        loc, raw = lin(h).chunk(2, dim=-1)
        a = TightLaplace(loc, 1e-3 * torch.sigmoid(raw)).log_prob(y).mean()
        b = Tighter(loc, raw.exp()).log_prob(y).mean()
        c = Summed(loc, raw.exp()).log_prob(y).mean()
        return a + b + c
'''
RISKS = [
    (28, "high", "measured as Laplace, whose `log_prob` and `__init__` TightLaplace keeps: "),
    (29, "unknown", "the project's classes from Tighter to Normal redefine `__init__`: not measured"),
    (30, "unknown", "the project's classes from Summed to Normal redefine `log_prob`: not measured"),
]


def _risks(findings: List[Dict[str, object]]) -> List[Tuple[object, object, str]]:
    return [(f["line"], f["risk"]["level"], str(f["risk"]["detail"])) for f in findings]  # type: ignore[index]


def test_a_subclass_that_keeps_the_method_and_constructor_has_its_bases_measured_risk(tmp_path: Path) -> None:
    """Its library base's measurements stand for it where the project's classes redefine neither the computed
    method nor `__init__`; otherwise its risk stays unknown, and the message says which they redefine."""
    (tmp_path / "one.py").write_text(KEEPS + KEEPS_STEP)
    for mode in (("--no-project",), ()):
        risks = _risks(check_json(tmp_path, *mode))
        assert [(line, level) for line, level, _ in risks] == [(line, level) for line, level, _ in RISKS], mode
        for (_, _, detail), (_, _, expected) in zip(risks, RISKS):
            assert detail.startswith(expected), (mode, detail)


def test_the_base_is_found_through_another_files_class(tmp_path: Path) -> None:
    write_package(tmp_path, {"dists.py": KEEPS, "deeper.py": "from pkg.dists import TightLaplace\n\n\n"
                             "class Deeper(TightLaplace):\n    pass\n"})
    (tmp_path / "run.py").write_text("from pkg.deeper import Deeper\n" + KEEPS_STEP.replace(
        "TightLaplace(", "Deeper(").replace("        b = Tighter(loc, raw.exp()).log_prob(y).mean()\n", "")
        .replace("        c = Summed(loc, raw.exp()).log_prob(y).mean()\n", "").replace("a + b + c", "a"))
    risks = _risks(check_json(tmp_path))
    assert [(line, level) for line, level, _ in risks] == [(9, "high")]
    assert risks[0][2].startswith("measured as Laplace, whose `log_prob` and `__init__` Deeper keeps: ")


@pytest.mark.torch
def test_the_kept_base_computes_what_was_measured() -> None:
    """What the measured risk claims, run as the table measures it (every input a float16 head):
    `TightLaplace` under CPU float16 autocast gives -inf (its base's `log_prob`), and the cast fixes it."""
    torch = pytest.importorskip("torch")
    namespace: Dict[str, object] = {}
    exec(compile(KEEPS, "keeps.py", "exec"), namespace)
    tight = namespace["TightLaplace"]
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8)
    h, y = torch.randn(512, 8), 10 * torch.randn(512, 4)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        loc, raw = lin(h).chunk(2, dim=-1)
        scale = 1e-3 * torch.sigmoid(raw)
        value = y.half()
        before = tight(loc, scale).log_prob(value)  # type: ignore[operator]  # noqa: AMP001 - on purpose
        after = tight(loc.float(), scale.float()).log_prob(value.float())  # type: ignore[operator]  # noqa: AMP001
    assert int((~torch.isfinite(before)).sum()) > 0
    assert bool(torch.isfinite(after).all())


@pytest.mark.torch
def test_verify_rebuilds_a_kept_base_and_leaves_a_redefined_one(tmp_path: Path) -> None:
    """`amplint verify` rebuilds `TightLaplace` as `Laplace` (it computes what the base does) and confirms the
    -inf its risk claims; `Tighter` redefines `__init__`, so verify says so and runs nothing of it."""
    step = KEEPS_STEP.replace("        c = Summed(loc, raw.exp()).log_prob(y).mean()\n", "").replace(
        "a + b + c", "a + b")
    (tmp_path / "one.py").write_text(KEEPS + step)
    done = subprocess.run([sys.executable, "-m", "amplint", "verify", "--format", "json", "--timing-runs", "0",
                           "--batch", "4096", "one.py"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    results = {r["line"]: r for r in json.loads(done.stdout)}
    assert sorted(results) == [28, 29], done.stderr
    kept, redefined = results[28], results[29]
    assert (kept["verdict"], kept["computation"]) == ("confirmed", "Laplace.log_prob")
    assert kept["original"]["neg_inf"] > 0 and kept["fix_cast"]["neg_inf"] == 0
    assert kept["notes"] == ["TightLaplace rebuilt as Laplace, whose `log_prob` and `__init__` it keeps"]
    assert redefined["verdict"] == "unverifiable"
    assert redefined["reason"].startswith("the project's classes from Tighter to Normal redefine `__init__`")


@pytest.mark.parametrize("extra", [
    frozenset(), frozenset({"pkg."}), frozenset({"pkg.dists.Squashed", "other."}), frozenset({"pkg.dists."}),
    frozenset({"..work.pkg.dists.Squashed", "..work."}), frozenset({"pkg.d"}),
])
def test_a_configured_package_is_found_by_its_dotted_prefixes_as_by_a_scan(extra) -> None:
    """`distribution_name` looks up each dotted prefix of a name (`a.`, `a.b.`) instead of scanning every
    configured name for a package: the same answers (project mode configures thousands of names)."""
    from amplint.torchnames import distribution_name

    def scanned(names, extra):  # the scan it replaces
        for name in sorted(names):
            if name in extra or any(name.startswith(prefix) for prefix in extra if prefix.endswith(".")):
                return name
            if distribution_name([name]) is not None:
                return name
        return None

    spellings = [["pkg.dists.Squashed"], ["pkg.d.X"], ["pkgx.dists.Y"], ["other.Z", "torch.distributions.Normal"],
                 ["..work.pkg.dists.Squashed"], ["..work.a"], ["torch.distributions.transforms.ExpTransform"], []]
    assert [distribution_name(names, extra) for names in spellings] == [scanned(names, extra) for names in spellings]
