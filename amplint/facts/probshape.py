"""Hand-written probability math recognized once, for both trees: `facts.probmath` reads LibCST's nodes and
`facts.astprobmath` CPython's, through a `Reader` that says what a node of its tree is, so the two cannot drift
apart. Where the trees disagree on purpose (a call's parentheses, an attribute's name), the reader says so.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence, Tuple

from amplint.facts.mathnames import FLOOR_FUNCTIONS, FLOOR_METHODS

DEPTH = 4  # how many assignments back a name is followed
_TENSOR = frozenset({"torch.tensor"})

Floor = Tuple[Any, float]  # a floor's bound as written, and its value


class Reader(Protocol):
    """What one tree's nodes are, as the recognizers below ask it, within one function's bindings."""

    def plus_operand(self, node: Any) -> Optional[Any]:
        """The operand of a unary plus, else None."""

    def operation(self, node: Any) -> Optional[Tuple[str, Any, Any]]:
        """("+" | "-" | "*" | "/" | "**" | "other", left, right) of a binary operation, else None."""

    def is_literal(self, node: Any) -> bool:
        """An int or float literal as written, unsigned; not True, False or complex."""

    def literal_number(self, node: Any) -> Optional[float]:
        """A literal's value; None where it is no literal or overflows a float."""

    def name(self, node: Any) -> Optional[str]:
        """A bare name's identifier, else None."""

    def self_attribute(self, node: Any) -> Optional[str]:
        """`x` of `self.x`, else None."""

    def values(self, name: str) -> Sequence[Any]:
        """What the function binds `name` to."""

    def attribute_values(self, attr: str) -> Sequence[Any]:
        """What the class's methods bind `self.attr` to."""

    def constant_value(self, name: str) -> Optional[float]:
        """A module constant's number (`EPS = 1e-10`), else None."""

    def function_call(self, node: Any, names: frozenset) -> Optional[Any]:
        """`node` when it is a call of one of the qualified `names` (`torch.clamp`), else None."""

    def method_call(self, node: Any, names: frozenset) -> Optional[Any]:
        """`node` when it is `x.name(...)` on a value (not on an imported module), else None."""

    def first_arg(self, call: Any) -> Optional[Any]:
        """The first positional argument, or `input=`."""

    def receiver(self, call: Any) -> Any:
        """`x` of `x.name(...)`."""

    def arguments(self, call: Any) -> Sequence[Tuple[Optional[str], str, Any]]:
        """(keyword, star, value) of each argument, in source order."""


def unwrap(node: Any, tree: Reader) -> Any:
    """Without unary pluses: `+x` is `x` (LibCST's parentheses stay on the node, CPython has none)."""
    operand = tree.plus_operand(node)
    while operand is not None:
        node = operand
        operand = tree.plus_operand(node)
    return node


def strip_floor(node: Any, tree: Reader) -> Tuple[Any, Optional[Floor]]:
    """`p + eps`, `eps + p`, `p.clamp(min=eps)`, `torch.clamp(p, eps)`, `torch.maximum(p, tensor(eps))`:
    (p, (eps as written, its value)). The floor is None unless it is certainly a small positive number."""
    node = unwrap(node, tree)
    operation = tree.operation(node)
    if operation is not None and operation[0] == "+":
        _, left, right = operation
        value = literal_value(right, tree)
        if value is not None:
            return left, (right, value)
        value = literal_value(left, tree)
        if value is not None:
            return right, (left, value)
        return node, None
    call = tree.function_call(node, FLOOR_FUNCTIONS)
    if call is not None:
        operand = tree.first_arg(call)
        bound = _floor_bound(call, 1, tree)
        if bound is not None and tree.function_call(bound, _TENSOR) is not None:
            bound = tree.first_arg(bound)
        value = None if bound is None else literal_value(bound, tree)
        if operand is not None:
            return operand, None if value is None or bound is None else (bound, value)
    call = tree.method_call(node, FLOOR_METHODS)
    if call is not None:
        bound = _floor_bound(call, 0, tree)
        value = None if bound is None else literal_value(bound, tree)
        return tree.receiver(call), None if value is None or bound is None else (bound, value)
    return node, None


def _floor_bound(call: Any, position: int, tree: Reader) -> Optional[Any]:
    """`min=`/`other=`, else the `position`th positional argument: what a clamp or maximum floors at."""
    arguments = tree.arguments(call)
    for keyword, _, value in arguments:
        if keyword in ("min", "other"):
            return value
    positional = [value for keyword, star, value in arguments if keyword is None and not star]
    return positional[position] if len(positional) > position else None


def literal_value(node: Any, tree: Reader, depth: int = DEPTH) -> Optional[float]:
    """A small positive float the expression certainly is: a literal, or a name/attribute bound only to one."""
    node = unwrap(node, tree)
    if tree.is_literal(node):
        value = tree.literal_number(node)
        return value if value is not None and 0 < value < 1 else None
    if depth == 0:
        return None
    bound: Sequence[Any] = ()
    name = tree.name(node)
    if name is not None:
        bound = tree.values(name)
        constant = tree.constant_value(name)  # a module constant: `EPS = 1e-10`
        if constant is not None:
            return constant if 0 < constant < 1 else None
    else:
        attr = tree.self_attribute(node)
        if attr is not None:
            bound = tree.attribute_values(attr)
    values = {literal_value(value, tree, depth - 1) for value in bound}
    if len(values) == 1:
        return values.pop()
    return None
