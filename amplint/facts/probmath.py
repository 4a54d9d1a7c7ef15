"""Hand-written probability math: what an expression computes, read from its shape.

`torch.distributions` calls are easy to see. Most float16 log-density hazards
in real training code are not: they are a `torch.log` of softmax outputs, a
log-softmax written out as `x - log(exp(x).sum())`, a Gaussian negative
log-likelihood or KL spelled term by term, or a log guarded by an epsilon that
float16 rounds to zero. This module recognises those shapes in one expression
(following the function's own assignments a few steps back) and knows nothing
about regions, taint or rule codes: the analysis decides whether a shape runs
on float16 inputs, and the rules decide what to report.

Recognition is structural on purpose. A name alone (`probs`) is trusted only
for values the function did not compute itself (parameters and attributes):
a local name is judged by what was assigned to it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Tuple

import libcst as cst

from amplint import dtypes
from amplint.facts import probshape
from amplint.cstwalk import inner_children, type_test
from amplint.facts.mathcalls import first_arg as _first_arg, function_call as _function, imported as _imported
from amplint.facts.mathcalls import method_call as _method, number_value, receiver as _receiver
from amplint.facts.mathenv import Env, function_env, self_attribute as _self_attribute, statements_of
from amplint.facts.mathnames import (
    ABS_FUNCTIONS, ABS_METHODS, LOG_2PI, LOG_FUNCTIONS, PI_NAMES, POW_FUNCTIONS, POW_METHODS, SCALAR_LOG_FUNCTIONS,
    SQUARE_FUNCTIONS, SQUARE_METHODS)
from amplint.screen import FLOAT16_SUBNORMAL, LOG_METHODS

__all__ = ["Env", "Epsilon", "InlineSite", "function_env", "inline_sites", "statements_of"]

# float16's smallest normal: between the two limits a floor keeps a value but loses precision.
FLOAT16_NORMAL = 2.0 ** -14
_DEPTH = probshape.DEPTH
_EXPRESSION = type_test(cst.BaseExpression)
_OPERATORS = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.Power: "**"}


@dataclass(frozen=True)
class Epsilon:
    """A literal floor under a log: the node where it is written and its value."""

    node: cst.BaseExpression
    value: float

    @property
    def vanishes(self) -> bool:
        """float16 rounds it to 0: the floor does nothing."""
        return 0 < self.value < FLOAT16_SUBNORMAL

    @property
    def subnormal(self) -> bool:
        """float16 keeps it only as a subnormal: a note, not a finding."""
        return FLOAT16_SUBNORMAL <= self.value < FLOAT16_NORMAL


@dataclass(frozen=True)
class InlineSite:
    """A shape of probability math in an expression.

    `kind` is one of "log-of-prob" (a log of probabilities), "log-sum-exp"
    (a log-softmax or log-normaliser written out) and "gaussian" (a Gaussian
    log-density or KL term by term). `operands` are the tensor expressions the
    math reads, for the analysis to judge their dtype.
    """

    node: cst.BaseExpression
    kind: str
    operands: Tuple[cst.BaseExpression, ...]
    epsilon: Optional[Epsilon] = None
    anchor: Optional[cst.BaseExpression] = None  # where it is reported, when not `node` (a sum's first term)

    @property
    def at(self) -> cst.BaseExpression:
        """The node whose start is the finding's position: the math itself, not a parenthesis before it."""
        return self.anchor if self.anchor is not None else self.node


def inline_sites(expr: cst.BaseExpression, env: Env) -> List[InlineSite]:
    """Every probability shape in `expr`, outermost first; a Gaussian's own sub-terms are not repeated."""
    found: List[InlineSite] = []
    _scan(expr, env, found)
    seen: set = set()
    unique = []
    for site in found:  # `p * log(p)` and its `log(p)` are one site
        if id(site.node) not in seen:
            seen.add(id(site.node))
            unique.append(site)
    return unique


