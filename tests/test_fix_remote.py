"""`--fix` where the distribution is built, in another file (issue 13, item 6; `amplint.fix.remote`).

The project mirrors real training code (torch-uncertainty's routines): the
class is picked by name at run time and given a dict of Linear outputs,
`Independent(get_dist_class(family)(**params), 1)`, and a loss in another
file computes `dist.log_prob(target)`.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Dict

import libcst as cst
import pytest

from amplint.cli import main
from amplint.dtypes import is_wide
from amplint.fix.expr import cast_starred
from amplint.names import ImportTable

ROUTINE = '''import torch
from torch import nn
from torch.distributions import Independent, Laplace, Normal

from losses import nll

DISTS = {"normal": Normal, "laplace": Laplace}


def get_dist_class(name):
    return DISTS[name]


class Head(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.loc = nn.Linear(dim, 1)
        self.log_scale = nn.Linear(dim, 1)

    def forward(self, x):
        return {"loc": self.loc(x), "scale": self.log_scale(x).exp()}


def step(head, x, y, family="normal"):
    with torch.autocast("cuda"):
        params = head(x)
        # The class is picked by name; its parameters come from a Linear under autocast.
        dist = Independent(get_dist_class(family)(**params), 1)
        return nll(dist, y)


def table_step(head, x, y, family="laplace"):
    with torch.autocast("cuda"):
        out = head(x)
        return nll(Independent(DISTS[family](out["loc"], out["scale"]), 1), y)
'''
LOSSES = '''def nll(dist, target):
    return -dist.log_prob(target)
'''


def _project(root: Path) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    (root / "routine.py").write_text(ROUTINE, encoding="utf-8")
    (root / "losses.py").write_text(LOSSES, encoding="utf-8")
    return root


def _changed(root: Path) -> Dict[str, str]:
    originals = {"routine.py": ROUTINE, "losses.py": LOSSES}
    out: Dict[str, str] = {}
    for name, text in originals.items():
        after = (root / name).read_text(encoding="utf-8")
        compile(after, name, "exec")
        out.update({f"{name}:{i + 1}": new.strip() for i, (old, new) in
                    enumerate(zip(text.splitlines(), after.splitlines())) if old != new})
    return out


def test_the_finding_names_the_constructor_in_the_other_file(tmp_path: Path, capsys) -> None:
    root = _project(tmp_path / "proj")
    assert main(["check", "--format", "json", str(root)]) == 1
    import json

    found = json.loads(capsys.readouterr().out)
    assert [(f["path"].rsplit("/", 1)[-1], f["line"], f["column"], f["code"], f["fixable"]) for f in found] == [
        ("losses.py", 2, 13, "AMP001", True)]
    message = found[0]["message"]
    assert message.startswith("`Independent.log_prob` runs under float16 autocast with inputs not cast to float32: "
                              "`params`, `target` (the distribution is built in `step` at routine.py:28 and 1 other "
                              "place)"), message


def test_a_named_file_reports_it_from_its_project(tmp_path: Path, capsys) -> None:
    """`amplint check losses.py`, as pre-commit runs it: the project is indexed and the finding is the same."""
    root = _project(tmp_path / "proj")
    assert main(["check", str(root / "losses.py")]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{root / 'losses.py'}:2:13: AMP001 [*] `Independent.log_prob` runs under float16 autocast "
                          "with inputs not cast to float32: `params`, `target`"), out


def test_fix_casts_the_picked_class_parameters_where_built_and_the_value_here(tmp_path: Path, capsys) -> None:
    root = _project(tmp_path / "proj")
    assert main(["check", "--fix", str(root)]) == 0
    assert capsys.readouterr().out.strip() == "Fixed 1 finding, 0 remaining."
    assert _changed(root) == {
        "routine.py:28": "dist = Independent(get_dist_class(family)(**{k: v.float() if torch.is_tensor(v) else v "
                         "for k, v in params.items()}), 1)",
        "routine.py:35": 'return nll(Independent(DISTS[family](out["loc"].float(), out["scale"].float()), 1), y)',
        "losses.py:2": "return -dist.log_prob(target.float())",
    }
    assert main(["check", "--fix", str(root)]) == 0  # the project re-reads the casts: nothing left, no edit
    assert capsys.readouterr().out.strip() == "Fixed 0 findings, 0 remaining."
    assert main(["check", str(root)]) == 0


def test_a_noqa_at_the_constructor_keeps_the_finding_and_both_files(tmp_path: Path, capsys) -> None:
    root = _project(tmp_path / "proj")
    routine = root / "routine.py"
    text = ROUTINE.replace("(**params), 1)", "(**params), 1)  # noqa: AMP001")
    routine.write_text(text, encoding="utf-8")
    assert main(["check", "--fix", str(root)]) == 1
    out = capsys.readouterr().out
    assert "losses.py:2:13: AMP001" in out
    assert "1 not fixable here: the distribution is built in `step` at routine.py:28" in out
    assert (root / "losses.py").read_text(encoding="utf-8") == LOSSES
    # The other caller's constructor (line 35) could be cast, but the finding needs both: neither is.
    assert routine.read_text(encoding="utf-8") == text


def _non_finite(root: Path, function: str) -> int:
    """`function` of routine.py under CPU float16 autocast with scales of 1e-5.

    In float16 their square is 0 (Normal) and a difference over them passes 65504 (Laplace).
    """
    torch = pytest.importorskip("torch")
    source = (root / "routine.py").read_text(encoding="utf-8").replace(
        'torch.autocast("cuda")', 'torch.autocast("cpu", dtype=torch.float16)')
    sys.path.insert(0, str(root))
    sys.modules.pop("losses", None)
    try:
        namespace: dict = {}
        exec(compile(source, str(root / "routine.py"), "exec"), namespace)
        torch.manual_seed(0)
        head = namespace["Head"](8)
        with torch.no_grad():
            head.log_scale.weight.zero_()
            head.log_scale.bias.fill_(float(torch.log(torch.tensor(1e-5))))
            values = namespace[function](head, torch.randn(512, 8), torch.randn(512, 1).half())  # a float16 target
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("losses", None)
    return int((~torch.isfinite(values)).sum())


@pytest.mark.torch
@pytest.mark.parametrize("function", ["step", "table_step"])
def test_the_fixed_project_computes_finite_values(tmp_path: Path, function: str, unvalidated_distributions) -> None:
    root = _project(tmp_path / "proj")
    assert _non_finite(root, function) > 0
    assert main(["check", "--fix", str(root)]) == 0
    assert _non_finite(root, function) == 0


@pytest.mark.parametrize("star, imported, expected", [
    ("**", "import torch", "{k: v.float() if torch.is_tensor(v) else v for k, v in params.items()}"),
    ("*", "import torch as th", "[v.float() if th.is_tensor(v) else v for v in params]"),
    ("**", "", '{k: v.float() if hasattr(v, "float") else v for k, v in params.items()}'),
])
def test_starred_arguments_are_cast_element_by_element(star: str, imported: str, expected: str) -> None:
    from amplint.names import import_table
    import ast

    table = import_table(ast.parse(imported))
    cast = cast_starred(cst.parse_expression("params"), star, table)
    assert cst.Module([]).code_for_node(cast) == expected
    assert is_wide(cast, table, lambda name: False)


@pytest.mark.parametrize("code", [
    "{k: v if torch.is_tensor(v) else v.float() for k, v in p.items()}",  # the tensors are the ones left
    "{k: v.float() if k != 'df' else v for k, v in p.items()}",  # not a tensor test
    "{k: w.float() if torch.is_tensor(v) else v for k, v in p.items()}",  # casts another name
    "[v for v in p]",
])
def test_other_comprehensions_are_not_float32(code: str) -> None:
    assert not is_wide(cst.parse_expression(code), ImportTable(), lambda name: False)


def test_a_parameter_in_the_slot_is_still_out_of_reach(tmp_path: Path, capsys) -> None:
    """`Independent(base, 1)` with `base` a parameter: its constructor is not visible, so nothing is cast."""
    root = tmp_path / "proj"
    shutil.copytree(_project(tmp_path / "src"), root)
    (root / "routine.py").write_text(ROUTINE + '''

def wrapped(base, y):
    with torch.autocast("cuda"):
        return nll(Independent(base, 1), y)
''', encoding="utf-8")
    assert main(["check", "--diff", str(root)]) == 1
    err = capsys.readouterr().err
    assert ("1 not fixable: the distribution built in `wrapped` at routine.py:40 holds one whose constructor is not "
            "visible there") in err, err


def test_a_parameter_every_caller_gives_a_cast_distribution_needs_only_its_value_cast(tmp_path: Path,
                                                                                    capsys) -> None:
    """fixtures/fix/cast/helpers.in.py: `score(D.Normal(mu.float(), sigma.float()), x)` calls `dist.log_prob(x)`.

    File by file the parameter is unknown and the finding is not fixable; the project joins the call, so the
    distribution is float32 and the value is the one input left.
    """
    from conftest import FIXTURES

    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("", encoding="utf-8")
    shutil.copy(FIXTURES / "fix" / "cast" / "helpers.in.py", root / "helpers.py")
    assert main(["check", str(root)]) == 1
    out = capsys.readouterr().out
    assert ("helpers.py:12:12: AMP001 [*] `Normal.log_prob` runs in the float16 autocast region at line 16 with inputs "
            "not cast to float32: `x` (reached via score (19:13))") in out
    assert main(["check", "--fix", str(root)]) == 0
    assert capsys.readouterr().out.strip() == "Fixed 2 findings, 0 remaining."
    assert (root / "helpers.py").read_text(encoding="utf-8").splitlines()[11] == "    return dist.log_prob(x.float())"
