"""A file's CPython tree indexed for the value flow (`flow.py`): scopes by key, calls by name, bindings.

Each index is built once per file and run, on first use: the flow asks the same few questions of a
file many times (who calls `f`, what `x` is bound to, what `self.attr` is assigned). Every scope's facts
come from one walk of the file: finding the lambdas, which are scopes too, is that same walk.
"""
from __future__ import annotations

import ast
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from amplint.astwalk import child_nodes, walk
from amplint.cpython_trees import KEEP_SOURCE_BYTES
from amplint.project.summary import MODULE_KEY

INDEX = "flow-index"  # what `index_tree` builds, as `CPythonTrees.derived` keeps it beside the tree
# Source bytes of the trees the flow keeps between its questions, the least recently read going first: as
# many as the run's CPython memo keeps, since they are the same trees. It kept every tree it read, and a run
# over 24,000 files (248 MB of source) ran out of memory; transformers (55 MB) still keeps all it reads: with
# 32 MB it read the same files again and again, and took 2.5 times the CPU time.
FLOW_TREE_BYTES = KEEP_SOURCE_BYTES


@dataclass
class _ScopeFacts:
    """One function's (or the module's) own nodes, sorted by what the questions ask: read once per run."""

    bindings: Dict[str, List[ast.AST]]  # name -> the Assign/AnnAssign/For/comprehension/withitem/NamedExpr binding it
    bound: FrozenSet[str]  # every name the scope binds (parameters, stores, imports), less `global`/`nonlocal` ones
    calls: List[ast.Call]
    returns: List[ast.expr]
    lambdas: List[ast.Lambda]  # the lambdas written in the scope itself, in `own_nodes` order
    declared: FrozenSet[str] = frozenset()  # names it declares `global` or `nonlocal`
    # attr -> (owner, value) of `owner.attr = value` where the owner is not `self` (`policy.head = NormalHead()`)
    stores: Dict[str, List[Tuple[ast.expr, ast.expr]]] = field(default_factory=dict)
    # a container's dotted name -> (key, value) of `heads[key] = value`, `layers.append(value)` (key None)
    elements: Dict[str, List[Tuple[Optional[ast.expr], ast.expr]]] = field(default_factory=dict)


