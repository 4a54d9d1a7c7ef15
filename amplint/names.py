"""Resolve names to qualified names through a file's imports.

A light walk of our own instead of LibCST's Scope/QualifiedName metadata:
those providers cost ~90% of a metadata-based rule's run time (see README,
"Speed"). The table is file-wide, not scope-exact: a name imported in two
places resolves to both, and a match on any of them counts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Set

import libcst as cst


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _module_name(node: Optional[cst.BaseExpression], dots: int) -> str:
    base = dotted_name(node) if node is not None else ""
    return "." * dots + (base or "")


@dataclass
class ImportTable:
    """Local name -> every qualified name it may stand for."""

    bindings: Dict[str, Set[str]] = field(default_factory=dict)
    star_modules: List[str] = field(default_factory=list)

    def bind(self, local: str, qualified: str) -> None:
        self.bindings.setdefault(local, set()).add(qualified)

    def qualnames(self, node: cst.BaseExpression) -> FrozenSet[str]:
        """All qualified names `node` may refer to (empty for non-name expressions)."""
        if isinstance(node, cst.Name):
            found = self.bindings.get(node.value)
            if found:
                return frozenset(found)
            names = {node.value}
            names.update(f"{module}.{node.value}" for module in self.star_modules)
            return frozenset(names)
        if isinstance(node, cst.Attribute):
            return frozenset(f"{base}.{node.attr.value}" for base in self.qualnames(node.value))
        return frozenset()

    def matches(self, node: cst.BaseExpression, wanted: Iterable[str]) -> bool:
        wanted_set = wanted if isinstance(wanted, (set, frozenset)) else set(wanted)
        return any(name in wanted_set for name in self.qualnames(node))

    def local_names_for(self, qualified: str) -> List[str]:
        """Local names bound exactly to `qualified`, sorted for determinism."""
        return sorted(name for name, quals in self.bindings.items() if quals == {qualified})


class _ImportCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.table = ImportTable()

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.table.bind(alias.asname.name.value, full)
            else:
                top = full.split(".")[0]
                self.table.bind(top, top)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = _module_name(node.module, len(node.relative))
        if isinstance(node.names, cst.ImportStar):
            self.table.star_modules.append(module)
            return
        for alias in node.names:
            name = dotted_name(alias.name) or ""
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            # `from .. import x` is "..x", the same name `from ..x import ...` builds on.
            self.table.bind(local, f"{module}.{name}" if module.strip(".") else module + name)

    def visit_Assign(self, node: cst.Assign) -> None:
        # `ac = torch.autocast`: an alias by plain assignment.
        if not isinstance(node.value, (cst.Name, cst.Attribute)):
            return
        root = node.value
        while isinstance(root, cst.Attribute):
            root = root.value
        if not (isinstance(root, cst.Name) and root.value in self.table.bindings):
            return
        quals = self.table.qualnames(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                for qual in quals:
                    self.table.bind(target.target.value, qual)


def collect_imports(module: cst.Module) -> ImportTable:
    collector = _ImportCollector()
    module.visit(collector)
    return collector.table
