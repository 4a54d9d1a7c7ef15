"""Attribute names a program computes: `getattr(obj, name)` where `name` is not written at the call.

Real trainers pick a method by a name from a config or an argument
(`getattr(self, f"loss_{kind}")`, `getattr(objectives, name)(model, x)`). The
flow (`flow.py`) reads the name as the strings that may reach it: a literal, a
local name's assignments, a parameter's arguments at its call sites and its
default, both arms of `a if c else b`, an f-string's parts. Each is a
pattern: a name, or a prefix ending in `*` where the rest is not known (an
f-string after its last known part); `*` alone is any name. A name it cannot read matches every method: the
answer grows, it never drops the method that runs.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Callable, FrozenSet, Iterable, Iterator, Optional, Set

from amplint.facts.astmathenv import parameters
from amplint.project.flowtrees import param_names
from amplint.project.summary import MODULE_KEY

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.flowtrees import FileTree

ANY = "*"
Patterns = FrozenSet[str]
MAX_SPELLINGS = 64  # an f-string's spellings kept whole; past it, prefixes: the answer widens, it drops nothing


def matches(patterns: Patterns, name: str) -> bool:
    return any(p == name or (p.endswith(ANY) and name.startswith(p[:-1])) for p in patterns)


def literal(node: ast.AST) -> Optional[Patterns]:
    """The patterns an expression gives without looking further than itself (None: it needs the flow)."""
    if isinstance(node, ast.Constant):
        return frozenset({node.value}) if isinstance(node.value, str) else frozenset()
    if isinstance(node, (ast.Name, ast.IfExp, ast.JoinedStr)):
        return None
    return frozenset({ANY})


def formatted(node: ast.JoinedStr, strings: Callable[[ast.expr], Patterns]) -> Patterns:
    """An f-string's names: its parts joined, each formatted value as the names it may hold. Past
    `MAX_SPELLINGS` spellings, or after a part that is not known whole, the literal head and `*`."""
    spelled: Set[str] = {""}
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            spelled = {head + part.value for head in spelled}
            continue
        held = strings(part.value) if isinstance(part, ast.FormattedValue) and part.format_spec is None and \
            part.conversion == -1 else frozenset({ANY})
        if not held or any(name.endswith(ANY) for name in held) or len(spelled) * len(held) > MAX_SPELLINGS:
            tails = {name if name.endswith(ANY) else name + ANY for name in held} or {ANY}
            return frozenset(head + tail for head in spelled for tail in tails)
        spelled = {head + name for head in spelled for name in held}
    return frozenset(spelled)


def default_of(node: ast.AST, name: str) -> Optional[ast.expr]:
    """The default value of the parameter `name` of a function (None: it has none)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None
    return next((default for param, default in parameters(node) if param == name), None)  # type: ignore[arg-type]


def assigned(tree: "FileTree", scope: str, name: str) -> Iterator[ast.expr]:
    """The values assigned to `name` in `scope` itself (plain `name = value` statements)."""
    for binding in tree.scope_facts(scope).bindings.get(name, ()):
        if isinstance(binding, ast.Assign) and binding.value is not None and any(
                isinstance(t, ast.Name) and t.id == name for t in binding.targets):
            yield binding.value


def is_parameter(tree: "FileTree", scope: str, name: str) -> bool:
    node = tree.scopes.get(scope)
    return scope != MODULE_KEY and node is not None and name in param_names(node)


def join(parts: Iterable[Patterns]) -> Patterns:
    return frozenset().union(*parts)
