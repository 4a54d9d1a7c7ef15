"""`probmath` over CPython's tree: the two shape questions the project summary asks of CPython's nodes.

The recognizers are `facts.probshape`'s and `facts.sumshape`'s, as for `facts.probmath`, asked through
`facts.astreader` (which lists where the trees' answers differ). The sites themselves are `facts.siteshape`'s;
what is left here is what `astmathsites` (the tensors a site reads) and `project.probreturns` (does a function
return probabilities) ask.

`tests/test_ast_summary.py` holds the two readings equal on the shapes, and the
summaries of the corpora are compared file by file (benchmarks/RESULTS.md).
"""
from __future__ import annotations

import ast
from typing import Iterator

from amplint.facts import probshape, sumshape
from amplint.facts.astmathenv import Env
from amplint.facts.astreader import AstReader as _Reader


def is_prob(node: ast.expr, env: Env, depth: int = probshape.DEPTH) -> bool:
    """`probmath.is_prob`: does `node` hold probabilities?"""
    return probshape.is_prob(node, _Reader(env), depth)


def leaves(node: ast.expr, env: Env) -> Iterator[ast.expr]:
    """`probmath.leaves`: the tensor values an expression reads."""
    return sumshape.leaves(node, _Reader(env))
