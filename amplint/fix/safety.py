"""When wrapping a statement in `with torch.autocast(..., enabled=False):` keeps its meaning.

Autocast state is thread-local, so a `with` block that suspends (a `yield` or
`await` inside it) would leave autocast disabled for whatever code runs while
it is suspended. Code in a lambda or generator expression runs later, outside
the block, so wrapping would not protect it at all.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

LAZY_NODES = (cst.Lambda, cst.GeneratorExp)


class _Scan(cst.CSTVisitor):
    def __init__(self, call: cst.CSTNode) -> None:
        super().__init__()
        self.call = call
        self.lazy_depth = 0
        self.reason: Optional[str] = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.reason is not None:
            return False
        if isinstance(node, cst.Yield):
            self.reason = "the statement contains `yield`"
        elif isinstance(node, cst.Await):
            self.reason = "the statement contains `await`"
        elif node is self.call and self.lazy_depth:
            self.reason = "the computation is in a lambda or generator expression"
        if isinstance(node, LAZY_NODES):
            self.lazy_depth += 1
        return self.reason is None

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if isinstance(original_node, LAZY_NODES):
            self.lazy_depth -= 1


def wrap_blocker(statement: cst.SimpleStatementLine, call: cst.CSTNode) -> Optional[str]:
    """Why `statement` must not be wrapped to protect `call`, or None when it is safe."""
    scan = _Scan(call)
    statement.visit(scan)
    return scan.reason
