"""The argument parser behind verify: transform chains are recognised, never evaluated."""
from __future__ import annotations

import pytest

from amplint.transforms import Step, parse_chain


@pytest.mark.parametrize(
    "code, kinds, head",
    [
        ("sigma", (), "sigma"),
        ("self.sigma(h)", (), "self.sigma(h)"),
        ("log_sigma.exp()", ("exp",), "log_sigma"),
        ("torch.exp(self.head(h))", ("exp",), "self.head(h)"),
        ("F.softplus(raw)", ("softplus",), "raw"),
        ("1e-3 * torch.sigmoid(x)", ("scale", "sigmoid"), "x"),
        ("F.softplus(raw) + 1e-4", ("shift", "softplus"), "raw"),
        ("z.softmax(-1)", ("softmax",), "z"),
        ("torch.softmax(z, dim=-1)", ("softmax",), "z"),
        ("log_sigma.exp().float()", ("cast", "exp"), "log_sigma"),
        ("torch.exp(h.to(torch.float32))", ("exp", "cast"), "h"),
        ("x.to(dtype=torch.double)", ("cast",), "x"),
        ("F.softplus(raw, beta=2)", (), "F.softplus(raw, beta=2)"),  # not rebuilt: opaque
        ("x.exp(", (), "x.exp("),  # not Python: opaque, no crash
    ],
)
def test_chains(code: str, kinds: tuple, head: str) -> None:
    chain = parse_chain(code)
    assert tuple(step.kind for step in chain.steps) == kinds
    assert chain.head == head


def test_constants_and_dims_are_read_by_literal_eval_only() -> None:
    assert parse_chain("1e-3 * torch.sigmoid(x)").steps[0] == Step("scale", constant=1e-3)
    assert parse_chain("x / 2").steps[0] == Step("scale", constant=0.5)
    assert parse_chain("x - 1").steps[0] == Step("shift", constant=-1.0)
    assert parse_chain("z.log_softmax(dim=1)").steps[0] == Step("log_softmax", dim=1)
    assert parse_chain("x.to(torch.float64)").steps[0] == Step("cast", dtype="float64")
    # a non-literal factor is not a step: the whole expression is the head
    assert parse_chain("scale * torch.sigmoid(x)").steps == ()


def test_the_codemod_casts_the_head_not_the_transform() -> None:
    chain = parse_chain("log_sigma.exp()").with_leaf_cast()
    assert chain.describe() == "exp(head.to(float32))"
    already = parse_chain("log_sigma.float().exp()")
    assert already.with_leaf_cast() == already  # never cast twice


def test_hostile_text_is_parsed_as_an_opaque_head() -> None:
    code = "__import__('os').system('touch pwned')"
    chain = parse_chain(code)
    assert chain.steps == () and chain.head == code
