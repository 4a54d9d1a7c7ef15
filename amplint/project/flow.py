"""Values that cross calls: what a parameter, a local name or a `self.` attribute holds, joined over the project.

A summary says what a call's callee is, not what its arguments are. So the
class of a model passed to the function that opens the region (`train(model)`),
a constructor argument kept on `self` (`self.policy = policy`), a model that a
factory returns, a head picked from a dict, or a nested def handed to a helper
that calls it (`call_loss(local_loss, ...)`), was lost at the call. Here it is
found again, on demand, for the names the resolver cannot resolve, by reading
CPython's tree of the files involved:

- a parameter holds the join of the arguments given to it at every call site
  (`callsites.py`): direct calls in its file and in the files that import it,
  calls through a parameter of a function it was handed to (callbacks),
  `super().__init__(...)`, `functools.partial(f, ...)`, and the callers of a
  function that forwards `*args, **kwargs`, `cls(...)` in a classmethod, a call
  of an object (its `__call__`/`forward`) or of what `getattr` returns; a
  `**kwargs` parameter holds the keywords no named parameter takes;
- a local name holds the join of its assignments (and `for` targets) in its
  function, then in the functions around it, then at module level;
- a `self.` attribute the join of its assignments on the class's MRO and in
  its subclasses; a method's parameter stored there (a setter) holds what the
  calls on an instance of the class asked about give it, and a store from
  outside (`policy.head = h`) counts where its owner may hold one: where owner
  and value are both parameters (`def attach(model, head)`), each call site's
  pair is read together (`CallSites.given_where`);
- an expression's value: a class call is an instance; `x.to(...)`, `.cuda()`,
  `torch.compile(x)`, `DDP(x)`, `copy.deepcopy(x)` and the like are `x`; a call of a project
  function is what it returns; `d[k]`, `d.values()`, `.items()` pairs and list
  elements are the container's elements (`{...}`, `[...]`, `nn.ModuleDict`);
  `super()` is the next class on the MRO; `functools.partial(f, ...)` is `f`;
  an attribute of a `@dataclass` the argument its field took, of a
  `@property` what its getter returns;
  `getattr(obj, name)` is the attribute of each name the strings reaching
  `name` spell (`flowstrings.py`, through names, parameters, attributes and
  `getattr` itself; unknown: every method that fits), or its default, and
  `importlib.import_module("pkg.mod")` is read when its string is literal;
  `cls` in a `@classmethod` is the class it is called on;
  `a if c else b` and `a or b` join both;
  Accelerate's `Accelerator(...)` is an `Accelerated` value (rule A: its file, line and precision), so an
  accelerator handed to a parameter, returned by a factory or kept on `self` is known where it is used
  (`accelflow.py`); its `prepare(a, b)` gives, per argument, `Prepared` modules (their `forward` runs in
  its region: `preparedflow.py`), which are their modules for every other question.

Each answer is memoized as the resolver's are (`memo.Memo`: sure or for this pass) and a guard cuts cycles,
which bounds the work; `MAX_HOPS` parameter-to-caller steps bound the recursion (`callsites.MAX_HOPS`).
"""
from __future__ import annotations

import ast
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple,
)

from amplint.facts.frameworks import ACCELERATOR
from amplint.names import ImportTable, ast_qualnames, import_table
from amplint.project.accelvalues import Accelerated, Prepared, accelerated
from amplint.project.callsites import MAX_HOPS, CallSite, CallSites, call_argument  # noqa: F401 - re-exported
from amplint.project.configured import BY_STRING, INSTANCE, ConfiguredFlow, by_string
from amplint.project.flowattrs import AttributeFlow
from amplint.project.flowcalls import array_index, is_classmethod, is_partial, star_params, super_owner
from amplint.project.flowstrings import ANY, StringFlow, matches
from amplint.project.flowtrees import (
    ClassAssignments, FileTree, TreeShelf, dotted, iterated, lambda_key, param_names,
)
from amplint.project.flowvalues import (  # noqa: F401 - the values' names, as `flow` has always given them
    ELEMENT_READS, NONE as _NONE, BoundMethod, ClassValue, Container, Fanout, Function, Instance, MethodOf, Module,
    Filled, Namespace, Value, Values, any_keyed, elements, items, keyed,
    modules_of as _modules, unpacked, unprepared,
)
from amplint.project.memo import Doubts
from amplint.project.reaching import reaching_indexes
from amplint.project.storeforms import made_object
from amplint.project.summary import MODULE_KEY
from amplint.project.symbols import ClassRef, Symbol, Target, _Func, _Instance, _Module

