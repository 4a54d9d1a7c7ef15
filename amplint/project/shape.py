"""What a file defines, from CPython's tree: the part of a summary that name resolution reads.

The resolver asks many files only what they define: which classes, with which
bases and methods, which module-level functions, what they import. On the
real-code corpus 53 of the 184 files parsed with LibCST were parsed for that
alone, never entered by the walk (benchmarks/RESULTS.md). `ast` answers it
about ten times faster, with the same import table (`names.import_table`) and
the collector's own naming of scopes and classes.

A shape cannot say what a file does. For the two questions that need it, it
says only when the answer is certainly empty, and the resolver asks the full
summary otherwise:
- `bound`: the names bound outside functions; a module-level instance
  (`model = Net()`, or an assignment in a class body) can only be one of them;
- `mentions`: per class, each `self.<attr>` written anywhere in its body; an
  attribute the class holds (`self.head = Head()`) is always one of them.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Optional, Set, Tuple, Union

from amplint.astwalk import child_nodes
from amplint.names import ImportTable, ast_dotted
from amplint.project.summary import MODULE_KEY, FileSummary, Imports, import_pairs, imported, methods_by_class

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class FunctionShape:
    key: str
    display: str
    class_name: Optional[str]
    parent: Optional[str]
    nested: Tuple[Tuple[str, str], ...]


@dataclass(frozen=True)
class ClassShape:
    name: str
    bases: Tuple[str, ...]
    methods: Tuple[str, ...]


@dataclass(frozen=True)
class FileShape:
    imports: Imports
    star_modules: Tuple[str, ...]
    functions: Dict[str, FunctionShape] = field(default_factory=dict)
    classes: Dict[str, ClassShape] = field(default_factory=dict)
    bound: FrozenSet[str] = frozenset()
    mentions: Dict[str, FrozenSet[str]] = field(default_factory=dict)

    def imported(self, name: str) -> Tuple[str, ...]:
        return imported(self.imports, name)


Shape = Union[FileShape, FileSummary]  # either answers the resolver's questions about names, classes and methods


class _Scope:
    def __init__(self, key: str, display: str, class_name: Optional[str], parent: Optional["_Scope"]) -> None:
        self.key, self.display, self.class_name, self.parent = key, display, class_name, parent
        self.nested: Dict[str, str] = {}


class _Builder:
    """One pass in source order, naming scopes as `facts.collector.Collector` does."""

    def __init__(self) -> None:
        self.module = _Scope(MODULE_KEY, "<module>", None, None)
        self.scopes: Dict[str, _Scope] = {MODULE_KEY: self.module}
        self.bases: Dict[str, Tuple[str, ...]] = {}
        self.bound: Set[str] = set()
        self.mentions: Dict[str, Set[str]] = {}

    def block(self, nodes: List[ast.AST], scope: _Scope, classes: List[str], in_class: bool) -> None:
        for node in nodes:
            self.node(node, scope, classes, in_class)

    def node(self, node: ast.AST, scope: _Scope, classes: List[str], in_class: bool) -> None:
        kind = type(node)  # CPython's parser makes nodes of these exact types
        if kind is ast.Name:  # the most common node, and one with no children
            if type(node.ctx) is ast.Store and scope is self.module:
                self.bound.add(node.id)
            return
        if kind is ast.ClassDef:
            name = (classes[-1] + "." if in_class else "") + node.name
            self.bases[name] = tuple(
                ast_dotted(base.value if isinstance(base, ast.Starred) else base) or "" for base in node.bases)
            self._expressions(node.bases + [k.value for k in node.keywords] + node.decorator_list, scope, classes)
            self.mentions.setdefault(name, set())
            self.block(node.body, scope, classes + [name], True)
            return
        if kind in _FUNCTIONS:
            self._expressions(list(node.decorator_list), scope, classes)
            self.block(node.body, self._function(node.name, scope, classes, in_class), classes, False)
            return
        if kind is ast.Attribute and type(node.value) is ast.Name and node.value.id == "self":
            for name in classes:  # every class whose body holds it, nested ones included
                self.mentions[name].add(node.attr)
        for child in child_nodes(node):
            self.node(child, scope, classes, in_class)

    def _expressions(self, nodes: List[ast.expr], scope: _Scope, classes: List[str]) -> None:
        for each in nodes:  # a walrus in a decorator or a base binds in the enclosing scope
            self.node(each, scope, classes, False)

    def _function(self, name: str, parent: _Scope, classes: List[str], in_class: bool) -> _Scope:
        if in_class:
            key = display = f"{classes[-1]}.{name}"
            class_name: Optional[str] = classes[-1]
        elif parent is not self.module:
            key, display, class_name = f"{parent.key}.<locals>.{name}", f"{parent.display}.{name}", parent.class_name
            parent.nested[name] = key
        else:
            key = display = name
            class_name = None
        scope = _Scope(key, display, class_name, parent)
        self.scopes.setdefault(key, scope)  # a second `def` of a key: its body is walked, the first is kept
        return scope


def file_shape(tree: ast.Module, imports: ImportTable) -> FileShape:
    """The file's shape; `imports` is `names.import_table(tree)`."""
    builder = _Builder()
    builder.block(list(tree.body), builder.module, [], False)
    functions = {
        key: FunctionShape(key, scope.display, scope.class_name, None if scope.parent is None else scope.parent.key,
                           tuple(sorted(scope.nested.items())))
        for key, scope in builder.scopes.items()}
    methods = methods_by_class((key, scope.class_name) for key, scope in builder.scopes.items())
    classes = {name: ClassShape(name, bases, tuple(methods.get(name, ()))) for name, bases in builder.bases.items()}
    return FileShape(
        imports=import_pairs(imports.bindings),
        star_modules=tuple(imports.star_modules),
        functions=functions,
        classes=classes,
        bound=frozenset(builder.bound),
        mentions={name: frozenset(found) for name, found in builder.mentions.items()},
    )