@dataclass
class FileTree:
    """A file's CPython tree with its scopes by the collector's keys, and its calls by the name they call."""

    tree: ast.Module
    scopes: Dict[str, ast.AST]  # scope key -> FunctionDef/AsyncFunctionDef node ("<module>": the module)
    parents: Dict[str, str]  # scope key -> enclosing scope key
    classes: Dict[str, ast.ClassDef]  # class key ("C", "Outer.Inner") -> node
    facts: Dict[str, _ScopeFacts] = field(default_factory=dict)
    class_attrs: Dict[str, Dict[str, List[Tuple[str, ast.expr]]]] = field(default_factory=dict)
    calls_by_name: Optional[Dict[str, List[Tuple[str, ast.Call]]]] = None  # last dotted name -> (scope, call)
    calls_by_argument: Optional[Dict[str, List[Tuple[str, ast.Call]]]] = None  # a bare name passed -> (scope, call)
    # (scope, call) of the calls a filter keeps (`_calls_of_getattr`, `_calls_of_values`), by the filter's name
    picked_calls: Dict[str, List[Tuple[str, ast.Call]]] = field(default_factory=dict)
    size: int = 0  # the source's length: what keeping the tree costs (`TreeShelf`)
    # (scope, decorator, name) of each class or function (no method) a decorator is applied to, in the scope
    # that binds its name: `@register("normal") class Policy` calls what `register("normal")` gives on `Policy`
    decorated: List[Tuple[str, ast.expr, str]] = field(default_factory=list)
    storing_elements: Optional[Dict[str, List[str]]] = None  # a container's name -> the scopes storing into it

    def scope_facts(self, scope: str) -> _ScopeFacts:
        return self.facts[scope]

    def self_attrs(self, class_key: str) -> Dict[str, List[Tuple[str, ast.expr]]]:
        """Per attribute, (method scope, value) of every `self.attr = value` in the class's own methods; under
        `COMPUTED`, (method scope, the storing call) of each store whose name is computed."""
        found = self.class_attrs.get(class_key)
        if found is None:
            found = self.class_attrs[class_key] = {}
            for item in self.classes[class_key].body:
                scope = f"{class_key}.{getattr(item, 'name', '')}"
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope in self.scopes:
                    for node in ast.walk(item):
                        noted: Dict[str, List[Tuple[ast.AST, ast.expr]]] = {}
                        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                                _note_self_attrs(target, node.value, noted)
                        elif isinstance(node, ast.Call):
                            _note_stored_attr(node, noted)
                        for attr, pairs in noted.items():
                            found.setdefault(attr, []).extend((scope, value) for _, value in pairs)
        return found

    def attr_stores(self, attr: str) -> List[Tuple[str, ast.expr, ast.expr]]:
        """(scope, owner, value) of every `owner.attr = value` in the file whose owner is not `self`."""
        return [(scope, owner, value) for scope, facts in self.facts.items()
                for owner, value in facts.stores.get(attr, ())]

    def global_writers(self, name: str) -> List[str]:
        """The functions that assign the module's `name` after declaring it `global`."""
        return [key for key, facts in self.facts.items() if name in facts.declared and name in facts.bindings]

    def lambdas_in(self, scope: str) -> List[str]:
        """The keys of the lambdas written in `scope`, and in those lambdas."""
        found = [key for key, parent in self.parents.items()
                 if parent == scope and "<lambda@" in key.rpartition(".")[2]]
        return found + [inner for key in found for inner in self.lambdas_in(key)]

    def element_stores(self, name: str, binder: str) -> List[Tuple[str, Optional[ast.expr], ast.expr]]:
        """(scope, key, value) of the element stores on `name` (`heads[k] = v`, `heads.append(v)`) made in
        `binder` or in a function in it that does not bind `name` itself (`MODELS[name] = cls` in a registering
        decorator mutates the module's `MODELS`)."""
        if self.storing_elements is None:  # which scopes store elements into each name: most store none
            self.storing_elements = {}
            for scope, facts in self.facts.items():
                for each in facts.elements:
                    self.storing_elements.setdefault(each, []).append(scope)
        found: List[Tuple[str, Optional[ast.expr], ast.expr]] = []
        for scope in self.storing_elements.get(name, ()):
            facts = self.facts[scope]
            owner = scope
            while owner != MODULE_KEY and name not in self.facts[owner].bound and owner in self.parents:
                owner = self.parents[owner]
            if owner == binder:
                found.extend((scope, key, value) for key, value in facts.elements[name])
        return found

    def calls_named(self, name: str) -> List[Tuple[str, ast.Call]]:
        if self.calls_by_name is None:
            self._index_calls()
        return self.calls_by_name.get(name, [])  # type: ignore[union-attr]

    def calls_given(self, name: str) -> List[Tuple[str, ast.Call]]:
        if self.calls_by_argument is None:
            self._index_calls()
        return self.calls_by_argument.get(name, [])  # type: ignore[union-attr]

    def getattr_calls(self) -> List[Tuple[str, ast.Call]]:
        """Calls of what `getattr` returns: `getattr(obj, name)(...)`, or a local bound to it and called."""
        return self._calls_kept(_calls_of_getattr)

    def value_calls(self) -> List[Tuple[str, ast.Call]]:
        """Calls that may call an instance (its `__call__` or `forward`): of a local name or parameter, of a
        `self.` attribute, of what a call or a subscript gives (`Loss()(m, x)`, `heads[k](h)`)."""
        return self._calls_kept(_calls_of_values)

    def _calls_kept(self, keeps: "CallFilter") -> List[Tuple[str, ast.Call]]:
        """Every scope's calls that `keeps(scope, facts)` keeps, found once per file and filter."""
        found = self.picked_calls.get(keeps.__name__)
        if found is None:
            found = self.picked_calls[keeps.__name__] = []
            for scope in self.scopes:
                facts = self.facts[scope]
                keep = keeps(scope, facts)
                found.extend((scope, call) for call in facts.calls if keep(call))
        return found

    def _index_calls(self) -> None:
        """One pass over the file: each call under the scope that makes it (not each scope's facts)."""
        by_name: Dict[str, List[Tuple[str, ast.Call]]] = {}
        by_argument: Dict[str, List[Tuple[str, ast.Call]]] = {}
        keys = {id(node): key for key, node in self.scopes.items()}
        pending: List[Tuple[ast.AST, str]] = [(self.tree, MODULE_KEY)]
        while pending:
            node, scope = pending.pop()
            if isinstance(node, ast.Call):
                parts = dotted(node.func)
                last = parts[-1] if parts is not None else \
                    node.func.attr if isinstance(node.func, ast.Attribute) else None  # `Scorer().evaluate(x)`
                if last is not None:
                    by_name.setdefault(last, []).append((scope, node))
                elif isinstance(node.func, ast.Call):  # `register("normal")(Policy)`: under `register()`
                    inner = dotted(node.func.func)
                    if inner is not None:
                        by_name.setdefault(f"{inner[-1]}()", []).append((scope, node))
                for argument in node.args:
                    if isinstance(argument, ast.Name):
                        by_argument.setdefault(argument.id, []).append((scope, node))
                    elif isinstance(argument, ast.Lambda):  # handed on where it is written
                        by_argument.setdefault(lambda_key(scope, argument).rpartition(".")[2], []).append(
                            (scope, node))
            for child in child_nodes(node):
                pending.append((child, keys.get(id(child), scope)))
        self.calls_by_name, self.calls_by_argument = by_name, by_argument


