"""`probmath` over CPython's tree: the shapes of hand-written probability math, for the project summary.

Each function answers what its namesake in `facts.probmath` answers for the
same code, so that a file whose only sites are hand-written math is summarized
without LibCST (`astsites.SiteJudge`). The differences between the trees are
handled here:

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
from typing import Callable, Iterator, List, Optional, Tuple

from amplint.facts import astnodes as nodes, probshape
from amplint.facts.astmathenv import Env
from amplint.facts.mathnames import (
    ABS_FUNCTIONS, ABS_METHODS, LOG_2PI, LOG_FUNCTIONS, PI_NAMES, POW_FUNCTIONS, POW_METHODS, SCALAR_LOG_FUNCTIONS,
    SQUARE_FUNCTIONS, SQUARE_METHODS,
)
from amplint.names import ast_qualnames
from amplint.screen import FLOAT16_SUBNORMAL, LOG_METHODS

_DEPTH = probshape.DEPTH
_ONES_LIKE = frozenset({"torch.ones_like"})
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_LOG_2PI_VALUES = (LOG_2PI, LOG_2PI / 2, -LOG_2PI, -LOG_2PI / 2)


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


def _last_factor(node: ast.expr, env: Env) -> ast.expr:
    node = _unwrap(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) and not env.parenthesized(node):
        node = node.right
    return node


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
    stack: List[Tuple[ast.expr, bool]] = [(node, True)]
    while stack:
        current, outer = stack.pop()
        current = _unwrap(current)
        if isinstance(current, ast.UnaryOp) and isinstance(current.op, ast.USub):
            current = current.operand
        if isinstance(current, ast.BinOp) and is_additive(current) and (outer or not env.parenthesized(current)):
            stack.append((current.right, False))
            stack.append((current.left, False))
        else:
            yield current


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
    return _density_sum(node, env, is_square_of_tensor)


def laplace(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ...]]:
    """`probmath.laplace`: a sum with a tensor's magnitude beside a log term: its tensor operands, else None."""
    return _density_sum(node, env, _is_abs_of_tensor)


def _density_sum(node: ast.expr, env: Env,
                 deviation: Callable[[ast.expr, Env], bool]) -> Optional[Tuple[ast.expr, ...]]:
    if not is_additive(node):
        return None
    terms = list(additive_terms(node, env))
    if len(terms) < 2:
        return None
    squares = [t for t in terms if has(t, env, deviation)]
    if not squares:
        return None
    logs = [t for t in terms if has(t, env, _is_log_term)]
    if not any(square is not log for square in squares for log in logs):
        return None
    return tuple(op for term in terms for op in leaves(term, env))


def has(node: ast.expr, env: Env, test: Callable[[ast.expr, Env], bool], depth: int = 2) -> bool:
    key = (id(node), test.__name__, depth)
    if key not in env.memo:
        env.memo[key] = _search(node, env, test, depth)
    return env.memo[key]


def _search(node: ast.expr, env: Env, test: Callable[[ast.expr, Env], bool], depth: int) -> bool:
    node = _unwrap(node)
    if test(node, env):
        return True
    kind = type(node)
    if kind is ast.Name:
        return depth > 0 and any(has(value, env, test, depth - 1) for value in env.values(node.id))
    if kind is ast.Lambda:
        return False
    if kind is ast.Attribute and depth > 0 and any(  # LibCST's attribute name is a `Name`: followed as one
            has(value, env, test, depth - 1) for value in env.values(node.attr)):
        return True
    return any(has(child, env, test, depth) for child in _children(node))


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
    base: Optional[ast.expr] = None
    operator = type(node.op) if type(node) is ast.BinOp else None
    if operator is ast.Pow:
        if _number(node.right) == 2:
            base = node.left
    elif operator is ast.Mult:  # `probmath.is_square_of_tensor`: `u * u`, `-0.5 * u * u`, `-u * u`
        if env.same_code(node.left, node.right) or env.same_code(_last_factor(node.left, env), node.right):
            base = node.right
    elif _method(node, SQUARE_METHODS, env) is not None:
        base = _receiver(node)  # type: ignore[arg-type]
    elif type(node) is ast.Call and _method(node, POW_METHODS, env) is not None:
        exponent = _first_arg(node)
        base = _receiver(node) if exponent is not None and _number(exponent) == 2 else None
    else:
        call = _function(node, SQUARE_FUNCTIONS | POW_FUNCTIONS, env)
        if call is not None:
            positional = [a.value for a in nodes.call_args(call) if a.keyword is None]
            if _matches(call.func, SQUARE_FUNCTIONS, env) or (len(positional) == 2 and _number(positional[1]) == 2):
                base = positional[0] if positional else None
    return base is not None and _number(base) is None


