"""Models prepared by a float16 accelerator, followed to where they are called (rule A across calls).

`accelerator.prepare(model)` with `Accelerator(mixed_precision="fp16")` wraps `model.forward` in autocast: a
call of the prepared model runs `forward` in a float16 region wherever it is made. The collector sees that
only where the file binds the accelerator itself and the call is in the preparing function. Here the value
flow (`flow.Flow.prepared`) says what each `.prepare(...)` call of the project returns (`Prepared` values: the
module and the accelerator that may reach the receiver through parameters, factories and attributes), and
the values are carried forward, to the calls that may run them:

- a name bound to one (`model = accelerator.prepare(model)`, `m, opt = accelerator.prepare(m, opt)`): its
  reads in its function (after the binding, or anywhere in a loop around it) and in nested functions;
- a parameter given one (`fit_prepared(prepared, x)`, `Trainer(model=prepared)`): its reads in the callee,
  whose callers are found as the flow finds them (`Flow.value` of the callee);
- `self.model = ...`, or a `@dataclass` built with it (`State(model=...)`): the reads of `self.model` in the
  methods of the class, its bases and its subclasses, and of `obj.model` wherever `obj` may be such an instance;
- a module global: its reads in the file, and in the files that import it (`from state import MODEL`);
- `return ...`: the calls of the function (`Flow.call_sites`), and so on from each;
- through `.to(device)`, `torch.compile(m)`, `a if c else b`, `a or b`, a tuple and its unpacking.

A call of such a name (`model(x)`, `self.model(x)`, `model.forward(x)`) is where the walk starts
(`prepared_seeds`), under a prepared-model region named by the construction. Every carrier is visited once
per set of values, so the search ends without a cap. Only a project where some file imports Accelerate and
some file calls `prepare(` pays for it (the text pass tells), and only files whose text names `prepare` are
read for origins.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from amplint.astwalk import child_nodes
from amplint.facts.modulecalls import EXPRESSION, shortened_call
from amplint.model import Hop, RegionInfo
from amplint.project.accelflow import RANK, built_label
from amplint.project.accelvalues import Prepared
from amplint.project.flow import (SAME_MODULE_METHODS, WRAPPING_CALLS, BoundMethod, ClassValue, Flow, Function,
                                  Instance, MethodOf)
from amplint.project.flowcalls import binds_first_parameter, dataclass_fields
from amplint.project.flowtrees import FileTree, dotted, own_nodes, param_names
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import FLOAT16_LIKE, MODULE_KEY, RegionRef
from amplint.project.symbols import ClassRef, Target
from amplint.project.walk import Seed, shown
from amplint.textlines import TextLines

Held = FrozenSet[Prepared]


@dataclass(frozen=True)
class PreparedCall:
    """A call that may run a prepared model's `forward`: `model(x)`, or `model.forward(x)` (`forward`)."""

    path: str
    scope: str
    node: ast.Call
    held: Held
    forward: bool


