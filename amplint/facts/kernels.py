"""`facts.kernelshape` on LibCST's tree: a density written out with no log (`(1 + z ** 2 / nu) ** -k`,
`1 / (pi * s * (1 + z ** 2))`, `exp(-0.5 * z ** 2) / sigma`), judged as a site by `mathsites._kernel_site`."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import libcst as cst

from amplint.facts.kernelshape import is_kernel
from amplint.facts.mathcalls import first_arg, function_call, method_call, number_value, receiver
from amplint.facts.mathenv import Env
from amplint.facts.mathnames import (
    EXP_FUNCTIONS, EXP_METHODS, POW_FUNCTIONS, POW_METHODS, SQRT_FUNCTIONS, SQRT_METHODS, SUM_FUNCTIONS, SUM_METHODS,
)
from amplint.facts.probmath import additive_terms, has, is_square_of_tensor, leaves, mentions_pi

_OPERATORS = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.Power: "**"}

Found = Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]  # (its tensor operands, its anchor)


def kernel(node: cst.BaseExpression, env: Env) -> Found:
    """A density kernel at `node`: its tensor operands and where it is reported (the node), else None."""
    return (tuple(leaves(node, env)), node) if is_kernel(node, _Reader(env)) else None


def binary_operation(node: cst.BaseExpression) -> Optional[Tuple[str, cst.BaseExpression, cst.BaseExpression]]:
    """("+" | "-" | "*" | "/" | "**", left, right) of a binary operation, else None: what both shapes' readers
    (`kernelshape`, `logparamshape`) say of one."""
    if type(node) is not cst.BinaryOperation:
        return None
    operator = _OPERATORS.get(type(node.operator))  # type: ignore[attr-defined]
    return None if operator is None else (operator, node.left, node.right)  # type: ignore[attr-defined]


class _Reader:
    """`kernelshape.Reader` over LibCST's nodes, within one function's bindings."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def operation(self, node: cst.BaseExpression) -> Optional[Tuple[str, cst.BaseExpression, cst.BaseExpression]]:
        return binary_operation(node)

    def minus(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        minus = type(node) is cst.UnaryOperation and type(node.operator) is cst.Minus
        return node.expression if minus else None  # type: ignore[attr-defined]

    def number(self, node: cst.BaseExpression) -> Optional[float]:
        return number_value(node)

    def bound(self, node: cst.BaseExpression) -> Sequence[cst.BaseExpression]:
        return self.env.values(node.value) if type(node) is cst.Name else ()

    def power_call(self, node: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression]]:
        call = method_call(node, POW_METHODS, self.env)
        if call is not None:
            exponent = first_arg(call)
            return None if exponent is None else (receiver(call), exponent)
        call = function_call(node, POW_FUNCTIONS, self.env)
        if call is None or any(a.star for a in call.args):
            return None
        positional = [a.value for a in call.args if a.keyword is None]
        return (positional[0], positional[1]) if len(positional) == 2 else None

    def exp_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        call = function_call(node, EXP_FUNCTIONS, self.env)
        if call is not None:
            return first_arg(call)
        call = method_call(node, EXP_METHODS, self.env)
        return receiver(call) if call is not None and not call.args else None

    def normalising(self, node: cst.BaseExpression) -> bool:
        return mentions_pi(node, self.env) or function_call(node, SQRT_FUNCTIONS, self.env) is not None or (
            method_call(node, SQRT_METHODS, self.env) is not None)

    def reduction(self, node: cst.BaseExpression) -> bool:
        return method_call(node, SUM_METHODS, self.env) is not None or (
            function_call(node, SUM_FUNCTIONS, self.env) is not None)

    def has_square(self, node: cst.BaseExpression) -> bool:
        return has(node, self.env, is_square_of_tensor)

    def terms(self, node: cst.BaseExpression) -> Sequence[cst.BaseExpression]:
        return list(additive_terms(node))
