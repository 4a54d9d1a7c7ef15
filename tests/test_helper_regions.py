"""A project helper that opens the region for its caller is a region, with the precision written in the helper.

Real code wraps autocast in a function (`def amp_ctx(): return torch.autocast(...)`), in a method that turns it
off on the CPU (`def maybe_autocast(self, dtype=torch.float16): ... return contextlib.nullcontext()`), or in a
`@contextlib.contextmanager` generator. `project/helperregions.py` reads each where it is written; the caller's
`with helper():` is then that region (`regions.opened`). A bfloat16 helper opens a bfloat16 region: no
finding. Each project runs, and torch records the dtype the distribution's parameters have at `log_prob`.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import pytest

from amplint.model import Precision
from amplint.names import import_table
from amplint.project.spellings import file_spellings
from conftest import LINEAR_NORMAL_HEAD, check_json, run_recording_normals, write_package

AMP = '''\
import contextlib

import torch


def amp_ctx():
    return torch.autocast("cpu", dtype=torch.float16)


def maybe_amp(enabled=True):
    if enabled:
        return torch.autocast("cpu", dtype=torch.float16)
    return contextlib.nullcontext()


@contextlib.contextmanager
def mixed():
    with torch.autocast("cpu", dtype=torch.float16):
        yield


class Trainer:
    def maybe_autocast(self, dtype=torch.float16):
        return torch.autocast("cpu", dtype=dtype)

    def step(self, model, h, y):
        with self.maybe_autocast():
            return nll(model, h, y)


def nll(model, h, y):
    return -model(h).log_prob(y).mean()
'''
STEP_HEADER = "from pkg.amp import Trainer, amp_ctx, maybe_amp, mixed, nll\n"
STEP_BODIES = {
    "by_function": "    with amp_ctx():\n        return nll(model, h, y)\n",
    "by_condition": "    with maybe_amp():\n        return nll(model, h, y)\n",
    "by_generator": "    with mixed():\n        return nll(model, h, y)\n",
    "by_self": "    return Trainer().step(model, h, y)\n",
}


def _steps(names: List[str]) -> str:
    return STEP_HEADER + "".join(f"\n\ndef {name}(model, h, y):\n{STEP_BODIES[name]}" for name in names)


RUN = '''\
from pkg import steps
from pkg.heads import Head


def main(h, y):
    model = Head()
    return [getattr(steps, name)(model, h, y) for name in dir(steps) if name.startswith("by_")]
'''


def _project(root: Path, amp: str, names: List[str] = sorted(STEP_BODIES)) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "run.py").write_text(RUN)
    write_package(root, {"heads.py": LINEAR_NORMAL_HEAD, "amp.py": amp, "steps.py": _steps(names)})
    return root


def test_each_helper_is_read_where_it_is_written() -> None:
    tree = ast.parse(AMP)
    found = {s.name: (s.wraps, s.line, s.opens.precision if s.opens else None, s.opens.device if s.opens else None)
             for s in file_spellings(tree, import_table(tree), AMP)}
    assert found == {
        "amp_ctx": ("torch.autocast", 6, Precision.FLOAT16, "cpu"),
        "maybe_amp": ("torch.autocast", 10, Precision.FLOAT16, "cpu"),
        "mixed": ("torch.autocast", 17, Precision.FLOAT16, "cpu"),
        "self.maybe_autocast": ("torch.autocast", 23, Precision.FLOAT16, "cpu"),  # at its default dtype
    }


def test_a_computation_in_the_helpers_regions_is_reported(tmp_path: Path) -> None:
    findings = check_json(_project(tmp_path, AMP))
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [("pkg/amp.py", 32, 13, "AMP001")]
    # One finding for the shared computation: the first region that reaches it names it (here `Trainer.step`'s,
    # in the same file); each helper alone reaches it too (below).
    assert "float16 autocast region" in str(findings[0]["message"])


@pytest.mark.parametrize("helper", sorted(STEP_BODIES))
def test_each_helper_alone_reaches_the_computation(tmp_path: Path, helper: str) -> None:
    findings = check_json(_project(tmp_path, AMP, [helper]))
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("pkg/amp.py", 32, "AMP001")]


def test_without_a_region_in_the_helpers_nothing_is_reported(tmp_path: Path) -> None:
    plain = AMP.replace('torch.autocast("cpu", dtype=torch.float16)', "contextlib.nullcontext()").replace(
        'torch.autocast("cpu", dtype=dtype)', "contextlib.nullcontext()")
    assert check_json(_project(tmp_path, plain)) == []


def test_bfloat16_helpers_open_no_float16_region(tmp_path: Path) -> None:
    amp = AMP.replace("torch.float16", "torch.bfloat16")
    assert check_json(_project(tmp_path, amp)) == []


@pytest.mark.torch
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_the_helpers_really_run_their_region(tmp_path: Path, dtype: str, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    root = _project(tmp_path, AMP.replace("torch.float16", f"torch.{dtype}"))
    seen, _ = run_recording_normals(root, monkeypatch, torch.randn(8, 4), torch.randn(8, 1))
    assert seen == [getattr(torch, dtype)] * len(STEP_BODIES)


SHADOW = '''\
import torch


def autocast(enabled=True):
    return torch.autocast("cpu", dtype=torch.bfloat16, enabled=enabled)


class Runner:
    def autocast(self):
        return torch.autocast("cpu", enabled=False)
'''
LIBRARY_REGION = '''\
import torch
from torch.distributions import Normal


def step(lin, x, y):
    with torch.cuda.amp.autocast():
        out = lin(x)
        return Normal(out, out.exp()).log_prob(y)


def cpu_step(lin, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        out = lin(x)
        return Normal(out, out.exp()).log_prob(y)
'''


def test_a_helper_named_autocast_never_stands_for_the_librarys(tmp_path: Path) -> None:
    """A project's own `autocast` helper (bfloat16, or turned off) is matched where it is called by its name;
    `torch.autocast` and `torch.cuda.amp.autocast` stay the library's regions."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    write_package(tmp_path, {"shadow.py": SHADOW, "steps.py": LIBRARY_REGION})
    assert [(f["path"], f["line"], f["code"]) for f in check_json(tmp_path)] == [
        ("pkg/steps.py", 8, "AMP001"), ("pkg/steps.py", 14, "AMP001")]
