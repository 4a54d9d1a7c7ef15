"""Two small readings the value flow relies on (`project/flowcalls.py`): which calls may call a function, and
which parameters hold tensors (for which the flow, whose values are instances, functions, classes and
containers, has nothing to look for)."""
from __future__ import annotations

import ast

import pytest

from amplint.project.flowcalls import array_index, fits, tensor_annotated

FORWARD = ast.parse("def forward(self, x, mask=None, *, scale=1.0): pass").body[0]


@pytest.mark.parametrize("call, expected", [
    ("m(x)", True), ("m(x, y)", True), ("m(x, y, z)", False), ("m()", False), ("m(x, scale=2)", True),
    ("m(x, foo=2)", False), ("m(mask=1, x=2)", True), ("m(*a)", True), ("m(**kw)", True),
])
def test_a_call_fits_a_method_its_instance_runs(call: str, expected: bool) -> None:
    assert fits(ast.parse(call, mode="eval").body, FORWARD, 1) is expected  # type: ignore[arg-type]


def test_tensor_annotations() -> None:
    node = ast.parse("def f(model, h: torch.Tensor, y: Tensor, z: Optional[Tensor], *, w: int): pass").body[0]
    assert [tensor_annotated(node, n) for n in ("model", "h", "y", "z", "w", "missing")] == [
        False, True, True, False, False, False]


@pytest.mark.parametrize("read, expected", [
    ("x[:, -1, :]", True), ("x[..., 0]", True), ("x[0, ...]", True), ("x[:, None]", True),
    ("heads[0]", False), ("models[1:]", False), ("table[a, b]", False), ("d['pi']", False), ("x[None]", False),
])
def test_an_array_index_is_told_from_a_container_read(read: str, expected: bool) -> None:
    assert array_index(ast.parse(read, mode="eval").body.slice) is expected  # type: ignore[attr-defined]
