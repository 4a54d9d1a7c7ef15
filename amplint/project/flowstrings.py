"""Attribute names a program computes: `getattr(obj, name)` where `name` is not written at the call.

Real trainers pick a method by a name from a config, an argument or a class
attribute (`getattr(self, f"loss_{kind}")`, `getattr(objectives, name)(model, x)`,
`getattr(self, self.loss_name)`). The flow (`flow.py`, through `StringFlow`) reads
the name as the strings that may reach it: a literal, a local name's
assignments, a parameter's arguments at its call sites and its default, both
arms of `a if c else b` and every operand of `a or b`, an f-string's parts, and
an attribute (`self.loss_name`, `getattr(self, "loss_name", "nll")`): what the
class bodies and the `self.` assignments of its owner's classes give it (their
MRO and subclasses, as for any attribute), with the default. Each is a
pattern: a name, or a prefix ending in `*` where the rest is not known (an
f-string after its last known part); `*` alone is any name. A name it cannot read matches every method: the
answer grows, it never drops the method that runs.
"""
from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Any, Callable, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from amplint.facts.astmathenv import parameters
from amplint.project.callsites import call_argument
from amplint.project.flowtrees import param_names
from amplint.project.flowvalues import ClassValue, Instance, Values, unprepared
from amplint.project.summary import MODULE_KEY

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.callsites import CallSite
    from amplint.project.flowtrees import FileTree
    from amplint.project.symbols import ClassRef

ANY = "*"
Patterns = FrozenSet[str]
MAX_SPELLINGS = 64  # an f-string's spellings kept whole; past it, prefixes: the answer widens, it drops nothing


def matches(patterns: Patterns, name: str) -> bool:
    return any(p == name or (p.endswith(ANY) and name.startswith(p[:-1])) for p in patterns)


def overlap(first: Patterns, second: Patterns) -> bool:
    """May a name fit both: `head_*` and `head_pi`, `head_*` and `h*`?"""
    return any(matches(first, q) or matches(second, p) or
               p.endswith(ANY) and q.endswith(ANY) and (p.startswith(q[:-1]) or q.startswith(p[:-1]))
               for p in first for q in second)


def literal(node: ast.AST) -> Optional[Patterns]:
    """The patterns an expression gives without looking further than itself (None: it needs the flow)."""
    if isinstance(node, ast.Constant):
        return frozenset({node.value}) if isinstance(node.value, str) else frozenset()
    if isinstance(node, (ast.Name, ast.IfExp, ast.JoinedStr, ast.BoolOp, ast.Attribute)) or getattr_call(node) or \
            builtin_class_call(node):
        return None
    return frozenset({ANY})


def builtin_class_call(node: ast.AST) -> bool:
    """`AttributeError()`, `object()`: an instance of a builtin class that is not a string (a sentinel a class
    attribute is set to), if the file does not bind the name itself (`StringFlow` asks that)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
        return False
    found = getattr(builtins, node.func.id, None)
    return isinstance(found, type) and not issubclass(found, str)


def getattr_call(node: ast.AST) -> bool:
    """`getattr(obj, name)` or `getattr(obj, name, default)`, written plainly."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
        2 <= len(node.args) <= 3 and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)


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


