"""Calls as hand-written probability math reads them: `x.name(...)` on a value, `torch.name(...)`, their operands,
and the number literals among them.

`probmath` (LibCST) asks these of every node it judges; `astprobmath` holds the
same for CPython's tree.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from amplint.facts.mathenv import Env


def method_call(node: cst.BaseExpression, names: frozenset, env: Optional[Env] = None) -> Optional[cst.Call]:
    """`x.name(...)` on a value; with `env`, not `torch.name(...)` or another module's function."""
    if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value in names:
        if env is None or not imported(node.func.value, env):
            return node
    return None


def imported(node: cst.BaseExpression, env: Env) -> bool:
    """`torch`, `F`, `np.random`: a dotted name whose head the file imported (a module, not a value)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and node.value in env.imports.bindings


def function_call(node: cst.BaseExpression, names: frozenset, env: Env) -> Optional[cst.Call]:
    if type(node) is cst.Call and env.imports.matches(node.func, names):
        return node
    return None


def first_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value == "input":
            return arg.value
    return None


def receiver(call: cst.Call) -> cst.BaseExpression:
    assert isinstance(call.func, cst.Attribute)
    return call.func.value


def number_value(node: cst.BaseExpression) -> Optional[float]:
    """A number literal's value, signs included (`-1`, `1e-10`), else None."""
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Plus):
        node = node.expression
    if isinstance(node, (cst.Integer, cst.Float)):
        try:
            return float(node.evaluated_value)
        except (ValueError, OverflowError):
            return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = number_value(node.expression)
        return None if inner is None else -inner
    return None
