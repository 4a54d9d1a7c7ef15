"""Fix A: cast the planned inputs to float32 where they are used.

One transformer pass; targets are matched by node identity with the tree the
analysis produced, so nothing outside the planned expressions is re-emitted
differently (LibCST keeps every other byte).
"""
from __future__ import annotations

from typing import Mapping

import libcst as cst

from amplint.fix.expr import cast_expression, cast_starred
from amplint.fix.plan import CastTarget
from amplint.names import ImportTable


class CastTransformer(cst.CSTTransformer):
    """Replace each target expression with its float32 cast."""

    def __init__(self, casts: Mapping[int, CastTarget], table: ImportTable) -> None:
        super().__init__()
        self.casts = casts
        self.table = table

    def on_leave(self, original_node: cst.CSTNodeT, updated_node: cst.CSTNodeT):  # type: ignore[override]
        updated = super().on_leave(original_node, updated_node)
        target = self.casts.get(id(original_node))
        if target is not None and target.node is original_node and isinstance(updated, cst.BaseExpression):
            # Cast the updated node: an input may hold another site's already-cast inputs.
            if target.star:
                return updated if target.wide(updated) else cast_starred(updated, target.star, self.table)
            return cast_expression(updated, self.table, target.wide)
        return updated


def apply_casts(module: cst.Module, casts: Mapping[int, CastTarget], table: ImportTable) -> cst.Module:
    return module.visit(CastTransformer(casts, table))
