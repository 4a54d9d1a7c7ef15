"""`facts.kernels` over CPython's tree: a Gaussian's, Student-t's or Cauchy's density written out with no log.

Same shapes, same answers (`tests/test_ast_summary.py` holds them equal). The screens' syntax-only test, a
superset of what `kernel` takes but for a Gaussian's (its `exp` is a call they count), is
`amplint.screen.kernel_candidate`.
"""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Tuple

from amplint.facts.astmathenv import Env
from amplint.facts.astprobmath import (
    additive_terms, first_arg, function_call, has, is_additive, is_square_of_tensor, leaves, mentions_pi, method_call,
    number_value, receiver,
)
from amplint.facts.mathnames import EXP_FUNCTIONS, POW_FUNCTIONS, POW_METHODS, SUM_FUNCTIONS, SUM_METHODS

_EXP_METHODS = frozenset({"exp"})
_SQRT_METHODS = frozenset({"sqrt"})
_SQRT_FUNCTIONS = frozenset({"math.sqrt", "torch.sqrt", "numpy.sqrt"})  # `kernels._normaliser`'s
_DEPTH = 2  # `kernels._DEPTH`


def kernel(node: ast.expr, env: Env) -> Optional[List[ast.expr]]:
    """`kernels.kernel`: the kernel's tensor operands, else None."""
    if _student(node, env) or _cauchy(node, env) or _gaussian(node, env):
        return list(leaves(node, env))
    return None


def _student(node: ast.expr, env: Env) -> bool:
    power = _power(node, env)
    return power is not None and _negative(power[1], env) and _one_plus_square(power[0], env, _DEPTH)


def _cauchy(node: ast.expr, env: Env) -> bool:
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)) or number_value(node.left) is None:
        return False
    return any(_one_plus_square(factor, env, _DEPTH) for factor, _ in _factors(node.right))


def _gaussian(node: ast.expr, env: Env) -> bool:
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div))):
        return False
    factors = list(_factors(node))
    kernels = [f for f, divides in factors if not divides and _exp_of_negated_square(f, env)]
    return any(_normaliser(f, divides, env) for k in kernels for f, divides in factors if f is not k)


def _factors(node: ast.expr, divides: bool = False) -> Iterator[Tuple[ast.expr, bool]]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        yield from _factors(node.left, divides)
        yield from _factors(node.right, divides != isinstance(node.op, ast.Div))
    else:
        yield node, divides


def _normaliser(factor: ast.expr, divides: bool, env: Env) -> bool:
    if divides and number_value(factor) is None and not _is_name_of_number(factor, env):
        return not _reduction(factor, env)  # `k / k.sum()` weighs a grid: a blur, not a density
    return mentions_pi(factor, env) or function_call(factor, _SQRT_FUNCTIONS, env) is not None or method_call(
        factor, _SQRT_METHODS, env) is not None



def _reduction(node: ast.expr, env: Env) -> bool:
    return method_call(node, SUM_METHODS, env) is not None or function_call(node, SUM_FUNCTIONS, env) is not None


def _is_name_of_number(node: ast.expr, env: Env) -> bool:
    values = env.values(node.id) if isinstance(node, ast.Name) else ()
    return bool(values) and all(number_value(v) is not None for v in values)


def _exp_of_negated_square(node: ast.expr, env: Env) -> bool:
    values = env.values(node.id) if isinstance(node, ast.Name) else ()
    operand = _exp_operand(values[0] if len(values) == 1 else node, env)
    return operand is not None and _negative(operand, env) and has(operand, env, is_square_of_tensor)


def _exp_operand(node: ast.expr, env: Env) -> Optional[ast.expr]:
    call = function_call(node, EXP_FUNCTIONS, env)
    if call is not None:
        return first_arg(call)
    call = method_call(node, _EXP_METHODS, env)
    return receiver(call) if call is not None and not call.args and not call.keywords else None


def _power(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ast.expr]]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return node.left, node.right
    call = method_call(node, POW_METHODS, env)
    if call is not None:
        exponent = first_arg(call)
        return None if exponent is None else (receiver(call), exponent)
    call = function_call(node, POW_FUNCTIONS, env)
    positional = [] if call is None or any(isinstance(a, ast.Starred) for a in call.args) else call.args
    return (positional[0], positional[1]) if len(positional) == 2 else None


def _negative(node: ast.expr, env: Env) -> bool:
    value = number_value(node)
    if value is not None:
        return value < 0
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, ast.USub)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        return _negative(node.left, env) != _negative(node.right, env)
    values = env.values(node.id) if isinstance(node, ast.Name) else ()
    numbers = [number_value(v) for v in values]
    return bool(numbers) and all(n is not None and n < 0 for n in numbers)


def _one_plus_square(node: ast.expr, env: Env, depth: int) -> bool:
    if isinstance(node, ast.Name) and depth > 0:
        values = env.values(node.id)
        return len(values) == 1 and _one_plus_square(values[0], env, depth - 1)
    if not (is_additive(node) and isinstance(node.op, ast.Add)):  # type: ignore[attr-defined]
        return False
    terms = list(additive_terms(node, env))
    return len(terms) == 2 and any(number_value(t) == 1 for t in terms) and any(
        number_value(t) is None and has(t, env, is_square_of_tensor) for t in terms)