if TYPE_CHECKING:  # pragma: no cover
    from typing import Protocol

    from amplint.project.loader import Loader

    class Resolver(Protocol):
        """What the flow asks of `resolve.Resolver` (which owns one `Flow`: neither module imports the other)."""

        doubts: Doubts
        modules: Any

        def lookup(self, path: str, parts: Sequence[str], for_call: bool = False) -> List[Symbol]: ...
        def imported_names(self, path: str, name: str) -> List[Tuple[str, str]]: ...
        def instance_call(self, cls: ClassRef, exact: bool, known: bool = False) -> List[Target]: ...
        def method(self, cls: ClassRef, name: str, exact: bool, known: bool = False) -> List[Target]: ...
        def mro(self, cls: ClassRef) -> List[ClassRef]: ...
        def subclasses(self, cls: ClassRef) -> List[ClassRef]: ...
        def configured_targets(self) -> FrozenSet[Tuple[str, str]]: ...
        def targets_of_call(self, path: str, scope: str, line: int, column: int,
                            name: Optional[str] = None) -> List[Target]: ...

# Calls that return the module they are given (or a copy of it): `model.to(device)`, `torch.compile(model)`,
# `DDP(model)`, `copy.deepcopy(model)` (a target network).
SAME_MODULE_METHODS = frozenset({"to", "cuda", "cpu", "half", "float", "double", "bfloat16", "train", "eval",
                                 "requires_grad_", "share_memory", "type"})
WRAPPING_CALLS = frozenset({"compile", "DistributedDataParallel", "DataParallel", "DDP", "FullyShardedDataParallel",
                            "FSDP", "script", "trace", "prepare_model", "checkpoint_wrapper", "deepcopy", "copy"})
CONTAINERS = frozenset({"ModuleDict", "ModuleList", "Sequential", "dict", "list", "tuple", "OrderedDict"})
KEYED_CONTAINERS = frozenset({"ModuleDict", "dict", "OrderedDict"})  # built from a dict, they keep its keys
# Objects whose attributes are the keywords they are made with: `types.SimpleNamespace(policy=p)`.
NAMESPACES = frozenset({"SimpleNamespace", "Namespace", "EasyDict", "edict", "AttrDict", "Munch", "DotMap"})
# Collections whose calls run the same method of every member: torchmetrics' `MetricCollection(metrics)`, whose
# `update(probs, y)` updates each metric; `clone(prefix=...)` copies it.
FANOUT_CALLS = frozenset({"MetricCollection"})


