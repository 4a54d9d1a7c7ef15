"""Source positions of the few LibCST nodes the analysis reports on.

LibCST's PositionProvider records a `CodeRange` for every node of the tree,
through a generator-based context manager per node: on the files the
benchmark corpus parses it cost about half of an analysis, more than the
parse itself (benchmarks/README.md, "Profile"). The analysis needs positions
of calls, decorators and `with` statements only (and `--fix` of a handful of
nodes on `# noqa` files), so this module runs the same code generation and
records just those. The ranges are LibCST's own: the same rules for
syntactic positions, for positions hoisted from a child (`start_node`,
`end_node`), and the whitespace-inclusive fallback for nodes that record
none (tests/test_cst_speedups.py compares every node with PositionProvider).

When the caller has CPython's tree of the same text (`SourceTree`), the
positions are read from it instead (`amplint.treepositions`, about 2.5×
cheaper than the code generation), and generated only when that reading is
unsure.
"""
from __future__ import annotations

import ast
import re
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import AbstractSet, Dict, Iterator, List, Optional, Tuple, Union

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodePosition, CodeRange

_NEWLINE = re.compile(r"\r\n?|\n")  # LibCST's own newline rule for positions
_NOTHING = nullcontext()


@dataclass
class _RecordingState(CodegenState):
    """Code generation that tracks line/column and keeps no tokens.

    `types` and `ids` choose the nodes to record; a wanted node that hoists
    its start or end from a child adds that child to `ids` before the child
    is generated, so the hoisted value is there when the parent needs it.
    """

    types: AbstractSet[type] = frozenset()
    ids: set = field(default_factory=set)
    found: Dict[int, Tuple[cst.CSTNode, CodeRange]] = field(default_factory=dict)
    line: int = 1
    column: int = 0
    _starts: List[CodePosition] = field(default_factory=list)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def add_token(self, value: str) -> None:
        if not self.tokens:  # Module._codegen_impl asks only whether some token came out
            self.tokens.append(value)
        if "\n" not in value and "\r" not in value:
            self.column += len(value)
            return
        segments = _NEWLINE.split(value)
        self.line += len(segments) - 1
        self.column = len(segments[-1])

    def pop_trailing_newline(self) -> None:
        """Only the end of the file moves; no recorded node ends after it."""

    # `_wanted` is written out in the three hooks below: they run for every node of the file.
    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in self.types or id(node) in self.ids:
            self._starts.append(CodePosition(self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in self.types or id(node) in self.ids:
            start = self._starts.pop()
            if id(node) not in self.found:  # a syntactic position, when recorded, wins
                self.found[id(node)] = (node, CodeRange(start, CodePosition(self.line, self.column)))

    def record_syntactic_position(
        self,
        node: cst.CSTNode,
        *,
        start_node: Optional[cst.CSTNode] = None,
        end_node: Optional[cst.CSTNode] = None,
    ):  # type: ignore[no-untyped-def]
        if type(node) not in self.types and id(node) not in self.ids:
            return _NOTHING
        for child in (start_node, end_node):
            if child is not None:
                self.ids.add(id(child))
        return self._record(node, start_node, end_node)

    @contextmanager
    def _record(
        self, node: cst.CSTNode, start_node: Optional[cst.CSTNode], end_node: Optional[cst.CSTNode]
    ) -> Iterator[None]:
        start = CodePosition(self.line, self.column)
        yield
        end = CodePosition(self.line, self.column)
        if start_node is not None and id(start_node) in self.found:
            start = self.found[id(start_node)][1].start
        if end_node is not None and id(end_node) in self.found:
            end = self.found[id(end_node)][1].end
        self.found[id(node)] = (node, CodeRange(start, end))


class Positions:
    """`CodeRange`s of the chosen nodes of one module, looked up by node; some nodes' starts only
    (`start`: a `with` or decorator read from CPython's tree, `amplint.treepositions`)."""

    def __init__(self, found: Dict[int, Tuple[cst.CSTNode, CodeRange]],
                 starts: Optional[Dict[int, Tuple[cst.CSTNode, CodePosition]]] = None,
                 types: AbstractSet[type] = frozenset()) -> None:
        self._found = found
        self._starts = starts or {}
        self.types = frozenset(types)  # every node of these types is recorded

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        kept, span = self._found[id(node)]
        if kept is not node:  # an id reused by a node made after the pass
            raise KeyError(node)
        return span

    def __contains__(self, node: cst.CSTNode) -> bool:
        entry = self._found.get(id(node))
        return entry is not None and entry[0] is node

    def start(self, node: cst.CSTNode) -> CodePosition:
        """Where `node` starts: the one position recorded for every asked node."""
        if node in self:
            return self[node].start
        kept = self._starts.get(id(node))
        if kept is None or kept[0] is not node:
            raise KeyError(node)
        return kept[1]

    def line(self, node: cst.CSTNode) -> int:
        """The line `node` starts on."""
        return self.start(node).line


@dataclass(frozen=True)
class SourceTree:
    """CPython's tree of the text LibCST parsed: the positions are read from it (`amplint.treepositions`)."""

    tree: ast.Module
    text: str


# Where positions may come from besides code generation: CPython's tree of the text, or an earlier reading
# of the same module (a kept tree analysed again).
PositionSource = Union[SourceTree, Positions, None]


def positions(
    module: cst.Module, types: AbstractSet[type] = frozenset(), nodes: Tuple[cst.CSTNode, ...] = (),
    source: PositionSource = None,
) -> Positions:
    """Positions of every node of `types` and of each of `nodes`, as PositionProvider gives them.

    With `source`, read from CPython's tree where it can say (`amplint.treepositions`): then `with`
    statements and decorators have a `start` only. `source` may also be what an earlier call answered for
    the same `module` and `types`, which is then answered again.
    """
    if isinstance(source, Positions) and not nodes and source.types == frozenset(types):
        return source
    if isinstance(source, SourceTree) and not nodes:
        from amplint.treepositions import tree_positions

        read = tree_positions(module, source.tree, source.text, frozenset(types))
        if read is not None:
            return Positions(*read, types=types)
    state = _RecordingState(
        default_indent=module.default_indent,
        default_newline=module.default_newline,
        types=frozenset(types),
        ids={id(node) for node in nodes},
    )
    module._codegen(state)
    return Positions(state.found, types=types if not nodes else frozenset())


def within(inner: CodeRange, outer: CodeRange) -> bool:
    """Does `inner` lie inside `outer` (bounds included)?"""
    return (outer.start.line, outer.start.column) <= (inner.start.line, inner.start.column) and (
        inner.end.line, inner.end.column) <= (outer.end.line, outer.end.column)
