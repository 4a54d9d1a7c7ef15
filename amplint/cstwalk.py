"""Run a `libcst.CSTVisitor` over a tree without LibCST's rebuild of every node.

`node.visit(visitor)` rebuilds (and re-validates) every node it passes, even
for a read-only visitor, and looks up four hook methods by name per node and
per field: after parsing, that was most of an analysis (benchmarks/README.md,
"Profile"). `walk` calls the same hooks in the same order (`visit_X`,
`visit_X_attr`, `leave_X_attr`, `leave_X`, children in LibCST's own order,
no children when `visit_X` returns False) but reads the tree as it is. It
skips whitespace and operator nodes, which hold no expression or statement;
a visitor with hooks on those types must use `node.visit`. For a visitor
with no hooks on brackets, it does not enter the fields that hold only
punctuation (`lpar`, `comma`, ...): nothing there would call a hook.
"""
from __future__ import annotations

from types import ModuleType
from typing import AbstractSet, Callable, Dict, Iterator, List, Optional, Tuple

import libcst as cst
from libcst._nodes import op, whitespace

Hook = Optional[Callable[[cst.CSTVisitor, cst.CSTNode], object]]  # a visitor class's function, called with the visitor


def _node_types(module: ModuleType) -> Tuple[type, ...]:
    """The node classes a LibCST module defines (not those it imports)."""
    return tuple(
        value for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, cst.CSTNode) and value.__module__ == module.__name__
    )


SKIPPED = frozenset(_node_types(whitespace) + _node_types(op))
OPTIONAL = "?"  # marks a field LibCST visits only when it is not None
# Field names that hold only white space, brackets or punctuation (`Call.whitespace_after_func`, `lpar`, `comma`):
# the node types found there are whitespace, operators, and these brackets.
_BRACKETS = ("LeftParen", "RightParen", "LeftSquareBracket", "RightSquareBracket", "LeftCurlyBrace", "RightCurlyBrace")
_PUNCTUATION = ("whitespace", "lpar", "rpar", "lbracket", "rbracket", "lbrace", "rbrace", "comma", "semicolon",
                "colon", "equal", "dot", "leading_lines", "lines_after_decorators", "header", "footer")
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
        self._names: Dict[type, Tuple[str, ...]] = {}
        self._inner: Dict[type, Tuple[str, ...]] = {}

    def of(self, node: cst.CSTNode) -> Tuple[str, ...]:
        order = self._orders.get(type(node))
        if order is None:
            order = self._orders[type(node)] = self._learn(node)
        return order

    def names(self, node: cst.CSTNode) -> Tuple[str, ...]:
        """`of(node)` as attribute names: the optional mark left out."""
        names = self._names.get(type(node))
        if names is None:
            names = self._names[type(node)] = tuple(field.lstrip(OPTIONAL) for field in self.of(node))
        return names

    def inner(self, node: cst.CSTNode) -> Tuple[str, ...]:
        """The attribute names of `of(node)` that may hold an expression or a statement: not the fields LibCST
        names for the white space, brackets and punctuation around them."""
        names = self._inner.get(type(node))
        if names is None:
            names = self._inner[type(node)] = tuple(n for n in self.names(node) if not n.startswith(_PUNCTUATION))
        return names

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


Plan = Tuple[Hook, Hook, Tuple[Tuple[str, bool, Hook, Hook], ...]]  # visit, leave, (field, optional, hooks)


class _Hooks:
    """A visitor class's hook functions per node type (None where it has none), with the type's fields.

    A plan holds, per node type, what `_walk` needs: `visit_X`, `leave_X`, and
    for each child field in LibCST's order its name, whether LibCST visits it
    only when set, and its `visit_X_field` / `leave_X_field` hooks. The hooks are
    the class's functions, called with the visitor: one `_Hooks` serves every
    instance of the class (`HOOKS`), so each walk does not look them up again.
    """

    def __init__(self, visitor_type: type) -> None:
        self._type = visitor_type
        self._cache: Dict[type, Plan] = {}
        hooked = [t.__name__ for t in SKIPPED if self._hook(f"visit_{t.__name__}") or self._hook(f"leave_{t.__name__}")]
        if hooked:
            raise TypeError(f"{visitor_type.__name__} hooks {', '.join(sorted(hooked))}, which walk() skips")
        # A visitor with no bracket hooks gets no call from a punctuation field: such fields are not entered.
        self._punctuation = () if any(self._hook(f"visit_{name}") or self._hook(f"leave_{name}")
                                      for name in _BRACKETS) else _PUNCTUATION

    def plan(self, node: cst.CSTNode, orders: "_Orders") -> Plan:
        found = self._cache.get(type(node))
        if found is None:
            name = type(node).__name__
            named = ((field.lstrip(OPTIONAL), field.startswith(OPTIONAL)) for field in orders.of(node))
            hooked = ((field, optional, self._hook(f"visit_{name}_{field}"), self._hook(f"leave_{name}_{field}"))
                      for field, optional in named)
            fields = tuple(each for each in hooked if not (each[0].startswith(self._punctuation) and each[2] is None
                                                           and each[3] is None))
            found = self._cache[type(node)] = (self._hook(f"visit_{name}"), self._hook(f"leave_{name}"), fields)
        return found

    def _hook(self, name: str) -> Hook:
        """The class's own method `name`; None for CSTVisitor's no-op stubs (one per node type)."""
        found = getattr(self._type, name, None)
        if found is None or found is getattr(cst.CSTVisitor, name, None):
            return None
        return found  # type: ignore[no-any-return]