def _scope_facts(scope: ast.AST) -> _ScopeFacts:
    bindings: Dict[str, List[ast.AST]] = {}
    bound: Set[str] = set(param_names(scope))
    declared: Set[str] = set()
    calls: List[ast.Call] = []
    returns: List[ast.expr] = []
    stores: Dict[str, List[Tuple[ast.expr, ast.expr]]] = {}
    lambdas: List[ast.Lambda] = []
    elements: Dict[str, List[Tuple[Optional[ast.expr], ast.expr]]] = {}

    def bind(target: ast.AST, node: ast.AST) -> None:  # `a, b = ...`, not the `self` of `self.x = ...`
        for name in ast.walk(target):
            if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store):
                bindings.setdefault(name.id, []).append(node)

    for node in own_nodes(scope):
        if isinstance(node, ast.Call):
            calls.append(node)
            _note_element_call(node, elements)
        elif isinstance(node, ast.Lambda):
            lambdas.append(node)
        elif isinstance(node, ast.Return) and node.value is not None:
            returns.append(node.value)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name.split(".")[0]) for alias in node.names)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                bind(target, node)
                if isinstance(target, ast.Attribute) and not (isinstance(target.value, ast.Name) and
                                                              target.value.id == "self"):
                    stores.setdefault(target.attr, []).append((target.value, node.value))
                owner = dotted(target.value) if isinstance(target, ast.Subscript) else None
                if owner is not None:  # `self.heads[name] = head`
                    elements.setdefault(".".join(owner), []).append((target.slice, node.value))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bind(node.target, node)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bind(node.optional_vars, node)
        elif isinstance(node, ast.NamedExpr):
            bind(node.target, node)
    if isinstance(scope, ast.Lambda):
        returns.append(scope.body)
    calls.sort(key=lambda call: (call.lineno, call.col_offset))
    return _ScopeFacts(bindings, frozenset(bound - declared), calls, returns, lambdas, frozenset(declared), stores,
                       elements)


def _note_self_attrs(target: ast.AST, value: ast.expr, found: Dict[str, List[Tuple[ast.AST, ast.expr]]]) -> None:
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        found.setdefault(target.attr, []).append((target, value))
    elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) and \
            len(value.elts) == len(target.elts):
        for sub_target, sub_value in zip(target.elts, value.elts):
            _note_self_attrs(sub_target, sub_value, found)


CallFilter = Callable[[str, _ScopeFacts], Callable[[ast.Call], bool]]  # (scope, its facts) -> which calls to keep


def _calls_of_getattr(scope: str, facts: _ScopeFacts) -> Callable[[ast.Call], bool]:
    """`getattr(obj, name)(...)`, or a call of a local bound to `getattr(...)`."""
    held = {name for name, bindings in facts.bindings.items() for binding in bindings
            if isinstance(binding, ast.Assign) and _is_getattr(binding.value)}
    return lambda call: _is_getattr(call.func) or (isinstance(call.func, ast.Name) and call.func.id in held)


