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

The recognizers themselves are `facts.probshape`'s and `facts.sumshape`'s,
written once for both trees; this module is their reader for LibCST's nodes
(`_Reader`) and keeps LibCST's own walk (`inline_sites`) and answer types
(`Epsilon`, `InlineSite`). `facts.astprobmath` is the reader for CPython's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple

import libcst as cst

from amplint import dtypes
from amplint.facts import probshape, sumshape
from amplint.cstwalk import inner_children, type_test
from amplint.facts.mathcalls import first_arg as _first_arg, function_call as _function, imported as _imported
from amplint.facts.mathcalls import method_call as _method, receiver as _receiver
from amplint.facts.mathenv import Env, function_env, self_attribute as _self_attribute, statements_of
from amplint.facts.mathnames import PI_NAMES
from amplint.screen import FLOAT16_SUBNORMAL

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


def is_sum_of_exp(node: cst.BaseExpression, env: Env, depth: int = _DEPTH) -> bool:
    """`exp(x).sum(...)`, `torch.sum(torch.exp(x))`, or a name bound to one: a log-normaliser's argument."""
    return probshape.is_sum_of_exp(node, _Reader(env), depth)


# --- Gaussian log-densities and KLs -------------------------------------------------------------------
def is_additive(node: cst.BaseExpression) -> bool:
    return sumshape.is_additive(node, _NODES)


def additive_terms(node: cst.BaseExpression, root: bool = True) -> Iterator[cst.BaseExpression]:
    """The terms of `(a - b + c)`, with unary minus dropped: a, b, c. Inner parentheses make one term."""
    return sumshape.additive_terms(node, _NODES, root)


def gaussian(node: cst.BaseExpression, env: Env
             ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """A sum with a squared tensor term beside a log term: (its tensor operands, where it starts), else None."""
    return _density_sum(node, env, sumshape.is_square_of_tensor)


def laplace(node: cst.BaseExpression, env: Env
            ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """A sum with a tensor's magnitude beside a log term (`abs(y - mu) / b + log(2 * b)`): a Laplace
    log-density written out, whose `|y - mu| / b` overflows float16 for small scales as a square does."""
    return _density_sum(node, env, sumshape.is_abs_of_tensor)


def _density_sum(node: cst.BaseExpression, env: Env, deviation: Callable[[cst.BaseExpression, Any], bool]
                 ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    operands = sumshape.density_sum(node, _Reader(env), deviation)
    return None if operands is None else (operands, first_sum(node))


def first_sum(node: cst.BaseExpression) -> cst.BaseExpression:
    """The innermost left sum of a chain, without parentheses: it starts where the written math starts."""
    return sumshape.first_sum(node, _NODES)


def has(node: cst.BaseExpression, env: Env, test: Callable[[cst.BaseExpression, Env], bool],
         depth: int = 2) -> bool:
    """`sumshape.has` for a test of LibCST's (node, env); memoized per function under the test's name."""
    def tree_test(each: cst.BaseExpression, _tree: Any) -> bool:
        return test(each, env)
    tree_test.__name__ = test.__name__
    return sumshape.has(node, _Reader(env), tree_test, depth)


def is_square_of_tensor(node: cst.BaseExpression, env: Env) -> bool:
    return sumshape.is_square_of_tensor(node, _Reader(env))


def mentions_pi(node: cst.BaseExpression, env: Env) -> bool:
    return sumshape.mentions_pi(node, _Reader(env))


def leaves(node: cst.BaseExpression, env: Env) -> Iterator[cst.BaseExpression]:
    """The tensor values an expression reads: names, attributes and calls that are not math on them."""
    return sumshape.leaves(node, _Reader(env))


class _Nodes:
    """`probshape.Nodes` over LibCST's nodes: what their shape alone tells."""

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


_NODES = _Nodes()


class _Reader(_Nodes):
    """`probshape.Reader` over LibCST's nodes, within one function's bindings."""

    by_name = True

    def __init__(self, env: Env) -> None:
        self.env = env
        self.memo = env.memo
        self.values, self.attribute_values, self.constant_value = env.values, env.attribute_values, env.constant_value
        self.is_local, self.calls_producer, self.is_number_constant = (
            env.is_local, env.calls_producer, env.is_number_constant)

    def subscript_value(self, node: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        return node.value if isinstance(node, cst.Subscript) else None

    def is_literal(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.Float, cst.Integer))

    def literal_number(self, node: cst.BaseExpression) -> Optional[float]:
        try:
            return float(node.evaluated_value)  # type: ignore[attr-defined]
        except (ValueError, OverflowError):
            return None

    def is_string(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))

    def name(self, node: cst.BaseExpression) -> Optional[str]:
        return node.value if isinstance(node, cst.Name) else None

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

    def self_attribute(self, node: cst.BaseExpression) -> Optional[str]:
        return _self_attribute(node)

    def function_call(self, node: cst.BaseExpression, names: frozenset) -> Optional[cst.Call]:
        return _function(node, names, self.env)

    def method_call(self, node: cst.BaseExpression, names: frozenset) -> Optional[cst.Call]:
        return _method(node, names, self.env)

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