class _HooksByClass(Dict[type, _Hooks]):
    """`_Hooks` per visitor class, made on first use: like ORDERS, a fact about classes, the same for every caller."""

    def __missing__(self, visitor_type: type) -> _Hooks:
        made = self[visitor_type] = _Hooks(visitor_type)
        return made


ORDERS = _Orders()
HOOKS = _HooksByClass()


def walk(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Call `visitor`'s hooks over the tree under `node`, as `node.visit(visitor)` would."""
    _walk(node, visitor, HOOKS[type(visitor)], ORDERS)


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


# What a field's value is, per type of value: asked for every child of every node the walk passes.
_OTHER, _SKIPPED_NODE, _NODE, _SEQUENCE = range(4)


class _Kinds(Dict[type, int]):
    """The kind of each type of field value, answered once per type (see `type_test`)."""

    def __missing__(self, value_type: type) -> int:
        if issubclass(value_type, cst.CSTNode):
            kind = _SKIPPED_NODE if value_type in SKIPPED else _NODE
        else:
            kind = _SEQUENCE if issubclass(value_type, (tuple, list)) else _OTHER
        self[value_type] = kind
        return kind


KINDS = _Kinds()  # like ORDERS: a fact about LibCST's classes and Python's, the same for every caller


def children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """`node.children` in LibCST's order, without rebuilding `node`; whitespace and operators left out.

    The reference `inner_children` is checked against (tests/test_cst_speedups.py): the analysis reads those.
    """
    return _field_nodes(node, ORDERS.names(node))


def inner_children(node: cst.CSTNode) -> List[cst.CSTNode]:
    """`children(node)` that can be or hold an expression or a statement: punctuation fields left out."""
    return _field_nodes(node, ORDERS.inner(node))


def _field_nodes(node: cst.CSTNode, names: Tuple[str, ...]) -> List[cst.CSTNode]:
    """The nodes held in `node`'s fields `names`, in that order (a sequence field's nodes one by one)."""
    kinds = KINDS
    found: List[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        kind = kinds[type(value)]
        if kind == _NODE:
            found.append(value)
        elif kind == _SEQUENCE:
            for item in value:
                if kinds[type(item)] == _NODE:
                    found.append(item)
    return found


def descendants(root: cst.CSTNode, skip: Optional[Callable[[cst.CSTNode], bool]] = None) -> Iterator[cst.CSTNode]:
    """The nodes under `root` in pre-order, LibCST's order and the source's, through `inner_children`; a node
    `skip` accepts is neither given nor entered. Iterative: generated code nests deep."""
    todo = inner_children(root)
    todo.reverse()
    while todo:
        node = todo.pop()
        if skip is not None and skip(node):
            continue
        yield node
        below = inner_children(node)
        below.reverse()
        todo.extend(below)


def nodes_of(root: cst.CSTNode, types: AbstractSet[type]) -> List[cst.CSTNode]:
    """The nodes of `types` under `root` (itself included) in pre-order: LibCST's order, the source's.

    Types of expressions and statements only: fields that hold punctuation are not entered."""
    found = [root] if type(root) in types else []
    found.extend(node for node in descendants(root) if type(node) in types)
    return found


def _walk(node: cst.CSTNode, visitor: cst.CSTVisitor, hooks: _Hooks, orders: _Orders) -> None:
    visit, leave, fields = hooks.plan(node, orders)
    if visit is None or visit(visitor, node) is not False:
        kinds = KINDS
        for field, optional, before, after in fields:
            value = getattr(node, field)
            kind = kinds[type(value)]
            if optional and kind == _OTHER:
                continue
            if before is not None:
                before(visitor, node)
            if kind == _NODE:
                _walk(value, visitor, hooks, orders)
            elif kind == _SEQUENCE:
                for item in value:
                    if kinds[type(item)] == _NODE:
                        _walk(item, visitor, hooks, orders)
            if after is not None:
                after(visitor, node)
    if leave is not None:
        leave(visitor, node)