def _calls_of_values(scope: str, facts: _ScopeFacts) -> Callable[[ast.Call], bool]:
    """A call of a local or parameter, of a `self.` attribute, or of what a call or subscript gives."""
    def keep(call: ast.Call) -> bool:
        func = call.func
        return isinstance(func, (ast.Call, ast.Subscript)) or (
            isinstance(func, ast.Name) and scope != MODULE_KEY and func.id in facts.bound) or (
            isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self")
    return keep


def may_call_getattr(tree: ast.AST) -> bool:
    """Could `FileTree.getattr_calls` find a call in this file? False only when none is there: no call of a
    `getattr(obj, name)`, and no name bound to one is called anywhere in the file. Read by the text pass from
    the tree it has, so that the call-site search reads no tree of a file that merely mentions `getattr`
    (`getattr(obj, "x", None)`: half of transformers' files)."""
    held: Set[str] = set()
    called: Set[str] = set()
    for node in walk(tree):
        if isinstance(node, ast.Call):
            if _is_getattr(node.func):
                return True
            if isinstance(node.func, ast.Name):
                called.add(node.func.id)
        elif isinstance(node, ast.Assign) and _is_getattr(node.value):
            held.update(name.id for target in node.targets for name in walk(target) if isinstance(name, ast.Name))
    return not held.isdisjoint(called)


def _is_getattr(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
        len(node.args) >= 2


COMPUTED = "*"  # the attribute of a store whose name is no literal (`setattr(self, name, m)`): every name it may be
# Methods that store their second argument as an attribute named by their first: `self.add_module("net", m)`.
_STORING_METHODS = frozenset({"add_module", "register_module"})
_ELEMENT_METHODS = {"append": 0, "insert": 1}  # a list's methods that store one element: its argument's position
_MANY_METHODS = frozenset({"extend", "update"})  # a list's or a dict's methods that store many


def _note_element_call(call: ast.Call, found: Dict[str, List[Tuple[Optional[ast.expr], ast.expr]]]) -> None:
    """`layers.append(block)`, `layers.insert(0, block)`: an element stored with no key. `layers.extend(blocks)`
    and `heads.update(more)` store the elements of what they are given (an `ast.Starred` of it: `*blocks`);
    `heads.update({"pi": head})`, `heads.update(pi=head)` and `heads.setdefault("pi", head)` each pair under its
    key."""
    func, args, keywords = call.func, call.args, call.keywords
    method = func.attr if isinstance(func, ast.Attribute) else ""
    storing = method in _ELEMENT_METHODS or method in _MANY_METHODS or method == "setdefault"
    owner = dotted(func.value) if storing else None  # type: ignore[union-attr]
    if owner is None:
        return
    stored: List[Tuple[Optional[ast.expr], ast.expr]] = []
    if method in _ELEMENT_METHODS and len(args) == _ELEMENT_METHODS[method] + 1 and not keywords:
        stored.append((None, args[-1]))
    elif method == "setdefault" and len(args) == 2 and not keywords:  # `heads.setdefault("pi", head)`
        stored.append((args[0], args[1]))
    elif method == "update" and not args and keywords:
        stored.extend((ast.Constant(k.arg), k.value) if k.arg is not None else (None, _elements(k.value))
                      for k in keywords)
    elif method == "update" and len(args) == 1 and not keywords and isinstance(args[0], ast.Dict):
        stored.extend((key, value if key is not None else _elements(value))
                      for key, value in zip(args[0].keys, args[0].values))
    elif method in _MANY_METHODS and len(args) == 1 and not keywords:
        stored.append((None, _elements(args[0])))
    if stored:
        found.setdefault(".".join(owner), []).extend(stored)


def _elements(node: ast.expr) -> ast.expr:
    """`*node`: what an element store of each of `node`'s elements stores (`Flow.value` reads its elements)."""
    return ast.copy_location(ast.Starred(node, ast.Load()), node)


def stored_attr(call: ast.Call) -> Optional[Tuple[ast.expr, ast.expr]]:
    """(name, value) of `setattr(self, name, value)` or `self.add_module(name, value)` (None: neither)."""
    func, args = call.func, call.args
    if isinstance(func, ast.Name) and func.id == "setattr" and len(args) == 3 and \
            isinstance(args[0], ast.Name) and args[0].id == "self":
        return args[1], args[2]
    if isinstance(func, ast.Attribute) and func.attr in _STORING_METHODS and len(args) == 2 and \
            isinstance(func.value, ast.Name) and func.value.id == "self":
        return args[0], args[1]
    return None


def computed_value(call: ast.Call) -> ast.expr:
    """The value a store under `COMPUTED` stores (its entry holds the storing call)."""
    return stored_attr(call)[1]  # type: ignore[index]


def _note_stored_attr(call: ast.Call, found: Dict[str, List[Tuple[ast.AST, ast.expr]]]) -> None:
    """`setattr(self, "net", m)` and `self.add_module("net", m)` with a literal name: `self.net = m`. With any
    other name (`setattr(self, f"head_{k}", m)`), the call itself under `COMPUTED`: its name is spelled where an
    attribute is asked (`stored_attr`)."""
    pair = stored_attr(call)
    if pair is None:
        return
    name, value = pair
    if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier():
        found.setdefault(name.value, []).append((call, value))
    else:
        found.setdefault(COMPUTED, []).append((call, call))


def index_tree(tree: ast.Module) -> FileTree:
    scopes: Dict[str, ast.AST] = {MODULE_KEY: tree}
    parents: Dict[str, str] = {}
    classes: Dict[str, ast.ClassDef] = {}

    decorated: List[Tuple[str, ast.expr, str]] = []

    def visit(body: Iterable[ast.AST], prefix: str, scope: str, in_function: bool) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
                    not prefix or prefix.endswith("<locals>.")):  # not a method: its name is bound in `scope`
                decorated.extend((scope, decorator, node.name) for decorator in node.decorator_list)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{prefix}{node.name}"
                scopes[key], parents[key] = node, scope
                visit(node.body, f"{key}.<locals>.", key, True)
            elif isinstance(node, ast.ClassDef):
                key = f"{prefix}{node.name}"
                classes[key] = node
                visit(node.body, f"{key}.", scope, in_function)
            else:
                for part in ("body", "orelse", "finalbody", "handlers"):
                    inner = getattr(node, part, None)
                    if isinstance(inner, list):
                        visit(inner, prefix, scope, in_function)
                for case in getattr(node, "cases", None) or ():
                    visit(case.body, prefix, scope, in_function)

    visit(tree.body, "", MODULE_KEY, False)
    facts: Dict[str, _ScopeFacts] = {}

    def read(key: str) -> None:
        """The scope's facts, and its lambdas' (scopes of their own: their parameters hold what their callers
        give them), keyed depth first from the last written, as the flow has always listed them."""
        found = facts[key] = _scope_facts(scopes[key])
        for node in reversed(found.lambdas):
            inner = lambda_key(key, node)
            scopes[inner], parents[inner] = node, key
            read(inner)

    for key in list(scopes):
        read(key)
    return FileTree(tree, scopes, parents, classes, facts, decorated=decorated)


def lambda_key(owner: str, node: ast.Lambda) -> str:
    """A lambda's scope key: where it is written, under the scope that writes it."""
    prefix = f"{owner}.<locals>." if owner != MODULE_KEY else ""
    return f"{prefix}<lambda@{node.lineno}:{node.col_offset}>"


def writer_of(scope: str) -> str:
    """The function (or module) a lambda is written in, whose summary records the lambda's calls; any other
    scope itself."""
    while scope.rpartition(".")[2].startswith("<lambda@"):
        head = scope.rpartition(".")[0]
        scope = head[:-len(".<locals>")] if head.endswith(".<locals>") else head or MODULE_KEY
    return scope


def own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes a scope evaluates itself: its body's, not those of the functions and lambdas nested in it.

    A nested def's decorators and defaults are evaluated where it is defined, and a class body runs in the scope
    around it (the flow has no class scopes: `index_tree` keys a method under the class, its parent the scope
    around the class), so those are this scope's nodes; a nested def's body never is. (The body of a def written
    directly in a scope's body was read as the scope's own: a local of a nested function bound the name in the
    function around it, and hid the module's.)
    """
    pending = _evaluated_here(scope.body) if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) \
        else [scope.body] if isinstance(scope, ast.Lambda) else []
    while pending:
        node = pending.pop()
        yield node
        for child in child_nodes(node):
            if isinstance(child, ast.Lambda):
                yield child  # its own scope: seen, not entered
            else:
                pending.extend(_evaluated_here([child]))


def _evaluated_here(nodes: Iterable[ast.AST]) -> List[ast.AST]:
    """`nodes`, each nested def as what the scope around it evaluates (its defaults and decorators), each class
    as its bases, keywords, body and decorators, in their fields' order."""
    found: List[ast.AST] = []
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None),
                          *node.decorator_list])
        elif isinstance(node, ast.ClassDef):
            found.extend([*node.bases, *node.keywords, *_evaluated_here(node.body), *node.decorator_list])
        else:
            found.append(node)
    return found


