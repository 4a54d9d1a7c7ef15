"""What is float32 follows the region's device: CUDA autocast runs `softmax`, `exp`, `pow`... in float32.

Under `torch.autocast("cuda")` a softmax's probabilities are float32 whatever
its input, so `torch.log(F.softmax(x, 1))` and a `1e-10` floor under them are no
hazard there, while under CPU float16 autocast they are (the policy tables in
amplint/policies.py, checked against torch's registered kernels by
tests/test_policies.py). A sigmoid is on no CUDA list: it stays float16 on both.
The fix casts what the policy made float32 as well: with autocast off (fix C)
or under the other device's policy it is float16 again. The run-time checks use the CUDA policy
emulation verify uses (amplint/verify/devices.py), on CPU.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

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


def _source(device: str) -> str:
    return BODY.format(device=device, dtype=", dtype=torch.float16" if device == "cpu" else "")


def _findings(path: Path) -> List[Tuple[int, int, str, str]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--no-project", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=120)
    return [(f["line"], f["column"], f["code"], _inputs(f["message"])) for f in json.loads(done.stdout)]


def _inputs(message: str) -> str:
    """The inputs a message lists: AMP001/AMP003 say `not cast to float32: ...;`, AMP004 `guards nothing: ... may`."""
    for start, end in (("not cast to float32: ", ";"), ("guards nothing: ", " may be")):
        if start in message:
            return message.split(start)[1].split(end)[0]
    return message


def test_cuda_regions_promote_what_cuda_autocast_runs_in_float32(tmp_path: Path) -> None:
    path = tmp_path / "cuda.py"
    path.write_text(_source("cuda"))
    assert _findings(path) == [
        (11, 44, "AMP003", "`q`"), (11, 58, "AMP004", "`q`"),  # a sigmoid is float16 on CUDA too
        (17, 16, "AMP001", "`mu`"),  # `log_std.exp()` is float32: CUDA runs `exp` in float32
    ]


def test_cpu_regions_promote_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "cpu.py"
    path.write_text(_source("cpu"))
    assert _findings(path) == [
        (8, 16, "AMP003", "`head(x)`"), (11, 22, "AMP003", "`p`"), (11, 36, "AMP004", "`p`"),
        (11, 44, "AMP003", "`q`"), (11, 58, "AMP004", "`q`"), (17, 16, "AMP001", "`mu`, `log_std.exp()`"),
    ]


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_the_fix_casts_what_the_policy_made_float32(strategy: str) -> None:
    """The finding lists `mu` alone; the fix casts `log_std` too, so it holds with autocast off or on CPU."""
    fixed = fix_text(_source("cuda"), "m.py", Config(strategy=strategy)).fixed
    assert "return Normal(mu.float(), log_std.float().exp()).log_prob(y.float())" in fixed


GAUSSIANS = '''\
import math

import torch


def nll(head, x, y):
    with torch.autocast("{device}"{dtype}):
        mu, log_std = head(x).chunk(2, -1)
        a = 0.5 * ((y - mu) / log_std.exp()) ** 2 + log_std + 0.5 * math.log(2 * math.pi)
        b = 0.5 * ((y - mu) / torch.sigmoid(log_std)) ** 2 + log_std + 0.5 * math.log(2 * math.pi)
        return a, b
'''


def test_a_gaussian_is_a_site_where_some_op_that_can_break_runs_in_float16(tmp_path: Path) -> None:
    """On CUDA `exp` and `** 2` run in float32 and `/ log_std.exp()` promotes; a division by a sigmoid does not."""
    for device, expected in (("cuda", [(10, 13, "AMP003")]), ("cpu", [(9, 13, "AMP003"), (10, 13, "AMP003")])):
        path = tmp_path / f"{device}.py"
        path.write_text(GAUSSIANS.format(device=device, dtype=", dtype=torch.float16" if device == "cpu" else ""))
        assert [found[:3] for found in _findings(path)] == expected, device


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
