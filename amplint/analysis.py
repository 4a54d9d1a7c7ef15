"""The one analysis every front end calls: regions, probability sites, findings.

A single LibCST pass records, per function, the probability computations and
calls it makes together with the autocast state at that point (a stack of
regions, local to the function). A second, cheap pass follows calls made in
float16 regions into helpers and methods of the same file. Only
PositionProvider metadata is used; names are resolved by `names.ImportTable`.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from amplint import dtypes
from amplint.model import ArgSpec, DistSpec, Precision, RegionInfo, SiteSpec
from amplint.names import ImportTable, collect_imports, dotted_name
from amplint.regions import AutocastFactory, RegionSpec, factory_of, region_spec

VALUE_METHODS = frozenset({"log_prob", "cdf", "icdf"})
KNOWN_DIST_METHODS = frozenset({"entropy", "cdf", "icdf"})
FLOAT16_LIKE = frozenset({Precision.FLOAT16, Precision.MAYBE_FLOAT16})
MODULE_KEY = "<module>"


@dataclass(frozen=True)
class AnalysisOptions:
    """The parts of the configuration the analysis itself needs."""

    extend_autocast: FrozenSet[str] = frozenset()
    extend_distributions: FrozenSet[str] = frozenset()


@dataclass
class RegionEntry:
    spec: RegionSpec
    line: int
    node: cst.CSTNode

    @property
    def info(self) -> RegionInfo:
        return self.spec.at(self.line)

    @property
    def is_float16(self) -> bool:
        return self.spec.enabled and self.spec.precision in FLOAT16_LIKE


@dataclass
class DistRef:
    """A distribution constructor call visible in the same function."""

    ctor: cst.Call
    qualname: str
    binding: Optional[str]  # the local name it was reached through, if any
    components: List["DistRef"] = field(default_factory=list)
    inputs: List[cst.BaseExpression] = field(default_factory=list)  # tensor arguments
    has_star: bool = False


@dataclass
class Site:
    """A probability computation, with the nodes the codemod rewrites."""

    call: cst.Call
    method: str
    dists: List[DistRef]
    values: List[cst.BaseExpression]
    statement: Optional[cst.SimpleStatementLine]
    scope: "Scope"
    state: Optional[RegionEntry]
    uncast: List[cst.BaseExpression]
    tainted: List[Tuple[cst.BaseExpression, int]]  # (input, line of the region that made it)
    position: CodeRange

    @property
    def constructor_visible(self) -> bool:
        return bool(self.dists) and not any(_has_star(d) for d in self.dists)

    @property
    def label(self) -> str:
        if self.method == "kl_divergence":
            return "kl_divergence"
        if self.dists:
            return f"{self.dists[0].qualname.rsplit('.', 1)[-1]}.{self.method}"
        return self.method


def _has_star(ref: DistRef) -> bool:
    return ref.has_star or any(_has_star(c) for c in ref.components)


@dataclass
class CallRecord:
    kind: str  # "name" or "self"
    name: str
    scope: "Scope"
    state: Optional[RegionEntry]
    line: int
    protected: bool  # every argument already float32: the callee gets wide inputs


@dataclass
class Scope:
    """One function (or the module): its local region stack and bindings."""

    key: str
    display: str
    class_name: Optional[str]
    parent: Optional["Scope"]
    regions: List[RegionEntry] = field(default_factory=list)
    factories: Dict[str, Union[AutocastFactory, RegionSpec]] = field(default_factory=dict)
    dist_bindings: Dict[str, DistRef] = field(default_factory=dict)
    wide_names: Set[str] = field(default_factory=set)
    tainted: Dict[str, int] = field(default_factory=dict)
    nested: Dict[str, str] = field(default_factory=dict)
    sites: List[Site] = field(default_factory=list)
    calls: List[CallRecord] = field(default_factory=list)

    def effective(self) -> Optional[RegionEntry]:
        """The region that decides autocast here; a disabled region for another device is transparent."""
        stack = self.regions
        for index in range(len(stack) - 1, -1, -1):
            entry = stack[index]
            if entry.spec.enabled:
                return entry
            outer = next((o for o in reversed(stack[:index]) if o.spec.enabled), None)
            if outer is None or entry.spec.device is None or outer.spec.device in (None, entry.spec.device):
                return entry
        return None

    def lookup_factory(self, name: str) -> Optional[Union[AutocastFactory, RegionSpec]]:
        scope: Optional[Scope] = self
        while scope is not None:
            if name in scope.factories:
                return scope.factories[name]
            scope = scope.parent
        return None


@dataclass
class Diagnosis:
    """A finding before it becomes plain data: the site, its rule and its region."""

    code: str
    site: Site
    region: RegionEntry
    chain: Tuple[str, ...] = ()


@dataclass
class ModuleAnalysis:
    module: cst.Module
    imports: ImportTable
    diagnoses: List[Diagnosis]
    scopes: Dict[str, Scope]


def _names_in(node: cst.CSTNode) -> Iterator[str]:
    """Variable names an expression reads (attribute names and keywords excluded)."""
    if isinstance(node, cst.Name):
        yield node.value
        return
    if isinstance(node, cst.Attribute):
        yield from _names_in(node.value)
        return
    if isinstance(node, cst.Arg):
        yield from _names_in(node.value)
        return
    for child in node.children:
        yield from _names_in(child)


def _target_names(target: cst.BaseExpression) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


class _Collector(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, imports: ImportTable, options: AnalysisOptions) -> None:
        super().__init__()
        self.module = module
        self.imports = imports
        self.options = options
        self.scope = Scope(MODULE_KEY, "<module>", None, None)
        self.scopes: Dict[str, Scope] = {MODULE_KEY: self.scope}
        self.class_stack: List[str] = []
        self.containers: List[str] = []  # "class" / "function", innermost last
        self.class_bases: Dict[str, List[str]] = {}
        self.statements: List[cst.SimpleStatementLine] = []
        self.pushed: Dict[int, int] = {}  # id(With) -> regions pushed

    # --- helpers -----------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> int:
        return self.get_metadata(PositionProvider, node).start.line

    def _wide(self, node: cst.BaseExpression) -> bool:
        scope = self.scope
        return dtypes.is_wide(node, self.imports, lambda name: name in scope.wide_names)

    def _dist_class(self, func: cst.BaseExpression) -> Optional[str]:
        return dtypes.distribution_class(func, self.imports, self.options.extend_distributions)

    def _dist_ref(self, node: cst.BaseExpression) -> Optional[DistRef]:
        """A constructor call, or a local name bound to one, as a DistRef."""
        if isinstance(node, cst.Name):
            return self.scope.dist_bindings.get(node.value)
        if not isinstance(node, cst.Call):
            return None
        qualname = self._dist_class(node.func)
        if qualname is None:
            return None
        ref = DistRef(node, qualname, None)
        position = 0
        for arg in node.args:
            if arg.star:
                ref.has_star = True
                continue
            index = position if arg.keyword is None else None
            if arg.keyword is None:
                position += 1
            if dtypes.is_non_tensor_arg(qualname, arg, index) or dtypes.is_number(arg.value):
                continue
            component = self._dist_ref(arg.value)
            if component is not None:
                ref.components.append(component)
            elif not self._is_non_tensor_call(arg.value):
                ref.inputs.append(arg.value)
        return ref

    def _is_non_tensor_call(self, node: cst.BaseExpression) -> bool:
        """Transforms and constraints passed to a constructor are not tensors."""
        if isinstance(node, (cst.List, cst.Tuple)):
            return all(self._is_non_tensor_call(el.value) for el in node.elements)
        if isinstance(node, cst.Call):
            names = self.imports.qualnames(node.func)
            return any(n.startswith("torch.distributions.transforms.") for n in names)
        return False

    def _region_from_with_item(self, item: cst.WithItem) -> Optional[RegionSpec]:
        expr = item.item
        extra = self.options.extend_autocast
        if isinstance(expr, cst.Call):
            factory = factory_of(expr.func, self.imports, extra)
            if factory is None and isinstance(expr.func, cst.Name):
                bound = self.scope.lookup_factory(expr.func.value)
                factory = bound if isinstance(bound, AutocastFactory) else None
            if factory is not None:
                return region_spec(factory, expr.args, self.imports, self.module)
        elif isinstance(expr, cst.Name):
            bound = self.scope.lookup_factory(expr.value)
            if isinstance(bound, RegionSpec):
                return bound
        return None

    def _autocast_value(self, value: cst.BaseExpression) -> Optional[Union[AutocastFactory, RegionSpec]]:
        """What `name = value` binds: an autocast factory, a region object, or nothing."""
        extra = self.options.extend_autocast
        factory = factory_of(value, self.imports, extra)  # an alias or functools.partial(...)
        if factory is not None:
            return factory
        if isinstance(value, cst.Call):
            called = factory_of(value.func, self.imports, extra)
            if called is None and isinstance(value.func, cst.Name):
                bound = self.scope.lookup_factory(value.func.value)
                called = bound if isinstance(bound, AutocastFactory) else None
            if called is not None:
                return region_spec(called, value.args, self.imports, self.module)
        return None

    # --- scopes --------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self.class_stack[-1] + "." if self.containers and self.containers[-1] == "class" else ""
        name = outer + node.name.value
        self.class_stack.append(name)
        self.containers.append("class")
        self.class_bases[name] = [dotted_name(b.value) or "" for b in node.bases]

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()
        self.containers.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        name = node.name.value
        parent = self.scope
        container = self.containers[-1] if self.containers else "module"
        if container == "class":
            key = display = f"{self.class_stack[-1]}.{name}"
            class_name: Optional[str] = self.class_stack[-1]
        elif container == "function":
            key = f"{parent.key}.<locals>.{name}"
            display = f"{parent.display}.{name}"
            class_name = parent.class_name
            parent.nested[name] = key
        else:
            key = display = name
            class_name = None
        scope = Scope(key, display, class_name, parent)
        for decorator in node.decorators:
            spec = self._decorator_region(decorator.decorator)
            if spec is not None:
                scope.regions.append(RegionEntry(spec, self._line(decorator), decorator))
        self.scopes.setdefault(key, scope)
        self.scope = scope
        self.containers.append("function")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent
        self.containers.pop()

    def _decorator_region(self, expr: cst.BaseExpression) -> Optional[RegionSpec]:
        extra = self.options.extend_autocast
        if isinstance(expr, cst.Call):
            factory = factory_of(expr.func, self.imports, extra)
            return None if factory is None else region_spec(factory, expr.args, self.imports, self.module)
        factory = factory_of(expr, self.imports, extra)
        return None if factory is None else region_spec(factory, (), self.imports, self.module)

    # --- regions -------------------------------------------------------------
    def visit_With_body(self, node: cst.With) -> None:
        pushed = 0
        for item in node.items:
            spec = self._region_from_with_item(item)
            if spec is not None:
                self.scope.regions.append(RegionEntry(spec, self._line(node), node))
                pushed += 1
        self.pushed[id(node)] = pushed

    def leave_With_body(self, node: cst.With) -> None:
        for _ in range(self.pushed.pop(id(node), 0)):
            self.scope.regions.pop()

    # --- statements and bindings ---------------------------------------------
    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statements.append(node)

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine) -> None:
        self.statements.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        # A compound statement's body: its header is no longer "the statement".
        self.statements.append(None)  # type: ignore[arg-type]

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.statements.pop()

    def leave_Assign(self, original_node: cst.Assign) -> None:
        names = [n for t in original_node.targets for n in _target_names(t.target)]
        single = (
            original_node.targets[0].target.value
            if len(original_node.targets) == 1 and isinstance(original_node.targets[0].target, cst.Name)
            else None
        )
        self._bind(names, single, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            names = _target_names(original_node.target)
            single = original_node.target.value if isinstance(original_node.target, cst.Name) else None
            self._bind(names, single, original_node.value)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        names = _target_names(original_node.target)
        wide = all(n in self.scope.wide_names for n in names) and self._wide(original_node.value)
        self._bind(names, None, original_node.value, keep_wide=wide)

    def _bind(
        self, names: Sequence[str], single: Optional[str], value: cst.BaseExpression, keep_wide: bool = False
    ) -> None:
        scope = self.scope
        wide = keep_wide or (single is not None and self._wide(value))
        dist = self._dist_ref(value) if single is not None else None
        autocast = self._autocast_value(value) if single is not None else None
        state = scope.effective()
        reads = set(_names_in(value))
        made_in = state.line if state is not None and state.is_float16 else None
        if made_in is None and not wide:
            made_in = next((scope.tainted[n] for n in sorted(reads) if n in scope.tainted), None)
        for name in names:
            scope.wide_names.discard(name)
            scope.dist_bindings.pop(name, None)
            scope.factories.pop(name, None)
            scope.tainted.pop(name, None)
            if wide:
                scope.wide_names.add(name)
            elif made_in is not None:
                scope.tainted[name] = made_in
        if single is not None and dist is not None:
            scope.dist_bindings[single] = DistRef(dist.ctor, dist.qualname, single, dist.components, dist.inputs,
                                                  dist.has_star)
        if single is not None and autocast is not None:
            scope.factories[single] = autocast

    # --- calls ---------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        site = self._site(node)
        if site is not None:
            self.scope.sites.append(site)
            return
        self._record_call(node)

    def _record_call(self, node: cst.Call) -> None:
        func = node.func
        kind: Optional[str] = None
        if isinstance(func, cst.Name):
            kind, name = "name", func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in (
            "self",
            "cls",
        ):
            kind, name = "self", func.attr.value
        if kind is None:
            return
        args = [a.value for a in node.args]
        protected = bool(args) and all(self._wide(a) for a in args)
        self.scope.calls.append(CallRecord(kind, name, self.scope, self.scope.effective(), self._line(node), protected))

    def _site(self, node: cst.Call) -> Optional[Site]:
        func = node.func
        method: Optional[str] = None
        dists: List[DistRef] = []
        values: List[cst.BaseExpression] = []
        if isinstance(func, cst.Attribute) and func.attr.value in VALUE_METHODS | KNOWN_DIST_METHODS | {"log_prob"}:
            method = func.attr.value
            receiver = self._dist_ref(func.value)
            if receiver is None and method != "log_prob":
                return None
            dists = [receiver] if receiver is not None else []
            if method in VALUE_METHODS:
                values = [a.value for a in node.args if not a.star]
        elif self.imports.matches(func, dtypes.KL_NAMES):
            method = "kl_divergence"
            dists = [d for d in (self._dist_ref(a.value) for a in node.args[:2]) if d is not None]
            if not dists:
                return None
        if method is None:
            return None
        inputs = [i for d in dists for i in _all_inputs(d)] + [v for v in values if not dtypes.is_number(v)]
        uncast = [i for i in inputs if not self._wide(i)]
        scope = self.scope
        tainted = []
        for expr in uncast:
            line = next((scope.tainted[n] for n in _names_in(expr) if n in scope.tainted), None)
            if line is not None:
                tainted.append((expr, line))
        statement = self.statements[-1] if self.statements else None
        return Site(
            node, method, dists, values, statement, scope, scope.effective(), uncast, tainted,
            self.get_metadata(PositionProvider, node),
        )


def _all_inputs(ref: DistRef) -> List[cst.BaseExpression]:
    return list(ref.inputs) + [i for c in ref.components for i in _all_inputs(c)]


def _resolve_call(call: CallRecord, scopes: Dict[str, Scope], bases: Dict[str, List[str]]) -> Optional[Scope]:
    if call.kind == "name":
        scope: Optional[Scope] = call.scope
        while scope is not None:
            if call.name in scope.nested:
                return scopes.get(scope.nested[call.name])
            scope = scope.parent
        return scopes.get(call.name)
    pending = [call.scope.class_name] if call.scope.class_name else []
    seen: Set[str] = set()
    while pending:  # the class, then its bases in this file, in declaration order
        cls = pending.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        target = scopes.get(f"{cls}.{call.name}")
        if target is not None:
            return target
        pending.extend(b.rsplit(".", 1)[-1] for b in bases.get(cls, []))
    return None


def _diagnose(collector: _Collector) -> List[Diagnosis]:
    diagnoses: List[Diagnosis] = []
    reported: Set[int] = set()
    for scope in collector.scopes.values():
        for site in scope.sites:
            state = site.state
            if state is None:
                continue
            if state.is_float16 and site.uncast:
                diagnoses.append(Diagnosis("AMP001", site, state))
                reported.add(id(site))
            elif not state.spec.enabled and site.tainted:
                diagnoses.append(Diagnosis("AMP002", site, state))
                reported.add(id(site))
    diagnoses.extend(_reached(collector, reported))
    return diagnoses


def _reached(collector: _Collector, reported: Set[int]) -> List[Diagnosis]:
    """AMP001 for sites in helpers called, transitively, from a float16 region."""
    scopes = collector.scopes
    queue: Deque[Tuple[Scope, RegionEntry, Tuple[str, ...]]] = deque()
    for scope in scopes.values():
        for call in scope.calls:
            if call.state is not None and call.state.is_float16 and not call.protected:
                target = _resolve_call(call, scopes, collector.class_bases)
                if target is not None:
                    queue.append((target, call.state, (target.display,)))
    visited: Set[str] = set()
    found: List[Diagnosis] = []
    while queue:
        scope, region, chain = queue.popleft()
        if scope.key in visited:
            continue
        visited.add(scope.key)
        for site in scope.sites:
            if site.state is None and site.uncast and id(site) not in reported:
                reported.add(id(site))
                found.append(Diagnosis("AMP001", site, region, chain))
        for call in scope.calls:
            if call.state is None and not call.protected:
                target = _resolve_call(call, scopes, collector.class_bases)
                if target is not None and target.key not in visited:
                    queue.append((target, region, chain + (target.display,)))
    return found


def analyze_module(module: cst.Module, options: AnalysisOptions = AnalysisOptions()) -> ModuleAnalysis:
    """Analyze a parsed module; raises nothing for valid LibCST trees."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    imports = collect_imports(module)
    collector = _Collector(module, imports, options)
    wrapper.visit(collector)
    return ModuleAnalysis(module, imports, _diagnose(collector), collector.scopes)


