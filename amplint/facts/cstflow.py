"""The collector's hooks on LibCST's compound statements, driving `flowstate.Branches`.

LibCST calls `visit_X_field` and `leave_X_field` around each field of a
node, so an arm's start and end are hooks: the `if` body and its `orelse`,
each `except` handler, a `try`'s `else` and `finally`, each `match` case, a
loop's body.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Iterator, List, Sequence, Tuple, Union

import libcst as cst

from amplint.facts.flowstate import Branches, loop_carried
from amplint.facts.mathenv import Statements
from amplint.facts.model import DistRef, Scope

Block = Union[cst.BaseSuite, cst.Else, cst.If, cst.Finally, None]
ENDS = (cst.Return, cst.Raise, cst.Continue, cst.Break)


def falls_through(block: Block) -> bool:
    """Control may leave `block` at its end: its last statement is not a `return`, `raise`, `break` or
    `continue`, nor an `if` every arm of which ends so."""
    if block is None:
        return True
    if isinstance(block, cst.If):
        return falls_through(block.body) or falls_through(block.orelse)
    if isinstance(block, (cst.Else, cst.Finally)):
        return falls_through(block.body)
    body: Sequence[cst.CSTNode] = block.body
    if not body:
        return True
    last = body[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return not isinstance(last.body[-1], ENDS)
    if isinstance(last, ENDS):  # a suite's small statement: `if x: return`
        return False
    if isinstance(last, cst.If):
        return falls_through(last.body) or last.orelse is None or falls_through(last.orelse)
    return True


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def _exhaustive(node: cst.Match) -> bool:
    """The last case catches everything: `case _:` or `case name:` with no guard."""
    last = node.cases[-1] if node.cases else None
    return (last is not None and last.guard is None and isinstance(last.pattern, cst.MatchAs)
            and last.pattern.pattern is None)


def _assignments(statements: Iterable[cst.CSTNode]) -> Iterator[Tuple[str, cst.BaseExpression, bool]]:
    """The single-name assignments among a loop body's statements (`mathenv.Statements`: source order, nested
    scopes left out), with whether each is augmented."""
    for node in statements:
        if isinstance(node, cst.Assign):
            yield from ((t.target.value, node.value, False) for t in node.targets if isinstance(t.target, cst.Name))
        elif isinstance(node, cst.AnnAssign) and isinstance(node.target, cst.Name) and node.value is not None:
            yield node.target.value, node.value, False
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            yield node.target.value, node.value, True


class CstFlow:
    """Hooks for `Collector`: it provides `scope`, `flow`, `_wide` and `dist_refs_of`."""

    scope: Scope
    flow: Branches
    bodies: Statements

    def _wide(self, node: cst.BaseExpression) -> bool:
        raise NotImplementedError

    def dist_refs_of(self, value: cst.BaseExpression) -> List[DistRef]:
        raise NotImplementedError

    # --- `if` / `elif` / `else` ----------------------------------------------------------------------
    def visit_If(self, node: cst.If) -> None:
        self.flow.fork(self.scope)

    def leave_If_body(self, node: cst.If) -> None:
        self.flow.end(falls_through(node.body))
        self.flow.start()

    def leave_If_orelse(self, node: cst.If) -> None:
        if node.orelse is not None:
            self.flow.end(falls_through(node.orelse))

    def leave_If(self, original_node: cst.If) -> None:
        self.flow.close(with_entry=original_node.orelse is None)

    # --- `try` ---------------------------------------------------------------------------------------
    def visit_Try(self, node: Union[cst.Try, cst.TryStar]) -> None:
        self.flow.fork(self.scope)

    def leave_Try_body(self, node: Union[cst.Try, cst.TryStar]) -> None:
        self.flow.tried()

    def visit_ExceptHandler(self, node: Union[cst.ExceptHandler, cst.ExceptStarHandler]) -> None:
        self.flow.handler()

    def leave_ExceptHandler(self, original_node: Union[cst.ExceptHandler, cst.ExceptStarHandler]) -> None:
        self.flow.end(falls_through(original_node.body))

    def visit_Try_orelse(self, node: Union[cst.Try, cst.TryStar]) -> None:
        if node.orelse is not None:
            self.flow.orelse()

    def leave_Try_orelse(self, node: Union[cst.Try, cst.TryStar]) -> None:
        if node.orelse is not None:
            self.flow.end(falls_through(node.orelse))

    def visit_Try_finalbody(self, node: Union[cst.Try, cst.TryStar]) -> None:
        if node.finalbody is not None:
            self._finish_try(node)

    def leave_Try(self, original_node: Union[cst.Try, cst.TryStar]) -> None:
        if original_node.finalbody is None:
            self._finish_try(original_node)

    def _finish_try(self, node: Union[cst.Try, cst.TryStar]) -> None:
        self.flow.finish_try(has_else=node.orelse is not None, body_falls=falls_through(node.body))

    visit_TryStar = visit_Try
    leave_TryStar_body = leave_Try_body
    visit_ExceptStarHandler = visit_ExceptHandler
    leave_ExceptStarHandler = leave_ExceptHandler
    visit_TryStar_orelse = visit_Try_orelse
    leave_TryStar_orelse = leave_Try_orelse
    visit_TryStar_finalbody = visit_Try_finalbody
    leave_TryStar = leave_Try

    # --- `match` -------------------------------------------------------------------------------------
    def visit_Match(self, node: cst.Match) -> None:
        self.flow.fork(self.scope)

    def visit_MatchCase(self, node: cst.MatchCase) -> None:
        self.flow.start()

    def leave_MatchCase(self, original_node: cst.MatchCase) -> None:
        self.flow.end(falls_through(original_node.body))

    def leave_Match(self, original_node: cst.Match) -> None:
        self.flow.close(with_entry=not _exhaustive(original_node))

    # --- loops ---------------------------------------------------------------------------------------
    def _enter_loop(self, body: cst.BaseSuite) -> None:
        carried = loop_carried(self.scope, _assignments(self.bodies.of(body)), self._wide, self._named_refs)
        self.flow.loop(self.scope, carried)

    def _named_refs(self, name: str, value: cst.BaseExpression) -> Tuple[DistRef, ...]:
        return tuple(replace(ref, binding=name) for ref in self.dist_refs_of(value))

    def _leave_loop(self) -> None:
        self.flow.end()
        self.flow.close(with_entry=True)

    def visit_For_body(self, node: cst.For) -> None:
        self._enter_loop(node.body)

    def leave_For_body(self, node: cst.For) -> None:
        self._leave_loop()

    def visit_While_body(self, node: cst.While) -> None:
        self._enter_loop(node.body)

    def leave_While_body(self, node: cst.While) -> None:
        self._leave_loop()
