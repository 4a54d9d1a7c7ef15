"""`probmath` over CPython's tree: the shapes of hand-written probability math, for the project summary.

The recognizers are `facts.probshape`'s and `facts.sumshape`'s, as for `facts.probmath`; this module is their
reader for CPython's nodes (`_Reader`), so that a file whose only sites are hand-written math is summarized
without LibCST (`astsites.SiteJudge`). The differences between the trees are the reader's answers:

- LibCST writes `True`, `False` and `None` as names and keeps an expression's
  parentheses on it; CPython has constants and no parentheses
  (`Env.parenthesized` reads them from the text);
- a LibCST node's expression children (`cstwalk.inner_children`, less
  punctuation) are not CPython's: an attribute's name is a `Name` node there,
  and a subscript's index, a comparison's right side, and the elements of a
  tuple, list or dict other than starred ones are no expressions
  (`_children`).

`tests/test_ast_summary.py` holds the two readings equal on the shapes, and the
summaries of the corpora are compared file by file (benchmarks/RESULTS.md).
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Iterator, List, Optional, Tuple

from amplint.facts import astnodes as nodes, probshape, sumshape
from amplint.facts.astmathenv import Env
from amplint.facts.mathnames import PI_NAMES
from amplint.names import ast_qualnames
from amplint.screen import FLOAT16_SUBNORMAL

_DEPTH = probshape.DEPTH
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


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


def _receiver(call: ast.Call) -> ast.expr:
    assert isinstance(call.func, ast.Attribute)
    return call.func.value


def lgamma_operand(node: ast.expr, env: Env) -> Optional[ast.expr]:
    """`probmath.lgamma_operand`: `x` of `torch.lgamma(x)`, `x.lgamma()`, `torch.special.gammaln(x)`."""
    return probshape.lgamma_operand(node, _Reader(env))


def log_operand(node: ast.expr, env: Env) -> Optional[ast.expr]:
    """`x` of a tensor log: `torch.log(x)`, `x.log()`, `torch.log2(x)`. `math.log` is not a tensor log."""
    return probshape.log_operand(node, _Reader(env))


def _unwrap(node: ast.expr) -> ast.expr:
    while type(node) is ast.UnaryOp and type(node.op) is ast.UAdd:
        node = node.operand
    return node


def _literal(node: ast.expr) -> Optional[float]:
    """An integer or float literal's value (LibCST's `Integer` and `Float`; not True, False or complex)."""
    if type(node) is ast.Constant and type(node.value) in (int, float):
        try:
            return float(node.value)
        except OverflowError:
            return None
    return None


def _is_literal(node: ast.expr) -> bool:
    return type(node) is ast.Constant and type(node.value) in (int, float)


def strip_floor(node: ast.expr, env: Env) -> Tuple[ast.expr, Optional[Tuple[ast.expr, float]]]:
    """`probmath.strip_floor`: (the value under a floor, (the floor's bound, its value) or None)."""
    return probshape.strip_floor(node, _Reader(env))


def vanishes(floor: Optional[Tuple[ast.expr, float]]) -> bool:
    """`probmath.Epsilon.vanishes`: float16 rounds the floor to 0."""
    return floor is not None and 0 < floor[1] < FLOAT16_SUBNORMAL


def literal_value(node: ast.expr, env: Env, depth: int = _DEPTH) -> Optional[float]:
    """A small positive float the expression certainly is: a literal, or a name/attribute bound only to one."""
    return probshape.literal_value(node, _Reader(env), depth)


# --- probabilities ----------------------------------------------------------------------------------
def is_prob(node: ast.expr, env: Env, depth: int = _DEPTH) -> bool:
    """`probmath.is_prob`: does `node` hold probabilities?"""
    return probshape.is_prob(node, _Reader(env), depth)


def entropy_operand(node: ast.expr, env: Env) -> Optional[ast.expr]:
    """`p * log(p)` or `log(p) * p`: the log, whose operand is then a probability."""
    return probshape.entropy_operand(node, _Reader(env))


def is_sum_of_exp(node: ast.expr, env: Env, depth: int = _DEPTH) -> bool:
    return probshape.is_sum_of_exp(node, _Reader(env), depth)


def straight_from_producer(node: ast.expr, env: Env) -> bool:
    """`probmath.straight_from_producer`: a softmax or sigmoid, or a local name bound once to one, also through
    a mean, a view or a gather."""
    return probshape.straight_from_producer(node, _Reader(env))


def log_shape(log: ast.expr, env: Env) -> Tuple[Optional[str], ast.expr]:
    """`mathsites._log_shape`: ("log-sum-exp" | "log-of-prob" | None, the value under any floor)."""
    operand = log_operand(log, env)
    if operand is None:
        return None, log
    inner, floor = strip_floor(operand, env)
    if is_sum_of_exp(inner, env):
        return "log-sum-exp", inner
    if not is_prob(inner, env):
        return None, inner
    guarded = floor is not None and floor[1] > 0 and not vanishes(floor) and straight_from_producer(inner, env)
    return ("guarded" if guarded else "log-of-prob"), inner


# --- Gaussian log-densities and KLs -------------------------------------------------------------------
def is_additive(node: ast.expr) -> bool:
    return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub))


