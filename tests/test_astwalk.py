"""`amplint.astwalk` gives `ast.walk`'s nodes in `ast.walk`'s order, less contexts and operators."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from amplint import astwalk

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)

# Every form of statement and expression, in the syntax of Python 3.11 (`except*`, `match`).
NEW_SYNTAX = pytest.mark.skipif(sys.version_info < (3, 11), reason="the sampler is written in Python 3.11 syntax")
EVERY_FORM = '''\
import a.b as c
from .d import (e, f as g)
from h import *
global_ = {**base, "k": [x async for x in y if x], 1: {v for v in w}, 2: {k: v for k, v in w}}


@decorator(arg=1)
async def run(p, /, q: int = -1, *args, r, s=not t, **kw) -> "R":
    global global_
    nonlocal_ = lambda u=1, *v, **w: (u, v, w)
    async with ctx() as (m, n), other():
        async for i, *j in k[1:2, ::3]:
            yield from z if i else (await q)
    try:
        del a[0], b.c
    except* (TypeError, ValueError) as err:
        raise err from None
    else:
        assert x < y <= z is not None, f"{x!r:>{width}} {y=}"
    finally:
        pass
    match command.split():
        case [Point(x=0, y=0) | None] if ok:
            return ~x @ y ** 2 // 3
        case {"k": [1, *rest], **others}:
            return b"bytes" and 1j or ...
        case str() as s:
            x += 1
            x: int = 2
    while (n := len(queue)) > 10:
        break
    else:
        continue


class Meta(Base, metaclass=M):
    attr: "T"
'''


def _sources() -> list:
    paths = sorted(ROOT.glob("fixtures/**/*.py")) + sorted((ROOT / "amplint").glob("**/*.py"))
    return [EVERY_FORM] + [p.read_text(encoding="utf-8") for p in paths]


def test_every_node_type_of_this_python_is_read_from_its_signature() -> None:
    node_types = [t for t in vars(ast).values() if isinstance(t, type) and issubclass(t, ast.AST)]
    unread = sorted(t.__name__ for t in node_types if astwalk._SPECS[t] is None)
    assert set(unread) <= {"Num", "Str", "Bytes", "NameConstant"}  # deprecated aliases, never built by the parser
    assert astwalk._SPECS[ast.BinOp] == (("left", False), ("right", False))
    type_params = (("type_params", True),) if sys.version_info >= (3, 12) else ()  # PEP 695's `def f[T]()`
    assert astwalk._SPECS[ast.FunctionDef] == (("args", False), ("body", True), ("decorator_list", True),
                                               ("returns", False)) + type_params


@pytest.mark.parametrize("index", range(len(_sources())))
def test_walk_is_ast_walk_without_contexts_and_operators(index: int) -> None:
    if index == 0 and sys.version_info < (3, 11):
        pytest.skip("the sampler is written in Python 3.11 syntax")
    tree = ast.parse(_sources()[index])
    expected = [node for node in ast.walk(tree) if not isinstance(node, GRAMMAR)]
    assert list(astwalk.walk(tree)) == expected
    for node in expected:
        assert astwalk.child_nodes(node) == [c for c in ast.iter_child_nodes(node) if not isinstance(c, GRAMMAR)]


@NEW_SYNTAX
def test_the_form_sampler_holds_the_forms_it_names() -> None:
    kinds = {type(node).__name__ for node in ast.walk(ast.parse(EVERY_FORM))}
    assert {"TryStar", "Match", "MatchOr", "MatchMapping", "MatchStar", "MatchAs", "MatchClass", "AsyncFor",
            "AsyncWith", "Await", "YieldFrom", "NamedExpr", "JoinedStr", "FormattedValue", "Starred",
            "DictComp", "SetComp", "ListComp", "Lambda", "AugAssign", "AnnAssign", "Global", "Delete"} <= kinds