class StringFlow:
    """The strings half of `flow.Flow`: the names an expression may spell, over the same questions."""

    if TYPE_CHECKING:  # pragma: no cover - provided by `flow.Flow` and `callsites.CallSites`
        def value(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> Values: ...
        def tree(self, path: str) -> "Optional[FileTree]": ...
        def call_sites(self, path: str, scope: str, hops: int = 0) -> "Tuple[CallSite, ...]": ...
        def own_assignments(self, cls: "ClassRef", attr: str) -> Iterator[Tuple[str, str, ast.expr]]: ...
        def stored_outside(self, cls: "ClassRef", attr: str, read: Callable[..., Any]) -> Iterator[Any]: ...
        def _ask(self, key: Tuple[object, ...], hops: int, compute: Callable[[], Any]) -> Any: ...
        def _is_method(self, tree: "FileTree", scope: str) -> bool: ...

    def strings(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> Patterns:
        """The attribute names an expression may give (names, or prefixes ending in `*`)."""
        found = literal(node)
        if found is not None:
            return found
        if isinstance(node, ast.IfExp):
            return self.strings(path, scope, node.body, hops) | self.strings(path, scope, node.orelse, hops)
        if isinstance(node, ast.BoolOp):  # `name or "nll"`
            return join(self.strings(path, scope, each, hops) for each in node.values)
        if isinstance(node, ast.JoinedStr):  # `f"loss_{kind}"`: each string `kind` may hold, in its place
            return formatted(node, lambda part: self.strings(path, scope, part, hops))
        if isinstance(node, ast.Attribute):  # `self.loss_name`
            return self._held_strings(path, scope, node.value, frozenset({node.attr}), None, hops)
        if builtin_class_call(node):  # `AttributeError()`, unless the file binds that name itself
            tree = self.tree(path)
            name = node.func.id  # type: ignore[attr-defined]
            return frozenset() if tree is not None and name not in tree.scope_facts(MODULE_KEY).bound else \
                frozenset({ANY})
        if isinstance(node, ast.Call):  # `getattr(self, "loss_name", "nll")`
            return self._held_strings(path, scope, node.args[0], self.strings(path, scope, node.args[1], hops),
                                      node.args[2] if len(node.args) == 3 else None, hops)
        assert isinstance(node, ast.Name)
        return self._ask(("strings", path, scope, node.id), hops,
                         lambda: self._name_strings(path, scope, node.id, hops))

    def _name_strings(self, path: str, scope: str, name: str, hops: int) -> Patterns:
        tree = self.tree(path)
        if tree is None or scope not in tree.scopes:
            return frozenset({ANY})
        parts = [self.strings(path, scope, value, hops) for value in assigned(tree, scope, name)]
        if is_parameter(tree, scope, name):
            node = tree.scopes[scope]
            default = default_of(node, name)
            if default is not None:
                parts.append(self.strings(path, scope, default, hops))
            params, method = param_names(node), self._is_method(tree, scope)
            for site in self.call_sites(path, scope, hops + 1):
                argument = call_argument(site.call, params, name, 1 if method and site.bound else 0)
                if argument is not None:
                    parts.append(self.strings(site.path, site.scope, argument, hops + 1))
        return join(parts) or frozenset({ANY})

    def _held_strings(self, path: str, scope: str, owner: ast.expr, attrs: Patterns, default: Optional[ast.expr],
                      hops: int) -> Patterns:
        """The strings the attributes `attrs` of what `owner` holds may be, and `default`'s. Any name, where the
        owner is not of a project class, a name is not known whole, an attribute is assigned nowhere the
        project shows and there is no default, or past `MAX_SPELLINGS` names: each name read is an attribute
        of every class the owner may be (transformers' `base_model_prefix` spells 400), so many widen the
        answer to every method instead, as a long f-string does."""
        held = list(unprepared(self.value(path, scope, owner, hops)))
        if not held or any(not isinstance(v, (Instance, ClassValue)) for v in held) or \
                any(attr.endswith(ANY) for attr in attrs):
            return frozenset({ANY})
        parts: List[Patterns] = [self.strings(path, scope, default, hops)] if default is not None else []
        for cls in dict.fromkeys(v.cls for v in held):  # type: ignore[union-attr]
            for attr in sorted(attrs):
                found = self._attr_strings(cls, attr, hops)
                if not found and default is None:
                    return frozenset({ANY})
                parts.append(found)
        names = join(parts)
        return names if len(names) <= MAX_SPELLINGS else frozenset({ANY})  # none: not a string (`None`)

    def _attr_strings(self, cls: "ClassRef", attr: str, hops: int) -> Patterns:
        """The strings `attr` may hold on an instance of `cls` (empty: assigned nowhere, or not known now)."""
        def read(path: str, scope: str, value: ast.expr) -> Patterns:
            return self.strings(path, scope, value, hops)

        return self._ask(("attr strings", cls, attr), hops, lambda: join([
            *(read(*assignment) for assignment in self.own_assignments(cls, attr)),
            *self.stored_outside(cls, attr, read)]))
