"""The positions `amplint.positions` records, read from CPython's tree of the same text.

LibCST has no positions of its own: `positions` generates the module's code
to find them, which costs about half a LibCST parse. CPython's tree already
holds them, for calls, binary operations and float literals exactly as LibCST
reports them (columns turned from UTF-8 bytes into characters), and the start
of each `with` statement and decorator (its `@`). A `with` ends, for LibCST,
after the comments that close its block, which CPython's tree does not hold:
only its start is read here, and the analysis asks only for its line.

The nodes are paired in order: LibCST's of the asked types in pre-order, which
is source order, with CPython's sorted by where they start (an enclosing node
first). Each pair must agree on what it is (argument count, operator, literal,
items), and the text must hold the node where CPython puts it (a call ends with
`)`, a literal reads as the literal, a decorator starts with `@`); on any doubt
the answer is None and the caller generates the code as before. So are texts
where the two parsers count columns differently (a form feed in an indent),
and, before Python 3.11, texts with f-strings.
"""
from __future__ import annotations

import ast
from typing import AbstractSet, Callable, Dict, List, Optional, Tuple

import libcst as cst
from libcst.metadata import CodePosition, CodeRange

from amplint.astwalk import walk
from amplint.cstwalk import nodes_of
from amplint.textlines import FORM_FEED, FSTRING_POSITIONS, TextLines

RANGES = frozenset({cst.Call, cst.BinaryOperation, cst.Float})  # read whole
STARTS = frozenset({cst.With, cst.Decorator})  # read at their start only
TYPES = RANGES | STARTS

_OPERATORS = {
    cst.Add: ast.Add, cst.Subtract: ast.Sub, cst.Multiply: ast.Mult, cst.Divide: ast.Div,
    cst.FloorDivide: ast.FloorDiv, cst.Modulo: ast.Mod, cst.Power: ast.Pow, cst.LeftShift: ast.LShift,
    cst.RightShift: ast.RShift, cst.BitOr: ast.BitOr, cst.BitAnd: ast.BitAnd, cst.BitXor: ast.BitXor,
    cst.MatrixMultiply: ast.MatMult,
}
_SAME_KIND = {cst.Name: ast.Name, cst.Attribute: ast.Attribute, cst.Call: ast.Call}

Found = Dict[int, Tuple[cst.CSTNode, CodeRange]]
Starts = Dict[int, Tuple[cst.CSTNode, CodePosition]]


class _Doubt(Exception):
    """The two trees or the text disagree: positions come from LibCST's code generation."""


# A CPython node to pair: (start line, start byte column, end line, end byte column, what it is, the node).
_Entry = Tuple[int, int, int, int, type, ast.AST]


def tree_positions(module: cst.Module, tree: ast.Module, text: str,
                   types: AbstractSet[type]) -> Optional[Tuple[Found, Starts]]:
    """The ranges of the `types` nodes of `module` (starts only, for `with` and decorators); None when in doubt.

    `tree` and `module` must come from the same `text`.
    """
    if not types <= TYPES or FORM_FEED in text:
        return None
    lines = TextLines(text)
    try:
        theirs = _cpython_nodes(tree, lines, types)
    except _Doubt:
        return None
    ours = nodes_of(module, types)
    if len(ours) != len(theirs):
        return None
    found: Found = {}
    starts: Starts = {}
    for node, entry in zip(ours, theirs):
        line, column, end_line, end_column, kind, twin = entry
        if kind is not type(node) or not _AGREE[kind](node, twin, lines, entry):
            return None
        start = CodePosition(line, lines.column(line, column))
        if kind in RANGES:
            found[id(node)] = (node, CodeRange(start, CodePosition(end_line, lines.column(end_line, end_column))))
        else:
            starts[id(node)] = (node, start)
    return found, starts


