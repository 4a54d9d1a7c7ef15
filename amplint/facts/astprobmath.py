"""`probmath` over CPython's tree: the shapes of hand-written probability math, for the project summary.

The recognizers are `facts.probshape`'s and `facts.sumshape`'s, as for `facts.probmath`; this module asks them
of CPython's nodes (through `facts.astreader`, which lists where the trees' answers differ), so that a file whose
only sites are hand-written math is summarized without LibCST (`astsites.SiteJudge`).

`tests/test_ast_summary.py` holds the two readings equal on the shapes, and the
summaries of the corpora are compared file by file (benchmarks/RESULTS.md).
"""
from __future__ import annotations

import ast
from typing import Any, Callable, Iterator, Optional, Tuple

from amplint.facts import probshape, sumshape
from amplint.facts.astmathenv import Env
from amplint.facts.astreader import AstReader as _Reader

_DEPTH = probshape.DEPTH


def lgamma_operand(node: ast.expr, env: Env) -> Optional[ast.expr]:
    """`probmath.lgamma_operand`: `x` of `torch.lgamma(x)`, `x.lgamma()`, `torch.special.gammaln(x)`."""
    return probshape.lgamma_operand(node, _Reader(env))


def log_operand(node: ast.expr, env: Env) -> Optional[ast.expr]:
    """`x` of a tensor log: `torch.log(x)`, `x.log()`, `torch.log2(x)`. `math.log` is not a tensor log."""
    return probshape.log_operand(node, _Reader(env))


def strip_floor(node: ast.expr, env: Env) -> Tuple[ast.expr, Optional[Tuple[ast.expr, float]]]:
    """`probmath.strip_floor`: (the value under a floor, (the floor's bound, its value) or None)."""
    return probshape.strip_floor(node, _Reader(env))


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


# --- Gaussian log-densities and KLs -------------------------------------------------------------------
def additive_terms(node: ast.expr, env: Env) -> Iterator[ast.expr]:
    """The terms of `(a - b + c)`, unary minus dropped; a sum in parentheses of its own is one term."""
    return sumshape.additive_terms(node, _Reader(env))


def has(node: ast.expr, env: Env, test: Callable[[ast.expr, Env], bool], depth: int = 2) -> bool:
    """`probmath.has`: `sumshape.has` for a test of CPython's (node, env)."""
    def tree_test(each: ast.expr, _tree: Any) -> bool:
        return test(each, env)
    tree_test.__name__ = test.__name__
    return sumshape.has(node, _Reader(env), tree_test, depth)


def is_square_of_tensor(node: ast.expr, env: Env) -> bool:
    return sumshape.is_square_of_tensor(node, _Reader(env))


def mentions_pi(node: ast.expr, env: Env) -> bool:
    return sumshape.mentions_pi(node, _Reader(env))


# --- operands -----------------------------------------------------------------------------------------
def leaves(node: ast.expr, env: Env) -> Iterator[ast.expr]:
    """`probmath.leaves`: the tensor values an expression reads."""
    return sumshape.leaves(node, _Reader(env))
