"""Run a `libcst.CSTVisitor` over a tree without LibCST's rebuild of every node.

`node.visit(visitor)` rebuilds (and re-validates) every node it passes, even
for a read-only visitor, and looks up four hook methods by name per node and
per field: after parsing, that was most of an analysis (benchmarks/README.md,
"Profile"). `walk` calls the same hooks in the same order (`visit_X`,
`visit_X_attr`, `leave_X_attr`, `leave_X`, children in LibCST's own order,
no children when `visit_X` returns False) but reads the tree as it is. It
skips whitespace and operator nodes, which hold no expression or statement;
a visitor with hooks on those types must use `node.visit`.
"""
from __future__ import annotations

from types import ModuleType
from typing import Callable, Dict, Iterator, List, Optional, Tuple, Type

import libcst as cst
from libcst._nodes import op, whitespace

Hook = Optional[Callable[[cst.CSTNode], object]]
NodeHooks = Tuple[Hook, Hook, Dict[str, Tuple[Hook, Hook]]]  # visit, leave, and (visit, leave) per field


def _node_types(module: ModuleType) -> Tuple[type, ...]:
    """The node classes a LibCST module defines (not those it imports)."""
    return tuple(
        value for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, cst.CSTNode) and value.__module__ == module.__name__
    )


SKIPPED = frozenset(_node_types(whitespace) + _node_types(op))
OPTIONAL = "?"  # marks a field LibCST visits only when it is not None
# Fields LibCST's own traversal visits only when set (an `if` in `_visit_and_replace_children`).
CONDITIONAL = {"FormattedStringExpression": ("format_spec",), "TemplatedStringExpression": ("format_spec",)}


class _FieldRecorder(cst.CSTVisitor):
    """Learns LibCST's child order for one node type: the fields its own traversal names."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: List[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)


class _Orders:
    """Child field order per node type, learned from LibCST once per type.

    One instance serves the process (`ORDERS`): it is a cache of a fact about
    the installed LibCST, the same whoever asks, so sharing it changes no result.
    """

    def __init__(self) -> None:
        self._orders: Dict[type, Tuple[str, ...]] = {}

    def of(self, node: cst.CSTNode) -> Tuple[str, ...]:
        order = self._orders.get(type(node))
        if order is None:
            order = self._orders[type(node)] = self._learn(node)
        return order

    @staticmethod
    def _learn(node: cst.CSTNode) -> Tuple[str, ...]:
        recorder = _FieldRecorder()
        node._visit_and_replace_children(recorder)  # one rebuild per type, children not entered
        names = list(dict.fromkeys(recorder.fields))
        # A field LibCST visits only when set (an f-string's `format_spec`) was None here: it comes
        # last, as in the source, and `_walk` skips it while None. Text fields (`Name.value`) never
        # are children.
        names += [name for name in getattr(type(node), "__dataclass_fields__", {})
                  if name not in names and getattr(node, name) is None]
        conditional = CONDITIONAL.get(type(node).__name__, ())
        return tuple(OPTIONAL + name if name in conditional or name not in recorder.fields else name
                     for name in names)


class _Hooks:
    """A visitor's bound hook methods per node type (None where it has none)."""

    def __init__(self, visitor: cst.CSTVisitor) -> None:
        self._visitor = visitor
        self._cache: Dict[type, NodeHooks] = {}
        hooked = [t.__name__ for t in SKIPPED if self._hook(f"visit_{t.__name__}") or self._hook(f"leave_{t.__name__}")]
        if hooked:
            raise TypeError(f"{type(visitor).__name__} hooks {', '.join(sorted(hooked))}, which walk() skips")

    def of(self, node_type: Type[cst.CSTNode], fields: Tuple[str, ...]) -> "NodeHooks":
        hooks = self._cache.get(node_type)
        if hooks is None:
            name = node_type.__name__
            attributes = {field: (self._hook(f"visit_{name}_{field}"), self._hook(f"leave_{name}_{field}"))
                          for field in (f.lstrip(OPTIONAL) for f in fields)}
            attributes = {field: pair for field, pair in attributes.items() if pair != (None, None)}
            hooks = (self._hook(f"visit_{name}"), self._hook(f"leave_{name}"), attributes)
            self._cache[node_type] = hooks
        return hooks

    def _hook(self, name: str) -> Hook:
        """The visitor's own method `name`; None for CSTVisitor's no-op stubs (one per node type)."""
        found = getattr(type(self._visitor), name, None)
        if found is None or found is getattr(cst.CSTVisitor, name, None):
            return None
        return getattr(self._visitor, name)  # type: ignore[no-any-return]


ORDERS = _Orders()


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Call `visitor`'s hooks over the tree under `node`, as `node.visit(visitor)` would."""
    _walk(node, _Hooks(visitor), ORDERS)


def type_test(*classes: type) -> Callable[[object], bool]:
    """`isinstance(value, classes)`, answered once per type of value.

    LibCST's classes are ABCs: a failing `isinstance` runs ABCMeta's Python-level
    check every time, which adds up on per-node tests in hot loops.
    """
    answers: Dict[type, bool] = {}

    def test(value: object) -> bool:
        answer = answers.get(type(value))
        if answer is None:
            answer = answers[type(value)] = isinstance(value, classes)
        return answer

    return test


_IS_NODE = type_test(cst.CSTNode)  # asked for every child of every node the walk passes


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node.children` in LibCST's order, without rebuilding `node`; whitespace and operators left out."""
    for field in ORDERS.of(node):
        value = getattr(node, field.lstrip(OPTIONAL))
        if _IS_NODE(value):
            if type(value) not in SKIPPED:
                yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if _IS_NODE(item) and type(item) not in SKIPPED:
                    yield item


def _walk(node: cst.CSTNode, hooks: _Hooks, orders: _Orders) -> None:
    fields = orders.of(node)
    visit, leave, attributes = hooks.of(type(node), fields)
    if visit is None or visit(node) is not False:
        for field in fields:
            if field[0] == OPTIONAL:
                field = field[1:]
                optional = getattr(node, field)
                if not _IS_NODE(optional) and not isinstance(optional, (tuple, list)):
                    continue
            pair = attributes.get(field) if attributes else None
            if pair is not None and pair[0] is not None:
                pair[0](node)
            value = getattr(node, field)
            if _IS_NODE(value):
                if type(value) not in SKIPPED:
                    _walk(value, hooks, orders)
            elif isinstance(value, (tuple, list)):
                for item in value:
                    if _IS_NODE(item) and type(item) not in SKIPPED:
                        _walk(item, hooks, orders)
            if pair is not None and pair[1] is not None:
                pair[1](node)
    if leave is not None:
        leave(node)
