"""Resolve a call made in one file to the project functions it may run.

Works on `FileSummary` data only. A callee is resolved, in order, as:
`self`/`cls` (the receiver's class, its `self.<attr>` instances), a local
name bound to an instance (`model = AutoEncoder(...)`, an annotated
parameter), a local `def`, then a module-level function, class, instance or
import of the file, following imports (absolute, relative, `as`, re-exports
in `__init__.py`, `from x import *`) into the project's files. Anything else
(a parameter with no annotation, a library) is not followed.

Calling an instance runs `__call__` when a project class on its MRO defines
one, else `forward` when the class is an `nn.Module` (a known torch,
Lightning or transformers base on its MRO). A method call runs the first
definition on the MRO; when the receiver's exact class is not known (`self`
in a method, an annotated parameter) the overrides in project subclasses run
too (class-hierarchy analysis); past `MAX_OVERRIDES` of them, those of the
classes the project constructs (rapid type analysis, `project.constructed`),
however many.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from amplint.facts import frameworks
from amplint.facts.modulecalls import EXPRESSION
from amplint.project import flow
from amplint.project.flowtrees import writer_of
from amplint.project.constructed import Constructed
from amplint.project.budget import FlowBudget
from amplint.project.memo import Doubts, Memo, UnionMemo
from amplint.project.symbols import ClassRef, Symbol, Target, _Func, _Instance, _Method, _Module
from amplint.project.shape import FileShape, Shape
from amplint.project.subclassing import Subclassing
from amplint.project.summary import MODULE_KEY, CallSummary, FileSummary, FunctionSummary

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.loader import Loader

# Past this many overrides of a method on subclasses, a call goes to those of the classes the project constructs
# (`project.constructed`: rapid type analysis), however many: a bound on the guessing, not on the answer.
MAX_OVERRIDES = 16
# A call on a receiver of unknown class (a parameter typed `nn.Module`, an attribute set from a config)
# goes to every project class defining the method; past this many, to those the project constructs.
MAX_INFERRED = 4
# Methods that library objects have: tensors, modules, optimizers, scalers, containers, and torch
# distributions. A receiver of unknown class calling one of them is more likely a library object than a
# project class (`d.entropy()` on an unknown `d` is a torch distribution's entropy, not a project class's).
LIBRARY_METHODS = frozenset({
    "log_prob", "cdf", "icdf", "entropy", "sample", "rsample", "sample_n", "expand", "perplexity",
    "__call__", "__init__", "forward", "step", "zero_grad", "backward", "update", "to", "cuda", "cpu", "float",
    "half", "double", "train", "eval", "parameters", "named_parameters", "modules", "children", "state_dict",
    "load_state_dict", "apply", "register_buffer", "item", "size", "view", "reshape", "mean", "sum", "detach",
    "clone", "copy", "get", "items", "keys", "values", "append", "extend", "pop", "format", "join", "split",
    "read", "write", "close", "add", "log", "info", "warning", "run", "start", "reset", "save", "load",
})


class Resolver(Subclassing):
    """Memoized resolution over the loader's summaries (one per run: no global state).

    One resolver serves every pass of the walk: call `new_pass` before each, and
    answers that a speculative pass may have got wrong are forgotten (`amplint.project.memo`).
    """

    def __init__(self, loader: "Loader", built: Callable[[], FrozenSet[Tuple[str, str]]] = frozenset) -> None:
        self.loader = loader
        self._built = built  # (section, dotted name) of the classes config files build (read on first use)
        self._built_names: Optional[FrozenSet[Tuple[str, str]]] = None
        self.constructed = Constructed(loader, self._built_classes)
        self.modules = loader.modules
        self._distributions = frozenset(loader.config.extend_distributions)  # the project's own among them
        self._doubts = Doubts(lambda: loader.misses, FlowBudget(loader.config.flow_budget, len(loader.files)))
        memo = self._doubts.memo
        self._typed: Memo[Tuple[Tuple[str, ...], Tuple[str, ...]], Tuple[Target, ...]] = memo()
        self._mro: Memo[ClassRef, List[ClassRef]] = memo()
        self._external: Memo[ClassRef, FrozenSet[str]] = memo()
        self._subclasses: Memo[ClassRef, List[ClassRef]] = memo()
        self._overriding: Memo[ClassRef, Dict[str, List[ClassRef]]] = memo()
        # Class expressions and method owners, resolved once per run: the subclass search asks for the
        # same (file, base) pairs once per class it expands, which was quadratic on large projects.
        self._class_of: Memo[Tuple[str, str], Tuple[ClassRef, ...]] = memo()
        self._defining: Memo[Tuple[ClassRef, str], Optional[ClassRef]] = memo()
        self._children: Memo[str, Dict[ClassRef, Tuple[ClassRef, ...]]] = memo()  # by a base's short name
        self._lookups: UnionMemo[Tuple[str, Tuple[str, ...], bool], Symbol] = UnionMemo(memo())
        # By the call's identity: summaries, and the calls in them, live as long as the run.
        self._calls: Memo[Tuple[str, str, int, Optional[ClassRef], bool], Tuple[Target, ...]] = memo()
        # How chains name targets: every edge the walk follows names its target, in every pass.
        self._displays: Memo[Tuple[Target, bool], str] = memo()
        from amplint.project.flow import Flow

        self.flow = Flow(self, loader)  # what names hold across calls, asked when a summary cannot say

    @property
    def doubts(self) -> Doubts:
        return self._doubts

    def new_pass(self) -> None:
        """Start another pass of the walk: keep the sure answers, forget the rest (`amplint.project.memo`)."""
        self._doubts.new_pass()

    def _deferred(self, mark: int) -> bool:
        """Should a search that began at `mark` (`Doubts.mark`) stop here, for the next pass to finish?

        Yes when this pass has answered a summary None for speculation, so that its result is not the walk's
        (`amplint.project.ahead`), and something unsure went into the search since. Past that point it runs on
        a guess (a class not found because its file was not read, a class hierarchy with holes), and would
        read files that a pass with what it missed may never ask for. A pass with no miss never defers: the
        pass whose result is used resolves as a serial run does.
        """
        return self._doubts.missed_this_pass() and self._doubts.mark() != mark

    # --- symbols -----------------------------------------------------------
    def _summary(self, path: str) -> Optional[FileSummary]:
        return self.loader.summary(path)

    def _shape(self, path: str) -> Optional[Shape]:
        """What the file defines, enough for names, classes and methods (`Loader.shape`)."""
        return self.loader.shape(path)

    def _instance(self, path: str, shape: Shape, name: str) -> Optional[Tuple[str, bool]]:
        """The module-level instance `name` holds; the summary is read only when a shape cannot rule it out."""
        if isinstance(shape, FileShape):
            if name not in shape.bound:
                return None
            summary = self._summary(path)
            return None if summary is None else summary.instance(name)
        return shape.instance(name)

    def _attrs(self, cls: ClassRef, attr: str) -> Tuple[Tuple[str, str, bool], ...]:
        """`cls`'s `self.` attributes, as far as `attr` is concerned (none for a class that is not known)."""
        shape = self._shape(cls.path)
        if isinstance(shape, FileShape):
            if attr.rstrip("[]") not in shape.mentions.get(cls.name, ()):
                return ()
            shape = self._summary(cls.path)
        info = shape.classes.get(cls.name) if shape is not None else None
        return () if info is None else info.attrs

    def lookup(self, path: str, parts: Sequence[str], for_call: bool = False) -> List[Symbol]:
        """What `a.b.c` (parts) names at module level of `path`.

        `for_call`: the name is being called, so another file that is not worth
        entering (`Loader.worth_entering`) is not even parsed to find out.
        Memoized per run, a cycle of re-exports (packages' `__init__` files, star
        imports that import each other) answered once (`memo.UnionMemo`), and a
        chain of re-exports followed however long it is. A symbol reached by
        several import paths is listed once: on transformers one name came back
        42,048 times, and every caller's answer held each copy.
        """
        return list(self._lookups.get((path, tuple(parts), for_call), lambda: self._lookup(path, parts, for_call)))

    def _lookup(self, path: str, parts: Sequence[str], for_call: bool) -> List[Symbol]:
        summary = self._shape(path)
        if summary is None or not parts:
            return []
        name, rest = parts[0], list(parts[1:])
        function = summary.functions.get(name)
        if function is not None and function.class_name is None and function.parent == MODULE_KEY:
            return [] if rest else [_Func(path, name)]
        if name in summary.classes:
            while rest and f"{name}.{rest[0]}" in summary.classes:  # Outer.Inner
                name = f"{name}.{rest.pop(0)}"
            cls = ClassRef(path, name)
            if not rest:
                return [cls]
            return [_Method(cls, rest[0], False)] if len(rest) == 1 else []
        instance = self._instance(path, summary, name)
        if instance is not None:
            return [s for cls in self.lookup(path, instance[0].split(".")) if isinstance(cls, ClassRef)
                    for s in self._attribute(_Instance(cls, instance[1]), rest)]
        found: List[Symbol] = []
        for qualified in summary.imported(name):
            for absolute, root in self.modules.absolute(path, qualified):
                found.extend(self.qualified(path, ".".join([absolute, *rest]), root, for_call))
        if found or summary.imported(name):
            return found
        for star in summary.star_modules:
            for absolute, root in self.modules.absolute(path, star):
                if self._is_module(path, absolute, root):
                    found.extend(self.qualified(path, ".".join([absolute, *parts]), root, for_call))
        return found

    def _is_module(self, importer: str, dotted: str, root: Optional[str]) -> bool:
        """Is `dotted` a project file? `from m import *` imports the module `m` itself. When `m` is not
        there (a partial checkout), its package is not `m`: reading `m.name` in the package instead led,
        through the package's own star imports, back to itself, once per hop (exponential)."""
        return any(not rest for _, rest in self.modules.locate(importer, dotted, root))

    @staticmethod
    def _attribute(instance: _Instance, rest: Sequence[str]) -> List[Symbol]:
        if not rest:
            return [instance]
        return [_Method(instance.cls, rest[0], instance.exact)] if len(rest) == 1 else []

    def imported_names(self, path: str, name: str) -> List[Tuple[str, str]]:
        """(file, name) where a module-level name `path` imports is bound: `from .runner import HEADS` gives
        `HEADS` of runner.py, which no class, function or module lookup answers (a registry dict, a constant)."""
        summary = self._shape(path)
        found: List[Tuple[str, str]] = []
        for qualified in summary.imported(name) if summary is not None else ():
            for absolute, root in self.modules.absolute(path, qualified):
                found.extend((other, rest[0]) for other, rest in self.modules.locate(path, absolute, root)
                             if len(rest) == 1 and other != path)
        return found

    def qualified(
        self, importer: str, dotted: str, root: Optional[str] = None, for_call: bool = False
    ) -> List[Symbol]:
        """A fully qualified name (relative names already made absolute) in the project's files."""
        found: List[Symbol] = []
        for path, rest in self.modules.locate(importer, dotted, root):
            if for_call and not self.loader.worth_entering(path):
                continue
            found.extend(self.lookup(path, rest, for_call) if rest else [_Module(path)])
        return found

    def class_of(self, path: str, text: str) -> List[ClassRef]:
        """The project classes a class expression (`Net`, `models.Net`) in `path` names (memoized from the top)."""
        return list(self._class_of.get((path, text), lambda: tuple(
            s for s in self.lookup(path, text.split(".")) if isinstance(s, ClassRef))))

    # --- classes -----------------------------------------------------------
    def class_summary(self, cls: ClassRef):  # -> Optional[ClassSummary or ClassShape]: bases and methods
        summary = self._shape(cls.path)
        return None if summary is None else summary.classes.get(cls.name)

    def _bases(self, cls: ClassRef) -> List[ClassRef]:
        info = self.class_summary(cls)
        return [ref for base in (info.bases if info is not None else ()) if base
                for ref in self.class_of(cls.path, base)]

    def _first_defining(self, cls: ClassRef, name: str) -> Optional[ClassRef]:
        """The first class on the MRO that defines `name`, loading base files only as far as needed (memoized)."""
        return self._defining.get((cls, name), lambda: self._search_defining(cls, name))

    def _search_defining(self, cls: ClassRef, name: str) -> Optional[ClassRef]:
        seen: Set[ClassRef] = set()
        stack = [cls]
        while stack:
            current = stack.pop(0)
            if current in seen:
                continue
            seen.add(current)
            info = self.class_summary(current)
            if info is not None and name in info.methods:
                return current
            stack[0:0] = self._bases(current)  # depth-first, left to right, like mro()
        return None

    def mro(self, cls: ClassRef) -> List[ClassRef]:
        """The class, then its project bases depth-first, left to right (no duplicates)."""
        return self._mro.get(cls, lambda: self._search_mro(cls))

    def _search_mro(self, cls: ClassRef) -> List[ClassRef]:
        self._mro.guard(cls, [cls])  # a cycle in broken code ends here
        order: List[ClassRef] = [cls]
        for ref in self._bases(cls):
            order.extend(c for c in self.mro(ref) if c not in order)
        return order

    def external_bases(self, cls: ClassRef) -> FrozenSet[str]:
        """Qualified names of the non-project bases anywhere on the MRO (`torch.nn.Module`, ...)."""
        return self._external.get(cls, lambda: self._search_external(cls))

    def _search_external(self, cls: ClassRef) -> FrozenSet[str]:
        names: Set[str] = set()
        for ref in self.mro(cls):
            info = self.class_summary(ref)
            summary = self._shape(ref.path)
            if info is None or summary is None:
                continue
            for base in info.bases:
                if not base or self.class_of(ref.path, base):
                    continue
                head, _, tail = base.partition(".")
                quals = summary.imported(head) or (head,)
                names.update(f"{q}.{tail}" if tail else q for q in quals)
        return frozenset(names)

    def is_module(self, cls: ClassRef) -> bool:
        return bool(self.external_bases(cls) & frameworks.MODULE_BASES)

    def classes_deriving(self, external: FrozenSet[str], short_names: Sequence[str]) -> List[ClassRef]:
        """Project classes with one of `external` on their MRO (e.g. every LightningModule), sorted."""
        direct: Set[ClassRef] = set()
        for short in short_names:
            for path in self.loader.subclass_files(short):
                summary = self._shape(path)
                for name in sorted(summary.classes) if summary is not None else ():
                    ref = ClassRef(path, name)
                    if self.external_bases(ref) & external:
                        direct.add(ref)
        every = set(direct)
        for ref in sorted(direct):
            every.update(self.subclasses(ref))
        return sorted(every)

    # --- calls -------------------------------------------------------------
    def method(self, cls: ClassRef, name: str, exact: bool, known: bool = False) -> List[Target]:
        """`obj.name(...)` on an instance of `cls`: the MRO's definition, plus overrides when not exact.

        `known`: the instance's class came from values (`project.flow`), not from a guess, so the method is
        looked up even when no file worth entering defines one of its name."""
        targets: List[Target] = []
        if not known and not self.loader.may_define_usefully(name):
            return targets  # no file worth entering defines it: do not load the MRO to find out
        defining = self._first_defining(cls, name)
        if defining is not None:
            targets.append(Target(defining.path, f"{defining.name}.{name}", cls, exact))
        if not exact:
            overrides = self.overriding(cls).get(name, [])
            if len(overrides) > MAX_OVERRIDES:
                overrides = self.constructed.classes(overrides)
            targets.extend(Target(s.path, f"{s.name}.{name}", s, False) for s in overrides)
        return targets

    def constructor(self, cls: ClassRef) -> List[Target]:
        """The `__init__` a constructor call runs, in a file that may lead to a probability computation."""
        return [t for t in self.method(cls, "__init__", True) if self.loader.worth_entering(t.path)]

    def _methods(self, cls: ClassRef) -> Tuple[str, ...]:
        info = self.class_summary(cls)
        return info.methods if info is not None else ()

    def instance_call(self, cls: ClassRef, exact: bool, known: bool = False) -> List[Target]:
        """`obj(...)`: `__call__` if the project defines one on the MRO, else `forward` for an nn.Module."""
        if not known and not (self.loader.may_define_usefully("__call__") or
                              self.loader.may_define_usefully("forward")):
            return []
        for ref in self.mro(cls):
            info = self.class_summary(ref)
            if info is not None and "__call__" in info.methods:
                return self.method(cls, "__call__", exact, known)
        return self.method(cls, "forward", exact, known) if self.is_module(cls) else []

    def _targets(self, symbols: Sequence[Symbol]) -> List[Target]:
        targets: List[Target] = []
        for symbol in symbols:
            if isinstance(symbol, _Func):
                targets.append(Target(symbol.path, symbol.key))
            elif isinstance(symbol, _Method):
                targets.extend(self.method(symbol.cls, symbol.name, symbol.exact))
            elif isinstance(symbol, _Instance):
                targets.extend(self.instance_call(symbol.cls, symbol.exact))
            elif isinstance(symbol, ClassRef):  # a constructor call runs the class's `__init__`
                targets.extend(self.constructor(symbol))
        return list(dict.fromkeys(targets))  # a module is not followed; overrides met twice are one target

    def _self_attr(self, receiver: ClassRef, attr: str) -> List[_Instance]:
        """The instances `self.<attr>` holds, from the first class on the MRO that assigns it.

        `heads[]` stands for any element of a container attribute: one entry per class it holds.
        """
        if not self.loader.may_assign(attr.rstrip("[]")):
            return []
        for ref in self.mro(receiver):
            attrs = self._attrs(ref, attr)
            held = [_Instance(c, exact) for name, text, exact in attrs if name == attr
                    for c in self.class_of(ref.path, text)]
            if held or any(name == attr for name, _, _ in attrs):
                return held
        return []

    def call_targets(
        self, path: str, function: FunctionSummary, call: CallSummary,
        receiver: Optional[ClassRef], exact: bool,
    ) -> List[Target]:
        """The project functions a call may run; [] when it is not resolved (never a guess)."""
        key = (path, function.key, id(call), receiver, exact)
        return list(self._calls.get(key, lambda: tuple(self._sited(call, self._call_targets(
            path, function, call, receiver, exact)))))

    def _sited(self, call: CallSummary, targets: List[Target]) -> List[Target]:
        """A site's call (`CallSummary.opaque`, `x.log_prob(v)`) runs the method of a project class only where the
        class is no distribution (an SB3-style wrapper): a project distribution's call is the site itself."""
        if not call.opaque:
            return targets
        return [t for t in targets if not t.inferred and
                not self.is_distribution_class(ClassRef(t.path, t.key.rsplit(".", 1)[0]))]

    def is_distribution_class(self, cls: ClassRef) -> bool:
        """Is `cls` one of the project's distributions (`distsubclasses`, as configured)?"""
        return any(name in self._distributions for name in self.modules.dotted_names(cls.path, cls.name))

    def _call_targets(
        self, path: str, function: FunctionSummary, call: CallSummary,
        receiver: Optional[ClassRef], exact: bool,
    ) -> List[Target]:
        parts = call.callee.split(".")
        root = parts[0]
        if root == EXPRESSION:  # `Scorer().evaluate(x)`: what the expression holds, when a project method may run
            if len(parts) == 2 and not self.loader.may_define_usefully(parts[1]):
                return []  # `x.float().view(-1)`: no project method of that name
            values, methods = self.flow.call_values(path, function.key, call.line, call.column,
                                                    parts[1] if len(parts) == 2 else None)
            found = self.flowed_targets(values, methods)
            if found or len(parts) != 2 or any(isinstance(v, flow.Instance) for v in flow.unprepared(values)):
                return found
            return self._unknown_receiver(parts[1:], call)  # `random.choice(agents).set_head(h)`: by its name
        if root in ("self", "cls") and function.class_name is not None:
            own = receiver if receiver is not None else ClassRef(path, function.class_name)
            exact = exact if receiver is not None else False
            if len(parts) == 1:
                return self.instance_call(own, exact) if root == "self" else []
            if len(parts) == 2:
                found = self.method(own, parts[1], exact)
                if found or root == "cls":
                    return found
            elif root == "cls":
                return []
            mark = self._doubts.mark()
            held = self._self_attr(own, parts[1])  # `self.policy(...)`, `self.policy.act(...)`
            if not held and len(parts) == 2:  # calling an `nn.Sequential` runs each of its modules
                held = self._self_attr(own, parts[1] + "[]")
            if parts[1].endswith("[]") and len({i.cls for i in held}) != 1:  # `self.heads["policy"](x)`: by key
                keyed = self.flow.call_values(path, function.key, call.line, call.column,
                                              parts[2] if len(parts) == 3 else None)
                if keyed[0]:
                    return self.flowed_targets(*keyed)
            if not held:
                attr = parts[1]
                values = self.flow.elements_of(self.flow.attr_values(own, attr[:-2])) if attr.endswith("[]") else \
                    self.flow.attr_values(own, attr)  # `self.heads[]`: an element of what `self.heads` holds
                return self.flowed_targets(values, parts[2:]) or self._unknown_receiver(parts[2:], call, mark)
            return self._targets([s for instance in held for s in self._attribute(instance, parts[2:])])
        if call.receiver is not None:
            text, bound_exact = call.receiver
            mark = self._doubts.mark()
            classes = self.class_of(path, text)
            if not classes and call.root_local:  # `net = bundle.get("policy")` names no class: what it holds
                flowed = self.flowed_targets(self.flow.name_values(path, function.key, root), parts[1:])
                if flowed:
                    return flowed
            if not classes:  # typed with a library class: `net: nn.Module`
                return self._unknown_receiver(parts[1:], call, mark)
            return self._targets([s for c in classes for s in self._attribute(_Instance(c, bound_exact), parts[1:])])
        if call.root_local:
            if len(parts) == 2 and not self.loader.may_define_usefully(parts[1]):
                return self._unknown_receiver(parts[1:], call)  # `x.view(...)`: no project method to find
            flowed = self.flowed_targets(self.flow.name_values(path, function.key, root), parts[1:])
            return flowed or self._unknown_receiver(parts[1:], call)
        summary = self._summary(path)
        if summary is None:
            return []
        scope: Optional[FunctionSummary] = function
        while scope is not None and scope.key != MODULE_KEY:
            nested = dict(scope.nested)
            if root in nested:
                return [Target(path, nested[root], receiver, exact)] if len(parts) == 1 else []
            scope = summary.functions.get(scope.parent) if scope.parent else None
        found = self._targets(self.lookup(path, parts, for_call=True))
        if not found and function.key != MODULE_KEY and (
                len(parts) == 1 or self.loader.may_define_usefully(parts[-1])):
            # a name the summary does not bind (a comprehension's variable): what it holds, if known
            found = self.flowed_targets(self.flow.name_values(path, function.key, root), parts[1:])
        return found

    def flowed_targets(self, values: "flow.Values", rest: Sequence[str]) -> List[Target]:
        """The functions a call runs on values that crossed calls (`project.flow`): `p()`, `p.m()`, `p.a.m()`."""
        for attr in rest[:-1]:
            values = frozenset(v for owner in flow.unprepared(values) for v in (
                self.flow.attr_values(owner.cls, attr) if isinstance(owner, flow.Instance) else
                owner.read(attr) if isinstance(owner, flow.Namespace) else ()))
        targets: Dict[Target, None] = {}  # in order, each once (a list's `in` made thousands of values quadratic)
        for value in sorted(flow.unprepared(values), key=repr):
            if isinstance(value, flow.Instance):
                found = self.instance_call(value.cls, value.exact, True) if not rest else \
                    self.method(value.cls, rest[-1], value.exact, True)
                found = [replace(t, flowed=True) for t in found]
            elif isinstance(value, flow.Function):
                found = [] if rest else [Target(value.path, value.key, flowed=True)]
            elif isinstance(value, (flow.BoundMethod, flow.MethodOf)) and not rest:  # `fn(x)`, `getattr(m, n)(x)`
                found = [replace(t, flowed=True) for t in self.flow.method_targets(value)]
            elif isinstance(value, flow.Module) and rest:
                found = self._targets(self.lookup(value.path, [rest[-1]], for_call=True))
            elif isinstance(value, flow.ClassValue):  # `cls(d_in, k)` runs its `__init__`; `cls.make(...)`
                found = self._targets([_Method(value.cls, rest[-1], False)]) if rest else [
                    replace(t, flowed=True) for t in self.constructor(value.cls)]
            elif isinstance(value, flow.Fanout):  # `metrics.update(p, y)`: each member's `update`
                found = self.flowed_targets(value.elements, rest)
            elif isinstance(value, flow.Namespace) and rest:  # `ns.policy(x)`: what its attribute holds, called
                found = self.flowed_targets(value.read(rest[-1]), [])
            else:
                found = []
            targets.update(dict.fromkeys(found))
        return list(targets)

    def targets_of_call(self, path: str, scope: str, line: int, column: int,
                        name: Optional[str] = None) -> List[Target]:
        """The targets of the call at (line, column) in function `scope` of `path`, as the summary records it
        (a lambda's calls in the function that writes it); `name`, the method called, tells apart calls that
        start at one place (`D(m).log_p(y).mean()`)."""
        summary = self._summary(path)
        function = summary.functions.get(writer_of(scope)) if summary is not None else None
        for call in function.calls if function is not None else ():
            if (call.line, call.column) == (line, column) and (name is None or call.callee.endswith(f".{name}")):
                return self.call_targets(path, function, call, None, False)
        return []

    def inferred(self, name: str) -> List[Target]:
        """`recv.name(...)` on a receiver of unknown class: each project class that defines `name` (CHA by name).

        Never for LIBRARY_METHODS. Past MAX_INFERRED classes, only those the project constructs (a call, a
        registry's value, a string, a config's `target:`: `project.constructed`), however many: a class nothing
        makes cannot be the receiver. Chains mark these targets as inferred.
        """
        if name in LIBRARY_METHODS or name.startswith("__") or not self.loader.may_define_usefully(name):
            return []
        files = self.loader.defining_files(name)
        # A text count of indented `def name(` lines tells, before any file is parsed, whether there are many.
        many = len(files) > MAX_INFERRED or sum(self.loader.method_definitions(p, name) for p in files) > MAX_INFERRED
        if many:  # only the files that define a class the project constructs: the others cannot run
            live = {c.name for c in self.constructed.classes(
                [ClassRef(p, n) for p in files for n in self.loader.info[p].classes if p in self.loader.info])}
            files = [p for p in files if p in self.loader.info and live & set(self.loader.info[p].classes)]
        classes = [ClassRef(path, cls) for path in files for cls, info in sorted(self._classes(path).items())
                   if name in info.methods]
        if many or len(classes) > MAX_INFERRED:
            classes = self.constructed.classes(classes)
        return [Target(c.path, f"{c.name}.{name}", c, False, inferred=True) for c in classes]

    def _unknown_receiver(self, rest: Sequence[str], call: CallSummary, mark: Optional[int] = None) -> List[Target]:
        """A call on an object of unknown class (`rest`: the attributes after the last known one, the method
        last): by the method's name, else by the distributions it is given.

        `mark`: `Doubts.mark()` before the receiver's class was looked for, if it was. When a speculative pass
        defers from there (`_deferred`), the class may be in a file it has not read: the receiver is not known
        to be unknown, the answer is [] (unsure), and the next pass, which has the file, decides.
        """
        if mark is not None and self._deferred(mark):
            return []
        found = self.inferred(rest[-1]) if rest else []  # `holder.agent.set_head(h)`: the method called
        if not found and call.dist_args:
            found = self.typed(tuple(rest[-1:]) or ("forward", "__call__"), call.dist_args)
        return found

    def typed(self, names: Tuple[str, ...], slots: Tuple[str, ...]) -> List[Target]:
        """Project methods named one of `names` whose parameter in one of `slots` is annotated as a distribution.

        `self.loss(dist, y)` with `loss` picked by a config runs some `forward(self, dist: Distribution, y)`:
        the annotation is the one fact that names it. Past MAX_INFERRED, the constructed ones; marked inferred.
        """
        return list(self._typed.get((names, slots), lambda: self._search_typed(names, slots)))

    def _search_typed(self, names: Tuple[str, ...], slots: Tuple[str, ...]) -> Tuple[Target, ...]:
        found = []
        for name in names:
            typed_def = re.compile(r"def\s+%s\s*\([^)]*Distribution" % re.escape(name))
            for path in self.loader.defining_files(name):
                if not self.loader.matches(path, typed_def):
                    continue
                summary = self._summary(path)
                for cls, info in sorted(summary.classes.items()) if summary is not None else ():
                    function = summary.functions.get(f"{cls}.{name}")  # type: ignore[union-attr]
                    if function is not None and set(function.dist_params) & set(slots):
                        found.append(Target(path, function.key, ClassRef(path, cls), False, inferred=True))
        if len(found) > MAX_INFERRED:
            live = set(self.constructed.classes([t.receiver for t in found if t.receiver is not None]))
            found = [t for t in found if t.receiver in live]
        return tuple(found)

    def configured_targets(self) -> FrozenSet[Tuple[str, str]]:
        """(section, dotted name) of the classes the project's config files build (`configfiles.read_targets`)."""
        if self._built_names is None:
            self._built_names = frozenset(self._built())
        return self._built_names

    def _built_classes(self) -> FrozenSet[str]:
        return frozenset(dotted.rsplit(".", 1)[-1] for _, dotted in self.configured_targets())

    def _classes(self, path: str):  # -> Dict[str, ClassSummary or ClassShape]
        summary = self._shape(path)
        return summary.classes if summary is not None else {}

    def display(self, target: Target) -> str:
        """How a chain names a function: `Class.method`, or `module.function` for plain functions."""
        return self._displays.get((target, target.inferred), lambda: self._display(target))

    def _display(self, target: Target) -> str:
        summary = self._shape(target.path)
        function = summary.functions.get(target.key) if summary is not None else None
        if function is None:
            return target.key
        shown = function.display if function.class_name is not None else (
            f"{self.modules.short(target.path)}.{function.display}")
        return f"{shown} (inferred)" if target.inferred else shown
