"""`--fix` casts tensors only, never a distribution passed to a wrapper (issue 17).

`Independent(dist.float(), 1)` raises `AttributeError: 'Normal' object has no
attribute 'float'` when it runs. Each snippet here is fixed with both
strategies and the fixed text is executed with torch under CPU float16
autocast: built-in-place distributions get their own tensor arguments cast,
and a distribution whose constructor is not visible is left alone, with a reason.
"""
from __future__ import annotations

from typing import Callable, Dict

import pytest

torch = pytest.importorskip("torch")

from amplint.config import Config  # noqa: E402
from amplint.fix.apply import fix_text  # noqa: E402
from amplint.fix.plan import HIDDEN_DISTRIBUTION_REASON  # noqa: E402

pytestmark = pytest.mark.torch

HEADER = '''\
import torch
import torch.distributions as D


def make(out):
    return D.Normal(out, out.exp())


'''
# (function body, whether amplint can fix it: the constructor is visible, in place or in a function of the file)
CASES = {
    "parameter": ('''\
def run(head, h, x, dist=None):
    dist = dist if dist is not None else make(head(h).float())
    with torch.autocast("cpu", dtype=torch.float16):
        return D.Independent(dist, 1).log_prob(head(h))
''', False),
    "factory_result": ('''\
def run(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        base = make(out)
        return D.Independent(base, 1).log_prob(x)
''', True),  # `make` is in this file: its constructor is cast where it is built (issue 13)
    "attribute": ('''\
class Holder:
    pass


def run(head, h, x):
    holder = Holder()
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        holder.base = D.Normal(out, out.exp())
        return D.Independent(holder.base, 1).log_prob(x)
''', False),
    "tuple_assigned": ('''\
def run(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        base, unused = D.Normal(out, out.exp()), 1
        return D.Independent(base, 1).log_prob(x)
''', True),  # a tuple of values binds element by element: the constructor is visible
    "keyword_slot": ('''\
def run(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        base = make(out)
        return D.Independent(base_distribution=base, reinterpreted_batch_ndims=1).log_prob(x)
''', True),
    "expanded_inline": ('''\
def run(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        return D.Independent(D.Normal(out, out.exp()).expand(out.shape), 1).log_prob(x)
''', True),
    "nested_inline": ('''\
def run(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        return D.Independent(D.Independent(D.Normal(out, out.exp()), 1), 0).log_prob(x)
''', True),
}


def _load(code: str) -> Callable:
    namespace: Dict[str, object] = {}
    exec(compile(code, "<fixed snippet>", "exec"), namespace)
    return namespace["run"]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def inputs():
    generator = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(4, 4)
    h = torch.randn(8, 4, generator=generator)
    x = torch.randn(8, 4, generator=generator)
    return head, h, x


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_fixed_code_runs_and_casts_tensors_only(name: str, strategy: str, inputs) -> None:
    body, fixable = CASES[name]
    code = HEADER + body
    _load(code)(*inputs)  # the snippet itself runs
    fix = fix_text(code, "snippet.py", Config(strategy=strategy))
    assert not isinstance(fix, Exception) and hasattr(fix, "fixed"), fix
    assert ".float(), 1)" not in fix.fixed and "base.float()" not in fix.fixed and "dist.float()" not in fix.fixed
    with torch.no_grad():
        values = _load(fix.fixed)(*inputs)  # AttributeError before issue 17's fix
    assert torch.isfinite(values).all()
    if fixable:
        assert fix.changed
        assert "D.Normal(out.float(), out.float().exp())" in fix.fixed
        assert values.dtype == torch.float32
    else:
        assert not fix.changed
        assert [s.reason for s in fix.skipped] == [HIDDEN_DISTRIBUTION_REASON]