def additive_terms(node: ast.expr, env: Env) -> Iterator[ast.expr]:
    """The terms of `(a - b + c)`, unary minus dropped; a sum in parentheses of its own is one term."""
    return sumshape.additive_terms(node, _Reader(env))


def inner_sums(node: ast.BinOp, env: Env) -> Iterator[ast.BinOp]:
    """The sums `mathsites._claim` marks: each side of `node` that is a sum with no parentheses of its own, and
    theirs, transitively. The walk reaches them next, and a sum is judged once."""
    stack = [node]
    while stack:
        current = stack.pop()
        for side in (current.left, current.right):
            if isinstance(side, ast.BinOp) and is_additive(side) and not env.parenthesized(side):
                yield side
                stack.append(side)


def gaussian(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ...]]:
    """`probmath.gaussian`: a sum with a squared tensor term beside a log term: its tensor operands, else None."""
    return sumshape.density_sum(node, _Reader(env), sumshape.is_square_of_tensor)


def laplace(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ...]]:
    """`probmath.laplace`: a sum with a tensor's magnitude beside a log term: its tensor operands, else None."""
    return sumshape.density_sum(node, _Reader(env), sumshape.is_abs_of_tensor)


def has(node: ast.expr, env: Env, test: Callable[[ast.expr, Env], bool], depth: int = 2) -> bool:
    """`probmath.has`: `sumshape.has` for a test of CPython's (node, env)."""
    def tree_test(each: ast.expr, _tree: Any) -> bool:
        return test(each, env)
    tree_test.__name__ = test.__name__
    return sumshape.has(node, _Reader(env), tree_test, depth)


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


def is_square_of_tensor(node: ast.expr, env: Env) -> bool:
    return sumshape.is_square_of_tensor(node, _Reader(env))


def mentions_pi(node: ast.expr, env: Env) -> bool:
    return sumshape.mentions_pi(node, _Reader(env))


def _number(node: ast.expr) -> Optional[float]:
    node = _unwrap(node)
    if _is_literal(node):
        return _literal(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _number(node.operand)
        return None if inner is None else -inner
    return None


# --- operands -----------------------------------------------------------------------------------------
def leaves(node: ast.expr, env: Env) -> Iterator[ast.expr]:
    """`probmath.leaves`: the tensor values an expression reads."""
    return sumshape.leaves(node, _Reader(env))


class _Reader:
    """`probshape.Reader` over CPython's nodes: `probmath._Reader`'s answers."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.by_name = env.by_name
        self.values, self.attribute_values, self.constant_value = env.values, env.attribute_values, env.constant_value
        self.memo = env.memo
        self.is_local, self.parenthesized, self.same = env.is_local, env.parenthesized, env.same_code
        self.is_number_constant = env.is_number_constant

    def plus_operand(self, node: ast.expr) -> Optional[ast.expr]:
        return node.operand if type(node) is ast.UnaryOp and type(node.op) is ast.UAdd else None

    def minus_operand(self, node: ast.expr) -> Optional[ast.expr]:
        return node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) else None

    def subscript_value(self, node: ast.expr) -> Optional[ast.expr]:
        return node.value if isinstance(node, ast.Subscript) else None

    def calls_producer(self, node: ast.expr) -> bool:
        return False  # the summary reader does not know the project's producers

    def operation(self, node: ast.expr) -> Optional[Tuple[str, ast.expr, ast.expr]]:
        if type(node) is not ast.BinOp:
            return None
        return _OPERATORS.get(type(node.op), "other"), node.left, node.right

    def is_literal(self, node: ast.expr) -> bool:
        return _is_literal(node)

    def literal_number(self, node: ast.expr) -> Optional[float]:
        return _literal(node)

    def is_string(self, node: ast.expr) -> bool:
        return isinstance(node, ast.JoinedStr) or (type(node) is ast.Constant and isinstance(node.value, (str, bytes)))

    def name(self, node: ast.expr) -> Optional[str]:
        return node.id if isinstance(node, ast.Name) else None

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

    def self_attribute(self, node: ast.expr) -> Optional[str]:
        return nodes.self_attribute(node)

    def function_call(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _function(node, names, self.env)

    def method_call(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _method(node, names, self.env)

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

    def cast_operand(self, node: ast.expr) -> Optional[ast.expr]:
        cast = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and nodes.is_cast_call(
            node, self.env.imports)
        return node.func.value if cast else None  # type: ignore[attr-defined]

    def callee_name(self, node: ast.expr) -> Optional[str]:
        if not isinstance(node, ast.Call) or _imported(node.func, self.env):
            return None
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""

    def has_arguments(self, call: ast.Call) -> bool:
        return bool(call.args or call.keywords)

    def has_positionals(self, call: ast.Call) -> bool:
        return bool(call.args)  # CPython's lgamma asks for no positional: `x.lgamma(out=y)` counts (LibCST's not)

    def first_arg(self, call: ast.Call) -> Optional[ast.expr]:
        return _first_arg(call)

    def receiver(self, call: ast.Call) -> ast.expr:
        return _receiver(call)

    def arguments(self, call: ast.Call) -> List[nodes.Arg]:
        return nodes.call_args(call)


# The call readers under the names `facts.mathcalls` gives LibCST's (`astkernels` reads them).
function_call, method_call, first_arg, receiver, number_value = _function, _method, _first_arg, _receiver, _number
