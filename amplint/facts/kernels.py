"""Densities written out with no log: the kernel of a Gaussian, a Student-t or a Cauchy, read from its shape.

A mixture density network writes `torch.exp(-0.5 * ((y - mu) / sigma) ** 2) / sigma`; a Student-t head or a
soft cluster assignment writes `(1 + z ** 2 / nu) ** (-(nu + 1) / 2)` or `1 / (1 + d ** 2)`. float16 loses
them as it loses their log forms: a squared deviation above 256 overflows, so the kernel is 0 and its log
`-inf`, and a quotient by a small scale overflows first. Three shapes, each over a squared tensor
(`probmath.is_square_of_tensor`, names followed):

- a negative power of one plus a square (`pow(1 + q, -k)`, `(1 + q) ** -k`): a Student-t kernel;
- a number divided by one plus a square, alone or in a product (`1 / (pi * s * (1 + z ** 2))`): a Cauchy's;
- `exp` of a negated square in a product with a normaliser (a divisor that is no number, or a factor that
  names pi): a Gaussian's. Without a normaliser it is as often a similarity (an RBF kernel), so no site.

`facts.astkernels` reads the same shapes on CPython's tree.
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Tuple

import libcst as cst

from amplint.facts.mathcalls import first_arg, function_call, method_call, number_value, receiver
from amplint.facts.mathenv import Env
from amplint.facts.mathnames import EXP_FUNCTIONS, POW_FUNCTIONS, POW_METHODS, SUM_FUNCTIONS, SUM_METHODS
from amplint.facts.probmath import additive_terms, has, is_additive, is_square_of_tensor, leaves, mentions_pi

_EXP_METHODS = frozenset({"exp"})
_SQRT = frozenset({"sqrt"})
_DEPTH = 2  # how many assignments back a kernel's base or a factor is followed

Found = Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]  # (its tensor operands, its anchor)


def kernel(node: cst.BaseExpression, env: Env) -> Found:
    """A density kernel at `node` (a power, a quotient or a product): its tensor operands and where it is
    reported (the node), else None."""
    if _student(node, env) or _cauchy(node, env) or _gaussian(node, env):
        return tuple(leaves(node, env)), node
    return None


def _student(node: cst.BaseExpression, env: Env) -> bool:
    power = _power(node, env)
    return power is not None and _negative(power[1], env) and _one_plus_square(power[0], env, _DEPTH)


def _cauchy(node: cst.BaseExpression, env: Env) -> bool:
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide)):
        return False
    if number_value(node.left) is None:
        return False
    return any(_one_plus_square(factor, env, _DEPTH) for factor, _ in _factors(node.right))


def _gaussian(node: cst.BaseExpression, env: Env) -> bool:
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide))):
        return False
    factors = list(_factors(node))
    kernels = [f for f, divides in factors if not divides and _exp_of_negated_square(f, env)]
    return any(_normaliser(f, divides, env) for k in kernels for f, divides in factors if f is not k)


def _factors(node: cst.BaseExpression, divides: bool = False) -> Iterator[Tuple[cst.BaseExpression, bool]]:
    """The factors of a product or quotient chain, each with whether it divides: `a * b / c` gives a, b, c."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide)):
        yield from _factors(node.left, divides)
        yield from _factors(node.right, divides != isinstance(node.operator, cst.Divide))
    else:
        yield node, divides


def _normaliser(factor: cst.BaseExpression, divides: bool, env: Env) -> bool:
    """A density's normaliser beside its kernel: a divisor that is no number (`/ sigma`), a square root, or pi."""
    if divides and number_value(factor) is None and not _is_name_of_number(factor, env):
        return not _reduction(factor, env)  # `k / k.sum()` weighs a grid: a blur, not a density
    return mentions_pi(factor, env) or function_call(factor, frozenset({"math.sqrt", "torch.sqrt", "numpy.sqrt"}),
                                                     env) is not None or method_call(factor, _SQRT, env) is not None



def _reduction(node: cst.BaseExpression, env: Env) -> bool:
    return method_call(node, SUM_METHODS, env) is not None or function_call(node, SUM_FUNCTIONS, env) is not None


def _is_name_of_number(node: cst.BaseExpression, env: Env) -> bool:
    values = env.values(node.value) if isinstance(node, cst.Name) else ()
    return bool(values) and all(number_value(v) is not None for v in values)


def _exp_of_negated_square(node: cst.BaseExpression, env: Env) -> bool:
    """`exp(-0.5 * z ** 2)`, or a name bound once to one."""
    values = env.values(node.value) if isinstance(node, cst.Name) else ()
    operand = _exp_operand(values[0] if len(values) == 1 else node, env)
    return operand is not None and _negative(operand, env) and has(operand, env, is_square_of_tensor)


def _exp_operand(node: cst.BaseExpression, env: Env) -> Optional[cst.BaseExpression]:
    call = function_call(node, EXP_FUNCTIONS, env)
    if call is not None:
        return first_arg(call)
    call = method_call(node, _EXP_METHODS, env)
    return receiver(call) if call is not None and not call.args else None


def _power(node: cst.BaseExpression, env: Env) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(base, exponent) of `b ** e`, `b.pow(e)` or `torch.pow(b, e)`."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power):
        return node.left, node.right
    call = method_call(node, POW_METHODS, env)
    if call is not None:
        exponent = first_arg(call)
        return None if exponent is None else (receiver(call), exponent)
    call = function_call(node, POW_FUNCTIONS, env)
    args = call.args if call is not None and not any(a.star for a in call.args) else ()
    positional: List[cst.BaseExpression] = [a.value for a in args if a.keyword is None]
    return (positional[0], positional[1]) if len(positional) == 2 else None


def _negative(node: cst.BaseExpression, env: Env) -> bool:
    """Written negative: `-k`, `-0.5 * q`, `-(nu + 1) / 2`, or a name bound only to a negative number."""
    value = number_value(node)
    if value is not None:
        return value < 0
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, cst.Minus)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Multiply, cst.Divide)):
        return _negative(node.left, env) != _negative(node.right, env)
    values = env.values(node.value) if isinstance(node, cst.Name) else ()
    numbers = [number_value(v) for v in values]
    return bool(numbers) and all(n is not None and n < 0 for n in numbers)


def _one_plus_square(node: cst.BaseExpression, env: Env, depth: int) -> bool:
    """`1 + q` (or `q + 1`) where `q` holds a squared tensor: a Student-t's or Cauchy's base; names followed.
    One, not any number: `d + 1e-12` is a floor."""
    if isinstance(node, cst.Name) and depth > 0:
        values = env.values(node.value)
        return len(values) == 1 and _one_plus_square(values[0], env, depth - 1)
    if not (is_additive(node) and isinstance(node.operator, cst.Add)):  # type: ignore[union-attr]
        return False
    terms = list(additive_terms(node))
    return len(terms) == 2 and any(number_value(t) == 1 for t in terms) and any(
        number_value(t) is None and has(t, env, is_square_of_tensor) for t in terms)
