"""The shape modules' reader for CPython's nodes: one class answers `probshape`'s, `sumshape`'s, `kernelshape`'s,
`logparamshape`'s and `siteshape`'s questions, within one function's bindings (`astmathenv.Env`), as
`facts.cstreader` answers them for LibCST's.

Where the trees differ the answers are this tree's, as they were before the recognizers were one:

- LibCST writes `True`, `False` and `None` as names and keeps an expression's parentheses on it; CPython has
  constants and no parentheses (`Env.parenthesized` reads them from the text, `Env.same_code` compares text);
- a LibCST node's expression children (`cstwalk.inner_children`, less punctuation) are not CPython's: an
  attribute's name is a `Name` node there, and a subscript's index, a comparison's right side, and the elements
  of a tuple, list or dict other than starred ones are no expressions (`_children`);
- a call's arguments: `x.lgamma(out=y)` passes no positional here (LibCST's: an argument all the same); a
  power call with `**kw` is read (LibCST's is not); an exponent's `torch.exp(input=x)` and `x.log(2)` are none.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple

from amplint.facts import astnodes as nodes
from amplint.facts.astmathenv import Env
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS, PI_NAMES, POW_FUNCTIONS, POW_METHODS, python_math
from amplint.names import ast_dotted, ast_qualnames
from amplint.screen import LOG_METHODS

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS  # `cstreader._OF_EXPONENT`
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS


# --- calls ------------------------------------------------------------------------------------------
def _matches(node: ast.expr, names: frozenset, env: Env) -> bool:
    return bool(ast_qualnames(node, env.imports) & names)


def _method(node: ast.expr, names: frozenset, env: Optional[Env] = None) -> Optional[ast.Call]:
    """`x.name(...)` on a value; with `env`, not `torch.name(...)` or another module's function."""
    if type(node) is ast.Call and type(node.func) is ast.Attribute and node.func.attr in names:
        if env is None or not _imported(node.func.value, env):
            return node
    return None


def _imported(node: ast.expr, env: Env) -> bool:
    """`torch`, `F`: the head of a dotted name the file imported (a module, not a value)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in env.imports.bindings


def _function(node: ast.expr, names: frozenset, env: Env) -> Optional[ast.Call]:
    if type(node) is ast.Call and _matches(node.func, names, env):
        return node
    return None


def _first_arg(call: ast.Call) -> Optional[ast.expr]:
    for arg in nodes.call_args(call):
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword == "input":
            return arg.value
    return None


def _literal(node: ast.expr) -> Optional[float]:
    """An integer or float literal's value (LibCST's `Integer` and `Float`; not True, False or complex)."""
    if type(node) is ast.Constant and type(node.value) in (int, float):
        try:
            return float(node.value)
        except OverflowError:
            return None
    return None


def _children(node: ast.expr) -> List[ast.expr]:
    """The expressions among LibCST's children of the node (`inner_children`; arguments' values for a call),
    less an attribute's name, which the callers read themselves."""
    kind = type(node)
    if kind is ast.Call:
        return [node.func, *(a.value for a in nodes.call_args(node))]
    if kind is ast.Attribute or kind is ast.Subscript or kind is ast.Starred or kind is ast.Await:
        return [node.value]
    if kind is ast.BinOp:
        return [node.left, node.right]
    if kind is ast.UnaryOp:
        return [node.operand]
    if kind is ast.BoolOp:
        return list(node.values)
    if kind is ast.Compare:
        return [node.left]
    if kind is ast.IfExp:
        return [node.body, node.test, node.orelse]
    if kind is ast.NamedExpr:
        return [node.target, node.value]
    if kind is ast.Lambda:
        return [node.body]
    if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp):
        return [node.elt]
    if kind is ast.DictComp:
        return [node.key, node.value]
    if kind in (ast.Tuple, ast.List, ast.Set):
        return [element for element in node.elts if isinstance(element, ast.Starred)]
    if kind is ast.Yield and node.value is not None:
        return [node.value]
    return []


