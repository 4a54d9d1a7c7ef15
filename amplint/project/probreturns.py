"""Which functions of a file return probabilities, judged by what they compute, on CPython's tree.

`p = to_probs(policy(z)); torch.log(p + 1e-10)` is a log of probabilities
because `to_probs` returns `torch.softmax(out, -1)`, wherever it is defined,
whatever it is called. The summary keeps this per function
(`FunctionSummary.returns_prob`); the walk enters the functions that call
one, and the judge counts such a call as probabilities (`ProbabilityCallees`).
Names prove nothing here (`Env.by_name` off): `return log_probs` of an
unknown call, or a parameter passed along, is no helper of this kind.
"""
from __future__ import annotations

import ast
from typing import FrozenSet

from amplint.facts.astmathenv import Env, Unsure
from amplint.facts.astprobmath import is_prob
from amplint.facts.astsource import SourceText
from amplint.names import ImportTable
from amplint.project.flowtrees import index_tree

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def probability_returns(tree: ast.Module, text: str, imports: ImportTable) -> FrozenSet[str]:
    """The scope keys of the functions that may return probabilities (a softmax, a sigmoid, a normalisation)."""
    indexed = index_tree(tree)
    source = SourceText(text)
    found = set()
    for key, node in indexed.scopes.items():
        if not isinstance(node, _FUNCTIONS):
            continue
        env = Env(imports, source, node, by_name=False)
        for value in indexed.scope_facts(key).returns:
            try:
                if is_prob(value, env):
                    found.add(key)
                    break
            except Unsure:  # a comment where LibCST's reading would differ: no claim
                break
    return frozenset(found)