class Flow(CallSites, StringFlow, AttributeFlow, ConfiguredFlow):
    """Answers "what may this name hold?" over the project's trees, for the resolver."""

    def __init__(self, resolver: "Resolver", loader: "Loader") -> None:
        self.resolver = resolver
        self.loader = loader
        self._trees = TreeShelf(loader.file_tree)
        self._classes: Dict["ClassRef", Optional[ClassAssignments]] = {}  # kept when their trees are let go
        self._computed_stores: Dict["ClassRef", Tuple[Tuple[str, str, ast.expr, ast.expr], ...]] = {}
        self._answers = resolver.doubts.memo()  # (what is asked, its subject...) -> Values
        self._sites = resolver.doubts.memo()  # (path, scope) -> call sites
        self._busy: Set[Tuple[object, ...]] = set()
        self._imports: Dict[str, ImportTable] = {}
        self._sections: Optional[FrozenSet[str]] = None  # the config files' sections that build a class
        self._reads: Dict[Tuple[object, ...], Optional[Tuple[Tuple[int, ...], bool]]] = {}  # `_read`'s bindings
        self._method_targets = resolver.doubts.memo()  # MethodOf -> its targets: many calls run one such value
        self.budget = resolver.doubts.budget

    # --- trees -----------------------------------------------------------------------------------------
    def tree(self, path: str) -> Optional[FileTree]:
        return self._trees.get(path)

    def _ask(self, key: Tuple[object, ...], hops: int, compute: Callable[[], Values]) -> Values:
        """One question, memoized. Past `MAX_HOPS`, or inside its own answer (a cycle), it answers nothing, and
        unsure: a cut answer serves this pass only, and is never kept for the run. So does a question the
        walk's work bound stops (`budget`)."""
        if hops > MAX_HOPS:
            self.resolver.doubts.read_unsure()
            return _NONE
        return self._answers.get(key, lambda: self._guarded(key, compute))

    def _guarded(self, key: Tuple[object, ...], compute: Callable[[], Values]) -> Values:
        """`compute()`, or nothing (unsure) when the same question is already being answered (a cycle), or
        when answering it needs more of Python's stack than is left: `MAX_HOPS` counts parameter-to-caller
        steps only, and a chain of names, calls and attributes in real code can outgrow the stack first (a
        run on 25,000 files of real code ended in a RecursionError). The question nearest the limit answers
        nothing, unsure, and the ones around it go on."""
        if key in self._busy or self.budget.exhausted:
            self.resolver.doubts.read_unsure()
            return _NONE
        self.loader.stats.flow_questions += 1
        self._busy.add(key)
        try:
            return compute()
        except RecursionError:
            self.resolver.doubts.cut_by_stack()
            return _NONE
        finally:
            self._busy.discard(key)

    # --- names -----------------------------------------------------------------------------------------
    def name_values(self, path: str, scope: str, name: str, hops: int = 0) -> Values:
        """What `name` may hold when read in `scope` of `path`."""
        return self._ask(("name", path, scope, name), hops, lambda: self._name_values(path, scope, name, hops))

    def _read(self, path: str, scope: str, node: ast.Name, hops: int) -> Values:
        """What the name may hold where `node` reads it: of the function's bindings, those that reach it
        (`project.reaching`; a parameter too, unless a binding always runs first), worked out once per read."""
        spot = (path, scope, node.id, getattr(node, "lineno", None), getattr(node, "col_offset", None))
        if spot not in self._reads:
            tree = self.tree(path)
            self._reads[spot] = reaching_indexes(tree.scopes[scope], tree.scope_facts(scope).bindings.get(
                node.id, []), node) if tree is not None and scope in tree.scopes and scope != MODULE_KEY else None
        kept = self._reads[spot]
        if kept is None:
            return self.name_values(path, scope, node.id, hops)
        return self._ask(("read", path, scope, node.id, kept), hops,
                         lambda: self._name_values(path, scope, node.id, hops, kept))

    def _name_values(self, path: str, scope: str, name: str, hops: int,
                     kept: Optional[Tuple[Tuple[int, ...], bool]] = None) -> Values:
        tree = self.tree(path)
        if tree is None:
            return _NONE
        owner = scope.rpartition(".")[0]
        node = tree.scopes.get(scope)
        if owner in tree.classes and node is not None and param_names(node)[:1] == [name]:
            if is_classmethod(node):
                return self._receivers(path, scope, ClassRef(path, owner), hops)
            if name == "self":
                return frozenset({Instance(ClassRef(path, owner), False)})
        current: Optional[str] = scope
        while current is not None:
            node = tree.scopes.get(current)
            if node is None:
                return _NONE
            facts = tree.scope_facts(current)
            bindings = facts.bindings.get(name, [])
            if kept is not None and current == scope:  # only those that reach the read (`_read`)
                bindings = [bindings[i] for i in kept[0]]
            found = set(self._assigned(path, current, bindings, name, hops))
            if tree.element_stores(name, current):  # `heads["pi"] = head`, `layers.append(block)`
                found.add(Filled((path, current, name)))
            for writer in tree.global_writers(name) if current == MODULE_KEY else ():  # `global M; M = model`
                found.update(self._assigned(path, writer, tree.scope_facts(writer).bindings[name], name, hops))
            if current != MODULE_KEY and (name in param_names(node) or name in star_params(node)) and not (
                    kept is not None and current == scope and kept[1]):  # a binding always runs first
                found.update(self.param_values(path, current, name, hops + 1))
            nested = f"{current}.<locals>.{name}" if current != MODULE_KEY else name
            if nested in tree.scopes and tree.parents.get(nested) == current:
                found.add(Function(path, nested))
            if found or (current != MODULE_KEY and name in facts.bound):
                return frozenset(found)  # a name bound in a function is that function's, known or not
            current = tree.parents.get(current) if current != MODULE_KEY else None
        return self._module_symbol(path, [name]) or frozenset(
            v for other, bound in self.resolver.imported_names(path, name)
            for v in self.name_values(other, MODULE_KEY, bound, hops + 1))  # an imported registry or constant

    def _receivers(self, path: str, scope: str, owner: ClassRef, hops: int) -> Values:
        """`cls` in a classmethod: the class each call site calls it on (`Session.create(m)`, `obj.create(m)`);
        the class that defines it where no call site is found."""
        found: Set[Value] = set()
        for site in self.call_sites(path, scope, hops + 1):
            if isinstance(site.call.func, ast.Attribute):
                for held in self.value(site.path, site.scope, site.call.func.value, hops + 1):
                    if isinstance(held, ClassValue):
                        found.add(held)
                    elif isinstance(held, Instance):
                        found.add(ClassValue(held.cls))
        return frozenset(found) or frozenset({ClassValue(owner)})

    def _module_symbol(self, path: str, parts: List[str]) -> Values:
        found: Set[Value] = set()
        for symbol in self.resolver.lookup(path, parts):
            if isinstance(symbol, ClassRef):
                found.add(ClassValue(symbol))
            elif isinstance(symbol, (_Func, _Instance, _Module)):
                found.add(symbol)
        return frozenset(found)

    def _assigned(self, path: str, scope: str, bindings: Iterable[ast.AST], name: str, hops: int) -> Iterator[Value]:
        for inner in bindings:
            if isinstance(inner, (ast.Assign, ast.AnnAssign)) and inner.value is not None:
                targets = inner.targets if isinstance(inner, ast.Assign) else [inner.target]
                for target in targets:
                    yield from self._bound(path, scope, target, inner.value, name, hops)
            elif isinstance(inner, (ast.For, ast.AsyncFor, ast.comprehension)):
                yield from self._iterated(path, scope, inner.target, inner.iter, name, hops)
            elif isinstance(inner, ast.withitem) and inner.optional_vars is not None:
                if isinstance(inner.optional_vars, ast.Name) and inner.optional_vars.id == name:
                    yield from self.value(path, scope, inner.context_expr, hops)
            elif isinstance(inner, ast.NamedExpr) and inner.target.id == name:
                yield from self.value(path, scope, inner.value, hops)

    def _bound(self, path: str, scope: str, target: ast.AST, value: ast.expr, name: str,
               hops: int) -> Iterator[Value]:
        if isinstance(target, ast.Name):
            if target.id == name:
                yield from self.value(path, scope, value, hops)
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for sub_target, sub_value in zip(target.elts, value.elts):
                    yield from self._bound(path, scope, sub_target, sub_value, name, hops)
            elif isinstance(value, ast.Call) and len(value.args) == len(target.elts) and \
                    (prepared := self.prepared(path, scope, value, hops)) is not None:  # `m, opt = acc.prepare(m, opt)`
                yield from (v for t, held in zip(target.elts, prepared) if isinstance(t, ast.Name) and t.id == name
                            for v in held)
            elif any(isinstance(t, ast.Name) and t.id == name for t in target.elts):  # `a, b = models`, `load()`
                at = next(i for i, t in enumerate(target.elts) if isinstance(t, ast.Name) and t.id == name)
                placed, rest = unpacked(self.expand(self.value(path, scope, value, hops), hops), at, target.elts)
                yield from placed | self.elements_of(rest, hops)

    def _iterated(self, path: str, scope: str, target: ast.AST, source: ast.expr, name: str,
                  hops: int) -> Iterator[Value]:
        """`for name in xs`, `for k, name in d.items()`, `for i, name in enumerate(xs)`: the elements."""
        names = [target] if isinstance(target, ast.Name) else list(getattr(target, "elts", []))
        if not any(isinstance(t, ast.Name) and t.id == name for t in names):
            return
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Name) and source.func.id == "enumerate" \
                and source.args:
            source = source.args[0]
        yield from self.elements_of(self.value(path, scope, iterated(source), hops), hops)

    # --- expressions -----------------------------------------------------------------------------------
    def value(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> Values:
        """What an expression read in `scope` of `path` may evaluate to (empty: not known)."""
        if isinstance(node, ast.Name):
            return self._read(path, scope, node, hops)
        if isinstance(node, ast.Call):
            return self._call_value(path, scope, node, hops)
        if isinstance(node, ast.Attribute):
            return self._attribute_value(path, scope, node, hops)
        if isinstance(node, ast.Subscript):
            if array_index(node.slice):
                return _NONE  # `logits[:, -1, :]`: an array's elements, never a module or a distribution
            return self._item(path, scope, self.value(path, scope, node.value, hops), node.slice, hops)
        if isinstance(node, ast.Dict):  # `{**more}`: its elements, and no keys
            return frozenset({keyed((
                key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None,
                self.value(path, scope, item, hops) if key is not None else
                self.elements_of(self.value(path, scope, item, hops), hops),
            ) for key, item in zip(node.keys, node.values))})
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            held = [self.value(path, scope, item, hops) for item in node.elts]
            placed = not isinstance(node, ast.Set) and not any(isinstance(item, ast.Starred) for item in node.elts)
            return frozenset({Container(frozenset().union(*held), None, tuple(held) if placed else None)})
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):  # by element
            element = node.value if isinstance(node, ast.DictComp) else node.elt
            if not made_object(self.tree(path), scope, element):  # `{k.lower(): v for k, v in classes.items()}`
                return _NONE
            return frozenset({Container(self.value(path, scope, element, hops))})
        if isinstance(node, ast.Starred):  # `*blocks`, what `layers.extend(blocks)` stores: its elements
            return self.elements_of(self.value(path, scope, node.value, hops), hops)
        if isinstance(node, ast.IfExp):
            return self.value(path, scope, node.body, hops) | self.value(path, scope, node.orelse, hops)
        if isinstance(node, ast.BoolOp):
            return frozenset(v for item in node.values for v in self.value(path, scope, item, hops))
        if isinstance(node, ast.NamedExpr):
            return self.value(path, scope, node.value, hops)
        if isinstance(node, ast.Lambda):
            return frozenset({Function(path, lambda_key(scope, node))})
        return _NONE

    def _attribute_value(self, path: str, scope: str, node: ast.Attribute, hops: int) -> Values:
        found: Set[Value] = set()
        for owner in unprepared(self.value(path, scope, node.value, hops)):
            if isinstance(owner, Instance):
                held = self.attr_values(owner.cls, node.attr, hops)
                found.update(held or ({BoundMethod(owner, node.attr)} if self._has_method(owner.cls, node.attr)
                                      else ()))
            elif isinstance(owner, Module):
                found.update(self._module_symbol(owner.path, [node.attr]))
            elif isinstance(owner, Namespace):
                found.update(owner.read(node.attr))
            elif isinstance(owner, ClassValue):  # a class attribute, or a method called on the class
                found.update(self._module_symbol(owner.cls.path, [*owner.cls.name.split("."), node.attr]) or (
                    {BoundMethod(Instance(owner.cls, True), node.attr)} if self._has_method(owner.cls, node.attr)
                    else ()))
        return frozenset(found)

    def _has_method(self, cls: "ClassRef", name: str) -> bool:
        """Does `cls` or a class on its MRO define a method `name` (read, not called, it is a bound method)?"""
        return self._first_defining(cls, name) is not None

    def _first_defining(self, cls: "ClassRef", name: str) -> Optional["ClassRef"]:
        """The class on `cls`'s MRO whose body defines the method `name` (None: none of the project's)."""
        return next((ref for ref in self.resolver.mro(cls) if name in self._defs(ref)), None)

    def _defs(self, ref: "ClassRef") -> List[str]:
        """The methods the body of the project class `ref` defines, in order ([] when its tree is not read)."""
        tree = self.tree(ref.path)
        node = tree.classes.get(ref.name) if tree is not None else None
        return [item.name for item in getattr(node, "body", ())
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]

    def _super(self, path: str, scope: str, node: ast.Call) -> Values:
        """`super()` in a method of `C`: each class after `C` on its MRO that an earlier one does not lead to
        (the next class, and the other bases of a class with several), exactly: no subclass override runs."""
        tree = self.tree(path)
        owner = super_owner(tree, scope, node) if tree is not None else None
        if owner is None:
            return _NONE
        offered: List[ClassRef] = []
        for ref in self.resolver.mro(ClassRef(path, owner))[1:]:
            if not any(ref in self.resolver.mro(earlier) for earlier in offered):
                offered.append(ref)
        return frozenset(Instance(ref, True) for ref in offered)

    def _call_value(self, path: str, scope: str, node: ast.Call, hops: int) -> Values:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "super":
            return self._super(path, scope, node)
        if name == "partial" and node.args and is_partial(func, self._import_table(path)):
            return self.value(path, scope, node.args[0], hops)  # calling it runs its function
        if isinstance(func, ast.Attribute) and name in SAME_MODULE_METHODS:
            return _modules(self.value(path, scope, func.value, hops))
        if isinstance(func, ast.Attribute) and name == "clone":  # `metrics.clone(prefix="val/")`: the same members
            return frozenset(v for v in self.value(path, scope, func.value, hops) if isinstance(v, Fanout))
        if name in FANOUT_CALLS and node.args:  # `MetricCollection({"nll": NLL(), ...})`, `MetricCollection([a, b])`
            given = self.expand(frozenset(v for arg in node.args for v in self.value(path, scope, arg, hops)), hops)
            members = self.elements_of(given, hops) | frozenset(v for v in given if isinstance(v, Instance))
            return frozenset({Fanout(members)})
        if name in WRAPPING_CALLS and node.args:
            return _modules(self.value(path, scope, node.args[0], hops))
        prepared = self.prepared(path, scope, node, hops) if name == "prepare" else None
        if prepared is not None:  # `accelerator.prepare(model)`; of several, a tuple (`_bound` unpacks it)
            return prepared[0] if len(prepared) == 1 else frozenset({Container(frozenset().union(*prepared))})
        if isinstance(func, ast.Attribute) and name in ELEMENT_READS:  # `bundle.get("policy")`, `xs.pop()`
            held = self.value(path, scope, func.value, hops)
            held = self._item(path, scope, held, node.args[0], hops) if node.args else self.elements_of(held, hops)
            if held:
                return held | frozenset(v for default in node.args[1:2] for v in self.value(path, scope, default, hops))
        if name in NAMESPACES and not node.args:  # `SimpleNamespace(policy=p, **more)`
            named = tuple(sorted((k.arg, self.value(path, scope, k.value, hops)) for k in node.keywords if k.arg))
            more = [self.elements_of(self.value(path, scope, k.value, hops), hops) for k in node.keywords if not k.arg]
            return frozenset({Namespace(named, frozenset().union(*more))})
        if name in CONTAINERS:
            if name == "dict" and not node.args and node.keywords:  # `dict(policy=p, critic=c)`
                return self.value(path, scope, ast.Dict(keys=[None if k.arg is None else ast.Constant(k.arg)
                                                              for k in node.keywords],
                                                        values=[k.value for k in node.keywords]), hops)
            if not node.args:
                return _NONE
            inner = self.expand(self.value(path, scope, node.args[0], hops), hops)
            dicts = [v for v in inner if isinstance(v, Container) and v.keyed is not None]
            if name in KEYED_CONTAINERS and len(dicts) == len(inner) == 1:  # `nn.ModuleDict({...})`: its keys too
                return frozenset(dicts)
            return frozenset({Container(elements(inner) | frozenset(v for v in inner if not isinstance(v, Container)))})
        built = by_string(node, self._import_table(path)) if name in BY_STRING else None
        if built is not None:  # a class a string from configuration names (`project.configured`)
            return self.configured(path, scope, node, built == INSTANCE, hops)
        if name == "getattr" and len(node.args) >= 2:  # `getattr(obj, name, default)`: the default too
            return self._getattr(path, scope, node.args[0], node.args[1], hops).union(
                *(self.value(path, scope, default, hops) for default in node.args[2:3]))
        if name == "import_module" and node.args and isinstance(node.args[0], ast.Constant) and \
                isinstance(node.args[0].value, str):
            return frozenset(v for v in self._module_symbol(path, node.args[0].value.split("."))
                             if isinstance(v, Module)) or self._absolute_module(path, node.args[0].value)
        if self._builds_accelerator(path, func, name):
            return frozenset({accelerated(path, node)})
        found: Set[Value] = set()
        targets: Dict[Tuple[str, str], None] = {}  # each function once: 539 receivers may run one method
        for callee in self.value(path, scope, func, hops):
            if isinstance(callee, ClassValue):
                found.add(Instance(callee.cls, True))
            else:
                targets.update(dict.fromkeys(self.runs(callee) or ()))
        found.update(*(self.returns(at, key, hops + 1) for at, key in targets))
        return self.in_section(path, scope, node, frozenset(found)) if targets and node.args else frozenset(found)

    def expand(self, values: Values, hops: int = 0) -> Values:
        """`values` with each `Filled` container made: what its element stores hold."""
        if not any(isinstance(v, Filled) for v in values):
            return values
        return frozenset().union(*(self._ask(("filled", v.owner), hops, lambda v=v: self._fill(v, hops))
                                   if isinstance(v, Filled) else frozenset({v}) for v in values))

    def _fill(self, value: Filled, hops: int) -> Values:
        if len(value.owner) == 3:  # a name: (path, binding scope, name)
            path, binder, name = value.owner
            tree = self.tree(path)  # type: ignore[arg-type]
            stores = [(path, *store) for store in tree.element_stores(name, binder)] if tree is not None else []
        else:  # a `self.` attribute: (class, attribute)
            stores = self.element_stores_on(*value.owner)  # type: ignore[arg-type]
        kept = [store for store in stores if made_object(self.tree(store[0]), store[1], store[3])]
        return frozenset({self.filled(kept, hops)}) if kept else _NONE

    def elements_of(self, values: Values, hops: int = 0) -> Values:
        """The elements of the containers among `values`, filled ones made (and the elements' own too: a list of
        lists read by element)."""
        return self.expand(elements(self.expand(values, hops)), hops)

    def filled(self, stores: Sequence[Tuple[str, str, Optional[ast.expr], ast.expr]], hops: int) -> Container:
        """The container that element stores (path, scope, key, value) fill: by key where every key is a string
        the flow knows (a literal, or a name holding known strings: stored under each), otherwise by element. A
        decorator factory's store is read per decoration (`factory_pairs`)."""
        pairs: List[Tuple[Optional[str], Values]] = []
        for path, scope, key, value in stores:
            given = self.factory_pairs(path, scope, key, value, hops) if key is not None else None
            for spelled, held in given if given is not None else [(
                    self._spelled(path, scope, key, hops) if key is not None else None,
                    self.value(path, scope, value, hops))]:
                pairs.extend([(each, held) for each in sorted(spelled)] if spelled else [(None, held)])
        return keyed(pairs)

    def _item(self, path: str, scope: str, held: Values, key: ast.expr, hops: int) -> Values:
        """`held[key]`: by key where a container is keyed and the strings `key` may be are all known
        (`heads["policy"]`, `REGISTRY[name]` with `name = "gaussian"`), otherwise any element."""
        held = self.expand(held, hops)
        return items(held, self._spelled(path, scope, key, hops)) if any_keyed(held) else elements(held)

    def _spelled(self, path: str, scope: str, key: ast.expr, hops: int) -> Optional[FrozenSet[str]]:
        """The strings a key may be, where every one is known (None: not known, or no string)."""
        patterns = self.strings(path, scope, key, hops)
        return patterns if patterns and not any(p.endswith(ANY) for p in patterns) else None

    def _getattr(self, path: str, scope: str, owner: ast.expr, name: ast.expr, hops: int) -> Values:
        """`getattr(owner, name)`: the attribute of each name `name` may hold; where only a prefix (or nothing)
        of it is known, every method and attribute of the owner's classes whose name fits (`flowstrings`)."""
        patterns = self.strings(path, scope, name, hops)
        found: Set[Value] = set()
        for attr in sorted(p for p in patterns if not p.endswith(ANY)):
            read = ast.Attribute(value=owner, attr=attr, ctx=ast.Load())
            found.update(self._attribute_value(path, scope, read, hops))
        wild = tuple(sorted(p for p in patterns if p.endswith(ANY)))
        for held in unprepared(self.value(path, scope, owner, hops)) if wild else ():
            if isinstance(held, Instance):
                found.add(MethodOf(held, wild))
                found.update(self.fitting(held.cls, frozenset(wild), hops))
        return frozenset(found)

    def method_targets(self, value: "BoundMethod | MethodOf") -> "List[Target]":
        """The methods a call of `value` may run: a bound method's, or each of its owner's whose name fits (no
        dunder), in order."""
        owner = value.owner
        if isinstance(value, BoundMethod):
            return self.resolver.method(owner.cls, value.name, owner.exact, True)
        return self._method_targets.get(value, lambda: self._expand(value))  # type: ignore[arg-type]

    def _expand(self, value: MethodOf) -> "List[Target]":
        found: Dict[Target, None] = {}
        patterns = frozenset(value.patterns)
        for method in self._method_names(value.owner):
            if matches(patterns, method) and not method.startswith("__"):
                found.update(dict.fromkeys(self.resolver.method(value.owner.cls, method, value.owner.exact, True)))
        return list(found)

    def _method_names(self, instance: Instance) -> List[str]:
        """The methods an instance may have: its class's MRO, and for an inexact one its subclasses' too."""
        classes = self.resolver.mro(instance.cls) if instance.exact else \
            [ref for ref, _, _ in self.instance_classes(instance.cls)]
        return list(dict.fromkeys(name for ref in classes for name in self._defs(ref)))

    def prepared(self, path: str, scope: str, node: ast.Call, hops: int = 0) -> Optional[List[Values]]:
        """`accelerator.prepare(a, b, ...)` where the receiver may hold an `Accelerator(...)`: per argument, the
        modules it may hold, prepared by each such accelerator (a module it does not hold, nothing); None when
        the call is no accelerator's `prepare`."""
        if not (isinstance(node.func, ast.Attribute) and node.args) or any(
                isinstance(a, ast.Starred) for a in node.args):
            return None
        accelerators = [v for v in self.value(path, scope, node.func.value, hops) if isinstance(v, Accelerated)]
        if not accelerators:
            return None
        return [frozenset(Prepared(module, accelerator) for module in unprepared(self.value(path, scope, arg, hops))
                          if isinstance(module, Instance) for accelerator in accelerators) for arg in node.args]

    def _builds_accelerator(self, path: str, func: ast.expr, name: str) -> bool:
        """`Accelerator(...)` as the file's imports resolve it, under any name (`from accelerate import Accelerator as
        Acc`); the last part is checked first, as most calls are of something else."""
        if name != "Accelerator" and not (isinstance(func, ast.Name) and name in self._import_table(path).bindings):
            return False
        return bool(ast_qualnames(func, self._import_table(path)) & ACCELERATOR)

    def _import_table(self, path: str) -> ImportTable:
        if path not in self._imports:
            tree = self.tree(path)
            self._imports[path] = import_table(tree.tree) if tree is not None else ImportTable()
        return self._imports[path]

    def runs(self, callee: Value) -> Optional[List[Tuple[str, str]]]:
        """(path, key) of each function a call of `callee` runs: itself, a module's `forward` (or `__call__`),
        a bound method; None for a callee that is no function's (a class, a module, a container)."""
        if isinstance(callee, Function):
            return [(callee.path, callee.key)]
        callee = callee.module if isinstance(callee, Prepared) else callee
        if isinstance(callee, Instance):
            targets = self.resolver.instance_call(callee.cls, callee.exact, True)
        elif isinstance(callee, (BoundMethod, MethodOf)):
            targets = self.method_targets(callee)
        else:
            return None
        return [(t.path, t.key) for t in targets]

    def _absolute_module(self, path: str, dotted_name: str) -> Values:
        return frozenset(Module(p) for p, rest in self.resolver.modules.locate(path, dotted_name, None) if not rest)

    def returns(self, path: str, scope: str, hops: int = 0) -> Values:
        """What a project function returns (a factory's instance, a helper's container)."""
        return self._ask(("returns", path, scope), hops, lambda: self._returns_of(path, scope, hops))

    def _returns_of(self, path: str, scope: str, hops: int) -> Values:
        tree = self.tree(path)
        node = tree.scopes.get(scope) if tree is not None else None
        if node is None:
            return _NONE
        return frozenset(v for returned in tree.scope_facts(scope).returns  # type: ignore[union-attr]
                         for v in self.value(path, scope, returned, hops))

    def call_values(self, path: str, scope: str, line: int, column: int,
                    method: Optional[str] = None) -> Tuple[Values, List[str]]:
        """A call no dotted name spells (`Scorer().evaluate(x)`, `heads["pi"](x)`, `make()(x)`), at (line, column)
        of `scope`: what the callee's owner may hold and the method called on it, or the callee's values and [].
        `method`: the method called, which tells apart calls that start at one place (`D(m).log_p(y).mean()`)."""
        tree = self.tree(path)
        if tree is None or scope not in tree.scopes:
            return _NONE, []
        # The summary counts a lambda's calls as its writer's: they are read in the lambda, where its parameters are.
        calls = [(c, key) for key in [scope, *tree.lambdas_in(scope)] for c in tree.scope_facts(key).calls
                 if c.lineno == line and dotted(c.func) is None and (
                     method is None or (isinstance(c.func, ast.Attribute) and c.func.attr == method))]
        call, scope = next((found for found in calls if found[0].col_offset + 1 == column),
                           calls[0] if len(calls) == 1 else (None, scope))
        if call is None:
            return _NONE, []
        try:
            if isinstance(call.func, ast.Attribute):
                return self.value(path, scope, call.func.value), [call.func.attr]
            return self.value(path, scope, call.func), []
        except RecursionError:  # an expression nested past Python's stack: not followed
            self.resolver.doubts.cut_by_stack()
            return _NONE, []
