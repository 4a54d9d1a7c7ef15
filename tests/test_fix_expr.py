"""How one input expression is cast: before transforms, never twice, parenthesised only when needed."""
from __future__ import annotations

import libcst as cst
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplint.fix.expr import cast_expression, wide_predicate
from amplint.names import collect_imports

IMPORTS = "import torch\nimport torch.nn.functional as F\nfrom torch import sigmoid\n"
TABLE = collect_imports(cst.parse_module(IMPORTS))
WIDE = wide_predicate(TABLE, lambda name: name == "mu32")


def cast(code: str) -> str:
    node = cst.parse_expression(code)
    return cst.Module([]).code_for_node(cast_expression(node, TABLE, WIDE))


@pytest.mark.parametrize(
    "before, after",
    [
        ("mu", "mu.float()"),
        ("self.mu", "self.mu.float()"),
        ("model(h)", "model(h).float()"),
        ("out[:, 0]", "out[:, 0].float()"),
        # Cast before the transform.
        ("log_sigma.exp()", "log_sigma.float().exp()"),
        ("torch.exp(log_sigma)", "torch.exp(log_sigma.float())"),
        ("F.softplus(raw)", "F.softplus(raw.float())"),
        ("raw.sigmoid()", "raw.float().sigmoid()"),
        ("sigmoid(raw)", "sigmoid(raw.float())"),
        ("torch.sigmoid(raw)", "torch.sigmoid(raw.float())"),
        ("logits.softmax(-1)", "logits.float().softmax(-1)"),
        ("F.softmax(logits, dim=-1)", "F.softmax(logits.float(), dim=-1)"),
        ("1e-3 * torch.sigmoid(raw)", "1e-3 * torch.sigmoid(raw.float())"),
        ("torch.sigmoid(raw) * 1e-3 + 1e-4", "torch.sigmoid(raw.float()) * 1e-3 + 1e-4"),
        ("F.softplus(raw) + 1e-4", "F.softplus(raw.float()) + 1e-4"),
        ("log_sigma.exp().clamp(min=1e-4)", "log_sigma.float().exp().clamp(min=1e-4)"),
        ("out[:, 1].exp()[..., None]", "out[:, 1].float().exp()[..., None]"),
        ("-log_sigma", "-log_sigma.float()"),
        # Operands that may be Python numbers or shapes: cast the whole expression.
        ("mu + delta", "(mu + delta).float()"),
        ("mu * k", "(mu * k).float()"),
        ("x.view(n, -1)", "x.float().view(n, -1)"),  # shape arguments are not operands: cast the tensor
        ("torch.clamp(s, min=lo)", "torch.clamp(s.float(), min=lo)"),  # so are clamp bounds
        ("a if c else b", "(a if c else b).float()"),
        ("(mu + delta)", "(mu + delta).float()"),
        # Already float32, or a number: unchanged.
        ("mu.float()", "mu.float()"),
        ("mu32", "mu32"),
        ("mu.to(torch.float32)", "mu.to(torch.float32)"),
        ("mu32.exp()", "mu32.exp()"),
        ("0.5", "0.5"),
    ],
)
def test_cast_expression(before: str, after: str) -> None:
    assert cast(before) == after


NAMES = st.sampled_from(["mu", "raw", "mu32", "self.s", "out[:, 0]", "model(h)"])
NUMBERS = st.sampled_from(["1e-3", "2", "0.5"])


def _expressions() -> st.SearchStrategy:
    def extend(inner: st.SearchStrategy) -> st.SearchStrategy:
        return st.one_of(
            inner.map(lambda e: f"({e}).exp()"),
            inner.map(lambda e: f"torch.sigmoid({e})"),
            inner.map(lambda e: f"F.softplus({e})"),
            inner.map(lambda e: f"({e}).softmax(-1)"),
            inner.map(lambda e: f"-({e})"),
            st.tuples(NUMBERS, inner).map(lambda p: f"{p[0]} * ({p[1]})"),
            st.tuples(inner, inner).map(lambda p: f"({p[0]}) + ({p[1]})"),
            inner.map(lambda e: f"({e})[..., 0]"),
        )

    return st.recursive(NAMES, extend, max_leaves=6)


@settings(max_examples=150, deadline=None)
@given(_expressions())
def test_any_cast_is_wide_valid_and_stable(code: str) -> None:
    result = cast(code)
    node = cst.parse_expression(result)
    assert WIDE(node), result
    assert cast(result) == result  # casting a cast expression changes nothing
    compile(result, "<expr>", "eval")
