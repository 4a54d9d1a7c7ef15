"""A project's own distribution classes: a class derived from a torch (or configured) distribution is one.

Real code subclasses distributions (`class SquashedNormal(TransformedDistribution)`,
`class TruncatedNormal(Normal)`) and calls `log_prob` on its instances. Read as
an unknown class, its site was opaque (risk unknown, never fixable), and casting
its constructor's arguments did not clear it. A class of this file whose bases,
through other classes of this file, reach a distribution class is read as a
configured one (`extend-distributions`): its constructor's tensor arguments are
the inputs, and fix A casts them. A class of another project file is one by the
project's configuration (`project/distsubclasses.py`).
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Set

import libcst as cst

from amplint.names import ImportTable
from amplint.torchnames import distribution_name


def local_distribution_classes(module: cst.Module, table: ImportTable, extra: FrozenSet[str]) -> FrozenSet[str]:
    """The top-level classes of `module` that derive from a distribution class, by their names."""
    classes: Dict[str, cst.ClassDef] = {}
    for statement in module.body:
        if isinstance(statement, cst.ClassDef):
            classes.setdefault(statement.name.value, statement)
    found: Set[str] = set()
    grew = True
    while grew:  # a class of this file derived from one found: found on the next round
        grew = False
        for name, node in classes.items():
            if name not in found and any(
                    distribution_name(table.qualnames(_base(arg.value)), extra | found) is not None
                    for arg in node.bases if not arg.star):
                found.add(name)
                grew = True
    return frozenset(found)


def _base(value: cst.BaseExpression) -> cst.BaseExpression:
    return value.value if isinstance(value, cst.Subscript) else value  # `Generic[T]`
