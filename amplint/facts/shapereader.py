"""The node questions every shape recognizer asks of its tree (`probshape`, `sumshape`, `kernelshape`,
`logparamshape`, `siteshape`), declared once.

Each shape module's `Reader` extends `ShapeReader` with what only it asks; one class per tree answers all of them
(`facts.cstreader` for LibCST's nodes, `facts.astreader` for CPython's), so a question such as "is this a
literal?" has one answer per tree. `Nodes` is what a node's shape alone tells, without a function's bindings.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence, Tuple


class Nodes(Protocol):
    """What one tree's nodes are, as far as their shape alone tells: a sum's terms need no bindings."""

    def plus_operand(self, node: Any) -> Optional[Any]:
        """The operand of a unary plus, else None."""

    def minus_operand(self, node: Any) -> Optional[Any]:
        """The operand of a unary minus, else None."""

    def operation(self, node: Any) -> Optional[Tuple[str, Any, Any]]:
        """("+" | "-" | "*" | "/" | "**" | "other", left, right) of a binary operation, else None."""

    def parenthesized(self, node: Any) -> bool:
        """Written in parentheses of its own (LibCST keeps them on the node, CPython reads the text)."""


class ShapeReader(Nodes, Protocol):
    """The questions common to the shape modules, within one function's bindings."""

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

    def is_local(self, name: str) -> bool:
        """The function computes `name` itself (not a parameter, global or attribute)."""

    def function_call(self, node: Any, names: frozenset) -> Optional[Any]:
        """`node` when it is a call of one of the qualified `names` (`torch.clamp`), else None."""

    def method_call(self, node: Any, names: frozenset) -> Optional[Any]:
        """`node` when it is `x.name(...)` on a value (not on an imported module), else None."""

    def first_arg(self, call: Any) -> Optional[Any]:
        """The first positional argument, or `input=`."""

    def receiver(self, call: Any) -> Any:
        """`x` of `x.name(...)`."""

    def has_arguments(self, call: Any) -> bool:
        """The call passes anything at all."""

    def cast_operand(self, node: Any) -> Optional[Any]:
        """The receiver of a cast's method call (`x` of `x.float()`, `x.to(torch.float32)`), else None."""


def unwrap(node: Any, tree: Nodes) -> Any:
    """Without unary pluses: `+x` is `x` (LibCST's parentheses stay on the node, CPython has none)."""
    operand = tree.plus_operand(node)
    while operand is not None:
        node = operand
        operand = tree.plus_operand(node)
    return node


def number_value(node: Any, tree: ShapeReader) -> Optional[float]:
    """A number literal's value, signs included (`-1`, `1e-10`), else None."""
    node = unwrap(node, tree)
    if tree.is_literal(node):
        return tree.literal_number(node)
    operand = tree.minus_operand(node)
    if operand is None:
        return None
    inner = number_value(operand, tree)
    return None if inner is None else -inner


def bound_values(node: Any, tree: ShapeReader) -> Sequence[Any]:
    """What a name is bound to in the function (nothing for anything else)."""
    name = tree.name(node)
    return () if name is None else tree.values(name)


def local_values(node: Any, tree: ShapeReader) -> Optional[Sequence[Any]]:
    """What a local name is bound to; None for anything else (a parameter, a global, not a name)."""
    name = tree.name(node)
    return tree.values(name) if name is not None and tree.is_local(name) else None


def self_attribute_values(node: Any, tree: ShapeReader) -> Sequence[Any]:
    """What a `self.` attribute is bound to in the class (nothing for anything else)."""
    attr = tree.self_attribute(node)
    return () if attr is None else tree.attribute_values(attr)
