"""What a `self.` attribute holds: the attribute half of `flow.Flow`.

An attribute holds the join of its assignments on the MRO of the class asked about and in its subclasses: the
class bodies' `attr = ...`, the methods' `self.attr = ...`, a data class field's arguments, the stores made
from outside the class (`policy.head = NormalHead()`) whose owner may hold such an instance, and, where
nothing assigns it, what a `@property` of that name returns. A method's parameter stored on `self` (a
setter), and a store from outside whose owner and value are both a function's parameters, are read per call
site (`CallSites.given_where`).
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple, TypeVar

from amplint.project.callsites import call_argument
from amplint.project.flowcalls import dataclass_fields, last_name
from amplint.project.flowstrings import ANY, Patterns, matches, overlap
from amplint.project.flowtrees import (
    COMPUTED, ClassAssignments, FileTree, class_assignments, computed_value, param_names, stored_attr,
)
from amplint.project.flowvalues import Filled, Values
from amplint.project.storeforms import made_object
from amplint.project.summary import MODULE_KEY
from amplint.project.symbols import ClassRef

PROPERTIES = frozenset({"property", "cached_property"})
T = TypeVar("T")


class AttributeFlow:
    """The attribute half of `flow.Flow` (which defines `tree`, `value`, `returns` and the memo this reads)."""

    if TYPE_CHECKING:  # pragma: no cover - provided by `flow.Flow` and `callsites.CallSites`
        resolver: Any
        loader: Any
        budget: Any
        _classes: Dict[ClassRef, Optional[ClassAssignments]]
        _computed_stores: Dict[ClassRef, Tuple[Tuple[str, str, ast.expr, ast.expr], ...]]

        def tree(self, path: str) -> Optional[FileTree]: ...
        def value(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> Values: ...
        def returns(self, path: str, scope: str, hops: int = 0) -> Values: ...
        def strings(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> Patterns: ...
        def _ask(self, key: Tuple[object, ...], hops: int, compute: Callable[[], Values]) -> Values: ...
        def _first_defining(self, cls: ClassRef, name: str) -> Optional[ClassRef]: ...
        def _is_method(self, tree: FileTree, scope: str) -> bool: ...
        def call_sites(self, path: str, scope: str, hops: int = 0) -> Tuple[Any, ...]: ...

        def given_where(self, path: str, scope: str, owner: Optional[ast.expr], value: ast.expr,
                        kinds: FrozenSet[ClassRef], hops: int, strict: bool) -> Values: ...

        def may_hold(self, path: str, scope: str, owner: Optional[ast.expr], kinds: FrozenSet[ClassRef], hops: int,
                     strict: bool) -> bool: ...

    def _assignments(self, ref: "ClassRef") -> Optional[ClassAssignments]:
        """What the class assigns (None where the project does not hold it), read from its tree once."""
        if ref not in self._classes:
            tree = self.tree(ref.path)
            node = tree.classes.get(ref.name) if tree is not None else None
            self._classes[ref] = None if node is None else class_assignments(  # type: ignore[union-attr]
                tree, ref.name, dataclass_fields(node))
        return self._classes[ref]

    def attr_values(self, cls: "ClassRef", attr: str, hops: int = 0) -> Values:
        """What `self.<attr>` may hold on an instance of `cls`: every assignment on its MRO and in subclasses."""
        return self._ask(("attr", cls, attr), hops, lambda: self._attr_values(cls, attr, hops))

    def _attr_values(self, cls: "ClassRef", attr: str, hops: int) -> Values:
        kinds = frozenset(self._instance_refs(cls))
        assigned = frozenset(v for path, scope, value in self.own_assignments(cls, attr)
                             for v in self._stored(cls, kinds, path, scope, value, hops)).union(
            *(self.given_where(path, scope, owner, value, kinds, hops, True)
              for path, scope, owner, value in self._outside_stores(attr)))
        if self.element_stores_on(cls, attr):  # `self.heads[name] = head` in a method: made where read by element
            assigned |= {Filled((cls, attr))}
        getter = self._property(cls, attr) if not assigned else None
        return self.returns(*getter, hops + 1) if getter is not None else assigned  # `@property def net(self)`

    def fitting(self, cls: "ClassRef", patterns: Patterns, hops: int = 0) -> Values:
        """What the attributes of an instance of `cls` whose names may fit `patterns` hold
        (`getattr(self, f"head_{k}")`): those its classes assign under a name a prefix fits, and the computed
        stores (`setattr(self, f"head_{k}", m)`) whose names may fit. A name not known at all (`getattr(self,
        name)`) reads the computed stores only: every attribute of a large hierarchy (NeMo's `ModelPT`, 459
        of them) cost more than the rest of the run, and the methods such a call may run are read already
        (`MethodOf`)."""
        prefixes = frozenset(p for p in patterns if p != ANY)
        names = {attr for ref in self._instance_refs(cls) for attr in self._assigned_names(ref)
                 if attr != COMPUTED and matches(prefixes, attr)} if prefixes else set()
        found = frozenset().union(*(self.attr_values(cls, attr, hops) for attr in sorted(names)))
        return found.union(*(self.value(path, scope, value, hops) for path, scope, name, value in self._computed(cls)
                             if overlap(self.strings(path, scope, name, hops), patterns)))

    def _assigned_names(self, ref: "ClassRef") -> List[str]:
        found = self._assignments(ref)
        return [] if found is None else [*found.body, *found.methods, *found.elements, *(found.fields or ())]

    def _computed(self, cls: "ClassRef") -> Iterator[Tuple[str, str, ast.expr, ast.expr]]:
        """(path, scope, name, value) of each `setattr(self, name, value)` with a computed name, on the classes an
        instance of `cls` may be, whose value may be a module by its form (`storeforms`)."""
        for ref in self._instance_refs(cls):
            yield from self._computed_on(ref)

    def _computed_on(self, ref: "ClassRef") -> Tuple[Tuple[str, str, ast.expr, ast.expr], ...]:
        """`_computed` of one class's own methods, read once: every question on a class of a large hierarchy
        (3,910 on transformers' `PreTrainedModel`) reads those of every class an instance may be."""
        if ref not in self._computed_stores:
            found = []
            for scope, call in getattr(self._assignments(ref), "methods", {}).get(COMPUTED, ()):
                name, value = stored_attr(call)  # type: ignore[arg-type, misc]
                if made_object(self.tree(ref.path), scope, value):
                    found.append((ref.path, scope, name, value))
            self._computed_stores[ref] = tuple(found)
        return self._computed_stores[ref]

    def element_stores_on(self, cls: "ClassRef", attr: str) -> List[Tuple[str, str, Optional[ast.expr], ast.expr]]:
        """(path, scope, key, value) of each `self.attr[key] = value` and `self.attr.append(value)` (key None) in a
        method of the classes an instance of `cls` may be."""
        return [(ref.path, scope, key, value) for ref in self._instance_refs(cls)
                for scope, key, value in getattr(self._assignments(ref), "elements", {}).get(attr, ())]

    def _stored(self, cls: "ClassRef", kinds: FrozenSet["ClassRef"], path: str, scope: str, value: ast.expr,
                hops: int) -> Values:
        """What an assignment of the attribute stores on an instance of `cls` (`kinds`: the classes one may be):
        for `self.attr = value` in a method of one of them, what `value` holds where `self` is one
        (`given_where`: a setter's parameter, what the calls on such an instance give it). An argument a data
        class's field takes, in a method of another class, is read as it is, whatever the receiver."""
        tree = self.tree(path) if scope != MODULE_KEY else None
        node = tree.scopes.get(scope) if tree is not None else None
        first = param_names(node)[:1] if node is not None and self._is_method(tree, scope) else []  # type: ignore
        if not first or ClassRef(path, scope.rpartition(".")[0]) not in kinds:
            return self.value(path, scope, value, hops)
        return self.given_where(path, scope, ast.Name(id=first[0], ctx=ast.Load()), value, kinds, hops, False)

    def _property(self, cls: "ClassRef", attr: str) -> Optional[Tuple[str, str]]:
        """(path, key) of the getter when `attr` is a property of `cls` (`@property`, `@cached_property`)."""
        ref = self._first_defining(cls, attr)
        tree = self.tree(ref.path) if ref is not None else None
        node = tree.scopes.get(f"{ref.name}.{attr}") if tree is not None and ref is not None else None
        decorators = getattr(node, "decorator_list", ())
        if ref is None or not any(last_name(d) in PROPERTIES for d in decorators):
            return None
        return ref.path, f"{ref.name}.{attr}"

    def instance_classes(
        self, cls: "ClassRef",
    ) -> Iterator[Tuple["ClassRef", Optional[FileTree], Optional[ast.ClassDef]]]:
        """The classes an instance of `cls` may be (its MRO, then its subclasses), each with its file's tree and
        its `class` node (None where the project does not hold it)."""
        for ref in self._instance_refs(cls):
            tree = self.tree(ref.path)
            yield ref, tree, tree.classes.get(ref.name) if tree is not None else None

    def _instance_refs(self, cls: "ClassRef") -> List["ClassRef"]:
        """The classes an instance of `cls` may be: its MRO, then its subclasses, each once."""
        return list(dict.fromkeys([*self.resolver.mro(cls), *self.resolver.subclasses(cls)]))

    def attr_assignments(self, cls: "ClassRef", attr: str) -> Iterator[Tuple[str, str, ast.expr]]:
        """(path, scope, value) of each assignment of `attr` an instance of `cls` may hold: the class's own
        (`own_assignments`), and every store from outside the class whose owner may hold one."""
        yield from self.own_assignments(cls, attr)
        yield from self.stored_outside(cls, attr, lambda path, scope, value: (path, scope, value))

    def own_assignments(self, cls: "ClassRef", attr: str) -> Iterator[Tuple[str, str, ast.expr]]:
        """(path, scope, value) of the class bodies' `attr = ...` (read at module scope) and the methods'
        `self.attr = ...`, on the MRO of `cls` and in its subclasses, and a data class field's arguments; and of
        each `setattr(self, name, value)` whose name may spell `attr` and whose value may be a module by its form
        (`_computed`: `setattr(self, k, v)` over `**kwargs` is not followed). `COMPUTED` asks for every such
        store's value."""
        computed: List[Tuple[str, str, ast.expr, ast.expr]] = []
        for ref in self._instance_refs(cls):
            self.budget.charge()
            found = self._assignments(ref)
            if found is None:
                continue
            computed.extend(self._computed_on(ref) if attr != COMPUTED else ())
            for value in found.body.get(attr, ()):
                yield ref.path, MODULE_KEY, value
            for scope, value in found.methods.get(attr, ()):  # `COMPUTED`: the value of every such store
                yield ref.path, scope, computed_value(value) if attr == COMPUTED else value  # type: ignore[arg-type]
            fields = found.fields
            if fields is not None and attr in fields:  # `Setup(model=m)`: the argument its field takes
                for site in self.call_sites(ref.path, f"{ref.name}.__init__"):
                    argument = call_argument(site.call, fields, attr, 0)
                    if argument is not None:
                        yield site.path, site.scope, argument
        for path, scope, name, value in computed:
            if matches(self.strings(path, scope, name), attr):
                yield path, scope, value

    def stored_outside(self, cls: "ClassRef", attr: str, read: Callable[[str, str, ast.expr], T]) -> Iterator[T]:
        """What `read(path, scope, value)` gives of each `owner.attr = value` in the project (`policy.head =
        NormalHead()`) whose owner may hold an instance of `cls` (its MRO or a subclass), where it gives
        something. The value is read before the owner: most stores hold nothing the asker follows (`m.weight = p`)."""
        kinds = frozenset(self._instance_refs(cls)) if self.loader.storing(attr) else frozenset()
        for path, scope, owner, value in self._outside_stores(attr):
            got = read(path, scope, value)
            if got and self.may_hold(path, scope, owner, kinds, 0, True):
                yield got

    def _outside_stores(self, attr: str) -> Iterator[Tuple[str, str, ast.expr, ast.expr]]:
        """(path, scope, owner, value) of each `owner.attr = value` in the files whose text stores `attr` on an
        owner other than `self`."""
        for path in self.loader.storing(attr):
            self.budget.charge()
            tree = self.tree(path)
            for scope, owner, value in tree.attr_stores(attr) if tree is not None else ():
                yield path, scope, owner, value
