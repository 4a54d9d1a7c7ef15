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
from dataclasses import dataclass
from typing import Dict, FrozenSet, List, Optional, Tuple

from amplint.facts.astmathenv import Env, Unsure
from amplint.facts.astprobmath import is_prob
from amplint.facts.astsource import SourceText
from amplint.names import ImportTable, ast_dotted as dotted_name
from amplint.project.flowtrees import FileTree

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


ReturnedCall = Tuple[int, str, int]  # (line, callee as written, index: -1 for the whole value)


@dataclass(frozen=True)
class FunctionReturns:
    """What a file's functions return, judged on CPython's tree: for the summary's `returns_prob` and
    `returned_calls`."""

    producers: FrozenSet[str]  # scope keys of functions that may return probabilities they compute
    calls: Dict[str, Tuple[ReturnedCall, ...]]  # scope key -> the calls whose value it returns


def function_returns(indexed: FileTree, text: str, imports: ImportTable) -> FunctionReturns:
    """The file's `FunctionReturns` from its indexed tree (`flowtrees.index_tree`); producers are none where the
    tree is too deep to judge."""
    try:
        producers = _probability_returns(indexed, text, imports)
    except RecursionError:  # a tree too deep to judge: no claim
        producers = frozenset()
    return FunctionReturns(producers, _returned_calls(indexed))


def _probability_returns(indexed: FileTree, text: str, imports: ImportTable) -> FrozenSet[str]:
    """The scope keys of the functions that may return probabilities (a softmax, a sigmoid, a normalisation)."""
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


def _returned_calls(indexed: FileTree) -> Dict[str, Tuple[ReturnedCall, ...]]:
    """Per function, the calls whose value it returns as it is or an element of (`return self.inner(h)`,
    `return net(x)[0]`, `out = net(x); return out`): a wrapper hands on what the call returns, and the project
    follows it there (`returnflow.call_returns`)."""
    found: Dict[str, Tuple[ReturnedCall, ...]] = {}
    for key, node in indexed.scopes.items():
        if not isinstance(node, _FUNCTIONS):
            continue
        facts = indexed.scope_facts(key)
        calls = [call for call in (_returned_call(value, facts.bindings) for value in facts.returns) if call]
        if calls:
            found[key] = tuple(dict.fromkeys(calls))
    return found


def _returned_call(value: ast.expr, bindings: Dict[str, List[ast.AST]]) -> Optional[ReturnedCall]:
    index = -1
    if isinstance(value, ast.Name) and len(bindings.get(value.id, ())) == 1:
        binding = bindings[value.id][0]
        if isinstance(binding, ast.Assign) and len(binding.targets) == 1 and isinstance(binding.targets[0], ast.Name):
            value = binding.value
    if isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and type(value.slice.value) is int:
        index, value = value.slice.value, value.value
        if index < 0:
            return None
    callee = dotted_name(value.func) if isinstance(value, ast.Call) else None
    return (value.lineno, callee, index) if callee else None
