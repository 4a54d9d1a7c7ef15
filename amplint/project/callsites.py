"""Where a function is called: the join over call sites that gives a parameter its values (`flow.Flow`).

A call site is a direct call (in the function's file or one that imports it, a subclass's file included),
a constructor call of a class whose `__init__` it is, `super().__init__(...)` in a subclass, a call through
the parameter a function was handed to, `functools.partial(f, ...)`, a call of an element of a dict, list or
tuple the function is stored in (`OBJECTIVES[name](...)`), `cls(...)` in a classmethod (a constructor call), a
call of an instance (its `__call__` or `forward`), a call of what `getattr` picks by a computed name, a
decorator applied to a class or function (`@register("normal") class Policy` calls what `register("normal")`
gives with `Policy`), and, through a function that forwards `*args, **kwargs`, that function's own call
sites (`flowcalls`).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from amplint.project.flowcalls import (
    binds_first_parameter, bound_call, fits, forwards, is_classmethod, is_partial, is_super, star_arguments,
    star_params, tensor_annotated,
)
from amplint.project.flowtrees import FileTree, fixed_parameter, param_names
from amplint.project.flowvalues import (
    ELEMENT_READS, BoundMethod, ClassValue, Container, Function, Instance, MethodOf, Value, Values, unprepared,
)
from amplint.project.flowvalues import NONE as _NONE
from amplint.project.summary import MODULE_KEY
from amplint.project.symbols import ClassRef

if TYPE_CHECKING:  # pragma: no cover
    from amplint.names import ImportTable

# Parameter -> call site -> parameter ... steps followed from one question. Not what bounds the work (each
# question is answered once, and a cycle answers nothing): the answers recurse, about 20 frames a step, and
# past this the stack would run out (a 120-step chain did). A cut answer is unsure: it serves its pass only.
# At 6 it cut generated projects' real chains (a class passed to a factory, the instance handed through a
# callback, a holder and a property: 7 steps), and their models' classes were lost.
MAX_HOPS = 32
INSTANCE_CALLS = frozenset({"__call__", "forward"})  # what calling an instance runs


class CallSites:
    """The call-site half of `flow.Flow` (which defines `tree`, `value`, `_ask` and the memo this reads)."""

    if TYPE_CHECKING:  # pragma: no cover - provided by `flow.Flow`
        from typing import Any, Callable

        resolver: Any
        loader: Any
        budget: Any
        _sites: Any

        def tree(self, path: str) -> Optional[FileTree]: ...
        def value(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> Values: ...
        def _ask(self, key: Tuple[object, ...], hops: int, compute: "Callable[[], Values]") -> Values: ...
        def _import_table(self, path: str) -> "ImportTable": ...
        def _first_defining(self, cls: ClassRef, name: str) -> Optional[ClassRef]: ...
        def runs(self, callee: Value) -> Optional[List[Tuple[str, str]]]: ...
        def _instance_refs(self, cls: ClassRef) -> List[ClassRef]: ...
        def _spelled(self, path: str, scope: str, key: ast.expr, hops: int) -> Optional[FrozenSet[str]]: ...

    def param_values(self, path: str, scope: str, name: str, hops: int = 0) -> Values:
        return self._ask(("param", path, scope, name), hops, lambda: self._param_values(path, scope, name, hops))

    def _param_values(self, path: str, scope: str, name: str, hops: int) -> Values:
        tree = self.tree(path)
        node = tree.scopes.get(scope) if tree is not None else None
        if node is None or tensor_annotated(node, name):  # `x: torch.Tensor` holds no value the flow follows
            return _NONE
        params = param_names(node)
        method = self._is_method(tree, scope)
        star = name not in params and name in star_params(node)
        found: Set[Value] = set()
        for site in self.call_sites(path, scope, hops):
            offset = 1 if method and site.bound else 0
            arguments = star_arguments(site.call, node, params, name, offset) if star else \
                [a for a in [call_argument(site.call, params, name, offset)] if a is not None]
            for argument in arguments:
                found.update(self.value(site.path, site.scope, argument, hops))
        return frozenset({Container(frozenset(found))}) if star else frozenset(found)

    # --- one parameter read where another holds an instance of given classes ----------------------------
    def given_where(self, path: str, scope: str, owner: Optional[ast.expr], value: ast.expr,
                    kinds: FrozenSet[ClassRef], hops: int, strict: bool) -> Values:
        """What `value`, read in `scope` of `path`, holds where `owner` may hold an instance of one of `kinds`
        (`owner.head = value`, `owner.set_head(value)`). Where both are parameters of the function, never
        rebound (`def attach(model, head)`, a setter's `self` and its argument), the join over its call sites
        whose owner may hold one, of their value, read the same way there: each caller's pair is kept together
        through any chain of helpers. Otherwise `value`'s values where `owner` may hold one; an owner that
        holds no instance the flow knows (or is not given) may with `strict` False (a method found by its name,
        on any receiver), never with `strict` True (any store of the attribute on anything)."""
        pair = self._parameter_pair(path, scope, owner, value)
        if pair is not None:
            return self._ask(("given where", path, scope, *pair, kinds, strict), hops,
                             lambda: self._given_by_callers(path, scope, pair, kinds, hops + 1, strict))
        got = self.value(path, scope, value, hops)
        return got if got and self.may_hold(path, scope, owner, kinds, hops, strict) else _NONE

    def factory_pairs(self, path: str, scope: str, key: ast.expr, value: ast.expr,
                      hops: int) -> Optional[List[Tuple[Optional[FrozenSet[str]], Values]]]:
        """`TABLE[name] = cls` in the function a decorator factory returns (`def register(name): def deco(cls):`):
        per call of it, the strings its factory's call gives `name` (None: not all known) with what the call
        gives `cls`, so that `@register("normal") class Policy` stores `Policy` under "normal" alone. None where
        the key is not a parameter of the enclosing function or the value not one of this function (or either
        is rebound): the store is read as it is."""
        tree = self.tree(path)
        outer = tree.parents.get(scope) if tree is not None and isinstance(key, ast.Name) and \
            isinstance(value, ast.Name) else None
        inner_node, outer_node = (tree.scopes.get(scope), tree.scopes.get(outer)) if outer else (None, None)
        if not isinstance(inner_node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not isinstance(outer_node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return None
        inner, factory = param_names(inner_node), param_names(outer_node)
        if not fixed_parameter(tree, scope, value.id) or key.id in tree.scope_facts(scope).bound or \
                not fixed_parameter(tree, outer, key.id):  # type: ignore[arg-type, attr-defined]
            return None
        pairs: List[Tuple[Optional[FrozenSet[str]], Values]] = []
        for site in self.call_sites(path, scope, hops):
            argument = call_argument(site.call, inner, value.id, 0)  # type: ignore[attr-defined]
            made = site.call.func  # `register("normal")`, the decorator that called it
            given = call_argument(made, factory, key.id, 0) if isinstance(made, ast.Call) else None  # type: ignore
            if argument is not None:
                pairs.append((self._spelled(site.path, site.scope, given, hops) if given is not None else None,
                              self.value(site.path, site.scope, argument, hops)))
        return pairs

    def may_hold(self, path: str, scope: str, owner: Optional[ast.expr], kinds: FrozenSet[ClassRef], hops: int,
                 strict: bool) -> bool:
        """May `owner`, read in `scope`, hold an instance (or be a class) of one of `kinds`?"""
        held = [v.cls for v in unprepared(self.value(path, scope, owner, hops))
                if isinstance(v, (Instance, ClassValue))] if owner is not None else []
        return any(cls in kinds for cls in held) or (not held and not strict)

    def _parameter_pair(self, path: str, scope: str, owner: Optional[ast.expr],
                        value: ast.expr) -> Optional[Tuple[str, str]]:
        """(owner, value) when both are distinct parameters of the function `scope`, never rebound in it."""
        if not (isinstance(owner, ast.Name) and isinstance(value, ast.Name)) or owner.id == value.id or \
                scope == MODULE_KEY:
            return None
        tree = self.tree(path)
        node = tree.scopes.get(scope) if tree is not None else None
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or tensor_annotated(node, value.id):
            return None
        if not (fixed_parameter(tree, scope, owner.id) and fixed_parameter(tree, scope, value.id)):  # type: ignore
            return None
        return owner.id, value.id

    def _given_by_callers(self, path: str, scope: str, pair: Tuple[str, str], kinds: FrozenSet[ClassRef], hops: int,
                          strict: bool) -> Values:
        tree = self.tree(path)
        node = tree.scopes[scope]  # type: ignore[union-attr]
        params = param_names(node)
        method = self._is_method(tree, scope)  # type: ignore[arg-type]
        found: Set[Value] = set()
        for site in self.call_sites(path, scope, hops):
            offset = 1 if method and site.bound else 0
            value = call_argument(site.call, params, pair[1], offset)
            if value is None:
                continue
            owner = self._receiver(site, scope, params) if method and pair[0] == params[0] else \
                call_argument(site.call, params, pair[0], offset)
            found.update(self.given_where(site.path, site.scope, owner, value, kinds, hops, strict))
        return frozenset(found)

    def _receiver(self, site: "CallSite", scope: str, params: List[str]) -> Optional[ast.expr]:
        """What a method's first parameter is at `site`: the receiver of `obj.m(...)` (the caller's own first
        parameter for `super().m(...)`), the instance `Cls(...)` constructs, the object called for
        `obj(...)`, or the first argument of `Base.m(obj, ...)`."""
        func = site.call.func
        if not site.bound:
            return call_argument(site.call, params, params[0], 0)
        if isinstance(func, ast.Attribute):
            if not is_super(func.value):
                return func.value
            tree = self.tree(site.path)
            node = tree.scopes.get(site.scope) if tree is not None else None
            first = param_names(node)[:1] if node is not None else []
            return ast.Name(id=first[0], ctx=ast.Load()) if first else None
        return site.call if scope.rpartition(".")[2] == "__init__" else func

    @staticmethod
    def _is_method(tree: FileTree, scope: str) -> bool:
        return binds_first_parameter(tree, scope)

    def call_sites(self, path: str, scope: str, hops: int = 0) -> Tuple["CallSite", ...]:
        key = ("sites", path, scope)
        if hops > MAX_HOPS:
            self.resolver.doubts.read_unsure()
            return ()

        def compute() -> Tuple["CallSite", ...]:
            if self.budget.exhausted:
                self.resolver.doubts.read_unsure()
                return ()
            self._sites.guard(key, ())  # a forwarder that reaches itself
            return tuple(self._forwarded(self._call_sites(path, scope, hops), hops))
        return self._sites.get(key, compute)

    def _forwarded(self, sites: Iterable["CallSite"], hops: int) -> Iterator["CallSite"]:
        """Each call site, or where it forwards `*args, **kwargs` from (`flowcalls.forwards`), its function's."""
        for site in sites:
            tree = self.tree(site.path)
            node = tree.scopes.get(site.scope) if tree is not None and site.scope != MODULE_KEY else None
            if node is not None and forwards(site.call, node):
                yield from (CallSite(o.path, o.scope, o.call, site.bound)
                            for o in self.call_sites(site.path, site.scope, hops + 1))
            else:
                yield site

    def _call_sites(self, path: str, scope: str, hops: int) -> Iterator["CallSite"]:
        tree = self.tree(path)
        if tree is None:
            return
        owner, _, short = scope.rpartition(".")
        constructor = short == "__init__" and owner in tree.classes
        # A method is inherited: its callers import a subclass's file as often as its own, and a constructor
        # runs for a subclass's instances too.
        heirs = self.resolver.subclasses(ClassRef(path, owner)) if owner in tree.classes else []
        wanted = {short}
        if constructor:  # the classes whose construction runs this `__init__` (a data class's generated one: no
            # class defines it); a subclass with an `__init__` of its own reaches it only through
            # `super().__init__(...)`, looked for in the subclass's file
            init = self._first_defining(ClassRef(path, owner), short)
            wanted = {c.name.rsplit(".", 1)[-1] for c in [ClassRef(path, owner), *heirs]
                      if self._first_defining(c, short) == init}
        heir_files = {c.path for c in heirs} if constructor else set()
        if constructor:
            yield from self._class_constructions(path, scope, ClassRef(path, owner), heirs, hops)
        if owner not in tree.classes:
            yield from self._decorations(path, scope, hops)
        if "<locals>" in scope:
            files = [path]
        else:
            homes = dict.fromkeys([path, *(c.path for c in heirs)])
            files = list(dict.fromkeys([*homes, *(p for home in homes for p in self.loader.importers(home))]))
        for caller in files:
            self.budget.charge()
            if owner in tree.classes and not constructor and self.loader.calls_getattr(caller):
                yield from self._getattr_calls(caller, path, scope, hops)
            if owner in tree.classes and short in INSTANCE_CALLS:
                yield from self._instance_calls(caller, path, scope, hops)
            names = wanted | {short} if caller in heir_files else wanted
            if not any(self.loader.mentions(caller, w) for w in names) and not self.loader.mentions(caller, short) \
                    and not short.startswith("<lambda@"):
                continue  # its text never names the function: no call of it, no hand-off of it
            caller_tree = self.tree(caller)
            if caller_tree is None:
                continue
            for caller_scope, call in [found for w in sorted(names) for found in caller_tree.calls_named(w)]:
                if self._calls(caller, caller_scope, call, path, scope, constructor, hops):
                    explicit = constructor and isinstance(call.func, ast.Attribute) and \
                        call.func.attr == "__init__" and not is_super(call.func.value)  # `Base.__init__(self, m)`
                    yield CallSite(caller, caller_scope, call, not explicit and (
                        constructor or isinstance(call.func, ast.Attribute)))
            for caller_scope, call in self._stored_calls(caller_tree, short):  # `OBJECTIVES[name](model, x)`
                if Function(path, scope) in self.value(caller, caller_scope, call.func, hops + 1):
                    yield CallSite(caller, caller_scope, call, False)
            for caller_scope, call in caller_tree.calls_given(short):
                if call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == short and \
                        is_partial(call.func, self._import_table(caller)):  # `partial(f, model)` binds f's arguments
                    if Function(path, scope) in self.value(caller, caller_scope, call.args[0], hops + 1):
                        yield CallSite(caller, caller_scope, bound_call(call), False)
                    continue
                yield from self._through_parameter(caller, caller_scope, call, path, scope, short, hops)

    def _decorations(self, path: str, scope: str, hops: int) -> Iterator["CallSite"]:
        """A decorator that is, or gives, this function, applied to a class or function: a call of it with what
        it decorates (`@register("normal") class Policy` calls `register.<locals>.deco(Policy)`); and for a
        function its factory returns, a call of the factory's result (`register("normal")(Policy)`). Looked for
        in the files that name the function's outermost def or its factory."""
        outermost, nested = scope.split(".", 1)[0], "<locals>" in scope
        factory = scope.rpartition(".<locals>.")[0].rpartition(".")[2] if nested else outermost
        for caller in dict.fromkeys([path, *self.loader.importers(path)]):
            if nested:  # the files a top-level function's call sites are looked for in are charged there
                self.budget.charge()
            named = self.loader.mentions(caller, outermost) or self.loader.mentions(caller, factory)
            caller_tree = self.tree(caller) if named else None
            for at, decorator, name in caller_tree.decorated if caller_tree is not None else ():
                if (_names(decorator, outermost) or _names(decorator, factory)) and \
                        Function(path, scope) in self.value(caller, at, decorator, hops + 1):
                    call = ast.copy_location(ast.Call(func=decorator, args=[ast.Name(id=name, ctx=ast.Load())],
                                                      keywords=[]), decorator)
                    yield CallSite(caller, at, call, False)
            for at, call in caller_tree.calls_named(f"{factory}()") if caller_tree is not None and nested else ():
                if Function(path, scope) in self.value(caller, at, call.func, hops + 1):
                    yield CallSite(caller, at, call, False)

    def _class_constructions(self, path: str, scope: str, owner: ClassRef, heirs: List[ClassRef],
                             hops: int) -> Iterator["CallSite"]:
        """`cls(...)` in a classmethod of the class, a base or a subclass: it constructs the class the classmethod
        is called on (`Session.create(m)` runs `Session.__init__` with `m`)."""
        for ref in dict.fromkeys([*self.resolver.mro(owner), *heirs]):
            tree = self.tree(ref.path)
            node = tree.classes.get(ref.name) if tree is not None else None
            for item in getattr(node, "body", ()):
                first = param_names(item)[:1] if is_classmethod(item) else []
                key = f"{ref.name}.{getattr(item, 'name', '')}"
                for call in tree.scope_facts(key).calls if first and key in tree.scopes else ():  # type: ignore
                    if isinstance(call.func, ast.Name) and call.func.id == first[0] and \
                            self._calls(ref.path, key, call, path, scope, True, hops):
                        yield CallSite(ref.path, key, call, True)

    def _instance_calls(self, caller: str, path: str, scope: str, hops: int) -> Iterator["CallSite"]:
        """Calls of an instance that run this `__call__` or `forward` (`loss_fn(model, x)`, `Loss()(model, x)`)."""
        caller_tree, node = self.tree(caller), self.tree(path).scopes.get(scope)  # type: ignore[union-attr]
        calls = [found for found in caller_tree.value_calls() if fits(found[1], node, 1)] if caller_tree else []
        yield from self._calls_running(caller, calls, path, scope, hops, lambda v: not isinstance(
            v, (Function, BoundMethod, MethodOf)))

    def _getattr_calls(self, caller: str, path: str, scope: str, hops: int) -> Iterator["CallSite"]:
        """Calls of a method `getattr` picks by a name no call spells (`getattr(obj, name)(model, x)`)."""
        caller_tree = self.tree(caller)
        calls = caller_tree.getattr_calls() if caller_tree is not None else []
        yield from self._calls_running(caller, calls, path, scope, hops, lambda v: isinstance(
            v, (BoundMethod, MethodOf)))

    def _calls_running(self, caller: str, calls: List[Tuple[str, ast.Call]], path: str, scope: str, hops: int,
                       kind: Callable[[Value], bool]) -> Iterator["CallSite"]:
        """Each call whose callee may hold a value of `kind` that runs function `scope` of `path`: a call site
        on an instance or a class (its first parameter bound)."""
        for caller_scope, call in calls:
            self.budget.charge()
            if any((path, scope) in (self.runs(v) or ()) for v in self.value(caller, caller_scope, call.func, hops + 1)
                   if kind(v)):
                yield CallSite(caller, caller_scope, call, True)

    @staticmethod
    def _stored_calls(tree: FileTree, short: str) -> Iterator[Tuple[str, ast.Call]]:
        """Calls of an element of a dict, list or tuple the file builds with `short` in it (a registry of
        functions: `OBJECTIVES = {"nll": nll}`, then `OBJECTIVES[name](...)` or `OBJECTIVES.get(name)(...)`)."""
        holders = {name for key in tree.scopes for name, bindings in tree.scope_facts(key).bindings.items()
                   for binding in bindings if _holds(getattr(binding, "value", None), short)}
        for key in tree.scopes if holders else ():
            for call in tree.scope_facts(key).calls:
                func = call.func
                read = isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and \
                    func.func.attr in ELEMENT_READS
                base = func.value if isinstance(func, ast.Subscript) else \
                    func.func.value if read else None  # type: ignore[union-attr]
                if isinstance(base, ast.Name) and base.id in holders:
                    yield key, call

    def _calls(self, caller: str, caller_scope: str, call: ast.Call, path: str, scope: str, constructor: bool,
               hops: int) -> bool:
        """Does `call` in `caller_scope` run the function `scope` of `path` (or construct its class)?

        A method call is the resolver's question (memoized, and asked of the walk's calls anyway); a name is
        read here, where a nested def or a class picked from a dict is seen too."""
        if constructor and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
            owner = ClassRef(path, scope.rpartition(".")[0])  # `super().__init__(m)`, `Base.__init__(self, m)`
            held = self.value(caller, caller_scope, call.func.value, hops + 1)
            return any(isinstance(v, (Instance, ClassValue)) and v.cls == owner for v in held)
        if constructor or not isinstance(call.func, ast.Attribute):
            callees = self.value(caller, caller_scope, call.func, hops + 1)
            if constructor:
                owner = ClassRef(path, scope.rpartition(".")[0])
                return any(isinstance(v, ClassValue) and (v.cls == owner or owner in self.resolver.mro(v.cls))
                           for v in callees)
            if any(isinstance(v, Function) and (v.path, v.key) == (path, scope) for v in callees):
                return True
        name = call.func.attr if isinstance(call.func, ast.Attribute) else None
        targets = self.resolver.targets_of_call(caller, caller_scope, call.lineno, call.col_offset + 1, name)
        return any((t.path, t.key) == (path, scope) for t in targets)

    def _through_parameter(self, caller: str, caller_scope: str, call: ast.Call, path: str, scope: str,
                           short: str, hops: int) -> Iterator["CallSite"]:
        """`helper(f, ...)` hands the function on: the calls of the parameter it lands in are calls of `f`."""
        for position, argument in enumerate(call.args):
            if not (isinstance(argument, ast.Name) and argument.id == short) and not isinstance(argument, ast.Lambda):
                continue
            if Function(path, scope) not in self.value(caller, caller_scope, argument, hops + 1):
                continue
            for callee in self.value(caller, caller_scope, call.func, hops + 1):
                if not isinstance(callee, Function):
                    continue
                callee_tree = self.tree(callee.path)
                node = callee_tree.scopes.get(callee.key) if callee_tree is not None else None
                params = param_names(node) if node is not None else []
                offset = 1 if isinstance(call.func, ast.Attribute) and self._is_method(callee_tree, callee.key) else 0
                if position + offset >= len(params):
                    continue
                parameter = params[position + offset]
                for inner in callee_tree.scope_facts(callee.key).calls:  # type: ignore[union-attr]
                    if isinstance(inner.func, ast.Name) and inner.func.id == parameter:
                        yield CallSite(callee.path, callee.key, inner, False)


@dataclass(frozen=True)
class CallSite:
    path: str
    scope: str
    call: ast.Call
    bound: bool  # called on an instance or a class: the first parameter (`self`) is not an argument


def _names(node: ast.AST, name: str) -> bool:
    """Does the expression spell `name` (a name, or an attribute's last part)?"""
    return any(isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.Attribute) and n.attr == name
               for n in ast.walk(node))


def _holds(value: Optional[ast.AST], name: str) -> bool:
    """Is `value` a dict, list or tuple display with the name `name` among its elements?"""
    elements = value.values if isinstance(value, ast.Dict) else value.elts if isinstance(
        value, (ast.List, ast.Tuple)) else []
    return any(isinstance(each, ast.Name) and each.id == name for each in elements)


def call_argument(call: ast.Call, params: List[str], name: str, offset: int) -> Optional[ast.expr]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if name not in params:
        return None
    position = params.index(name) - offset
    if 0 <= position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return None
