"""`mathenv.Env` over CPython's tree: what the hand-written-math reader may look up in one function.

The same lookups as LibCST's `Env`, read the same way (flow-insensitive: every
assignment of a name counts), so `astprobmath` answers what `probmath` answers.
Two things CPython's tree does not hold are read from the text: whether an
expression carries parentheses of its own (`parenthesized`, LibCST's `lpar`),
and whether two expressions are written alike (`same_code`, LibCST's
`deep_equals`). Where a comment makes either unsure, they raise `Unsure`, and
the reader sends the file to LibCST.
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from amplint.astwalk import child_nodes
from amplint.facts.astnodes import literal_pairs, self_attribute
from amplint.facts.astsource import SourceText
from amplint.names import ImportTable

Bindings = Dict[str, List[ast.expr]]
Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# `mathenv._AUG_TO_BINARY`: the operators an augmented assignment keeps; any other reads as `+`.
_AUGMENTED = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


class Unsure(Exception):
    """The text leaves a fact of LibCST's tree unsure (a comment where parentheses may be)."""


class Env:
    """`mathenv.Env`: the imports, a function's bindings and its class's `self.` attributes, read on first use."""

    def __init__(self, imports: ImportTable, source: SourceText, function: Optional[Function] = None,
                 attributes: Callable[[], Bindings] = dict, by_name: bool = True) -> None:
        self.imports = imports
        self.by_name = by_name  # a name like `probs` counts as probabilities (False: only what is computed)
        self.source = source
        self._function = function
        self._local: Optional[Bindings] = None
        self._params: "Optional[frozenset[str]]" = None
        self._attributes = attributes
        self.memo: Dict[tuple, bool] = {}  # `astprobmath._has` answers for this function's nodes
        self._augmented: Set[int] = set()  # id()s of the operations made for augmented assignments

    def _bindings(self) -> Bindings:
        if self._local is None:
            self._local = _bindings(self._function, self._augmented) if self._function is not None else {}
        return self._local

    def values(self, name: str) -> Sequence[ast.expr]:
        return self._bindings().get(name, ())

    def attribute_values(self, attr: str) -> Sequence[ast.expr]:
        return self._attributes().get(attr, ())

    def is_local(self, name: str) -> bool:
        if self._function is None or name not in self._bindings():
            return False
        return name not in self._parameters()

    def is_number_constant(self, name: str) -> bool:
        """`mathenv.Env.is_number_constant`: a module constant that is a Python number, not rebound here."""
        return name in self.imports.number_constants and name not in self._bindings() and (
            name not in self._parameters())

    def constant_value(self, name: str) -> Optional[float]:
        """`mathenv.Env.constant_value`."""
        return self.imports.number_constants.get(name) if self.is_number_constant(name) else None

    def _parameters(self) -> "frozenset[str]":
        if self._params is None:
            function = self._function
            self._params = frozenset(param for param, _ in parameters(function)) if function else frozenset()
        return self._params

    def parenthesized(self, node: ast.expr) -> bool:
        """Does LibCST keep parentheses on `node` (`lpar`)?"""
        if id(node) in self._augmented:
            return False  # `x op value` for `x op= value`: not in the text, so no parentheses of its own
        code = self.source.code(node)
        if code is None:
            raise Unsure
        return len(code) != len(self.source.segment(node))

    def same_code(self, left: ast.expr, right: ast.expr) -> bool:
        """LibCST's `deep_equals`: the two are written alike, parentheses, spaces and comments included."""
        codes = self.source.code(left), self.source.code(right)
        if codes[0] is None or codes[1] is None:
            raise Unsure
        return codes[0] == codes[1]


def class_attributes(class_node: Optional[ast.ClassDef]) -> Callable[[], Bindings]:
    """The class's `self.` attribute bindings, read on first use and then kept."""
    if class_node is None:
        return dict
    found: List[Bindings] = []

    def read() -> Bindings:
        if not found:
            found.append(_attribute_bindings(class_node))
        return found[0]

    return read


def parameters(function: Function) -> Iterator[Tuple[str, Optional[ast.expr]]]:
    """Each named parameter with its default (`mathenv._params`: not `*args` or `**kwargs`)."""
    args = function.args
    positional = [*args.posonlyargs, *args.args]
    defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    yield from ((param.arg, default) for param, default in zip(positional, defaults))
    yield from ((param.arg, default) for param, default in zip(args.kwonlyargs, args.kw_defaults))


def _bindings(function: Function, augmented: Set[int]) -> Bindings:
    """The function's bindings; the operations made for `x op= value` go in `augmented` (they stay alive in the
    bindings, so their ids do not change)."""
    found: Bindings = {}
    for name, default in parameters(function):
        if default is not None:
            found.setdefault(name, []).append(default)
    for node in statements_of(function.body):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.setdefault(target.id, []).append(node.value)
            for name, value in literal_pairs(node.targets, node.value) or ():  # `p, q = a.softmax(1), b`
                found.setdefault(name, []).append(value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None and isinstance(node.target, ast.Name):
                found.setdefault(node.target.id, []).append(node.value)
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            if isinstance(node.target, ast.Name):
                found.setdefault(node.target.id, []).append(node.iter)  # an element of the iterable
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            operator = node.op if isinstance(node.op, _AUGMENTED) else ast.Add()
            operation = ast.BinOp(node.target, operator, node.value)
            augmented.add(id(operation))
            found.setdefault(node.target.id, []).append(operation)
    return found


def _attribute_bindings(class_node: ast.ClassDef) -> Bindings:
    """`mathenv._attribute_bindings`: `self.attr = value` in any method; a parameter assigned as is stands for its
    default, a local of the method for what the method binds it to."""
    found: Bindings = {}
    for method in class_node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        defaults = dict(parameters(method))
        local: Optional[Bindings] = None
        for node in statements_of(method.body):
            if not isinstance(node, ast.Assign):
                continue
            for target in node.targets:
                attr = self_attribute(target)
                if attr is None:
                    continue
                value = node.value
                if isinstance(value, ast.Name) and value.id in defaults:
                    default = defaults[value.id]
                    if default is not None:
                        value = default  # no default: the name itself, unknown, keeps values apart
                elif isinstance(value, ast.Name):
                    local = _bindings(method, set()) if local is None else local
                    if local.get(value.id):
                        found.setdefault(attr, []).extend(local[value.id])
                        continue
                found.setdefault(attr, []).append(value)
    return found


def statements_of(body: Sequence[ast.AST]) -> List[ast.AST]:
    """`mathenv.statements_of`: the statements, `for` headers and comprehension clauses under `body`, nested scopes
    excluded. Only which bindings there are matters, not their order."""
    found: List[ast.AST] = []
    stack: List[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, (ast.stmt, ast.comprehension)):
            found.append(node)
        stack.extend(child_nodes(node))
    return found
