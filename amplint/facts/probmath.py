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
written once for both trees; this module asks them of LibCST's nodes (through
`facts.cstreader`) and keeps LibCST's own walk (`inline_sites`) and answer types
(`Epsilon`, `InlineSite`). `facts.astprobmath` asks them of CPython's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, List, Optional, Tuple

import libcst as cst

from amplint.cstwalk import inner_children
from amplint.facts import probshape, sumshape
from amplint.facts.cstreader import NODES as _NODES, CstReader as _Reader
from amplint.facts.mathenv import Env, function_env, statements_of
from amplint.screen import FLOAT16_SUBNORMAL

__all__ = ["Env", "Epsilon", "InlineSite", "function_env", "inline_sites", "statements_of"]

# float16's smallest normal: between the two limits a floor keeps a value but loses precision.
FLOAT16_NORMAL = 2.0 ** -14
_DEPTH = probshape.DEPTH


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
