"""Which bindings of a name reach a read of it, within one function: reaching definitions on CPython's tree.

`mu, sigma = head(h)` then `mu, sigma = mu.float(), sigma.float()` then
`Density(mu, sigma)`: the first binding never reaches the call, and reading
every binding of the name (flow-insensitively) made the arguments look
float16. A statement that binds the name on every path through it (an
assignment; an `if` whose arms all do; a `try` whose body and handlers all do,
or whose `finally` does; a `with` body; a `match` with a catch-all case whose
arms all do), in a block that encloses the read and before it, always runs
before the read and hides what came earlier, the parameter included. The
bindings from it on may reach (one arm of an `if` each). A loop may run no
time, so it hides nothing; a read inside a loop may see a binding made later in
the loop on the next pass, unless the loop's own body binds the name before the
read on every pass. When that is not so, every binding counts, as before.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set, Tuple

_Position = Tuple[int, int]
_BLOCKS = ("body", "orelse", "finalbody")
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def reaching(function: ast.AST, bindings: Sequence[ast.AST], read: ast.AST) -> Tuple[List[ast.AST], bool]:
    """The bindings that may reach `read`, and whether one of them always runs first (so a parameter of the
    same name does not reach). Every binding, and False, when that cannot be told."""
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return list(bindings), False  # a lambda binds no name in its body
    chain = _chain(function.body, _start(read))
    if chain is None:
        return list(bindings), False
    own = {id(b) for b in bindings}
    kill: Optional[ast.stmt] = None
    for depth in range(len(chain) - 1, -1, -1):
        block, index = chain[depth]
        kill = next((stmt for stmt in reversed(block[:index]) if _kills(stmt, own)), None)
        if kill is not None:
            break
        if depth > 0 and isinstance(chain[depth - 1][0][chain[depth - 1][1]], _LOOPS):
            return list(bindings), False  # the read's loop binds it later, or not on every pass
    floor, at = _start(kill) if kill is not None else (0, 0), _start(read)
    # `q = Wrapper(q)` reads the `q` bound before it: a binding that holds the read is not yet made
    return [b for b in bindings if floor <= _start(b) < at and not at <= _end(b)], kill is not None


def reaching_indexes(function: ast.AST, bindings: Sequence[ast.AST],
                     read: ast.AST) -> Optional[Tuple[Tuple[int, ...], bool]]:
    """`reaching` as the indexes of the bindings that may reach `read`, and whether one always runs first; None
    where every binding may reach and none always runs first (a read with no place of its own, too)."""
    if not bindings or getattr(read, "lineno", None) is None:
        return None
    reached, killed = reaching(function, bindings, read)
    if len(reached) == len(bindings) and not killed:
        return None
    kept = {id(binding) for binding in reached}
    return tuple(i for i, binding in enumerate(bindings) if id(binding) in kept), killed


def _kills(stmt: ast.stmt, own: Set[int]) -> bool:
    """Does every path through `stmt` bind the name (`own`: the ids of its binding statements)?"""
    if id(stmt) in own:
        return True
    if isinstance(stmt, ast.If):
        return _block_kills(stmt.body, own) and _block_kills(stmt.orelse, own)
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return _block_kills(stmt.body, own)
    if isinstance(stmt, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        handled = _block_kills(stmt.body, own) and all(_block_kills(h.body, own) for h in stmt.handlers)
        return handled or _block_kills(stmt.finalbody, own)
    if isinstance(stmt, getattr(ast, "Match", ())):
        return any(_catch_all(case) for case in stmt.cases) and all(  # type: ignore[attr-defined]
            _block_kills(case.body, own) for case in stmt.cases)  # type: ignore[attr-defined]
    return False


def _block_kills(block: Sequence[ast.stmt], own: Set[int]) -> bool:
    return any(_kills(stmt, own) for stmt in block)


def _catch_all(case: ast.AST) -> bool:
    """`case _:` or `case name:` with no guard: every subject matches."""
    pattern = case.pattern  # type: ignore[attr-defined]
    return case.guard is None and type(pattern).__name__ == "MatchAs" and pattern.pattern is None  # type: ignore


def _chain(block: Sequence[ast.stmt], at: _Position) -> Optional[List[Tuple[Sequence[ast.stmt], int]]]:
    """(block, index) of each statement that holds position `at`, outermost first."""
    for index, stmt in enumerate(block):
        if not (_start(stmt) <= at <= _end(stmt)):
            continue
        inner = [getattr(stmt, name) for name in _BLOCKS if isinstance(getattr(stmt, name, None), list)]
        inner += [handler.body for handler in getattr(stmt, "handlers", ())]
        inner += [case.body for case in getattr(stmt, "cases", ())]
        for sub in inner:
            found = _chain(sub, at)
            if found is not None:
                return [(block, index), *found]
        return [(block, index)]
    return None


def _start(node: ast.AST) -> _Position:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _end(node: ast.AST) -> _Position:
    return getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0
