"""Attribute names a program computes: `getattr(obj, name)` where `name` is not written at the call.

Real trainers pick a method by a name from a config or an argument
(`getattr(self, f"loss_{kind}")`, `getattr(objectives, name)(model, x)`). The
flow (`flow.py`) reads the name as the strings that may reach it: a literal, a
local name's assignments, a parameter's arguments at its call sites and its
default, both arms of `a if c else b`. Each is a pattern: a name, or a prefix
ending in `*` where the rest is not known (an f-string after its literal
head); `*` alone is any name. A name it cannot read matches every method: the
answer grows, it never drops the method that runs.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from amplint.project.flowtrees import param_names
from amplint.project.summary import MODULE_KEY

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.flowtrees import FileTree

ANY = "*"
Patterns = FrozenSet[str]


def matches(patterns: Patterns, name: str) -> bool:
    return any(p == name or (p.endswith(ANY) and name.startswith(p[:-1])) for p in patterns)


def literal(node: ast.AST) -> Optional[Patterns]:
    """The patterns an expression gives without looking further than itself (None: it needs the flow)."""
    if isinstance(node, ast.Constant):
        return frozenset({node.value}) if isinstance(node.value, str) else frozenset()
    if isinstance(node, ast.JoinedStr):
        head = node.values[0] if node.values else None
        text = head.value if isinstance(head, ast.Constant) and isinstance(head.value, str) else ""
        return frozenset({text + ANY})
    if isinstance(node, (ast.Name, ast.IfExp)):
        return None
    return frozenset({ANY})


def default_of(node: ast.AST, name: str) -> Optional[ast.expr]:
    """The default value of the parameter `name` of a function (None: it has none)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    defaults: List[Tuple[ast.arg, Optional[ast.expr]]] = [
        *zip(positional[len(positional) - len(args.defaults):], args.defaults),
        *zip(args.kwonlyargs, args.kw_defaults)]
    return next((value for arg, value in defaults if arg.arg == name), None)


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
