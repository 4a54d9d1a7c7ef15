"""Calls that return the same module (issue 13, item 1): the class a name holds flows through them.

`model = Regressor(8).to(device)` then `model(x, y)` in a float16 region enters
`Regressor.forward`, as `model = Regressor(8)` does; so do `.cuda()`, `.half()`,
`.eval()`, chains of them, `torch.compile`, DDP/DataParallel/FSDP (and their
`.module`) and `accelerator.prepare`, in the same file and across files.
"""
from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from amplint.config import Config
from amplint.project.run import run_project
from conftest import FIXTURES, expected_lines
from test_project import _render

WRAPPERS = FIXTURES / "wrappers"

HEAD = """\
import torch
import torch.nn as nn
from torch.distributions import Normal
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn import DataParallel
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP


class Regressor(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.mu = nn.Linear(n, 1)

    def forward(self, x, y):
        return Normal(self.mu(x), 1.0).log_prob(y)


def run(x, y, device, accelerator, opt, mover):
"""
SITE = "m.py:15:16 AMP001"
REGION = "    with torch.autocast('cuda'):\n"


def _lines(tmp_path: Path, files: dict) -> List[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return _render(run_project([str(tmp_path)], Config(), use_cache=False).results, tmp_path)


def test_fixture_project_findings_are_exact() -> None:
    lines = _render(run_project([str(WRAPPERS)], Config(), use_cache=False).results, WRAPPERS)
    assert lines == expected_lines(WRAPPERS / "expected")


@pytest.mark.parametrize("binding", [
    "model = Regressor(8)",
    "model = Regressor(8).to(device)",
    "model = Regressor(8).cuda()",
    "model = Regressor(8).cpu()",
    "model = Regressor(8).half()",
    "model = Regressor(8).float()",
    "model = Regressor(8).train()",
    "model = Regressor(8).eval()",
    "model = Regressor(8).requires_grad_(False)",
    "model = Regressor(8).to(device).eval()",
    "model = Regressor(8).to(torch.float32)",  # looks like a cast; the same module all the same
    "model = torch.compile(Regressor(8))",
    "model = DDP(Regressor(8), device_ids=[0])",
    "model = DataParallel(Regressor(8))",
    "model = FSDP(module=Regressor(8))",
    "model = accelerator.prepare(Regressor(8))",
    "net = Regressor(8)\n    model, opt = accelerator.prepare(net, opt)",
    "model = DDP(Regressor(8).to(device)).module",
    "ddp = DDP(Regressor(8))\n    model = ddp.module.to(device)",
])
def test_same_file_every_wrapper_is_followed(tmp_path: Path, binding: str) -> None:
    source = HEAD + f"    {binding}\n" + REGION + "        return model(x, y)\n"
    line = source.splitlines().index(REGION.rstrip("\n")) + 1
    assert _lines(tmp_path, {"m.py": source}) == [f"{SITE} via model(x, y) → Regressor.forward from m.py:{line}"]


@pytest.mark.parametrize("call", ["ddp.module(x, y)", "ddp(x, y)"])
def test_same_file_a_ddp_and_its_module_are_the_model(tmp_path: Path, call: str) -> None:
    source = HEAD + "    ddp = DDP(Regressor(8).to(device))\n" + REGION + f"        return {call}\n"
    assert _lines(tmp_path, {"m.py": source}) == [f"{SITE} via {call} → Regressor.forward from m.py:20"]


@pytest.mark.parametrize("binding, call", [
    ("model = mover.to(Regressor(8))", "model(x, y)"),  # `to` of an object that holds no module
    ("model = Regressor(8).cuda()", "model.module(x, y)"),  # no wrapper: `.module` is not the model
    ("model = dataset.prepare(Regressor(8))", "model(x, y)"),  # `prepare` of something not an accelerator
    ("ddp = DDP(Regressor(8))\n    ddp = object()", "ddp.module(x, y)"),  # rebound: no longer the wrapper
])
def test_same_file_near_misses_stay_unknown(tmp_path: Path, binding: str, call: str) -> None:
    source = HEAD.replace("mover):", "mover, dataset):") + f"    {binding}\n" + REGION + f"        return {call}\n"
    assert _lines(tmp_path, {"m.py": source}) == []


@pytest.mark.parametrize("binding", [
    "model = Regressor(8).to(device)",
    "model = torch.compile(Regressor(8).cuda()).eval()",
    "model = DDP(Regressor(8))",
    "model, opt = accelerator.prepare(Regressor(8), opt)",
])
def test_cross_file_the_class_flows_from_the_import(tmp_path: Path, binding: str) -> None:
    models = HEAD[:HEAD.index("def run(")].rstrip("\n") + "\n"
    train = ("import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
             "from models import Regressor\n\n\ndef run(x, y, device, accelerator, opt):\n"
             f"    {binding}\n{REGION}        return -model(x, y).mean()\n")
    assert _lines(tmp_path, {"models.py": models, "train.py": train}) == [
        "models.py:15:16 AMP001 via model(x, y) → Regressor.forward from train.py:8"]


def test_a_moved_torch_module_is_still_known_not_to_be_a_distribution(tmp_path: Path) -> None:
    """`receivers`: `nn.AdaptiveLogSoftmaxWithLoss(...).to(device)` is that module, whose `log_prob` is its own."""
    source = """\
import torch
from torch import nn


class PredictionLayer(nn.Module):
    def __init__(self, device):
        super().__init__()
        self.proj = torch.compile(nn.AdaptiveLogSoftmaxWithLoss(512, 30000, cutoffs=[1000]).to(device))

    def forward(self, x):
        with torch.autocast("cuda"):
            return self.proj.log_prob(x)
"""
    assert _lines(tmp_path, {"m.py": source}) == []
    assert _lines(tmp_path, {"m.py": source.replace("torch.compile(", "wrap(")}) == [
        "m.py:12:20 AMP001 from m.py:11"]  # an unknown wrapper: it may return anything, a distribution too
