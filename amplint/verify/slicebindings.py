"""What a module binds at its top level, and what a scope reads: the slicer's reading of CPython's tree.

The slicer keeps only the statements a density needs, so it must know which
top-level statement binds a name (a `def`, a `class`, an assignment, one
alias of an import) and which names a function reads from its module
(CPython's own `symtable` decides what is local, so comprehensions, lambdas
and `global` are read as the interpreter reads them). A name bound only
inside a top-level `if` or `try` (`try: import wandb` ...) is recorded apart:
which branch runs is decided at import time, and the slice does not guess it.
"""
from __future__ import annotations

import ast
import symtable
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Tuple

Path = Tuple[str, ...]  # attribute names read on a name: `F.softplus` is ("softplus",), a bare `F` is ()


@dataclass(frozen=True)
class Binding:
    """One top-level statement that binds a name; `alias` is which name of an import statement."""

    index: int
    alias: Optional[int] = None


@dataclass(frozen=True)
class Conditional:
    """A name bound only under a top-level `if`/`try`/`with`/loop; `module` when that binding is an import."""

    line: int
    module: Optional[str] = None


@dataclass
class TopLevel:
    """A module's top-level bindings, by name."""

    names: Dict[str, List[Binding]] = field(default_factory=dict)
    stars: List[int] = field(default_factory=list)  # `from x import *` statements
    conditional: Dict[str, Conditional] = field(default_factory=dict)


def assigned_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds (`a`, `a, (b, *c)`); attributes and subscripts bind none."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from assigned_names(element)
    elif isinstance(target, ast.Starred):
        yield from assigned_names(target.value)


def statement_names(statement: ast.stmt) -> List[Tuple[str, Optional[int]]]:
    """(name, alias index) for each name `statement` binds at its own level."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(statement.name, None)]
    if isinstance(statement, ast.Assign):
        return [(name, None) for target in statement.targets for name in assigned_names(target)]
    if isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        value = getattr(statement, "value", None)
        if isinstance(statement, ast.AnnAssign) and value is None:
            return []
        return [(name, None) for name in assigned_names(statement.target)]
    if isinstance(statement, ast.Import):
        return [((alias.asname or alias.name.split(".", 1)[0]), i) for i, alias in enumerate(statement.names)]
    if isinstance(statement, ast.ImportFrom):
        return [((alias.asname or alias.name), i) for i, alias in enumerate(statement.names) if alias.name != "*"]
    return []


def top_level(tree: ast.Module) -> TopLevel:
    out = TopLevel()
    for index, statement in enumerate(tree.body):
        if isinstance(statement, ast.ImportFrom) and any(alias.name == "*" for alias in statement.names):
            out.stars.append(index)
        for name, alias in statement_names(statement):
            out.names.setdefault(name, []).append(Binding(index, alias))
        if isinstance(statement, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for name, found in _nested_bindings(statement):
                out.conditional.setdefault(name, found)
    return out


def _nested_bindings(statement: ast.stmt) -> Iterator[Tuple[str, Conditional]]:
    for node in ast.walk(statement):
        scope = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
        if scope and node is not statement:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield node.name, Conditional(node.lineno)
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.asname or alias.name.split(".", 1)[0], Conditional(node.lineno, alias.name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                yield alias.asname or alias.name, Conditional(node.lineno, node.module or ".")
        elif isinstance(node, ast.stmt):
            for name, _ in statement_names(node):
                yield name, Conditional(node.lineno)


def scope_tables(text: str, filename: str) -> Dict[Tuple[str, int], symtable.SymbolTable]:
    """Every function and class table of a module, by (name, line of its `def`/`class`)."""
    out: Dict[Tuple[str, int], symtable.SymbolTable] = {}
    stack = [symtable.symtable(text, filename, "exec")]
    while stack:
        table = stack.pop()
        for child in table.get_children():
            if child.get_type() in ("function", "class"):
                out.setdefault((child.get_name(), child.get_lineno()), child)
            stack.append(child)
    return out


def globals_of(table: symtable.SymbolTable) -> Set[str]:
    """The names a function reads from its module (or builtins), nested lambdas and comprehensions included."""
    out: Set[str] = set()
    stack = [table]
    while stack:
        current = stack.pop()
        out.update(symbol.get_name() for symbol in current.get_symbols()
                   if symbol.is_global() and symbol.is_referenced())
        stack.extend(current.get_children())
    return out


def loads(node: ast.AST) -> Set[str]:
    """Every name `node` reads outside annotations (the slice drops annotations, so they need nothing)."""
    out: Set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
            out.add(current.id)
        stack.extend(child for child in ast.iter_child_nodes(current) if not _annotation(current, child))
    return out


def _annotation(parent: ast.AST, child: ast.AST) -> bool:
    if isinstance(parent, ast.arg):
        return child is parent.annotation
    if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return child is parent.returns
    return isinstance(parent, ast.AnnAssign) and child is parent.annotation


def attribute_paths(node: ast.AST, names: Set[str]) -> Dict[str, Set[Path]]:
    """For each of `names`, the attribute chains read on it in `node` (a bare use is the empty chain)."""
    parents: Dict[int, ast.AST] = {}
    for parent in ast.walk(node):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    out: Dict[str, Set[Path]] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in names:
            chain: List[str] = []
            current: ast.AST = sub
            parent = parents.get(id(current))
            while isinstance(parent, ast.Attribute) and parent.value is current:
                chain.append(parent.attr)
                current, parent = parent, parents.get(id(parent))
            out.setdefault(sub.id, set()).add(tuple(chain))
    return out


def receiver_attributes(node: ast.AST, receiver: str) -> Set[str]:
    """`x` of every `self.x` (for `receiver` "self") and of every `super().x` read in `node`."""
    out: Set[str] = set()
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Attribute):
            continue
        value = sub.value
        if isinstance(value, ast.Name) and value.id == receiver:
            out.add(sub.attr)
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
            out.add(sub.attr)
    return out


def local_imports(node: ast.AST) -> List[ast.stmt]:
    """Import statements inside a function body: they run when it is called, so the slice must satisfy them."""
    return [sub for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom)) and sub is not node]
