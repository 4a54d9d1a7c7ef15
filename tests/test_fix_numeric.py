"""The codemod's output, executed with torch on CPU float16 autocast, removes the -inf it was written for.

The snippet is the failure the issue measured: a `Normal` whose scale in
[1e-4, 1e-3] comes out of an `nn.Linear` inside the region, batch 65,536.
The test runs the text the codemod produced for each strategy, not a copy.
"""
from __future__ import annotations

from typing import Callable, Dict

import pytest

torch = pytest.importorskip("torch")

from amplint.config import Config  # noqa: E402
from amplint.fix.apply import fix_text  # noqa: E402

pytestmark = pytest.mark.torch

BATCH = 65_536
SNIPPET = '''\
import torch
import torch.distributions as D


def log_likelihood(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        mu, scale = out[:, 0], out[:, 1]
        return D.Normal(mu, scale).log_prob(x)
'''
# float32 log_prob does a handful of roundings (x - mu, its square, scale ** 2, the
# division, log(scale), the sums), each within 2**-24 relative, and the square
# doubles one of them: about 10 * 6e-8 = 6e-7 relative at worst, measured 1.2e-6
# against |log_prob| up to 5e4. rtol = 1e-5 leaves room for other BLAS/vector paths
# and is still far below the float16 failure (-inf, or errors of 8e3). atol covers
# values near 0, where the terms (about +-9) cancel: a few float32 ulps of 9 is 1e-6.
RTOL, ATOL = 1e-5, 1e-4


def _load(code: str) -> Callable:
    namespace: Dict[str, object] = {}
    exec(compile(code, "<fixed snippet>", "exec"), namespace)
    return namespace["log_likelihood"]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def inputs():
    generator = torch.Generator().manual_seed(0)
    mu = torch.randn(BATCH, generator=generator)
    scale = 1e-4 + 9e-4 * torch.rand(BATCH, generator=generator)
    x = mu + 0.01 * torch.randn(BATCH, generator=generator)
    head = torch.nn.Linear(2, 2)  # identity: its float16 output is the parameters, as a model head gives them
    with torch.no_grad():
        head.weight.copy_(torch.eye(2))
        head.bias.zero_()
    h = torch.stack([mu, scale], dim=-1)
    # The reference uses the same float16-rounded parameters the region produced, in float64.
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        params = head(h)
    assert params.dtype == torch.float16
    params = params.double()
    reference = torch.distributions.Normal(params[:, 0], params[:, 1]).log_prob(x.double())
    return head, h, x, reference


def _run(code: str, inputs) -> "torch.Tensor":
    head, h, x, _ = inputs
    with torch.no_grad():
        return _load(code)(head, h, x)


def test_the_original_snippet_is_broken(inputs) -> None:
    values = _run(SNIPPET, inputs)
    assert (~torch.isfinite(values)).sum().item() > 0


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_the_fixed_snippet_is_finite_and_accurate(strategy: str, inputs) -> None:
    fixed = fix_text(SNIPPET, "snippet.py", Config(strategy=strategy))
    assert fixed.changed and fixed.fixed_count == 1 and not fixed.remaining
    assert "mu.float(), scale.float()).log_prob(x.float())" in fixed.fixed
    if strategy == "disable-autocast":
        assert 'torch.autocast(device_type="cpu", enabled=False)' in fixed.fixed
    values = _run(fixed.fixed, inputs)
    assert values.dtype == torch.float32
    assert (~torch.isfinite(values)).sum().item() == 0
    reference = inputs[3]
    error = (values.double() - reference).abs()
    assert bool((error <= ATOL + RTOL * reference.abs()).all()), error.max().item()