def _cpython_nodes(tree: ast.Module, lines: TextLines, types: AbstractSet[type]) -> List[_Entry]:
    """CPython's nodes standing for LibCST's of `types`, by start, an enclosing node before the nodes it holds."""
    found: List[_Entry] = []
    for node in walk(tree):
        kind = type(node)
        if kind is ast.Call:
            if cst.Call in types:
                found.append(_entry(node, cst.Call))
        elif kind is ast.BinOp:
            if cst.BinaryOperation in types:
                found.append(_entry(node, cst.BinaryOperation))
        elif kind is ast.Constant:
            if type(node.value) is float and cst.Float in types:  # type: ignore[attr-defined]
                found.append(_entry(node, cst.Float))
        elif kind is ast.With or kind is ast.AsyncWith:
            if cst.With in types:
                found.append(_entry(node, cst.With))
        elif kind is ast.JoinedStr:
            if not FSTRING_POSITIONS:
                raise _Doubt
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if cst.Decorator in types and node.decorator_list:  # type: ignore[attr-defined]
                found.extend(_decorator(expr, lines) for expr in node.decorator_list)  # type: ignore[attr-defined]
    found.sort(key=lambda e: (e[0], e[1], -e[2], -e[3]))
    return found


def _entry(node: ast.AST, kind: type) -> _Entry:
    end_line = node.end_lineno  # type: ignore[attr-defined]
    end_column = node.end_col_offset  # type: ignore[attr-defined]
    if end_line is None or end_column is None:
        raise _Doubt
    return node.lineno, node.col_offset, end_line, end_column, kind, node  # type: ignore[attr-defined]


def _decorator(expr: ast.expr, lines: TextLines) -> _Entry:
    """A decorator starts at its `@` (`TextLines.decorator_at`)."""
    at = lines.decorator_at(expr.lineno, expr.col_offset)
    if at is None:
        raise _Doubt
    return expr.lineno, at, expr.end_lineno or expr.lineno, expr.end_col_offset or 0, cst.Decorator, expr


# --- does each pair stand for the same code? -------------------------------------------------------------
def _text_at(lines: TextLines, line: int, column: int, size: int) -> str:
    start = lines.offset(line, column)
    return lines.text[start:start + size]


def _call(node: cst.CSTNode, twin: ast.AST, lines: TextLines, entry: _Entry) -> bool:
    assert isinstance(node, cst.Call) and isinstance(twin, ast.Call)
    return len(node.args) == len(twin.args) + len(twin.keywords) and \
        _text_at(lines, entry[2], entry[3] - 1, 1) == ")"


def _operation(node: cst.CSTNode, twin: ast.AST, lines: TextLines, entry: _Entry) -> bool:
    assert isinstance(node, cst.BinaryOperation) and isinstance(twin, ast.BinOp)
    return _OPERATORS.get(type(node.operator)) is type(twin.op)


def _float(node: cst.CSTNode, twin: ast.AST, lines: TextLines, entry: _Entry) -> bool:
    assert isinstance(node, cst.Float)
    return entry[0] == entry[2] and _text_at(lines, entry[0], entry[1], len(node.value)) == node.value and \
        lines.column(entry[2], entry[3]) - lines.column(entry[0], entry[1]) == len(node.value)


def _with(node: cst.CSTNode, twin: ast.AST, lines: TextLines, entry: _Entry) -> bool:
    assert isinstance(node, cst.With) and isinstance(twin, (ast.With, ast.AsyncWith))
    word = "async" if node.asynchronous is not None else "with"
    return len(node.items) == len(twin.items) and isinstance(twin, ast.AsyncWith) == (word == "async") and \
        _text_at(lines, entry[0], entry[1], len(word)) == word


def _decorator_agrees(node: cst.CSTNode, twin: ast.AST, lines: TextLines, entry: _Entry) -> bool:
    assert isinstance(node, cst.Decorator)
    same = _SAME_KIND.get(type(node.decorator))
    return (same is None or type(twin) is same) and _text_at(lines, entry[0], entry[1], 1) == "@"


_AGREE: Dict[type, Callable[[cst.CSTNode, ast.AST, TextLines, _Entry], bool]] = {
    cst.Call: _call, cst.BinaryOperation: _operation, cst.Float: _float, cst.With: _with,
    cst.Decorator: _decorator_agrees,
}
