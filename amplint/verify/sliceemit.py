"""Write a slice out as text: per project module, only the statements the slicer kept, annotations dropped.

Annotations are dropped because they compute nothing and would otherwise need
`typing` (or the project's own types) at definition time. Each module keeps
its dotted name, so the child process can register it and the slice's own
`from .losses import LOG_2PI` finds it there, never on disk. Modules come in
the order their top-level imports need (a module after the ones it imports
names from).
"""
from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import List, Set, Tuple

from amplint.verify.slicebindings import statement_names
from amplint.verify.slicer import Kept, Parsed, Slicer


@dataclass(frozen=True)
class SliceModule:
    """One project module of a slice, as the child process executes it."""

    name: str
    path: str
    package: bool
    source: str

    def to_json(self) -> dict:
        return {"name": self.name, "path": self.path, "package": self.package, "source": self.source}


class _Unannotate(ast.NodeTransformer):
    """Drops every annotation: a slice computes, it does not type-check."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AsyncFunctionDef:
        node.returns = None
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[node.target], value=self.visit(node.value), lineno=node.lineno)


def module_source(parsed: Parsed, kept: Kept) -> str:
    """The module's kept statements, in their order, then any wrapper of a site expression."""
    body: List[ast.stmt] = []
    for index, node in enumerate(parsed.tree.body):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and index in kept.aliases:
            clone = copy.deepcopy(node)
            clone.names = [alias for i, alias in enumerate(clone.names) if i in kept.aliases[index]]
            body.append(clone)
        elif index in kept.statements:
            body.append(_class(node, kept.members.get(index, set())) if isinstance(node, ast.ClassDef)
                        else copy.deepcopy(node))
    body.extend(copy.deepcopy(kept.extra))
    tree = _Unannotate().visit(ast.Module(body=body, type_ignores=[]))
    return ast.unparse(ast.fix_missing_locations(tree))


def _class(node: ast.ClassDef, members: Set[str]) -> ast.ClassDef:
    """The class with only the members kept (a class with none keeps `pass`)."""
    out = copy.deepcopy(node)
    out.body = [member for member in out.body if set(name for name, _ in statement_names(member)) & members]
    out.body = out.body or [ast.Pass()]
    return out


def emit(slicer: Slicer) -> Tuple[SliceModule, ...]:
    """Every module the slicer loaded, each after the modules its top level imports from."""
    order: List[str] = []
    seen: Set[str] = set()

    def visit(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for after in slicer.kept[name].after:
            if after in slicer.kept:
                visit(after)
        order.append(name)

    for name in slicer.parsed:
        visit(name)
    return tuple(SliceModule(name, slicer.parsed[name].module.path, slicer.parsed[name].module.package,
                             module_source(slicer.parsed[name], slicer.kept[name])) for name in order)
