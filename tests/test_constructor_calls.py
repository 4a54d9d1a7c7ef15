"""A constructor call runs the class's `__init__` (issue 50: "a constructor call never enters `__init__`").

`Prior(lin(h))` in a float16 region runs `Prior.__init__`, whose log of a softmax takes the float16 logits
it is given; so does `cls(lin(h))` where `cls` is the class handed in as a parameter. The twin that casts
the argument is not reported. Each project runs for real: the log takes float16 exactly where reported.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from conftest import log_dtypes_script, write_package

PRIOR = '''\
import torch


class Prior:
    def __init__(self, logits):
        self.lp = torch.log(torch.softmax(logits, dim=-1))
'''
STEP = '''\
import torch

from pkg.prior import Prior


def step(lin, h):
    with torch.autocast("cpu", dtype=torch.float16):
        return Prior(lin(h)).lp.mean()


def build(cls, lin, h):
    with torch.autocast("cpu", dtype=torch.float16):
        return cls(lin(h)).lp.mean()


def main():
    lin = torch.nn.Linear(4, 3)
    h = torch.randn(2, 4)
    return step(lin, h) + build(Prior, lin, h)
'''
RUN = log_dtypes_script("from pkg.step import main", "main()")


def _project(tmp_path: Path, cast: bool) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    step = STEP.replace("(lin(h))", "(lin(h).float())") if cast else STEP
    write_package(project, {"prior.py": PRIOR, "step.py": step})
    (tmp_path / "run.py").write_text(RUN)
    return project


def _findings(project: Path) -> List[Tuple[str, int, int, str, str]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], cwd=project,
                          capture_output=True, text=True, timeout=120)
    return [(f["path"], f["line"], f["column"], f["code"], f["message"]) for f in json.loads(done.stdout)]


@pytest.mark.parametrize("kept, via", [("step", "via Prior(lin(h))"), ("build", "via cls(lin(h))")])
def test_init_is_entered_from_the_call_and_from_a_class_parameter(tmp_path: Path, kept: str, via: str) -> None:
    """One site, reached by either call alone (the other is dropped from `main`)."""
    project = _project(tmp_path, cast=False)
    step = project / "pkg" / "step.py"
    text = step.read_text().replace("step(lin, h) + build(Prior, lin, h)",
                                    "step(lin, h)" if kept == "step" else "build(Prior, lin, h)")
    if kept == "build":  # no direct `Prior(...)` call left in a region
        text = text.replace("return Prior(lin(h)).lp.mean()", "return lin(h).mean()")
    step.write_text(text)
    [(path, line, column, code, message)] = _findings(project)
    assert (path, line, column, code) == ("pkg/prior.py", 6, 19, "AMP003")
    assert via in message


def test_the_cast_twin_is_not_reported(tmp_path: Path) -> None:
    assert _findings(_project(tmp_path, cast=True)) == []


@pytest.mark.torch
@pytest.mark.parametrize("cast, dtypes", [(False, "['torch.float16', 'torch.float16']"),
                                          (True, "['torch.float32', 'torch.float32']")])
def test_the_logs_run_in_the_dtype_reported(tmp_path: Path, cast: bool, dtypes: str) -> None:
    pytest.importorskip("torch")
    _project(tmp_path, cast)
    done = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == dtypes
