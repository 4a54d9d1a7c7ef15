"""A finding is about inputs; the message says which device's policy spares the value.

float16 inputs with no cast are reported under any region, as the label rule
of real code reads them. Under `torch.autocast("cuda")` a softmax computes in
float32 whatever its input (amplint/policies.py, checked against torch's
registered kernels by tests/test_policies.py), so `torch.log(F.softmax(x, 1))`
holds there and fails under CPU autocast, with autocast off, or once the code
moves: the message says so. A sigmoid is on no CUDA list. The run-time check
uses the CUDA policy emulation verify uses (amplint/verify/devices.py), on CPU.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, Tuple

import pytest

from amplint.config import Config
from amplint.fix.apply import fix_text

BODY = '''\
import torch
import torch.nn.functional as F
from torch.distributions import Normal


def probs(head, x):
    with torch.autocast("{device}"{dtype}):
        logp = torch.log(F.softmax(head(x), dim=1))
        p = F.softmax(head(x), dim=1)
        q = torch.sigmoid(head(x))
        return logp, torch.log(p + 1e-10), torch.log(q + 1e-10)


def nll(head, x, y):
    with torch.autocast("{device}"{dtype}):
        mu, log_std = head(x).chunk(2, -1)
        return Normal(mu, log_std.exp()).log_prob(y.float())
'''
NOTE = " (CUDA autocast computes it in float32, so it holds there; it fails under CPU autocast or with autocast off)"


def _source(device: str) -> str:
    return BODY.format(device=device, dtype=", dtype=torch.float16" if device == "cpu" else "")


def _findings(tmp_path: Path, device: str) -> Dict[Tuple[int, int, str], str]:
    path = tmp_path / f"{device}.py"
    path.write_text(_source(device))
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--no-project", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=120)
    return {(f["line"], f["column"], f["code"]): f["message"] for f in json.loads(done.stdout)}


def test_findings_follow_the_inputs_on_every_device(tmp_path: Path) -> None:
    """float16 inputs with no cast are findings under either region; CPU's and CUDA's are the same places."""
    cuda, cpu = _findings(tmp_path, "cuda"), _findings(tmp_path, "cpu")
    assert list(cuda) == list(cpu) == [
        (8, 16, "AMP003"), (11, 22, "AMP003"), (11, 36, "AMP004"), (11, 44, "AMP003"), (11, 58, "AMP004"),
        (17, 16, "AMP001")]


def test_the_message_names_the_device_whose_policy_spares_the_value(tmp_path: Path) -> None:
    """`torch.log(F.softmax(head(x), 1))`, and the log of `p` bound to a softmax: CUDA runs the softmax in float32,
    so the floor under `p` survives too (its risk is `low` there); a sigmoid it runs in float16."""
    cuda, cpu = _findings(tmp_path, "cuda"), _findings(tmp_path, "cpu")
    spared = {(8, 16, "AMP003"), (11, 22, "AMP003")}
    assert all(NOTE + ";" in cuda[where] for where in spared)
    assert all(NOTE not in text for text in cpu.values())
    assert all(NOTE not in text for where, text in cuda.items() if where not in spared)
    low = {where for where, text in cuda.items() if "; risk low on CUDA: " in text}
    assert low == spared | {(11, 36, "AMP004"), (17, 16, "AMP001")}
    assert not any("; risk low on" in text for where, text in cpu.items() if where[2] != "AMP001")


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_the_fix_is_the_same_on_either_device(strategy: str) -> None:
    fixed = {device: fix_text(_source(device), "m.py", Config(strategy=strategy)).fixed for device in ("cuda", "cpu")}
    assert "return Normal(mu.float(), log_std.float().exp()).log_prob(y.float())" in fixed["cuda"]
    assert fixed["cuda"].replace('autocast("cuda")', 'autocast("cpu", dtype=torch.float16)').replace(
        'device_type="cuda"', 'device_type="cpu"') == fixed["cpu"]


RUN = '''\
import torch
import torch.nn.functional as F


def probs(head, x, region):
    with region():
        logp = torch.log(F.softmax(head(x), dim=1))
        p = F.softmax(head(x), dim=1)
        q = torch.sigmoid(head(x))
        return logp, torch.log(p + 1e-10), torch.log(q + 1e-10)
'''


@pytest.mark.torch
def test_the_quiet_cuda_lines_are_finite_under_cudas_policy() -> None:
    """`probs` above, run under CPU float16 autocast and under CUDA's policy (emulated on CPU)."""
    torch = pytest.importorskip("torch")
    import functools

    from amplint.verify.devices import CUDA_EMULATED, EmulatedCudaTensor, to_host

    weight = torch.eye(16)
    x = torch.rand(256, 16, generator=torch.Generator().manual_seed(0)) * 60.0 - 30.0
    namespace: dict = {}
    exec(compile(RUN, "m.py", "exec"), namespace)
    with torch.no_grad():
        cpu = namespace["probs"](lambda h: F_linear(h, weight), x, lambda: torch.autocast("cpu", dtype=torch.float16))
        with CUDA_EMULATED.session():
            cuda_weight = EmulatedCudaTensor(weight)
            cuda = [to_host(v) for v in namespace["probs"](
                lambda h: F_linear(h, cuda_weight), EmulatedCudaTensor(x),
                functools.partial(CUDA_EMULATED.autocast, True, torch.float16))]
    counts = {device: [int((~torch.isfinite(v)).sum()) for v in values] for device, values in (("cpu", cpu),
                                                                                                 ("cuda", cuda))}
    assert counts["cuda"][:2] == [0, 0] and counts["cuda"][2] > 0  # the softmax lines are finite, the sigmoid not
    assert all(count > 0 for count in counts["cpu"])


def F_linear(h, weight):  # noqa: N802 - the head: a Linear with identity weights, run where autocast decides
    import torch.nn.functional as F

    return F.linear(h, weight)