def _scan(node: cst.CSTNode, env: Env, found: List[InlineSite]) -> None:
    if isinstance(node, cst.BaseExpression):
        site = _site(node, env)
        if site is not None:
            found.append(site)
            if site.kind == "gaussian":
                return
    if isinstance(node, (cst.Lambda, cst.FunctionDef, cst.ClassDef)):
        return
    for child in inner_children(node):
        _scan(child, env, found)


def _site(node: cst.BaseExpression, env: Env) -> Optional[InlineSite]:
    entropy_log = entropy_operand(node, env)
    if entropy_log is not None:
        operand = log_operand(entropy_log, env)
        assert operand is not None
        inner, epsilon = strip_floor(operand, env)
        return InlineSite(entropy_log, "log-of-prob", tuple(leaves(inner, env)), epsilon)
    operand = log_operand(node, env)
    if operand is not None:
        inner, epsilon = strip_floor(operand, env)
        if is_sum_of_exp(inner, env):
            return InlineSite(node, "log-sum-exp", tuple(leaves(inner, env)), epsilon)
        if is_prob(inner, env):
            return InlineSite(node, "log-of-prob", tuple(leaves(inner, env)), epsilon)
        return None
    for shape, recognize in (("gaussian", gaussian), ("laplace", laplace)):
        found = recognize(node, env)
        if found is not None:
            return InlineSite(node, shape, found[0], anchor=found[1])
    return None


def producer_operand(node: cst.BaseExpression, env: Env) -> Optional[cst.BaseExpression]:
    """`probshape.producer_operand`: `logits` of a local bound once to `torch.softmax(logits, -1)`."""
    return probshape.producer_operand(node, _Reader(env))


def straight_from_producer(node: cst.BaseExpression, env: Env) -> bool:
    """`probshape.straight_from_producer`: a softmax or sigmoid, or a local name bound once to one."""
    return probshape.straight_from_producer(node, _Reader(env))


def lgamma_operand(node: cst.BaseExpression, env: Env) -> Optional[cst.BaseExpression]:
    """`probshape.lgamma_operand`: `x` of `torch.lgamma(x)`, `x.lgamma()`, `torch.special.gammaln(x)`."""
    return probshape.lgamma_operand(node, _Reader(env))


def log_operand(node: cst.BaseExpression, env: Env) -> Optional[cst.BaseExpression]:
    """`x` of a tensor log: `torch.log(x)`, `x.log()`, `torch.log2(x)`. `math.log` is not a tensor log."""
    return probshape.log_operand(node, _Reader(env))


def _unwrap(node: cst.BaseExpression) -> cst.BaseExpression:
    """Parentheses are kept on the node in LibCST; nothing to strip but a unary plus."""
    while type(node) is cst.UnaryOperation and type(node.operator) is cst.Plus:
        node = node.expression
    return node


def strip_floor(node: cst.BaseExpression, env: Env) -> Tuple[cst.BaseExpression, Optional[Epsilon]]:
    """`p + eps`, `eps + p`, `p.clamp(min=eps)`, `torch.clamp(p, eps)`, `torch.maximum(p, tensor(eps))`: (p, eps)."""
    inner, floor = probshape.strip_floor(node, _Reader(env))
    return inner, None if floor is None else Epsilon(*floor)


def literal_value(node: cst.BaseExpression, env: Env, depth: int = _DEPTH) -> Optional[float]:
    """A small positive float the expression certainly is: a literal, or a name/attribute bound only to one."""
    return probshape.literal_value(node, _Reader(env), depth)


# --- probabilities ----------------------------------------------------------------------------------
def is_prob(node: cst.BaseExpression, env: Env, depth: int = _DEPTH) -> bool:
    """Does `node` hold probabilities: a softmax or sigmoid, a normalisation, or a reduction of one?"""
    return probshape.is_prob(node, _Reader(env), depth)


def entropy_operand(node: cst.BaseExpression, env: Env) -> Optional[cst.BaseExpression]:
    """`p * log(p)` or `log(p) * p` (an entropy or KL term): the log, whose operand is then a probability."""
    return probshape.entropy_operand(node, _Reader(env))


