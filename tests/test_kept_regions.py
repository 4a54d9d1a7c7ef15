"""Regions spelled through objects and spreads: kept on `self`, entered on an `ExitStack`, or given `**kwargs`.

Public training code keeps its autocast context on the trainer (`self.amp = torch.autocast(...)` in `__init__`,
`with self.amp:` in `step`), or a `functools.partial` of it entered by calling it, often behind a flag; enters it
on a `contextlib.ExitStack` (`stack.enter_context(torch.autocast(...))`, under an `if`); or spreads its arguments
from a dict (`torch.autocast(**amp_kwargs)`). The generated projects (`tests/reachgen/regions.py`) missed 0 of 27
`ExitStack` regions and 8 of 12 `self` ones before `astwithregions.py`/`cstwithregions.py` read them, and took
a bfloat16 `**kwargs` dict for a possibly-float16 region. Both trees are tested: the regions sit in a file with no
site (read from CPython's tree) and, in single-file mode, beside the computation (read by LibCST).
"""
from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from conftest import LINEAR_NORMAL_HEAD, check_json, run_recording_normals, write_package

NLL = '''\
def nll(model, h, y):
    return -model(h).log_prob(y).mean()
'''
HEADER = '''\
import contextlib
import functools

import torch

from pkg.losses import nll

AMP_KWARGS = {"device_type": "cpu", "dtype": torch.float16}
'''
SPELLINGS = {
    "by_kept": '''\
class Kept:
    def __init__(self):
        self.amp = torch.autocast("cpu", dtype=torch.float16)

    def step(self, model, h, y):
        with self.amp:
            return nll(model, h, y)


def by_kept(model, h, y):
    return Kept().step(model, h, y)
''',
    "by_kept_factory": '''\
class KeptFactory:
    def __init__(self, use_amp=True):
        self.amp = functools.partial(torch.autocast, "cpu", dtype=torch.float16) if use_amp else contextlib.nullcontext

    def step(self, model, h, y):
        with self.amp():
            return nll(model, h, y)


def by_kept_factory(model, h, y):
    return KeptFactory().step(model, h, y)
''',
    "by_stack": '''\
def by_stack(model, h, y, amp=True):
    with contextlib.ExitStack() as stack:
        if amp:
            stack.enter_context(torch.autocast("cpu", dtype=torch.float16))
        return nll(model, h, y)
''',
    "by_spread": '''\
def by_spread(model, h, y):
    kwargs = dict(device_type="cpu", dtype=torch.float16)
    with torch.autocast(**kwargs):
        return nll(model, h, y)
''',
    "by_module_spread": '''\
def by_module_spread(model, h, y):
    with torch.autocast(**AMP_KWARGS):
        return nll(model, h, y)
''',
}
SPELLED = sorted(SPELLINGS)
RUN = '''\
from pkg import steps
from pkg.heads import Head


def main(h, y):
    model = Head()
    return [getattr(steps, name)(model, h, y) for name in {names!r}]
'''
SITE = ("pkg/losses.py", 2, 13, "AMP001")


def _only(*names: str) -> str:
    """The module with the spellings named, each alone: no other region reaches the computation."""
    return "\n\n".join([HEADER, *(SPELLINGS[name] for name in names)])


def _project(root: Path, spellings: str, names: List[str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "run.py").write_text(RUN.format(names=names))
    write_package(root, {"heads.py": LINEAR_NORMAL_HEAD, "losses.py": NLL, "steps.py": spellings})
    return root


@pytest.mark.parametrize("name", SPELLED)
def test_each_spelling_alone_reaches_the_computation(tmp_path: Path, name: str) -> None:
    findings = check_json(_project(tmp_path, _only(name), [name]))
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [SITE]
    assert "possibly-float16" not in str(findings[0]["message"]), findings[0]["message"]


@pytest.mark.parametrize("name", SPELLED)
def test_each_spelling_beside_the_computation_in_one_file(tmp_path: Path, name: str) -> None:
    path = tmp_path / "one.py"
    path.write_text(_only(name).replace("from pkg.losses import nll\n", "") + "\n\n" + NLL)
    findings = check_json(tmp_path, "--no-project")
    line = len(path.read_text().splitlines())
    assert [(f["line"], f["column"], f["code"]) for f in findings] == [(line, 13, "AMP001")]


@pytest.mark.parametrize("name", SPELLED)
def test_bfloat16_opens_no_float16_region(tmp_path: Path, name: str) -> None:
    assert check_json(_project(tmp_path, _only(name).replace("torch.float16", "torch.bfloat16"), [name])) == []


def test_a_call_before_enter_context_or_after_the_stack_closes_runs_outside(tmp_path: Path) -> None:
    outside = _only("by_stack").replace('''        if amp:
            stack.enter_context(torch.autocast("cpu", dtype=torch.float16))
        return nll(model, h, y)''', '''        out = nll(model, h, y)
        stack.enter_context(torch.autocast("cpu", dtype=torch.float16))
    return out + nll(model, h, y)''')
    assert outside != _only("by_stack")
    assert check_json(_project(tmp_path, outside, ["by_stack"])) == []


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_spellings_really_run_their_region(tmp_path: Path, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    root = _project(tmp_path, _only(*SPELLED).replace("torch.float16", f"torch.{dtype}"), list(SPELLED))
    seen, _ = run_recording_normals(root, monkeypatch, torch.randn(8, 4), torch.randn(8, 1))
    assert seen == [getattr(torch, dtype)] * len(SPELLED)
