"""Walking CPython's trees without their leaves of grammar: contexts and operators.

`ast.iter_child_nodes` yields every `ast.AST` a node holds, through two
generators per node that test every field, and `ast.walk` visits each of them:
a `Load` under every name, an `Add` under every sum. No reader here looks at
those (a context or an operator is read from its parent: `node.ctx`,
`node.op`), and on real code they are a third of the nodes. `child_nodes` and
`walk` give the other nodes in the same order, reading only the fields that
can hold one: each node type's signature (`ast.BinOp.__doc__` is
"BinOp(expr left, operator op, expr right)") says which, and is read once at
import. `statements` walks the statements alone, for the readers of imports
and definitions.
"""
from __future__ import annotations

import ast
import re
from collections import deque
from types import MappingProxyType
from typing import Iterator, List, Mapping, Optional, Tuple

# Field types that hold no node, or only a context or operators.
_LEAF_TYPES = frozenset({"identifier", "string", "constant", "int", "expr_context", "operator", "unaryop", "cmpop",
                         "boolop", "type_ignore"})
_FIELD = re.compile(r"(\w+)([*?]?) (\w+)")

# (field, holds a list) for each field of a node type that can hold a node, in `_fields` order.
Spec = Tuple[Tuple[str, bool], ...]


def _spec(cls: type) -> Optional[Spec]:
    """The node-holding fields of `cls` from its signature; None when the signature cannot be read."""
    if not cls._fields:  # type: ignore[attr-defined]
        return ()
    doc = cls.__doc__ or ""
    if not doc.startswith(cls.__name__ + "("):
        return None
    declared = {name: (kind, mark) for kind, mark, name in _FIELD.findall(doc[len(cls.__name__):])}
    if set(declared) != set(cls._fields):  # type: ignore[attr-defined]
        return None
    return tuple((name, declared[name][1] == "*") for name in cls._fields  # type: ignore[attr-defined]
                 if declared[name][0] not in _LEAF_TYPES)


def _specs() -> Mapping[type, Optional[Spec]]:
    return MappingProxyType({value: _spec(value) for value in vars(ast).values()
                             if isinstance(value, type) and issubclass(value, ast.AST)})


_SPECS = _specs()


def child_nodes(node: ast.AST) -> List[ast.AST]:
    """`ast.iter_child_nodes(node)` without contexts and operators, as a list."""
    spec = _SPECS.get(type(node))
    if spec is None:  # a node type whose signature this Python does not spell as expected
        return [child for child in ast.iter_child_nodes(node)
                if not isinstance(child, (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop))]
    found: List[ast.AST] = []
    for name, many in spec:
        value = getattr(node, name, None)
        if many:
            found.extend(item for item in value if item is not None)  # `{**d}` has a None key
        elif value is not None:
            found.append(value)
    return found


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk(node)` (breadth first, `node` included) without contexts and operators."""
    todo = deque([node])
    while todo:
        current = todo.popleft()
        todo.extend(child_nodes(current))
        yield current


# What holds statements: statements, `except` handlers and `match` cases (Python 3.8/3.9 have no `match`).
BLOCKS = (ast.stmt, ast.excepthandler, getattr(ast, "match_case", ast.excepthandler))


def statements(tree: ast.AST) -> Iterator[ast.stmt]:
    """The statements of `tree` in `ast.walk`'s order, without visiting an expression.

    Statements sit only in the blocks of statements, handlers and match cases, so the
    breadth-first order among them is the same with every expression left out: expressions,
    most of a tree and the deep part of deep code, are never walked.
    """
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.stmt):
            yield node
        for _, value in ast.iter_fields(node):
            if isinstance(value, list):
                todo.extend(child for child in value if isinstance(child, BLOCKS))
