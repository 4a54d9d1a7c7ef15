"""Densities written out with no log: the kernel of a Gaussian, a Student-t or a Cauchy, read from its shape.

A mixture density network writes `torch.exp(-0.5 * ((y - mu) / sigma) ** 2) / sigma`; a Student-t head or a
soft cluster assignment writes `(1 + z ** 2 / nu) ** (-(nu + 1) / 2)` or `1 / (1 + d ** 2)`. float16 loses
them as it loses their log forms: a squared deviation above 256 overflows, so the kernel is 0 and its log
`-inf`, and a quotient by a small scale overflows first. Three shapes, each over a squared tensor:

- a negative power of one plus a square (`pow(1 + q, -k)`, `(1 + q) ** -k`): a Student-t kernel;
- a number divided by one plus a square, alone or in a product (`1 / (pi * s * (1 + z ** 2))`): a Cauchy's;
- `exp` of a negated square in a product with a normaliser (a divisor that is neither a number nor a sum, a
  square root, or a factor that names pi): a Gaussian's. Without a normaliser it is as often a similarity
  (an RBF kernel), and divided by its own sum it weighs a grid (a blur): no site.

One recognizer for both trees: a `Reader` says what a node of its tree is (`facts.cstreader` for LibCST's,
`facts.astreader` for CPython's; `facts.kernels` and `facts.astkernels` ask), so the two cannot drift apart.
"""
from __future__ import annotations

from typing import Any, Iterator, Optional, Protocol, Tuple

from amplint.facts import probshape
from amplint.facts.mathnames import EXP_FUNCTIONS, EXP_METHODS, SQRT_FUNCTIONS, SQRT_METHODS, SUM_FUNCTIONS, SUM_METHODS
from amplint.facts.shapereader import bound_values, number_value
from amplint.facts.sumshape import additive_terms, has, is_square_of_tensor, mentions_pi

_DEPTH = 2  # how many assignments back a kernel's base or factor is followed


class Reader(probshape.Reader, Protocol):
    """What one tree's nodes are, as the shapes below ask it, within one function's bindings: `probshape`'s
    questions, and a power written as a call."""

    def power_call(self, node: Any) -> Optional[Tuple[Any, Any]]:
        """(base, exponent) of `b.pow(e)` or `torch.pow(b, e)`, else None."""


def is_kernel(node: Any, tree: Reader) -> bool:
    """Is `node` (a power, a quotient or a product) a Student-t's, a Cauchy's or a Gaussian's kernel?"""
    return _student(node, tree) or _cauchy(node, tree) or _gaussian(node, tree)


def _student(node: Any, tree: Reader) -> bool:
    operation = tree.operation(node)
    power = (operation[1], operation[2]) if operation and operation[0] == "**" else tree.power_call(node)
    return power is not None and _negative(power[1], tree) and _one_plus_square(power[0], tree, _DEPTH)


def _cauchy(node: Any, tree: Reader) -> bool:
    operation = tree.operation(node)
    if operation is None or operation[0] != "/" or number_value(operation[1], tree) is None:
        return False
    return any(_one_plus_square(factor, tree, _DEPTH) for factor, _ in _factors(operation[2], tree))


def _gaussian(node: Any, tree: Reader) -> bool:
    operation = tree.operation(node)
    if operation is None or operation[0] not in ("*", "/"):
        return False
    factors = list(_factors(node, tree))
    kernels = [f for f, divides in factors if not divides and _exp_of_negated_square(f, tree)]
    return any(_normaliser(f, divides, tree) for k in kernels for f, divides in factors if f is not k)


def _factors(node: Any, tree: Reader, divides: bool = False) -> Iterator[Tuple[Any, bool]]:
    """The factors of a product or quotient chain, each with whether it divides: `a * b / c` gives a, b, c."""
    operation = tree.operation(node)
    if operation is not None and operation[0] in ("*", "/"):
        yield from _factors(operation[1], tree, divides)
        yield from _factors(operation[2], tree, divides != (operation[0] == "/"))
    else:
        yield node, divides


def _normaliser(factor: Any, divides: bool, tree: Reader) -> bool:
    """A density's normaliser beside its kernel: a divisor that is no number (`/ sigma`), a square root, or pi.
    A sum divides a grid's weights (`k / k.sum()`): a blur, not a density."""
    if divides and number_value(factor, tree) is None and not _name_of_number(factor, tree):
        return not _reduction(factor, tree)
    return _normalising(factor, tree)


def _name_of_number(node: Any, tree: Reader) -> bool:
    values = bound_values(node, tree)
    return bool(values) and all(number_value(v, tree) is not None for v in values)


def _exp_of_negated_square(node: Any, tree: Reader) -> bool:
    """`exp(-0.5 * z ** 2)`, or a name bound once to one."""
    values = bound_values(node, tree)
    operand = _exp_operand(values[0] if len(values) == 1 else node, tree)
    return operand is not None and _negative(operand, tree) and _has_square(operand, tree)


def _negative(node: Any, tree: Reader) -> bool:
    """Written negative: `-k`, `-0.5 * q`, `-(nu + 1) / 2`, or a name bound only to negative numbers."""
    value = number_value(node, tree)
    if value is not None:
        return value < 0
    if tree.minus_operand(node) is not None:
        return True
    operation = tree.operation(node)
    if operation is not None:
        return operation[0] in ("*", "/") and _negative(operation[1], tree) != _negative(operation[2], tree)
    numbers = [number_value(v, tree) for v in bound_values(node, tree)]
    return bool(numbers) and all(n is not None and n < 0 for n in numbers)


def _one_plus_square(node: Any, tree: Reader, depth: int) -> bool:
    """`1 + q` (or `q + 1`) where `q` holds a squared tensor: a Student-t's or Cauchy's base; names followed.
    One, not any number: `d + 1e-12` is a floor."""
    values = bound_values(node, tree)
    if values:
        return depth > 0 and len(values) == 1 and _one_plus_square(values[0], tree, depth - 1)
    operation = tree.operation(node)
    if operation is None or operation[0] != "+":
        return False
    terms = list(additive_terms(node, tree))
    return len(terms) == 2 and any(number_value(t, tree) == 1 for t in terms) and any(
        number_value(t, tree) is None and _has_square(t, tree) for t in terms)


def _exp_operand(node: Any, tree: Reader) -> Optional[Any]:
    """`x` of `torch.exp(x)` or `x.exp()`, else None."""
    call = tree.function_call(node, EXP_FUNCTIONS)
    if call is not None:
        return tree.first_arg(call)
    call = tree.method_call(node, EXP_METHODS)
    return tree.receiver(call) if call is not None and not tree.has_arguments(call) else None


def _normalising(node: Any, tree: Reader) -> bool:
    """A square root, or a factor that names pi."""
    return mentions_pi(node, tree) or tree.function_call(node, SQRT_FUNCTIONS) is not None or (
        tree.method_call(node, SQRT_METHODS) is not None)


def _reduction(node: Any, tree: Reader) -> bool:
    """A sum (`k.sum()`, `torch.sum(k)`)."""
    return tree.method_call(node, SUM_METHODS) is not None or tree.function_call(node, SUM_FUNCTIONS) is not None


def _has_square(node: Any, tree: Reader) -> bool:
    """Does `node`, or what its names are bound to, hold a squared tensor?"""
    return has(node, tree, is_square_of_tensor)
