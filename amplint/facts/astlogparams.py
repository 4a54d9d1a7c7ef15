"""`facts.logparamshape` on CPython's tree: `logparams` for the summary reader (`astmathsites`)."""
from __future__ import annotations

import ast
from typing import Optional, Sequence, Tuple

from amplint.facts import logparamshape
from amplint.facts.astmathenv import Env
from amplint.facts.astnodes import is_cast_call, self_attribute
from amplint.facts.astkernels import binary_operation
from amplint.facts.astprobmath import additive_terms, leaves, strip_floor
from amplint.facts.logparamshape import SCALE_DEPTH, is_log_parameter_form
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS, SCALE_FUNCTIONS, SCALE_METHODS, python_math
from amplint.names import ast_dotted, ast_qualnames
from amplint.screen import LOG_METHODS

_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS  # `logparams._OF_EXPONENT`
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS


def log_parameter_form(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ...]]:
    """`logparams.log_parameter_form`: the sum's tensor operands, else None."""
    if not is_log_parameter_form(node, _Reader(env)):
        return None
    return tuple(op for term in additive_terms(node, env) for op in leaves(term, env))


def is_positive_transform(node: ast.expr, env: Env, depth: int = SCALE_DEPTH) -> bool:
    """`logparams.is_positive_transform`: a scale or rate made from an activation (`exp`, `softplus`)."""
    return logparamshape.is_positive_transform(node, _Reader(env), depth)


class _Reader:
    """`logparamshape.Reader` over CPython's nodes: `logparams._Reader`'s answers."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def operation(self, node: ast.expr) -> Optional[Tuple[str, ast.expr, ast.expr]]:
        return binary_operation(node)

    def signed(self, node: ast.expr) -> Optional[ast.expr]:
        signed = isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd))
        return node.operand if signed else None  # type: ignore[attr-defined]

    def literal(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and (
            not isinstance(node.value, bool))

    def math_constant(self, node: ast.expr) -> bool:
        name = ast_dotted(node) if isinstance(node, ast.Attribute) else None
        return name is not None and python_math(name, self.env.imports)

    def written(self, node: ast.expr) -> Optional[str]:
        if isinstance(node, (ast.Name, ast.Attribute)):
            return ast_dotted(node)
        if isinstance(node, ast.Call):
            return "".join(ast.unparse(node).split())
        return None

    def floor_stripped(self, node: ast.expr) -> ast.expr:
        return strip_floor(node, self.env)[0]

    def exponent_argument(self, node: ast.expr) -> Optional[ast.expr]:
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _EXPONENT_METHODS and not node.args and (
                not node.keywords and not self._imported(func.value)):
            return func.value
        if ast_qualnames(func, self.env.imports) & _OF_EXPONENT and node.args and (
                not isinstance(node.args[0], ast.Starred)):
            return node.args[0]
        return None

    def scale_call(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Call) and bool(ast_qualnames(node.func, self.env.imports) & SCALE_FUNCTIONS or (
            isinstance(node.func, ast.Attribute) and node.func.attr in SCALE_METHODS
            and not self._imported(node.func.value)))

    def cast_operand(self, node: ast.expr) -> Optional[ast.expr]:
        cast = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_cast_call(
            node, self.env.imports)
        return node.func.value if cast else None  # type: ignore[attr-defined]

    def local_values(self, node: ast.expr) -> Optional[Sequence[ast.expr]]:
        local = isinstance(node, ast.Name) and self.env.is_local(node.id)
        return self.env.values(node.id) if local else None  # type: ignore[attr-defined]

    def attribute_values(self, node: ast.expr) -> Sequence[ast.expr]:
        attr = self_attribute(node)
        return () if attr is None else self.env.attribute_values(attr)

    def _imported(self, node: ast.expr) -> bool:
        """`torch`, `F`: the head of a dotted name the file imported (a module, not a value)."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.env.imports.bindings