def param_names(node: ast.AST) -> List[str]:
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return []
    args = node.args
    return [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]


def iterated(source: ast.expr) -> ast.expr:
    """What a loop over `source` reads the elements of: `heads` for `heads.items()` or `heads.values()`."""
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and \
            source.func.attr in ("items", "values") and not source.args:
        return source.func.value
    return source


def fixed_parameter(tree: "FileTree", scope: str, name: str) -> bool:
    """Is `name` a parameter of the function `scope` that the function never rebinds?"""
    node = tree.scopes.get(scope)
    return name in param_names(node) and not tree.scope_facts(scope).bindings.get(name)  # type: ignore[arg-type]


def dotted(node: ast.AST) -> Optional[List[str]]:
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


class TreeShelf:
    """The flow's trees by path, within a budget of source bytes: one evicted is read and indexed again when
    asked for.

    A tree read again is a new tree, so its nodes are not the ones an earlier read gave: the flow's questions
    name what they ask by path, scope, name and position, never by a node's identity, and a reader that must
    keep one tree's nodes together (`preparedflow.PreparedCalls`) keeps its trees itself.
    """

    def __init__(self, read: Callable[[str], Optional[FileTree]], budget: Optional[int] = None) -> None:
        self._read = read
        self._budget = FLOW_TREE_BYTES if budget is None else budget
        self._size = 0
        self._kept: "OrderedDict[str, FileTree]" = OrderedDict()
        self._unread: Set[str] = set()  # files that cannot be read or parsed: asked once

    def get(self, path: str) -> Optional[FileTree]:
        kept = self._kept.get(path)
        if kept is not None:
            self._kept.move_to_end(path)
            return kept
        if path in self._unread:
            return None
        tree = self._read(path)
        if tree is None:
            self._unread.add(path)
            return None
        self._kept[path] = tree
        self._size += tree.size
        while self._size > self._budget and len(self._kept) > 1:
            self._size -= self._kept.popitem(last=False)[1].size
        return tree


