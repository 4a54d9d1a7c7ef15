"""A project's own distribution classes: a class derived from a torch (or configured) distribution is one.

Real code subclasses distributions (`class SquashedNormal(TransformedDistribution)`,
`class TruncatedNormal(Normal)`) and calls `log_prob` on its instances. Read as
an unknown class, its site was opaque (risk unknown, never fixable), and casting
its constructor's arguments did not clear it. A class whose bases, through other
classes, reach a distribution class is read as a configured one
(`extend-distributions`): its constructor's tensor arguments are the inputs, and
fix A casts them. Each keeps its library base and the methods the project's
classes on the way define (`model.DistributionBase`): where they leave the
computed method and the constructor alone, the base's measurements apply.

One rule, read from CPython's tree, serves both modes: single-file mode finds a
file's own classes (`local_distribution_classes`), and the project pass
(`project/distsubclasses.py`) asks each file with `derived_classes` for the
classes derived from ones found in any file.
"""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Tuple

from amplint.model import DistributionBase
from amplint.names import ImportTable, ast_qualnames
from amplint.torchnames import DISTRIBUTION_PACKAGES, distribution_name


def local_distribution_classes(tree: ast.Module, table: ImportTable,
                               extra: FrozenSet[str]) -> Tuple[DistributionBase, ...]:
    """The classes of `tree` (nested ones as `Outer.Inner`) derived from a distribution class, through its own;
    each named by its key in the file."""
    found: Dict[str, DistributionBase] = {}
    grew = True
    while grew:  # a class derived from one found: found on the next round
        grew = False
        for each in derived_classes(tree, table, extra, found, {}):
            if each.name not in found:
                found[each.name] = each
                grew = True
    return tuple(found.values())


def derived_classes(tree: ast.Module, table: ImportTable, known: FrozenSet[str],
                    local: Mapping[str, DistributionBase],
                    project: Mapping[str, DistributionBase]) -> Iterator[DistributionBase]:
    """The classes of `tree` whose bases the file's imports qualify as a distribution, or as a class in `known`
    (qualified: `project` holds those found in the project's files) or in `local` (this file's, found already),
    each named by its key in the file."""
    for key, node in _classes(tree.body, ""):
        for base in node.bases:
            quals = ast_qualnames(base.value if isinstance(base, ast.Subscript) else base, table)  # `Generic[T]`
            parent = _parent(quals, known, local, project)
            if parent is not None:
                defines = set(parent.defines) | _defined(node)
                yield DistributionBase(key, parent.base, tuple(sorted(defines)))
                break


def _parent(quals: FrozenSet[str], known: FrozenSet[str], local: Mapping[str, DistributionBase],
            project: Mapping[str, DistributionBase]) -> Optional[DistributionBase]:
    """What a base spelled as `quals` stands for: a class found already, or a library (or configured) one."""
    for name in sorted(quals):
        if name in local:
            return local[name]
    name = distribution_name(quals, known)
    if name is None:
        return None
    if name in project:
        return project[name]
    return DistributionBase(name, name if name.startswith(DISTRIBUTION_PACKAGES) else "")


def _defined(node: ast.ClassDef) -> set:
    return {each.name for each in node.body if isinstance(each, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _classes(body: List[ast.stmt], prefix: str) -> Iterator[Tuple[str, ast.ClassDef]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield prefix + node.name, node
            yield from _classes(node.body, f"{prefix}{node.name}.")
