"""`facts.cstflow` for CPython's tree: `astcalls`' reader walks compound statements through `flowstate.Branches`.

The arms are visited in LibCST's order (an `if`'s test, body, `orelse`; a
`try`'s body, handlers, `else`, `finally`; a loop's target, iterable, body,
`else`), so calls are recorded in the order and with the bindings the
collector gives them.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterator, List, Optional, Protocol, Sequence, Tuple

from amplint.facts.astmathenv import statements_of
from amplint.facts.flowstate import Branches, loop_carried
from amplint.facts.model import Scope

ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


class Reader(Protocol):
    scope: Scope
    flow: Branches

    def visit(self, node: Optional[ast.AST]) -> None: ...

    def visit_all(self, nodes_: Sequence[ast.AST]) -> None: ...

    def _wide(self, node: ast.expr) -> bool: ...


def falls_through(body: Sequence[ast.stmt]) -> bool:
    """`cstflow.falls_through` of a statement list."""
    if not body:
        return True
    last = body[-1]
    if isinstance(last, ENDS):
        return False
    if isinstance(last, ast.If):
        return falls_through(last.body) or not last.orelse or falls_through(last.orelse)
    return True


def if_(reader: Reader, node: ast.If) -> None:
    flow = reader.flow
    flow.fork(reader.scope)
    reader.visit(node.test)
    reader.visit_all(node.body)
    flow.end(falls_through(node.body))
    flow.start()
    if node.orelse:
        reader.visit_all(node.orelse)
        flow.end(falls_through(node.orelse))
    flow.close(with_entry=not node.orelse)


def try_(reader: Reader, node: "ast.Try | ast.TryStar") -> None:
    flow = reader.flow
    flow.fork(reader.scope)
    reader.visit_all(node.body)
    flow.tried()
    for handler in node.handlers:
        flow.handler()
        reader.visit(handler.type)
        reader.visit_all(handler.body)
        flow.end(falls_through(handler.body))
    if node.orelse:
        flow.orelse()
        reader.visit_all(node.orelse)
        flow.end(falls_through(node.orelse))
    flow.finish_try(has_else=bool(node.orelse), body_falls=falls_through(node.body))
    reader.visit_all(node.finalbody)


def match(reader: Reader, node: ast.Match) -> None:
    flow = reader.flow
    reader.visit(node.subject)
    flow.fork(reader.scope)
    for case in node.cases:
        flow.start()
        reader.visit(case.pattern)
        reader.visit(case.guard)
        reader.visit_all(case.body)
        flow.end(falls_through(case.body))
    last = node.cases[-1] if node.cases else None
    exhaustive = (last is not None and last.guard is None and isinstance(last.pattern, ast.MatchAs)
                  and last.pattern.pattern is None)
    flow.close(with_entry=not exhaustive)


def loop_body(reader: Reader, body: List[ast.stmt], orelse: List[ast.stmt]) -> None:
    """A loop's body from its entry joined with what its assignments carry round; then its `else`."""
    flow = reader.flow
    flow.loop(reader.scope, loop_carried(reader.scope, _assignments(body), reader._wide, lambda name, value: ()))
    reader.visit_all(body)
    flow.end()
    flow.close(with_entry=True)
    reader.visit_all(orelse)


def while_(reader: Reader, node: ast.While) -> None:
    reader.visit(node.test)
    loop_body(reader, node.body, node.orelse)


def _assignments(body: List[ast.stmt]) -> Iterator[Tuple[str, ast.expr, bool]]:
    """`cstflow._assignments`: the single-name assignments of a loop body (`astmathenv.statements_of`, nested
    scopes left out), in source order."""
    statements = [node for node in statements_of(body) if isinstance(node, ast.stmt)]  # not comprehension clauses
    for node in sorted(statements, key=lambda node: (node.lineno, node.col_offset)):
        if isinstance(node, ast.Assign):
            yield from ((t.id, node.value, False) for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            yield node.target.id, node.value, False
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node.value, True


HANDLERS: Sequence[Tuple[type, Callable[..., None]]] = (
    (ast.If, if_), (ast.Try, try_), (ast.Match, match), (ast.While, while_),
    *(((ast.TryStar, try_),) if hasattr(ast, "TryStar") else ()),
)