class AstReader:
    """Every shape module's `Reader` over CPython's nodes: `cstreader.CstReader`'s answers."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.by_name = env.by_name
        self.values, self.attribute_values, self.constant_value = env.values, env.attribute_values, env.constant_value
        self.memo = env.memo
        self.is_local, self.parenthesized, self.same = env.is_local, env.parenthesized, env.same_code
        self.is_number_constant = env.is_number_constant

    # --- `shapereader.ShapeReader` ------------------------------------------------------------------
    def plus_operand(self, node: ast.expr) -> Optional[ast.expr]:
        return node.operand if type(node) is ast.UnaryOp and type(node.op) is ast.UAdd else None

    def minus_operand(self, node: ast.expr) -> Optional[ast.expr]:
        return node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else None

    def operation(self, node: ast.expr) -> Optional[Tuple[str, ast.expr, ast.expr]]:
        if type(node) is not ast.BinOp:
            return None
        return _OPERATORS.get(type(node.op), "other"), node.left, node.right

    def is_literal(self, node: ast.expr) -> bool:
        return type(node) is ast.Constant and type(node.value) in (int, float)

    def literal_number(self, node: ast.expr) -> Optional[float]:
        return _literal(node)

    def name(self, node: ast.expr) -> Optional[str]:
        return node.id if isinstance(node, ast.Name) else None

    def self_attribute(self, node: ast.expr) -> Optional[str]:
        return nodes.self_attribute(node)

    def function_call(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _function(node, names, self.env)

    def method_call(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _method(node, names, self.env)

    def first_arg(self, call: ast.Call) -> Optional[ast.expr]:
        return _first_arg(call)

    def receiver(self, call: ast.Call) -> ast.expr:
        assert isinstance(call.func, ast.Attribute)
        return call.func.value

    def has_arguments(self, call: ast.Call) -> bool:
        return bool(call.args or call.keywords)

    def cast_operand(self, node: ast.expr) -> Optional[ast.expr]:
        cast = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and nodes.is_cast_call(
            node, self.env.imports)
        return node.func.value if cast else None  # type: ignore[attr-defined]

    # --- `probshape.Reader` -------------------------------------------------------------------------
    def subscript_value(self, node: ast.expr) -> Optional[ast.expr]:
        return node.value if isinstance(node, ast.Subscript) else None

    def calls_producer(self, node: ast.expr) -> bool:
        return False  # the summary reader does not know the project's producers

    def is_string(self, node: ast.expr) -> bool:
        return isinstance(node, ast.JoinedStr) or (type(node) is ast.Constant and isinstance(node.value, (str, bytes)))

    def is_name_or_attribute(self, node: ast.expr) -> bool:
        return isinstance(node, (ast.Name, ast.Attribute))

    def unary_operand(self, node: ast.expr) -> Optional[ast.expr]:
        return node.operand if isinstance(node, ast.UnaryOp) else None

    def children(self, node: ast.expr) -> List[ast.expr]:
        return _children(node)

    def attribute_name(self, node: ast.expr) -> Optional[str]:
        return node.attr if type(node) is ast.Attribute else None  # LibCST's `Name` child

    def is_lambda(self, node: ast.expr) -> bool:
        return type(node) is ast.Lambda

    def names_pi(self, node: ast.expr) -> bool:
        return _matches(node, PI_NAMES, self.env) or isinstance(node, ast.Attribute) and (
            node.attr == "pi" or bool(self.env.imports.qualnames_of(node.attr) & PI_NAMES))  # LibCST's `Name`

    def imports_name(self, node: ast.expr, names: frozenset) -> bool:
        return _matches(node, names, self.env)

    def method_named(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _method(node, names)

    def is_call(self, node: ast.expr) -> bool:
        return type(node) is ast.Call

    def is_cast(self, call: ast.Call) -> bool:
        return nodes.is_cast_call(call, self.env.imports)

    def value_receiver(self, call: ast.Call) -> Optional[ast.expr]:
        func = call.func
        return func.value if isinstance(func, ast.Attribute) and not _imported(func.value, self.env) else None

    def imported_callee(self, call: ast.Call) -> bool:
        return _imported(call.func, self.env)

    def callee_name(self, node: ast.expr) -> Optional[str]:
        if not isinstance(node, ast.Call) or _imported(node.func, self.env):
            return None
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""

    def has_positionals(self, call: ast.Call) -> bool:
        return bool(call.args)  # CPython's lgamma asks for no positional: `x.lgamma(out=y)` counts (LibCST's not)

    def arguments(self, call: ast.Call) -> List[nodes.Arg]:
        return nodes.call_args(call)

    # --- `kernelshape.Reader` -----------------------------------------------------------------------
    def power_call(self, node: ast.expr) -> Optional[Tuple[ast.expr, ast.expr]]:
        call = _method(node, POW_METHODS, self.env)
        if call is not None:
            exponent = _first_arg(call)
            return None if exponent is None else (self.receiver(call), exponent)
        call = _function(node, POW_FUNCTIONS, self.env)
        if call is None or any(isinstance(a, ast.Starred) for a in call.args):
            return None
        return (call.args[0], call.args[1]) if len(call.args) == 2 else None

    # --- `logparamshape.Reader` ---------------------------------------------------------------------
    def math_constant(self, node: ast.expr) -> bool:
        name = ast_dotted(node) if isinstance(node, ast.Attribute) else None
        return name is not None and python_math(name, self.env.imports)

    def written(self, node: ast.expr) -> Optional[str]:
        if isinstance(node, (ast.Name, ast.Attribute)):
            return ast_dotted(node)
        if isinstance(node, ast.Call):
            return "".join(ast.unparse(node).split())
        return None

    def exponent_argument(self, node: ast.expr) -> Optional[ast.expr]:
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _EXPONENT_METHODS and not node.args and (
                not node.keywords and not _imported(func.value, self.env)):
            return func.value
        if ast_qualnames(func, self.env.imports) & _OF_EXPONENT and node.args and (
                not isinstance(node.args[0], ast.Starred)):
            return node.args[0]
        return None
