"""The shape modules' reader for LibCST's nodes: one class answers `probshape`'s, `sumshape`'s, `kernelshape`'s,
`logparamshape`'s and `siteshape`'s questions, within one function's bindings (`mathenv.Env`).

`CstNodes` answers what a node's shape alone tells (a sum's terms need no bindings); `CstReader` adds the rest.
`facts.astreader` is the reader for CPython's nodes, answering as this one does.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from amplint import dtypes
from amplint.cstwalk import inner_children, type_test
from amplint.facts.mathcalls import first_arg as _first_arg, function_call as _function, imported as _imported
from amplint.facts.mathcalls import method_call as _method, receiver as _receiver
from amplint.facts.mathenv import Env, self_attribute as _self_attribute
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS, PI_NAMES, POW_FUNCTIONS, POW_METHODS, python_math
from amplint.names import dotted_name
from amplint.screen import LOG_METHODS

_EXPRESSION = type_test(cst.BaseExpression)
_OPERATORS = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.Power: "**"}
# The exp of a log-parameter, or the log of a rate: either ties the term's tensor to another term's.
_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS


class CstNodes:
    """`shapereader.Nodes` over LibCST's nodes: what their shape alone tells."""

    def plus_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        plus = type(node) is cst.UnaryOperation and type(node.operator) is cst.Plus  # type: ignore[attr-defined]
        return node.expression if plus else None  # type: ignore[attr-defined]

    def minus_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        minus = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
        return node.expression if minus else None  # type: ignore[attr-defined]

    def operation(self, node: cst.BaseExpression) -> Optional[Tuple[str, cst.BaseExpression, cst.BaseExpression]]:
        if type(node) is not cst.BinaryOperation:
            return None
        return _OPERATORS.get(type(node.operator), "other"), node.left, node.right

    def parenthesized(self, node: cst.BaseExpression) -> bool:
        return bool(node.lpar)


NODES = CstNodes()


class CstReader(CstNodes):
    """Every shape module's `Reader` over LibCST's nodes, within one function's bindings."""

    by_name = True

    def __init__(self, env: Env) -> None:
        self.env = env
        self.memo = env.memo
        self.values, self.attribute_values, self.constant_value = env.values, env.attribute_values, env.constant_value
        self.is_local, self.calls_producer, self.is_number_constant = (
            env.is_local, env.calls_producer, env.is_number_constant)

    # --- `shapereader.ShapeReader` ------------------------------------------------------------------
    def is_literal(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.Float, cst.Integer))

    def literal_number(self, node: cst.BaseExpression) -> Optional[float]:
        try:
            return float(node.evaluated_value)  # type: ignore[attr-defined]
        except (ValueError, OverflowError):
            return None

    def name(self, node: cst.BaseExpression) -> Optional[str]:
        return node.value if isinstance(node, cst.Name) else None

    def self_attribute(self, node: cst.BaseExpression) -> Optional[str]:
        return _self_attribute(node)

    def function_call(self, node: cst.BaseExpression, names: frozenset) -> Optional[cst.Call]:
        return _function(node, names, self.env)

    def method_call(self, node: cst.BaseExpression, names: frozenset) -> Optional[cst.Call]:
        return _method(node, names, self.env)

    def first_arg(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        return _first_arg(call)

    def receiver(self, call: cst.Call) -> cst.BaseExpression:
        return _receiver(call)

    def has_arguments(self, call: cst.Call) -> bool:
        return bool(call.args)

    def cast_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        cast = isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and dtypes.is_cast_call(
            node, self.env.imports)
        return node.func.value if cast else None  # type: ignore[attr-defined]

    # --- `probshape.Reader` -------------------------------------------------------------------------
    def subscript_value(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        return node.value if isinstance(node, cst.Subscript) else None

    def is_string(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))

    def is_name_or_attribute(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.Name, cst.Attribute))

    def unary_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        return node.expression if isinstance(node, cst.UnaryOperation) else None

    def same(self, left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
        return left.deep_equals(right)

    def children(self, node: cst.BaseExpression) -> List[cst.BaseExpression]:
        return [child if _EXPRESSION(child) else child.value  # type: ignore[attr-defined]
                for child in inner_children(node) if _EXPRESSION(child) or type(child) is cst.Arg]

    def attribute_name(self, node: cst.BaseExpression) -> Optional[str]:
        return None  # an attribute's name is a `Name` among its children

    def is_lambda(self, node: cst.BaseExpression) -> bool:
        return type(node) is cst.Lambda

    def names_pi(self, node: cst.BaseExpression) -> bool:
        return self.env.imports.matches(node, PI_NAMES) or (
            isinstance(node, cst.Attribute) and node.attr.value == "pi")

    def imports_name(self, node: cst.BaseExpression, names: frozenset) -> bool:
        return self.env.imports.matches(node, names)

    def method_named(self, node: cst.BaseExpression, names: frozenset) -> Optional[cst.Call]:
        return _method(node, names)

    def is_call(self, node: cst.BaseExpression) -> bool:
        return type(node) is cst.Call

    def is_cast(self, call: cst.Call) -> bool:
        return dtypes.is_cast_call(call, self.env.imports)

    def value_receiver(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        func = call.func
        return func.value if isinstance(func, cst.Attribute) and not _imported(func.value, self.env) else None

    def imported_callee(self, call: cst.Call) -> bool:
        return _imported(call.func, self.env)

    def callee_name(self, node: cst.BaseExpression) -> Optional[str]:
        if not isinstance(node, cst.Call) or _imported(node.func, self.env):
            return None
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
        return name if isinstance(name, str) else ""

    has_positionals = has_arguments  # LibCST's lgamma asks for no argument at all: `x.lgamma(out=y)` is none

    def arguments(self, call: cst.Call) -> List[Tuple[Optional[str], str, cst.BaseExpression]]:
        return [(None if a.keyword is None else a.keyword.value, a.star, a.value) for a in call.args]

    # --- `kernelshape.Reader` -----------------------------------------------------------------------
    def power_call(self, node: cst.BaseExpression) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression]]:
        call = _method(node, POW_METHODS, self.env)
        if call is not None:
            exponent = _first_arg(call)
            return None if exponent is None else (_receiver(call), exponent)
        call = _function(node, POW_FUNCTIONS, self.env)
        if call is None or any(a.star for a in call.args):  # `**kw` too (CPython's reader looks at `*` only)
            return None
        positional = [a.value for a in call.args if a.keyword is None]
        return (positional[0], positional[1]) if len(positional) == 2 else None

    # --- `logparamshape.Reader` ---------------------------------------------------------------------
    def math_constant(self, node: cst.BaseExpression) -> bool:
        name = dotted_name(node) if isinstance(node, cst.Attribute) else None
        return name is not None and python_math(name, self.env.imports)

    def written(self, node: cst.BaseExpression) -> Optional[str]:
        if isinstance(node, (cst.Name, cst.Attribute)):
            return dotted_name(node)
        if isinstance(node, cst.Call):  # LibCST keeps a call's parentheses on the node: `(f(x))` is `f(x)`
            return "".join(cst.Module([]).code_for_node(node.with_changes(lpar=(), rpar=())).split())
        return None

    def exponent_argument(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        call = _function(node, _OF_EXPONENT, self.env)
        if call is not None:
            return _first_arg(call)  # `input=` too (CPython's reader: the first positional only)
        call = _method(node, _EXPONENT_METHODS, self.env)
        return None if call is None else _receiver(call)  # with arguments too (CPython's reader: none)