def _last_factor(node: cst.BaseExpression) -> cst.BaseExpression:
    """`y` of `a * b * y`: the factor next to the log in a product chain."""
    node = _unwrap(node)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply) and not node.lpar:
        node = node.right
    return node


def is_sum_of_exp(node: cst.BaseExpression, env: Env, depth: int = _DEPTH) -> bool:
    """`exp(x).sum(...)`, `torch.sum(torch.exp(x))`, or a name bound to one: a log-normaliser's argument."""
    return probshape.is_sum_of_exp(node, _Reader(env), depth)


# --- Gaussian log-densities and KLs -------------------------------------------------------------------
def is_additive(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Subtract))


def additive_terms(node: cst.BaseExpression, root: bool = True) -> Iterator[cst.BaseExpression]:
    """The terms of `(a - b + c)`, with unary minus dropped: a, b, c. Inner parentheses make one term.

    Iterative: a generated sum of hundreds of terms is a chain that deep.
    """
    stack = [(node, root)]
    while stack:
        current, outer = stack.pop()
        current = _unwrap(current)
        if isinstance(current, cst.UnaryOperation) and isinstance(current.operator, cst.Minus):
            current = current.expression
        if is_additive(current) and (outer or not current.lpar):
            assert isinstance(current, cst.BinaryOperation)
            stack.append((current.right, False))
            stack.append((current.left, False))
        else:
            yield current