def site_spec(site: Site, module: cst.Module, imports: ImportTable) -> SiteSpec:
    """The plain-data description of a site that the verifier rebuilds."""
    code = module.code_for_node
    scope = site.scope

    def wide(node: cst.BaseExpression) -> bool:
        return dtypes.is_wide(node, imports, lambda name: name in scope.wide_names)

    def arg_spec(arg: cst.Arg, position: Optional[int]) -> ArgSpec:
        name = arg.keyword.value if arg.keyword is not None else None
        return ArgSpec(name, position, code(arg.value), wide(arg.value), dtypes.is_number(arg.value))

    def dist_spec(ref: DistRef) -> DistSpec:
        args: List[ArgSpec] = []
        components: List[DistSpec] = []
        comp_nodes = {id(c.ctor): c for c in ref.components}
        position = 0
        for arg in ref.ctor.args:
            index = position if arg.keyword is None else None
            if arg.keyword is None:
                position += 1
            if arg.star:
                continue
            component = next((c for c in ref.components if c.ctor is arg.value or c.binding == _name_of(arg.value)),
                             None)
            if component is not None and id(component.ctor) in comp_nodes:
                components.append(dist_spec(component))
            else:
                args.append(arg_spec(arg, index))
        return DistSpec(ref.qualname, tuple(args), tuple(components))

    values = []
    position = 0
    for arg in site.call.args:
        if site.method == "kl_divergence" or arg.star:
            break
        values.append(arg_spec(arg, position if arg.keyword is None else None))
        position += 1
    return SiteSpec(site.method, tuple(dist_spec(d) for d in site.dists), tuple(values))


def _name_of(node: cst.BaseExpression) -> Optional[str]:
    return node.value if isinstance(node, cst.Name) else None