@dataclass(frozen=True)
class ClassAssignments:
    """What one class assigns, kept when its file's tree is let go: a hierarchy's assignments are joined for
    every attribute asked of it (`Flow.attr_assignments`), and reading thousands of model files again for
    each attribute cost more than keeping these few nodes."""

    body: Dict[str, List[ast.expr]]  # `attr = value` in the class body, by name
    methods: Dict[str, List[Tuple[str, ast.expr]]]  # (method scope, value) of `self.attr = value`, by name
    fields: Optional[List[str]]  # a `@dataclass`'s or `NamedTuple`'s fields (`flowcalls.dataclass_fields`)
    # (method scope, key, value) of `self.attr[key] = value` and `self.attr.append(value)` (key None), by name
    elements: Dict[str, List[Tuple[str, Optional[ast.expr], ast.expr]]] = field(default_factory=dict)


def class_assignments(tree: FileTree, name: str, fields: Optional[List[str]]) -> ClassAssignments:
    body: Dict[str, List[ast.expr]] = {}
    elements: Dict[str, List[Tuple[str, Optional[ast.expr], ast.expr]]] = {}
    for item in tree.classes[name].body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None:
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            for each in dict.fromkeys(t.id for t in targets if isinstance(t, ast.Name)):
                body.setdefault(each, []).append(item.value)
        scope = f"{name}.{getattr(item, 'name', '')}"
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and scope in tree.scopes:
            for owner, stored in tree.scope_facts(scope).elements.items():
                root, _, attr = owner.partition(".")
                if root == "self" and attr and "." not in attr:
                    elements.setdefault(attr, []).extend((scope, key, value) for key, value in stored)
    return ClassAssignments(body, tree.self_attrs(name), fields, elements)
