"""A region reaches a log through an override four import steps from it (generated project, seed 871).

`LoopBase.step` opens the region in `heads.py` and calls `self.compute(...)`; the override in `factory.py`
(a subclass line naming `LoopBase`) calls `run_heads` in `common.py`, which builds a `HeadSet` of `steps.py`,
whose method calls `compute_loss` in `critics.py`. No file of the chain imports `heads.py`'s way, and
`critics.py`, the only file naming a log, is four steps from `heads.py`: past `LEAD_HOPS`, so the region
file was never entered. A base class's file runs its subclasses' code, so it leads wherever they do
(`project/leads.py`). The project runs for real: the log takes float16.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import log_dtypes_script, write_package

FILES = {
    "heads.py": '''\
import torch


class LoopBase:
    def __init__(self, model, encoder):
        self.model = model
        self.encoder = encoder

    def step(self, h, x):
        with torch.autocast("cpu", dtype=torch.float16):
            feats = self.encoder(h)
            return self.compute(feats, x)

    def compute(self, feats, x):
        raise NotImplementedError
''',
    "factory.py": '''\
from .common import run_heads
from .heads import LoopBase


class FitTrainer(LoopBase):
    def compute(self, feats, x):
        return run_heads((self.model,), feats, x)
''',
    "common.py": '''\
from .steps import HeadSet


def run_heads(models, h, x):
    heads = HeadSet({"primary": models[-1]})
    return heads.combined(h, x)
''',
    "steps.py": '''\
import torch
from torch import nn

from .critics import compute_loss


class HeadSet(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.heads = nn.ModuleDict(heads)

    def combined(self, inputs, target):
        total = torch.zeros(())
        for key, model in self.heads.items():
            total = total + compute_loss(model, inputs, target)
        return total
''',
    "critics.py": '''\
import torch


def compute_loss(policy, h, obs):
    logits = policy(h)
    logp = torch.log(torch.softmax(logits, dim=-1))
    return -logp.mean()
''',
}
RUN = log_dtypes_script("from torch import nn\n\nfrom pkg.factory import FitTrainer",
                        "FitTrainer(nn.Linear(8, 4), nn.Linear(8, 8)).step(torch.randn(4, 8), torch.randn(4, 4))")


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    write_package(project, FILES)
    (tmp_path / "run.py").write_text(RUN)
    return project


def test_an_override_four_steps_away_leads_the_walk_to_the_log(tmp_path: Path) -> None:
    project = _project(tmp_path)
    check = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], cwd=project,
                           capture_output=True, text=True, timeout=120)
    findings = [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(check.stdout)]
    assert findings == [("pkg/critics.py", 6, 12, "AMP003")]


@pytest.mark.torch
def test_the_log_runs_in_float16(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    _project(tmp_path)
    done = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['torch.float16']"
