"""A project's own distribution classes: a class derived from a torch (or configured) distribution is one.

Real code subclasses distributions (`class SquashedNormal(TransformedDistribution)`,
`class TruncatedNormal(Normal)`) and calls `log_prob` on its instances. Read as
an unknown class, its site was opaque (risk unknown, never fixable), and casting
its constructor's arguments did not clear it. A class whose bases, through other
classes, reach a distribution class is read as a configured one
(`extend-distributions`): its constructor's tensor arguments are the inputs, and
fix A casts them.

One rule, read from CPython's tree, serves both modes: single-file mode finds a
file's own classes (`local_distribution_classes`), and the project pass
(`project/distsubclasses.py`) asks each file with `derived_classes` for the
classes derived from ones found in any file.
"""
from __future__ import annotations

import ast
from typing import AbstractSet, FrozenSet, Iterator, List, Set, Tuple

from amplint.names import ImportTable, ast_qualnames
from amplint.torchnames import distribution_name


def local_distribution_classes(tree: ast.Module, table: ImportTable, extra: FrozenSet[str]) -> FrozenSet[str]:
    """The classes of `tree` (nested ones as `Outer.Inner`) derived from a distribution class, through its own."""
    found: Set[str] = set()
    grew = True
    while grew:  # a class derived from one found: found on the next round
        grew = False
        for key in derived_classes(tree, table, extra, found):
            if key not in found:
                found.add(key)
                grew = True
    return frozenset(found)


def derived_classes(tree: ast.Module, table: ImportTable, known: FrozenSet[str],
                    local: AbstractSet[str]) -> Iterator[str]:
    """The classes of `tree` whose bases the file's imports qualify as a distribution, or as a class in `known`
    (qualified) or in `local` (this file's, found already)."""
    for key, node in _classes(tree.body, ""):
        for base in node.bases:
            quals = ast_qualnames(base.value if isinstance(base, ast.Subscript) else base, table)  # `Generic[T]`
            if distribution_name(quals, known) is not None or quals & local:
                yield key
                break


def _classes(body: List[ast.stmt], prefix: str) -> Iterator[Tuple[str, ast.ClassDef]]:
    for node in body:
        if isinstance(node, ast.ClassDef):
            yield prefix + node.name, node
            yield from _classes(node.body, f"{prefix}{node.name}.")