def _is_abs_of_tensor(node: ast.expr, env: Env) -> bool:
    """`probmath._is_abs_of_tensor`: `torch.abs(y - mu)`, `(y - mu).abs()`, `abs(d)`."""
    if type(node) is not ast.Call:
        return False
    if _method(node, ABS_METHODS, env) is not None:
        base: Optional[ast.expr] = _receiver(node)
    else:
        call = _function(node, ABS_FUNCTIONS, env)
        base = _first_arg(call) if call is not None else None
    return base is not None and _number(base) is None


def _is_log_term(node: ast.expr, env: Env) -> bool:
    return log_operand(node, env) is not None or _is_log_2pi(node, env)


def _is_log_2pi(node: ast.expr, env: Env, attributes: bool = True) -> bool:
    value = _number(node)
    if value is None and type(node) is ast.Name:
        value = env.constant_value(node.id)
    attr = nodes.self_attribute(node) if attributes else None
    if attr is not None:
        bound = env.attribute_values(attr)
        return bool(bound) and all(_is_log_2pi(each, env, False) for each in bound)
    if value is not None:
        return any(abs(value - c) < 1e-6 for c in _LOG_2PI_VALUES)
    if isinstance(node, ast.Call) and (_matches(node.func, SCALAR_LOG_FUNCTIONS | LOG_FUNCTIONS, env)
                                       or _method(node, LOG_METHODS, env) is not None):
        operand = _first_arg(node) if node.args or node.keywords else None
        return operand is not None and mentions_pi(operand, env)
    return False


def mentions_pi(node: ast.expr, env: Env) -> bool:
    if _matches(node, PI_NAMES, env) or (isinstance(node, ast.Attribute) and node.attr == "pi"):
        return True
    if isinstance(node, ast.Call):
        first = _first_arg(node)
        return first is not None and mentions_pi(first, env)
    if isinstance(node, ast.Attribute) and env.imports.qualnames_of(node.attr) & PI_NAMES:
        return True  # the attribute's name, a `Name` to LibCST
    return any(mentions_pi(child, env) for child in _children(node))


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
    node = _unwrap(node)
    if _number(node) is not None or isinstance(node, ast.JoinedStr) or (
            type(node) is ast.Constant and isinstance(node.value, (str, bytes))):
        return
    if isinstance(node, (ast.Name, ast.Attribute)):
        if not _matches(node, PI_NAMES, env) and not (type(node) is ast.Name and env.is_number_constant(node.id)):
            yield node
        return
    if isinstance(node, ast.Subscript):
        yield from leaves(node.value, env)
        return
    if isinstance(node, ast.BinOp):
        yield from leaves(node.left, env)
        yield from leaves(node.right, env)
        return
    if isinstance(node, ast.UnaryOp):
        yield from leaves(node.operand, env)
        return
    if isinstance(node, ast.Call):
        if _matches(node.func, SCALAR_LOG_FUNCTIONS, env):
            return
        if nodes.is_cast_call(node, env.imports):
            yield node
            return
        if isinstance(node.func, ast.Attribute) and not _imported(node.func.value, env):
            yield from leaves(node.func.value, env)
            return
        first = _first_arg(node)
        if first is not None and _imported(node.func, env):
            yield from leaves(first, env)
            return
        yield node
        return
    yield node


class _Reader:
    """`probshape.Reader` over CPython's nodes: `probmath._Reader`'s answers."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.by_name = env.by_name
        self.values, self.attribute_values, self.constant_value = env.values, env.attribute_values, env.constant_value
        self.is_local, self.parenthesized = env.is_local, env.parenthesized

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

    def name(self, node: ast.expr) -> Optional[str]:
        return node.id if isinstance(node, ast.Name) else None

    def self_attribute(self, node: ast.expr) -> Optional[str]:
        return nodes.self_attribute(node)

    def function_call(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _function(node, names, self.env)

    def method_call(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _method(node, names, self.env)

    def method_named(self, node: ast.expr, names: frozenset) -> Optional[ast.Call]:
        return _method(node, names)

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