class _Index:
    """A scope's own nodes by what the search asks: each node's parent, the reads of each name and of each
    `self.` attribute. Built once per scope and run."""

    def __init__(self, scope: ast.AST) -> None:
        self.parents: Dict[int, ast.AST] = {}
        self.names: Dict[str, List[ast.Name]] = {}
        self.attrs: Dict[str, List[ast.Attribute]] = {}
        self.others: Dict[str, List[ast.Attribute]] = {}  # `state.model`: an attribute of anything but `self`
        for node in own_nodes(scope):
            for child in child_nodes(node):
                self.parents[id(child)] = node
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self.names.setdefault(node.id, []).append(node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                self_read = isinstance(node.value, ast.Name) and node.value.id == "self"
                (self.attrs if self_read else self.others).setdefault(node.attr, []).append(node)


class PreparedCalls:
    """The search, from every float16 `prepare` call of the given files to the calls of what it returns."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self._indexes: Dict[Tuple[str, str], _Index] = {}
        self._trees: Dict[str, Optional[FileTree]] = {}  # this search's trees: its indexes name their nodes
        self._seen: Set[Tuple[object, ...]] = set()
        self._found: Dict[Tuple[str, int, int, bool], PreparedCall] = {}

    def search(self, paths: List[str]) -> List[PreparedCall]:
        for path in paths:
            tree = self._tree(path)
            for scope, call in tree.calls_named("prepare") if tree is not None else ():
                self._origin(path, scope, call)
        return [self._found[key] for key in sorted(self._found)]

    def _tree(self, path: str) -> Optional[FileTree]:
        """The flow's tree of `path`, the same one throughout the search: a node's parent is looked up by the
        node's identity, and the flow may read a file it let go again as a new tree."""
        if path not in self._trees:
            self._trees[path] = self.flow.tree(path)
        return self._trees[path]

    def _index(self, path: str, scope: str) -> Optional[_Index]:
        if (path, scope) not in self._indexes:
            tree = self._tree(path)
            node = tree.scopes.get(scope) if tree is not None else None
            self._indexes[(path, scope)] = _Index(node) if node is not None else None  # type: ignore[assignment]
        return self._indexes[(path, scope)]

    def _first(self, key: Tuple[object, ...]) -> bool:
        """Is this the first visit of `key` (a carrier with its values)?"""
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _origin(self, path: str, scope: str, call: ast.Call) -> None:
        try:
            prepared = self.flow.prepared(path, scope, call)
        except RecursionError:
            self.flow.resolver.doubts.cut_by_stack()
            return
        kept = [frozenset(p for p in held if p.accelerator.precision in FLOAT16_LIKE) for held in prepared or ()]
        if not any(kept):
            return
        index = self._index(path, scope)
        parent = index.parents.get(id(call)) if index is not None else None
        if len(kept) == 1:
            self._expression(path, scope, call, kept[0], False)
        elif isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(
                parent.targets[0], (ast.Tuple, ast.List)) and len(parent.targets[0].elts) == len(kept):
            for target, held in zip(parent.targets[0].elts, kept):  # `model, opt = accelerator.prepare(model, opt)`
                if held:
                    self._target(path, scope, target, held, False, parent)
        else:
            self._expression(path, scope, call, frozenset().union(*kept), True)

    # --- an expression's value, carried to what reads it -----------------------------------------------
    def _expression(self, path: str, scope: str, node: ast.AST, held: Held, packed: bool) -> None:
        """`node` may evaluate to the prepared models `held` (`packed`: to a tuple that holds them)."""
        index = self._index(path, scope)
        parent = index.parents.get(id(node)) if index is not None else None
        if isinstance(parent, ast.keyword):  # `State(model=...)`: an argument of the call around it
            parent = index.parents.get(id(parent))  # type: ignore[union-attr]
        if isinstance(parent, ast.Call):
            name = dotted(parent.func)
            if parent.func is node:
                if not packed:
                    self._call(path, scope, parent, held, False)
            elif name is not None and name[-1] in WRAPPING_CALLS and parent.args[:1] == [node]:
                self._expression(path, scope, parent, held, packed)  # `torch.compile(model)`
            else:
                self._argument(path, scope, parent, node, held, packed)
        elif isinstance(parent, ast.Attribute) and not packed:
            call = index.parents.get(id(parent))  # type: ignore[union-attr]
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr == "forward":
                    self._call(path, scope, call, held, True)
                elif parent.attr in SAME_MODULE_METHODS:  # `model.to(device)`
                    self._expression(path, scope, call, held, False)
        elif isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node:
            for target in parent.targets if isinstance(parent, ast.Assign) else [parent.target]:
                self._target(path, scope, target, held, packed, parent)
        elif isinstance(parent, ast.Return):
            self._returns(path, scope, held, packed)
        elif isinstance(parent, ast.NamedExpr):
            self._name(path, scope, parent.target.id, held, packed, parent)
            self._expression(path, scope, parent, held, packed)
        elif isinstance(parent, ast.BoolOp) or isinstance(parent, ast.IfExp) and node is not parent.test:
            self._expression(path, scope, parent, held, packed)
        elif isinstance(parent, ast.Subscript) and parent.value is node and packed:
            self._expression(path, scope, parent, held, False)  # `accelerator.prepare(model, opt)[0]`
        elif isinstance(parent, (ast.Tuple, ast.List)) and not packed and isinstance(parent.ctx, ast.Load):
            self._expression(path, scope, parent, held, True)  # `return model, opt`

    def _target(self, path: str, scope: str, target: ast.AST, held: Held, packed: bool, statement: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._name(path, scope, target.id, held, packed, statement)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            tree = self._tree(path)
            owner = scope.rpartition(".")[0]
            if tree is not None and owner in tree.classes:
                self._attribute(ClassRef(path, owner), target.attr, held, packed)
        elif isinstance(target, (ast.Tuple, ast.List)) and packed:
            for each in target.elts:  # `model, opt = make()`: each may be the prepared model
                self._target(path, scope, each, held, False, statement)

    def _call(self, path: str, scope: str, node: ast.Call, held: Held, forward: bool) -> None:
        key = (path, node.lineno, node.col_offset, forward)
        known = self._found.get(key)
        self._found[key] = PreparedCall(path, scope, node, held | (known.held if known else frozenset()), forward)

    # --- carriers: names, parameters, attributes, returns ----------------------------------------------
    def _name(self, path: str, scope: str, name: str, held: Held, packed: bool,
              statement: Optional[ast.AST]) -> None:
        """A name of `scope` bound to the values (`statement`; None: a parameter): its reads there, and in the
        functions nested in it that do not bind it (all of the file's, for a module-level name)."""
        if not self._first(("name", path, scope, name, held, packed, id(statement))):
            return
        tree = self._tree(path)
        for inner in self._seeing(path, scope, name) if tree is not None else ():
            index = self._index(path, inner)
            for read in index.names.get(name, ()) if index is not None else ():
                if inner != scope or statement is None or _after(index, statement, read):
                    self._expression(path, inner, read, held, packed)
        if scope == MODULE_KEY:  # a module global: also where another file imports it (`from state import MODEL`)
            for importer, local in self._importing(path, name):
                self._name(importer, MODULE_KEY, local, held, packed, None)

    def _importing(self, path: str, name: str) -> Iterator[Tuple[str, str]]:
        """(file, local name) of each `from <path's module> import <name> [as local]` of the project."""
        resolver = self.flow.resolver
        for importer in self.flow.loader.importers(path):
            tree = self._tree(importer)
            for node in tree.tree.body if tree is not None else ():
                if isinstance(node, ast.ImportFrom):
                    for alias in node.names:
                        local = alias.asname or alias.name
                        if alias.name == name and (path, name) in resolver.imported_names(importer, local):
                            yield importer, local

    def _seeing(self, path: str, scope: str, name: str) -> Iterator[str]:
        """`scope` and the scopes nested in it where `name` is `scope`'s."""
        tree = self._tree(path)
        for inner in tree.scopes if tree is not None else ():
            current = inner
            while current != scope and current in tree.parents and name not in tree.scope_facts(current).bound:
                current = tree.parents[current]
            if current == scope:
                yield inner

    def _attribute(self, cls: ClassRef, attr: str, held: Held, packed: bool) -> None:
        """`self.<attr>` holds the values: its reads in the methods of every class an instance may be, and
        `obj.<attr>` wherever `obj` may hold such an instance (`state.model(x)`, the state passed on)."""
        if not self._first(("attr", cls, attr, held, packed)):
            return
        classes = set()
        for ref, tree, node in self.flow.instance_classes(cls):
            classes.add(ref)
            if node is None or tree is None:
                continue
            for scope in [key for key in tree.scopes if key.startswith(f"{ref.name}.")]:
                index = self._index(ref.path, scope)
                for read in index.attrs.get(attr, ()) if index is not None else ():
                    self._expression(ref.path, scope, read, held, packed)
        for path in [p for p in sorted(self.flow.loader.info) if self.flow.loader.mentions(p, attr)]:
            tree = self._tree(path)
            for scope in tree.scopes if tree is not None else ():
                index = self._index(path, scope)
                for read in index.others.get(attr, ()) if index is not None else ():
                    if any(isinstance(v, Instance) and v.cls in classes for v in self._values(path, scope, read.value)):
                        self._expression(path, scope, read, held, packed)

    def _values(self, path: str, scope: str, node: ast.expr) -> FrozenSet[object]:
        try:
            return self.flow.value(path, scope, node)  # type: ignore[return-value]
        except RecursionError:  # an expression nested past Python's stack: not followed
            self.flow.resolver.doubts.cut_by_stack()
            return frozenset()

    def _returns(self, path: str, scope: str, held: Held, packed: bool) -> None:
        if scope == MODULE_KEY or not self._first(("returns", path, scope, held, packed)):
            return
        for site in self.flow.call_sites(path, scope):
            self._expression(site.path, site.scope, site.call, held, packed)

    def _argument(self, path: str, scope: str, call: ast.Call, node: ast.AST, held: Held, packed: bool) -> None:
        """`f(..., model, ...)`: the parameter of each function the call may run that receives it."""
        position = next((i for i, arg in enumerate(call.args) if arg is node), None)
        keyword = next((k.arg for k in call.keywords if k.value is node), None)
        if position is None and keyword is None or position is not None and any(
                isinstance(a, ast.Starred) for a in call.args[:position + 1]):
            return
        for cls, fields in self._records(path, scope, call):  # `State(model)` of a `@dataclass State`
            field = keyword if keyword in fields else fields[position] if position is not None and \
                position < len(fields) else None
            if field is not None:
                self._attribute(cls, field, held, packed)
        for callee_path, key, offset in self._callees(path, scope, call):
            tree = self._tree(callee_path)
            params = param_names(tree.scopes[key]) if tree is not None and key in tree.scopes else []
            name = keyword if keyword is not None else \
                params[position + offset] if position is not None and position + offset < len(params) else None
            if name is not None and name in params:
                self._name(callee_path, key, name, held, packed, None)

    def _records(self, path: str, scope: str, call: ast.Call) -> Iterator[Tuple[ClassRef, List[str]]]:
        """The data classes the call may construct, each with its fields in order (its generated `__init__`'s
        parameters, each stored under its own name)."""
        for value in self._values(path, scope, call.func):
            if not isinstance(value, ClassValue):
                continue
            tree = self._tree(value.cls.path)
            node = tree.classes.get(value.cls.name) if tree is not None else None
            fields = dataclass_fields(node) if node is not None else None
            if fields is not None:
                yield value.cls, fields

    def _callees(self, path: str, scope: str, call: ast.Call) -> Iterator[Tuple[str, str, int]]:
        """(path, key, how many leading parameters are bound) of each function the call may run."""
        resolver = self.flow.resolver
        for value in self._values(path, scope, call.func):
            if isinstance(value, Function):
                tree = self._tree(value.path)
                bound = isinstance(call.func, ast.Attribute) and tree is not None and \
                    binds_first_parameter(tree, value.key)
                yield value.path, value.key, int(bound)
                continue
            if isinstance(value, (BoundMethod, MethodOf)):
                targets = self.flow.method_targets(value)
            elif isinstance(value, ClassValue):
                targets = resolver.method(value.cls, "__init__", True, True)
            elif isinstance(value, (Instance, Prepared)):
                targets = [Target(p, k) for p, k in self.flow.runs(value) or ()]
            else:
                continue
            for target in targets:
                tree = self._tree(target.path)
                yield target.path, target.key, int(tree is None or binds_first_parameter(tree, target.key))


def _after(index: _Index, statement: ast.AST, read: ast.AST) -> bool:
    """May `read` see the binding `statement` made? After it, or anywhere in a loop around both."""
    if (read.lineno, read.col_offset) >= (statement.end_lineno, statement.end_col_offset):  # type: ignore
        return True
    node: Optional[ast.AST] = statement
    while node is not None:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and \
                node.lineno <= read.lineno <= node.end_lineno:  # type: ignore[operator]
            return True
        node = index.parents.get(id(node))
    return False


def prepared_seeds(loader: Loader, resolver: Resolver, root: str) -> List[Seed]:
    """The calls of models prepared by a float16 (or maybe-float16) accelerator, as the walk's seeds."""
    if "prepare" not in loader.used_names or not any(
            name.split(".", 1)[0] == "accelerate" for info in loader.info.values() for name in info.imported):
        return []  # no file calls `prepare(`, or none imports Accelerate: no `Accelerator(...)` (`flow`)
    paths = [path for path in sorted(loader.info) if loader.mentions(path, "prepare")]  # the flow's words
    seeds: List[Seed] = []
    for found in PreparedCalls(resolver.flow).search(paths):
        best = min((p.accelerator for p in found.held), key=lambda a: (RANK.get(a.precision, 3), a.path, a.line))
        kept: Dict[Target, None] = {}  # in order, each once
        for module in sorted({p.module for p in found.held}, key=repr):
            called = resolver.method(module.cls, "forward", module.exact, True) if found.forward else \
                resolver.instance_call(module.cls, module.exact, True)
            kept.update(dict.fromkeys(replace(t, flowed=True) for t in called))
        targets = list(kept)
        if not targets:
            continue
        where = shown(found.path, root)
        text, column = loader.answer(found.path, ("prepared call", found.node.lineno, found.node.col_offset),
                                     lambda source: _written(source, found.node), ("", 0))
        start = Hop(text, found.path, found.node.lineno, column, where)
        info = RegionInfo(found.node.lineno, best.precision, True, "cuda", '"cuda"')  # type: ignore[arg-type]
        region = RegionRef(info, f"prepared-model region of {built_label(best, root)}")
        seeds.extend(Seed(target, region, where, (start, replace(start, name=resolver.display(target))), found.path)
                     for target in targets)
    return seeds


def _written(source: str, node: ast.Call) -> Tuple[str, int]:
    """The call as a chain shows it, and its column (characters, from 1)."""
    callee = ".".join(dotted(node.func) or [EXPRESSION])
    segment = ast.get_source_segment(source, node) or f"{callee}(...)"
    func = ast.get_source_segment(source, node.func) or callee
    return shortened_call(segment, callee, lambda: func), TextLines(source).column(node.lineno, node.col_offset) + 1