def gaussian(node: cst.BaseExpression, env: Env
             ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """A sum with a squared tensor term beside a log term: (its tensor operands, where it starts), else None."""
    return _density_sum(node, env, is_square_of_tensor)


def laplace(node: cst.BaseExpression, env: Env
            ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """A sum with a tensor's magnitude beside a log term (`abs(y - mu) / b + log(2 * b)`): a Laplace
    log-density written out, whose `|y - mu| / b` overflows float16 for small scales as a square does."""
    return _density_sum(node, env, _is_abs_of_tensor)


def _density_sum(node: cst.BaseExpression, env: Env, deviation: Callable[[cst.BaseExpression, Env], bool]
                 ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """A deviation term (`deviation`: squared, or a magnitude) beside a log term (a tensor log or the
    log(2*pi) constant) in one sum: (its tensor operands, where it starts), else None."""
    terms = list(additive_terms(node)) if is_additive(node) else []
    squares = [t for t in terms if has(t, env, deviation)] if len(terms) > 1 else []
    logs = [t for t in terms if has(t, env, _is_log_term)] if squares else []  # most sums: no search
    if not any(square is not log for square in squares for log in logs):
        return None
    return tuple(op for term in terms for op in leaves(term, env)), first_sum(node)


def first_sum(node: cst.BaseExpression) -> cst.BaseExpression:
    """The innermost left sum of a chain, without parentheses: it starts where the written math starts.

    `(a - b - 0.5 + c)` starts at its `(`; `a - b` starts at `a`. Only sums
    have positions in the collector, so the anchor is a sum, not the term.
    """
    inner = _unwrap(node)
    while isinstance(inner, cst.BinaryOperation) and is_additive(inner.left) and not inner.left.lpar:
        inner = inner.left  # type: ignore[assignment]
    if isinstance(inner, cst.BinaryOperation) and inner.lpar:
        return _first_leaf(inner)
    return inner


def _first_leaf(node: cst.BaseExpression) -> cst.BaseExpression:
    """For a parenthesised sum whose first term is not a sum: that first term."""
    return next(additive_terms(node))


def has(node: cst.BaseExpression, env: Env, test: Callable[[cst.BaseExpression, Env], bool],
         depth: int = 2) -> bool:
    """`test` holds for `node`, a sub-expression, or (`depth` steps back) a name's assigned value.

    Memoized per function (`Env.memo`): the terms of the sums in one function share their names'
    assigned values, which would otherwise be searched once per term.
    """
    key = (id(node), test.__name__, depth)
    if key not in env.memo:
        env.memo[key] = _search(node, env, test, depth)
    return env.memo[key]


def _search(node: cst.BaseExpression, env: Env, test: Callable[[cst.BaseExpression, Env], bool], depth: int) -> bool:
    node = _unwrap(node)
    if test(node, env):
        return True
    kind = type(node)
    if kind is cst.Name:
        return depth > 0 and any(has(value, env, test, depth - 1) for value in env.values(node.value))
    if kind is cst.Lambda or kind is cst.FunctionDef:
        return False
    return any(_EXPRESSION(child) and has(child, env, test, depth) or
               (type(child) is cst.Arg and has(child.value, env, test, depth))
               for child in inner_children(node))


def is_square_of_tensor(node: cst.BaseExpression, env: Env) -> bool:
    base: Optional[cst.BaseExpression] = None
    operator = type(node.operator) if type(node) is cst.BinaryOperation else None
    if operator is cst.Power:
        if number_value(node.right) == 2:
            base = node.left
    elif operator is cst.Multiply:  # `u * u`, also `-0.5 * u * u` and `-u * u`: a number or a sign before it
        if node.left.deep_equals(node.right) or _last_factor(node.left).deep_equals(node.right):
            base = node.right
    elif _method(node, SQUARE_METHODS, env) is not None:
        base = _receiver(node)  # type: ignore[arg-type]
    elif type(node) is cst.Call and _method(node, POW_METHODS, env) is not None:
        exponent = _first_arg(node)
        base = _receiver(node) if exponent is not None and number_value(exponent) == 2 else None
    else:
        call = _function(node, SQUARE_FUNCTIONS | POW_FUNCTIONS, env)
        if call is not None:
            positional = [a.value for a in call.args if a.keyword is None]
            if env.imports.matches(call.func, SQUARE_FUNCTIONS) or (
                    len(positional) == 2 and number_value(positional[1]) == 2):
                base = positional[0] if positional else None
    return base is not None and number_value(base) is None


def _is_abs_of_tensor(node: cst.BaseExpression, env: Env) -> bool:
    """`torch.abs(y - mu)`, `(y - mu).abs()`, `abs(d)`: a tensor's magnitude."""
    if type(node) is not cst.Call:
        return False
    if _method(node, ABS_METHODS, env) is not None:
        base: Optional[cst.BaseExpression] = _receiver(node)  # type: ignore[arg-type]
    else:
        call = _function(node, ABS_FUNCTIONS, env)
        base = _first_arg(call) if call is not None else None
    return base is not None and number_value(base) is None


def _is_log_term(node: cst.BaseExpression, env: Env) -> bool:
    return log_operand(node, env) is not None or _is_log_2pi(node, env)


def _is_log_2pi(node: cst.BaseExpression, env: Env, attributes: bool = True) -> bool:
    """`math.log(2 * math.pi)`, `np.log(2 * np.pi)`, or the constant's value written out; a module constant or
    a `self.` attribute bound to one (`LOG_2PI`, `self.log_2pi`)."""
    value = number_value(node)
    if value is None and type(node) is cst.Name:
        value = env.constant_value(node.value)
    attr = _self_attribute(node) if attributes else None
    if attr is not None:
        bound = env.attribute_values(attr)
        return bool(bound) and all(_is_log_2pi(each, env, False) for each in bound)
    if value is not None:
        return any(abs(value - c) < 1e-6 for c in (LOG_2PI, LOG_2PI / 2, -LOG_2PI, -LOG_2PI / 2))
    if isinstance(node, cst.Call) and (env.imports.matches(node.func, SCALAR_LOG_FUNCTIONS | LOG_FUNCTIONS)
                                       or _method(node, LOG_METHODS, env) is not None):
        operand = _first_arg(node) if node.args else None
        return operand is not None and mentions_pi(operand, env)
    return False


def mentions_pi(node: cst.BaseExpression, env: Env) -> bool:
    if env.imports.matches(node, PI_NAMES) or (isinstance(node, cst.Attribute) and node.attr.value == "pi"):
        return True
    if isinstance(node, cst.Call):
        first = _first_arg(node)
        return first is not None and mentions_pi(first, env)
    return any(isinstance(child, cst.BaseExpression) and mentions_pi(child, env) for child in inner_children(node))


# --- operands -----------------------------------------------------------------------------------------
def leaves(node: cst.BaseExpression, env: Env) -> Iterator[cst.BaseExpression]:
    """The tensor values an expression reads: names, attributes and calls that are not math on them."""
    node = _unwrap(node)
    strings = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
    if number_value(node) is not None or isinstance(node, strings):
        return
    if isinstance(node, (cst.Name, cst.Attribute)):
        if not env.imports.matches(node, PI_NAMES) and not (type(node) is cst.Name and env.is_number_constant(
                node.value)):
            yield node
        return
    if isinstance(node, cst.Subscript):
        yield from leaves(node.value, env)
        return
    if isinstance(node, cst.BinaryOperation):
        yield from leaves(node.left, env)
        yield from leaves(node.right, env)
        return
    if isinstance(node, cst.UnaryOperation):
        yield from leaves(node.expression, env)
        return
    if isinstance(node, cst.Call):
        if env.imports.matches(node.func, SCALAR_LOG_FUNCTIONS):
            return
        if dtypes.is_cast_call(node, env.imports):
            yield node  # `x.float()`: the analysis sees a wide input
            return
        if isinstance(node.func, cst.Attribute) and not _imported(node.func.value, env):
            yield from leaves(node.func.value, env)  # x.softmax(...), x.sum(...): the receiver
            return
        first = _first_arg(node)
        if first is not None and _imported(node.func, env):
            yield from leaves(first, env)  # torch.exp(x), F.softmax(x)
            return
        yield node
        return
    yield node


class _Reader:
    """`probshape.Reader` over LibCST's nodes, within one function's bindings."""

    by_name = True

    def __init__(self, env: Env) -> None:
        self.env = env
        self.values, self.attribute_values, self.constant_value = env.values, env.attribute_values, env.constant_value
        self.is_local, self.calls_producer = env.is_local, env.calls_producer

    def plus_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        plus = type(node) is cst.UnaryOperation and type(node.operator) is cst.Plus  # type: ignore[attr-defined]
        return node.expression if plus else None  # type: ignore[attr-defined]

    def minus_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        minus = isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
        return node.expression if minus else None  # type: ignore[attr-defined]

    def parenthesized(self, node: cst.BaseExpression) -> bool:
        return bool(node.lpar)

    def subscript_value(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        return node.value if isinstance(node, cst.Subscript) else None

    def operation(self, node: cst.BaseExpression) -> Optional[Tuple[str, cst.BaseExpression, cst.BaseExpression]]:
        if type(node) is not cst.BinaryOperation:
            return None
        return _OPERATORS.get(type(node.operator), "other"), node.left, node.right

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

    def method_named(self, node: cst.BaseExpression, names: frozenset) -> Optional[cst.Call]:
        return _method(node, names)

    def cast_operand(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        cast = isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and dtypes.is_cast_call(
            node, self.env.imports)
        return node.func.value if cast else None  # type: ignore[attr-defined]

    def callee_name(self, node: cst.BaseExpression) -> Optional[str]:
        if not isinstance(node, cst.Call) or _imported(node.func, self.env):
            return None
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
        return name if isinstance(name, str) else ""

    def has_arguments(self, call: cst.Call) -> bool:
        return bool(call.args)

    has_positionals = has_arguments  # LibCST's lgamma asks for no argument at all: `x.lgamma(out=y)` is none

    def first_arg(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        return _first_arg(call)

    def receiver(self, call: cst.Call) -> cst.BaseExpression:
        return _receiver(call)

    def arguments(self, call: cst.Call) -> List[Tuple[Optional[str], str, cst.BaseExpression]]:
        return [(None if a.keyword is None else a.keyword.value, a.star, a.value) for a in call.args]
