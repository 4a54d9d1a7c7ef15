"""`facts.logparamshape` on LibCST's tree: a density in log-parameter form (`s + (x - mu) ** 2 * torch.exp(-s)`,
`eta.exp() - k * eta`) and a log of a scale made from an activation (`torch.log(F.softplus(s))`), judged as
sites by `mathsites`."""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import libcst as cst

from amplint.dtypes import is_cast_call
from amplint.facts import logparamshape
from amplint.facts.kernels import binary_operation
from amplint.facts.logparamshape import SCALE_DEPTH, is_log_parameter_form
from amplint.facts.mathcalls import first_arg, function_call, method_call, receiver
from amplint.facts.mathenv import Env, self_attribute
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS, SCALE_FUNCTIONS, SCALE_METHODS, python_math
from amplint.facts.probmath import additive_terms, first_sum, leaves, strip_floor
from amplint.names import dotted_name
from amplint.screen import LOG_METHODS

# The exp of a log-parameter, or the log of a rate: either ties the term's tensor to another term's.
_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS


def log_parameter_form(node: cst.BaseExpression, env: Env
                       ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """(its tensor operands, where it starts) for a sum in log-parameter form, else None."""
    if not is_log_parameter_form(node, _Reader(env)):
        return None
    return tuple(op for term in additive_terms(node) for op in leaves(term, env)), first_sum(node)


def is_positive_transform(node: cst.BaseExpression, env: Env, depth: int = SCALE_DEPTH) -> bool:
    """`logparamshape.is_positive_transform`: its log is a log-normaliser float16 sends to -inf."""
    return logparamshape.is_positive_transform(node, _Reader(env), depth)


class _Reader:
    """`logparamshape.Reader` over LibCST's nodes, within one function's bindings."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def operation(self, node: cst.BaseExpression) -> Optional[Tuple[str, cst.BaseExpression, cst.BaseExpression]]:
        return binary_operation(node)

    def signed(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        signed = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus))
        return node.expression if signed else None  # type: ignore[attr-defined]

    def literal(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.Integer, cst.Float))

    def math_constant(self, node: cst.BaseExpression) -> bool:
        name = dotted_name(node) if isinstance(node, cst.Attribute) else None
        return name is not None and python_math(name, self.env.imports)

    def written(self, node: cst.BaseExpression) -> Optional[str]:
        if isinstance(node, (cst.Name, cst.Attribute)):
            return dotted_name(node)
        if isinstance(node, cst.Call):  # LibCST keeps a call's parentheses on the node: `(f(x))` is `f(x)`
            return "".join(cst.Module([]).code_for_node(node.with_changes(lpar=(), rpar=())).split())
        return None

    def floor_stripped(self, node: cst.BaseExpression) -> cst.BaseExpression:
        return strip_floor(node, self.env)[0]

    def exponent_argument(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        call = function_call(node, _OF_EXPONENT, self.env)
        if call is not None:
            return first_arg(call)
        call = method_call(node, _EXPONENT_METHODS, self.env)
        return None if call is None else receiver(call)

    def scale_call(self, node: cst.BaseExpression) -> bool:
        return function_call(node, SCALE_FUNCTIONS, self.env) is not None or (
            method_call(node, SCALE_METHODS, self.env) is not None)

    def cast_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        cast = isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and is_cast_call(
            node, self.env.imports)
        return node.func.value if cast else None  # type: ignore[attr-defined]

    def local_values(self, node: cst.BaseExpression) -> Optional[Sequence[cst.BaseExpression]]:
        local = isinstance(node, cst.Name) and self.env.is_local(node.value)
        return self.env.values(node.value) if local else None  # type: ignore[attr-defined]

    def attribute_values(self, node: cst.BaseExpression) -> Sequence[cst.BaseExpression]:
        attr = self_attribute(node)
        return () if attr is None else self.env.attribute_values(attr)
