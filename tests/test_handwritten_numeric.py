"""AMP003 and AMP004 on CPU float16 autocast: the original text gives -inf, the text `--fix` wrote does not.

Logits in [-30, 30] come out of an identity `nn.Linear` inside the region, as a
classifier head gives them: 1,024 rows of 16 classes, 16,384 values. float16 holds no
probability below 6.0e-8, so a softmax of such logits has zeros, and
`log(p + 1e-10)` or `log(p.clamp(min=1e-12))` keeps them at `-inf`: the floor
itself is 0 in float16. The rule docs quote the counts these tests assert.
"""
from __future__ import annotations

from typing import Callable, Dict

import pytest

torch = pytest.importorskip("torch")

from amplint.config import Config  # noqa: E402
from amplint.engine import check_source  # noqa: E402
from amplint.fix.apply import fix_text  # noqa: E402

pytestmark = pytest.mark.torch

ROWS, CLASSES = 1_024, 16
LOG_OF_SOFTMAX = '''\
import torch
import torch.nn.functional as F


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        return torch.log(F.softmax(head(h), dim=1))
'''
EPSILON = '''\
import torch


def entropy(logits, eps=1e-10):
    probs = logits.softmax(dim=1)
    return -(probs * torch.log(probs + eps)).sum(dim=1)


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        return entropy(head(h))
'''
SHARP_ENTROPY = '''\
import torch


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        p = torch.softmax(head(h) * 1.5, -1)
        return -(p * torch.log(p)).sum(-1)
'''
CLAMPED = '''\
import torch


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        probs = head(h).softmax(dim=1)
        return torch.log(probs.clamp(min=1e-12))
'''

# A Gaussian's entropy from a softplus scale: softplus is 0 in float16 below -17, its log -inf.
SCALE_ENTROPY = '''\
import math

import torch
import torch.nn.functional as F


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        std = F.softplus(head(h))
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(std)
'''


@pytest.fixture(scope="module")
def inputs():
    generator = torch.Generator().manual_seed(0)
    h = (torch.rand(ROWS, CLASSES, generator=generator) * 60.0) - 30.0
    head = torch.nn.Linear(CLASSES, CLASSES)
    with torch.no_grad():
        head.weight.copy_(torch.eye(CLASSES))
        head.bias.zero_()
    return head, h


def _non_finite(code: str, inputs) -> int:
    namespace: Dict[str, object] = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    run: Callable = namespace["run"]  # type: ignore[assignment]
    with torch.no_grad():
        values = run(*inputs)
    return int((~torch.isfinite(values)).sum().item())


@pytest.mark.parametrize(
    "snippet, codes, before",
    [
        # 10,661 of 16,384 log-probabilities are -inf; the entropy is NaN (0 * -inf) in all 1,024 rows.
        pytest.param(LOG_OF_SOFTMAX, [("AMP003", 7, 16)], 10_661, id="log-of-softmax"),
        pytest.param(EPSILON, [("AMP003", 6, 22), ("AMP004", 6, 32)], 1_024, id="entropy-with-1e-10"),
        pytest.param(CLAMPED, [("AMP003", 7, 16), ("AMP004", 7, 42)], 10_661, id="clamp-min-1e-12"),
        # Every row holds a probability float16 rounds to 0: 0 * log(0) is NaN in all 1,024 rows.
        pytest.param(SHARP_ENTROPY, [("AMP003", 7, 22)], 1_024, id="sharp-softmax-entropy"),
        # Raw scales below about -16.6 (3,437 of 16,384 in [-30, 30]) make softplus 0 in float16: its log is -inf.
        pytest.param(SCALE_ENTROPY, [("AMP003", 10, 52)], 3_437, id="log-of-a-softplus-scale"),
    ],
)
def test_fix_removes_the_non_finite_values(snippet: str, codes: list, before: int, inputs) -> None:
    found = check_source(snippet, "snippet.py").findings
    assert [(f.code, f.line, f.column) for f in found] == codes
    assert _non_finite(snippet, inputs) == before
    fixed = fix_text(snippet, "snippet.py", Config(strategy="cast"))
    assert fixed.changed and fixed.fixed_count == len(codes) and not fixed.remaining
    assert _non_finite(fixed.fixed, inputs) == 0
    assert check_source(fixed.fixed, "snippet.py").findings == []
    assert fix_text(fixed.fixed, "snippet.py", Config(strategy="cast")).changed is False  # idempotent


