"""`facts.kernelshape` on CPython's tree: `kernels` for the summary reader (`astmathsites`). The screens' syntax-only
test, a superset of what it takes but for a Gaussian's (its `exp` is a call they count), is
`amplint.screen.kernel_candidate`."""
from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Tuple

from amplint.facts.astmathenv import Env
from amplint.facts.astprobmath import (
    additive_terms, first_arg, function_call, has, is_square_of_tensor, leaves, mentions_pi, method_call,
    number_value, receiver,
)
from amplint.facts.kernelshape import is_kernel
from amplint.facts.mathnames import (
    EXP_FUNCTIONS, EXP_METHODS, POW_FUNCTIONS, POW_METHODS, SQRT_FUNCTIONS, SQRT_METHODS, SUM_FUNCTIONS, SUM_METHODS,
)

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def kernel(node: ast.expr, env: Env) -> Optional[List[ast.expr]]:
    """`kernels.kernel`: the kernel's tensor operands, else None."""
    return list(leaves(node, env)) if is_kernel(node, _Reader(env)) else None


def binary_operation(node: ast.expr) -> Optional[Tuple[str, ast.expr, ast.expr]]:
    """("+" | "-" | "*" | "/" | "**", left, right) of a binary operation, else None: what both shapes' readers
    (`kernelshape`, `logparamshape`) say of one."""
    if type(node) is not ast.BinOp:
        return None
    operator = _OPERATORS.get(type(node.op))  # type: ignore[attr-defined]
    return None if operator is None else (operator, node.left, node.right)  # type: ignore[attr-defined]


class _Reader:
    """`kernelshape.Reader` over CPython's nodes: `kernels._Reader`'s answers."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def operation(self, node: ast.expr) -> Optional[Tuple[str, ast.expr, ast.expr]]:
        return binary_operation(node)

    def minus(self, node: ast.expr) -> Optional[ast.expr]:
        return node.operand if type(node) is ast.UnaryOp and type(node.op) is ast.USub else None

    def number(self, node: ast.expr) -> Optional[float]:
        return number_value(node)

    def bound(self, node: ast.expr) -> Sequence[ast.expr]:
        return self.env.values(node.id) if type(node) is ast.Name else ()

    def power_call(self, node: ast.expr) -> Optional[Tuple[ast.expr, ast.expr]]:
        call = method_call(node, POW_METHODS, self.env)
        if call is not None:
            exponent = first_arg(call)
            return None if exponent is None else (receiver(call), exponent)
        call = function_call(node, POW_FUNCTIONS, self.env)
        if call is None or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        return (call.args[0], call.args[1]) if len(call.args) == 2 else None

    def exp_operand(self, node: ast.expr) -> Optional[ast.expr]:
        call = function_call(node, EXP_FUNCTIONS, self.env)
        if call is not None:
            return first_arg(call)
        call = method_call(node, EXP_METHODS, self.env)
        return receiver(call) if call is not None and not call.args and not call.keywords else None

    def normalising(self, node: ast.expr) -> bool:
        return mentions_pi(node, self.env) or function_call(node, SQRT_FUNCTIONS, self.env) is not None or (
            method_call(node, SQRT_METHODS, self.env) is not None)

    def reduction(self, node: ast.expr) -> bool:
        return method_call(node, SUM_METHODS, self.env) is not None or (
            function_call(node, SUM_FUNCTIONS, self.env) is not None)

    def has_square(self, node: ast.expr) -> bool:
        return has(node, self.env, is_square_of_tensor)

    def terms(self, node: ast.expr) -> Sequence[ast.expr]:
        return list(additive_terms(node, self.env))