def test_the_cast_goes_where_the_probabilities_are_made() -> None:
    """A cast of `p` in the log comes after float16 rounded it to 0: the softmax's input is cast instead."""
    fixed = fix_text(SHARP_ENTROPY, "snippet.py", Config(strategy="cast")).fixed
    assert fixed == SHARP_ENTROPY.replace("softmax(head(h) * 1.5, -1)", "softmax(head(h).float() * 1.5, -1)")


def test_the_epsilons_vanish_in_float16_even_where_cuda_promotes_the_log(inputs) -> None:
    """CUDA's policy runs `log` in float32 but the addition before it in float16: the floor is already gone."""
    probs = torch.tensor([0.0, 1e-9, 0.5], dtype=torch.float16)
    for eps in (1e-10, 1e-12):
        floored = probs + eps  # an add runs in its inputs' dtype under either policy
        assert floored.dtype == torch.float16 and floored[0].item() == 0.0
        assert torch.log(floored.float())[0].item() == float("-inf")


# Densities written out with no log (`amplint/facts/kernels.py`), then their log: a Student-t's kernel on a softplus
# scale, a mixture density network's Gaussian on an `exp` scale. Not rewritten (their terms may be Python numbers):
# the user casts the head, and every value float32 keeps finite stays finite.
STUDENT_KERNEL = '''\
import torch
import torch.nn.functional as F


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        loc, s = head(h).chunk(2, dim=1)
        scale = F.softplus(s)
        pdf = torch.pow(1 + (loc / scale) ** 2 / 3.0, -2.0) / scale
        return torch.log(pdf)
'''
GAUSSIAN_KERNEL = '''\
import math

import torch

ONE_OVER_SQRT_2PI = 1.0 / math.sqrt(2 * math.pi)


def run(head, h):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, s = head(h).chunk(2, dim=1)
        sigma = s.exp()
        pdf = ONE_OVER_SQRT_2PI * torch.exp(-0.5 * (mu / sigma) ** 2) / sigma
        return torch.log(pdf)
'''


def _run(code: str, inputs) -> "torch.Tensor":
    namespace: Dict[str, object] = {}
    exec(compile(code, "<snippet>", "exec"), namespace)
    with torch.no_grad():
        return namespace["run"](*inputs)  # type: ignore[operator]


@pytest.mark.parametrize(
    "snippet, at, lost",
    [
        # Of the 8,192 log-densities, 6,855 are finite in float32; float16 loses 2,396 of them (0 or inf).
        pytest.param(STUDENT_KERNEL, ("AMP003", 9, 15), 2_396, id="student-t-kernel"),
        # Of the 8,192, 4,196 are finite in float32; float16 loses 2,726 of them.
        pytest.param(GAUSSIAN_KERNEL, ("AMP003", 12, 15), 2_726, id="gaussian-kernel"),
    ],
)
def test_a_density_kernel_loses_in_float16_what_a_cast_head_keeps(snippet: str, at: tuple, lost: int,
                                                                  inputs) -> None:
    found = check_source(snippet, "snippet.py").findings
    assert [(f.code, f.line, f.column) for f in found] == [at]
    assert found[0].message.startswith("a density written out with no log")
    assert "ONE_OVER_SQRT_2PI" not in found[0].message  # a module number constant is no tensor
    fixed = fix_text(snippet, "snippet.py", Config(strategy="cast"))
    assert not fixed.changed and len(fixed.remaining) == 1  # reported as not fixable, never half-rewritten
    cast = snippet.replace("head(h).chunk", "head(h).float().chunk")
    assert check_source(cast, "snippet.py").findings == []
    before, after = _run(snippet, inputs), _run(cast, inputs)
    assert before.dtype == torch.float16 and after.dtype == torch.float32
    assert int((torch.isfinite(after) & ~torch.isfinite(before)).sum()) == lost
    assert int((torch.isfinite(before) & ~torch.isfinite(after)).sum()) == 0
