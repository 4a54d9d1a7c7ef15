"""The one analysis every front end calls: regions, probability sites, findings.

A single LibCST pass records, per function, the probability computations and
calls it makes together with the autocast state at that point (a stack of
regions, local to the function). A second, cheap pass follows calls made in
float16 regions into helpers and methods of the same file. No LibCST metadata
is used: positions of calls, decorators and `with` statements come from
`amplint.positions`, names from `names.ImportTable`.

Project mode (`AnalysisOptions.project`) makes the same pass record what the
cross-file walk in `amplint.project` needs: every dotted call with the
instance its receiver is bound to, class bases and `self.` attributes, and
framework constructor calls. It also reads the framework regions that are
file-local (Accelerate's `accelerator.autocast()` and prepared models) and a
region dtype held in a `self.` attribute. The walk hands back, per file,
"entry contexts" (a function of this file entered from a region elsewhere);
`analyze_module(..., entries=...)` turns them into diagnoses here, so the
codemod gets the same `Diagnosis` objects whichever way a site was reached.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Deque, Dict, FrozenSet, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import CodeRange

from amplint import dtypes
from amplint.cstwalk import children, walk
from amplint.model import ArgSpec, DistSpec, Precision, RegionInfo, SiteSpec
from amplint.names import ImportTable, collect_imports, dotted_name
from amplint.positions import positions
from amplint.project import frameworks
from amplint.project.summary import FrameworkCall
from amplint.receivers import Receivers
from amplint.regions import AutocastFactory, RegionSpec, bound_argument, factory_of, region_spec
from amplint.screen import SITE_METHODS

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.summary import EntryContext

VALUE_METHODS = frozenset({"log_prob", "cdf", "icdf"})
FLOAT16_LIKE = frozenset({Precision.FLOAT16, Precision.MAYBE_FLOAT16})
MODULE_KEY = "<module>"
# The nodes whose positions the analysis reads (`amplint.positions`): sites and calls, region lines.
POSITIONED = frozenset({cst.Call, cst.Decorator, cst.With})


@dataclass(frozen=True)
class AnalysisOptions:
    """The parts of the configuration the analysis itself needs."""

    extend_autocast: FrozenSet[str] = frozenset()
    extend_distributions: FrozenSet[str] = frozenset()
    project: bool = False  # record what the cross-file walk needs, and read file-local framework regions


@dataclass
class RegionEntry:
    spec: RegionSpec
    line: int
    node: Optional[cst.CSTNode]  # None for a region in another file (project mode)
    label: str = "autocast region"  # how messages name it, e.g. 'Accelerator(mixed_precision="fp16") region'

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
    kind: str  # "name" (`f(...)`), "self" (`self.m(...)`/`cls.m(...)`), "attr" (any other dotted callee)
    # or "method" (`name` is the scope key of a method of this file's class the receiver is known to be)
    name: str
    scope: "Scope"
    state: Optional[RegionEntry]
    line: int
    protected: bool  # every argument already float32: the callee gets wide inputs
    column: int = 0
    callee: str = ""  # the dotted callee as written, e.g. "self.policy.act"
    text: str = ""  # the call as written, shortened (kept for calls in float16 regions: a chain starts there)
    receiver: Optional[Tuple[str, bool]] = None  # (class expression, exact) the callee's root is bound to
    root_local: bool = False  # the callee's root is a local name of the function (a parameter or assigned)


@dataclass
class AccelBinding:
    """A name bound to `Accelerator(...)` (rule A): the region its autocast/prepare gives, if any."""

    spec: Optional[RegionSpec]
    line: int
    node: cst.CSTNode
    label: str  # the construction as messages show it: 'Accelerator(mixed_precision="fp16")'


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
    node: Optional[cst.CSTNode] = None  # the FunctionDef (the Module for MODULE_KEY): rescanned only on demand
    # Project mode only.
    params: Set[str] = field(default_factory=set)
    assigned: Set[str] = field(default_factory=set)
    instances: Dict[str, Tuple[str, bool]] = field(default_factory=dict)  # name -> (class expression, exact)
    accelerators: Dict[str, AccelBinding] = field(default_factory=dict)
    prepared: Dict[str, AccelBinding] = field(default_factory=dict)  # models returned by accelerator.prepare

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
    origin: str = ""  # the region's file (display path) when it is not this file's own analysis that found it
    origin_file: str = ""  # the same file as discovered (like `Finding.path`)


@dataclass
class ModuleAnalysis:
    module: cst.Module
    imports: ImportTable
    diagnoses: List[Diagnosis]
    scopes: Dict[str, Scope]
    class_bases: Dict[str, List[str]] = field(default_factory=dict)
    class_attrs: Dict[str, Dict[str, Tuple[str, bool]]] = field(default_factory=dict)  # project mode
    framework_calls: List[FrameworkCall] = field(default_factory=list)  # project mode


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
    for child in children(node):
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
    def __init__(self, module: cst.Module, imports: ImportTable, options: AnalysisOptions) -> None:
        super().__init__()
        self.module = module
        self.positions = positions(module, POSITIONED)
        self.imports = imports
        self.options = options
        self.scope = Scope(MODULE_KEY, "<module>", None, None, node=module)
        self.scopes: Dict[str, Scope] = {MODULE_KEY: self.scope}
        self.class_stack: List[str] = []
        self.containers: List[str] = []  # "class" / "function", innermost last
        self.class_bases: Dict[str, List[str]] = {}
        self.class_defs: Dict[str, List[cst.ClassDef]] = {}  # a name defined twice has two nodes
        self.statements: List[cst.SimpleStatementLine] = []
        self.pushed: Dict[int, int] = {}  # id(With) -> regions pushed
        # Project mode only.
        self.class_nodes: List[cst.ClassDef] = []
        self.class_attrs: Dict[str, Dict[str, Tuple[str, bool]]] = {}
        self.class_accels: Dict[str, Dict[str, AccelBinding]] = {}
        self.class_prepared: Dict[str, Dict[str, AccelBinding]] = {}
        self.attr_dtypes: Dict[Tuple[str, str], Optional[Precision]] = {}
        self.framework_calls: List[FrameworkCall] = []

    # --- helpers -----------------------------------------------------------
    def _line(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

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
                return self._refined(region_spec(factory, expr.args, self.imports, self.module), factory, expr.args)
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

    def _refined(self, spec: RegionSpec, factory: AutocastFactory, args: Sequence[cst.Arg]) -> RegionSpec:
        """Project mode: `dtype=self.amp_dtype` takes the precision of what the class assigns to it."""
        if not self.options.project or spec.precision is not Precision.MAYBE_FLOAT16 or not self.class_nodes:
            return spec
        dtype = bound_argument(factory, args, "dtype")
        if not (isinstance(dtype, cst.Attribute) and isinstance(dtype.value, cst.Name) and dtype.value.value == "self"):
            return spec
        key = (self.class_stack[-1], dtype.attr.value)
        if key not in self.attr_dtypes:
            self.attr_dtypes[key] = _attribute_dtype(self.class_nodes[-1], dtype.attr.value, self.imports)
        precision = self.attr_dtypes[key]
        return spec if precision is None else replace(spec, precision=precision)

    def _accelerate_region(self, expr: cst.BaseExpression) -> Optional[AccelBinding]:
        """Rule A: `with accelerator.autocast():` where `accelerator` is bound to `Accelerator(...)`."""
        if not (self.options.project and isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
                and expr.func.attr.value == "autocast"):
            return None
        return self._accelerator(expr.func.value)

    def _accelerator(self, node: cst.BaseExpression) -> Optional[AccelBinding]:
        if isinstance(node, cst.Name):
            return self._lookup(node.value, "accelerators")  # type: ignore[return-value]
        attr = _self_attribute(node)
        if attr is not None and self.scope.class_name is not None:
            return self.class_accels.get(self.scope.class_name, {}).get(attr)
        return None

    def _accelerator_ctor(self, value: cst.BaseExpression) -> Optional[AccelBinding]:
        if not (isinstance(value, cst.Call) and self.imports.matches(value.func, frameworks.ACCELERATOR)):
            return None
        mixed = next((a for a in value.args if a.keyword is not None and a.keyword.value == "mixed_precision"), None)
        literal = None if mixed is None else _literal(mixed.value, self.module)
        double_star = any(a.star == "**" for a in value.args)
        precision = frameworks.accelerate_precision(literal, double_star)
        spec = None if precision is None else RegionSpec(precision, True, "cuda", '"cuda"')
        label = frameworks.describe("Accelerator", "mixed_precision", literal, double_star)
        return AccelBinding(spec, self._line(value), value, label)

    def _lookup(self, name: str, table: str) -> object:
        """`name` in the scope chain's `table`; a local parameter or assignment without it hides outer ones."""
        scope: Optional[Scope] = self.scope
        while scope is not None:
            found = getattr(scope, table).get(name)
            if found is not None:
                return found
            if name in scope.params or name in scope.assigned:
                return None
            scope = scope.parent
        return None

    # --- scopes --------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self.class_stack[-1] + "." if self.containers and self.containers[-1] == "class" else ""
        name = outer + node.name.value
        self.class_stack.append(name)
        self.class_nodes.append(node)
        self.containers.append("class")
        self.class_bases[name] = [dotted_name(b.value) or "" for b in node.bases]
        self.class_defs.setdefault(name, []).append(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()
        self.class_nodes.pop()
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
        scope = Scope(key, display, class_name, parent, node=node)
        if self.options.project:
            self._record_params(scope, node.params, container == "class")
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

    def _record_params(self, scope: Scope, params: cst.Parameters, method: bool) -> None:
        """Parameter names, and the project class a parameter's annotation names (not exact: a subclass fits)."""
        every = [*params.posonly_params, *params.params, *params.kwonly_params]
        every += [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        for index, param in enumerate(every):
            name = param.name.value
            scope.params.add(name)
            if method and index == 0:
                continue
            annotation = _annotation_class(param.annotation.annotation) if param.annotation is not None else None
            if annotation is not None:
                scope.instances[name] = (annotation, False)

    def _decorator_region(self, expr: cst.BaseExpression) -> Optional[RegionSpec]:
        extra = self.options.extend_autocast
        if isinstance(expr, cst.Call):
            factory = factory_of(expr.func, self.imports, extra)
            if factory is None:
                return None
            return self._refined(region_spec(factory, expr.args, self.imports, self.module), factory, expr.args)
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
                continue
            accel = self._accelerate_region(item.item)
            if accel is not None and accel.spec is not None:
                label = f"accelerator.autocast() region of {accel.label}"
                self.scope.regions.append(RegionEntry(accel.spec, self._line(node), node, label))
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
        if self.options.project:
            for target in original_node.targets:
                self._bind_project(target.target, original_node.value)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            names = _target_names(original_node.target)
            single = original_node.target.value if isinstance(original_node.target, cst.Name) else None
            self._bind(names, single, original_node.value)
            if self.options.project:
                self._bind_project(original_node.target, original_node.value)

    def visit_For(self, node: cst.For) -> None:
        if self.options.project:  # a loop variable is a local name of unknown class
            self._forget(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if self.options.project and node.asname is not None:
            self._forget(node.asname.name)

    def _forget(self, target: cst.BaseExpression) -> None:
        for name in _target_names(target):
            self.scope.assigned.add(name)
            self.scope.instances.pop(name, None)
            self.scope.accelerators.pop(name, None)
            self.scope.prepared.pop(name, None)

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
        made_in = state.line if state is not None and state.is_float16 else None
        if made_in is None and not wide and scope.tainted:
            made_in = next((scope.tainted[n] for n in sorted(set(_names_in(value))) if n in scope.tainted), None)
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

    def _bind_project(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Instances (`model = Net()`), accelerators and prepared models, on names and `self.` attributes."""
        # What the value is, read before the targets are rebound (`flow = accelerator.prepare(flow)`).
        accel = self._accelerator_ctor(value)
        prepare = self._prepare_call(value) if accel is None else None
        bound: List[Tuple[cst.BaseExpression, Optional[Tuple[str, bool]]]] = []
        if prepare is not None:
            targets = target.elements if isinstance(target, (cst.Tuple, cst.List)) else None
            pairs = [(t.value, a) for t, a in zip(targets, prepare[1])] if targets is not None else [
                (target, prepare[1][0])]
            bound = [(each, self._instance_of(arg)) for each, arg in pairs]
        elif accel is None:
            bound = [(target, self._instance_of(value))]
        self._forget(target)
        if accel is not None:
            self._set(target, accelerator=accel)
        for each, instance in bound:
            self._set(each, instance=instance, prepared=None if prepare is None else prepare[0])

    def _set(
        self,
        target: cst.BaseExpression,
        instance: Optional[Tuple[str, bool]] = None,
        accelerator: Optional[AccelBinding] = None,
        prepared: Optional[AccelBinding] = None,
    ) -> None:
        scope = self.scope
        if isinstance(target, cst.Name):
            name = target.value
            if instance is not None:
                scope.instances[name] = instance
            if accelerator is not None:
                scope.accelerators[name] = accelerator
            if prepared is not None:
                scope.prepared[name] = prepared
            return
        attr = _self_attribute(target)
        cls = scope.class_name
        if attr is None or cls is None:
            return
        if instance is not None:
            self.class_attrs.setdefault(cls, {})[attr] = instance
        if accelerator is not None:
            self.class_accels.setdefault(cls, {})[attr] = accelerator
        if prepared is not None:
            self.class_prepared.setdefault(cls, {})[attr] = prepared

    def _instance_of(self, value: cst.BaseExpression) -> Optional[Tuple[str, bool]]:
        """The class an expression is an instance of, as written: `Net(...)` or a name/attribute bound to one."""
        if isinstance(value, cst.Call):
            callee = dotted_name(value.func)
            return None if callee is None else (callee, True)
        if isinstance(value, cst.Name):
            return self._lookup(value.value, "instances")  # type: ignore[return-value]
        attr = _self_attribute(value)
        if attr is not None and self.scope.class_name is not None:
            return self.class_attrs.get(self.scope.class_name, {}).get(attr)
        return None

    def _prepare_call(
        self, value: cst.BaseExpression
    ) -> Optional[Tuple[AccelBinding, List[cst.BaseExpression]]]:
        """`accelerator.prepare(a, b)` with a known accelerator: rule A's prepared models."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value == "prepare" and value.args):
            return None
        accel = self._accelerator(value.func.value)
        if accel is None or any(a.star for a in value.args):
            return None
        return accel, [a.value for a in value.args]

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
        elif self.options.project and isinstance(func, cst.Attribute):
            kind, name = "attr", func.attr.value
        if kind is None:
            return
        args = [a.value for a in node.args]
        protected = bool(args) and all(self._wide(a) for a in args)
        if not self.options.project:
            self.scope.calls.append(
                CallRecord(kind, name, self.scope, self.scope.effective(), self._line(node), protected)
            )
            return
        callee = dotted_name(func)
        if callee is None:
            return
        self._record_project_call(node, kind, name, callee, protected)

    def _record_project_call(self, node: cst.Call, kind: str, name: str, callee: str, protected: bool) -> None:
        scope = self.scope
        position = self.positions[node].start
        state = scope.effective()
        root = callee.split(".", 1)[0]
        parts = callee.split(".")
        prepared: Optional[AccelBinding] = None
        if kind == "name":
            prepared = self._lookup(root, "prepared")  # type: ignore[assignment]
        elif len(parts) == 2 and root == "self" and scope.class_name is not None:
            prepared = self.class_prepared.get(scope.class_name, {}).get(parts[1])
        if prepared is not None and prepared.spec is not None:  # rule A: the prepared forward enables autocast
            label = f"prepared-model region of {prepared.label}"
            state = RegionEntry(prepared.spec, prepared.line, prepared.node, label)
        receiver = None if root in ("self", "cls") else self._lookup(root, "instances")
        local = False
        chain: Optional[Scope] = scope
        while chain is not None and chain.key != MODULE_KEY:
            local = local or root in chain.params or root in chain.assigned
            chain = chain.parent
        text = ""
        if state is not None and state.is_float16:
            text = " ".join(self.module.code_for_node(node).split())
            text = text if len(text) <= 40 else f"{callee}(...)"
        self.scope.calls.append(
            CallRecord(kind, name, scope, state, position.line, protected, position.column + 1, callee, text,
                       receiver, local)  # type: ignore[arg-type]
        )
        if callee.rsplit(".", 1)[-1].endswith(("Trainer", "TrainingArguments")):
            self._record_framework_call(node, callee, position.line, position.column + 1)

    def _record_framework_call(self, node: cst.Call, callee: str, line: int, column: int) -> None:
        """Trainer / TrainingArguments constructions, for rules L and H (read by `amplint.project`)."""
        keywords = tuple(
            (a.keyword.value, _literal(a.value, self.module)) for a in node.args
            if a.keyword is not None and a.keyword.value in ("precision", "fp16", "bf16")
        )
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        model = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "model"), None)
        if model is None and positional:
            model = positional[0]
        self.framework_calls.append(
            FrameworkCall(
                qualnames=tuple(sorted(self.imports.qualnames(node.func))),
                callee=callee,
                line=line,
                column=column,
                keywords=keywords,
                double_star=any(a.star == "**" for a in node.args),
                function=self.scope.key,
                model=None if model is None else self._instance_of(model),
            )
        )

    def _site(self, node: cst.Call) -> Optional[Site]:
        func = node.func
        method: Optional[str] = None
        dists: List[DistRef] = []
        values: List[cst.BaseExpression] = []
        if isinstance(func, cst.Attribute) and func.attr.value in SITE_METHODS:
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
        for expr in uncast if scope.tainted else ():
            line = next((scope.tainted[n] for n in _names_in(expr) if n in scope.tainted), None)
            if line is not None:
                tainted.append((expr, line))
        statement = self.statements[-1] if self.statements else None
        return Site(
            node, method, dists, values, statement, scope, scope.effective(), uncast, tainted,
            self.positions[node],
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
    if call.kind == "method":
        return scopes.get(call.name)
    if call.kind != "self":
        return None
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


def _drop_non_distributions(collector: _Collector) -> None:
    """Forget `x.log_prob(v)` sites whose receiver is known not to be a distribution (`amplint.receivers`).

    Only sites that could be reported are examined (no visible constructor,
    an uncast input), so files without them pay nothing. A receiver of a class
    of this file becomes a call into its method instead: a wrapper whose
    `log_prob` builds a distribution is still reached from the region.
    """
    receivers: Optional[Receivers] = None
    for scope in list(collector.scopes.values()):
        for site in list(scope.sites):
            if site.dists or not site.uncast or not isinstance(site.call.func, cst.Attribute):
                continue
            if receivers is None:
                receivers = Receivers(collector.module, collector.imports, collector.class_defs,
                                      collector.options.extend_distributions)
            chain = [s.node for s in _scope_chain(scope) if s.node is not None]
            callees = receivers.callees(site.call.func.value, chain, scope.class_name)
            if not callees or not all(receivers.is_non_distribution_class(c) for c in callees):
                continue
            scope.sites.remove(site)
            for callee in callees:
                _call_method(collector.scopes, receivers, scope, site, callee)


def _scope_chain(scope: Scope) -> Iterator[Scope]:
    each: Optional[Scope] = scope
    while each is not None:
        yield each
        each = each.parent


def _call_method(scopes: Dict[str, Scope], receivers: Receivers, scope: Scope, site: Site,
                 callee: cst.BaseExpression) -> None:
    """Record `C(...).log_prob(v)` on a class of this file as a call of `C.log_prob` (or a base's)."""
    local = receivers.file_class(callee)
    owners = [] if local is None else receivers.method_owners(local)
    key = next((k for k in (f"{owner}.{site.method}" for owner in owners) if k in scopes), None)
    if key is not None:
        start = site.position.start
        scope.calls.append(CallRecord("method", key, scope, site.state, start.line, False, start.column + 1))


def _diagnose(collector: _Collector) -> List[Diagnosis]:
    _drop_non_distributions(collector)
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


def _entered(scopes: Dict[str, Scope], entries: Sequence["EntryContext"], reported: Set[int]) -> List[Diagnosis]:
    """AMP001 for sites of functions the project walk entered from a region in another place.

    The file's own findings come first; a site reached several ways is reported
    once, with the shortest chain (then the first region, in path order).
    """
    found: List[Diagnosis] = []
    order = sorted(entries, key=lambda e: (len(e.chain), e.region_path, e.region.line, e.function, e.chain))
    for entry in order:
        scope = scopes.get(entry.function)
        if scope is None:
            continue
        info = entry.region
        region = RegionEntry(RegionSpec(info.precision, info.enabled, info.device, info.device_code), info.line,
                             None, entry.label)
        for site in scope.sites:
            if site.state is None and site.uncast and id(site) not in reported:
                reported.add(id(site))
                found.append(Diagnosis("AMP001", site, region, entry.chain, entry.region_path, entry.region_file))
    return found


def analyze_module(
    module: cst.Module,
    options: AnalysisOptions = AnalysisOptions(),
    entries: Sequence["EntryContext"] = (),
    imports: Optional[ImportTable] = None,
) -> ModuleAnalysis:
    """Analyze a parsed module; raises nothing for valid LibCST trees.

    `entries` are functions of this module entered from float16 regions found by
    the project walk; their exposed sites become AMP001 with the walk's chain.
    `imports` is the file's `names.import_table`, when the caller has CPython's tree.
    """
    if imports is None:
        imports = collect_imports(module)
    collector = _Collector(module, imports, options)
    walk(module, collector)
    diagnoses = _diagnose(collector)
    if entries:
        diagnoses.extend(_entered(collector.scopes, entries, {id(d.site) for d in diagnoses}))
    return ModuleAnalysis(module, imports, diagnoses, collector.scopes, collector.class_bases,
                          collector.class_attrs, collector.framework_calls)


def with_entries(analysis: ModuleAnalysis, entries: Sequence["EntryContext"]) -> ModuleAnalysis:
    """`analysis` plus the diagnoses `entries` add: what `analyze_module(..., entries)` gives, without a re-parse."""
    added = _entered(analysis.scopes, entries, {id(d.site) for d in analysis.diagnoses})
    return replace(analysis, diagnoses=list(analysis.diagnoses) + added)


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
            component = next((c for c in ref.components
                              if c.ctor is arg.value or (c.binding is not None and c.binding == _name_of(arg.value))),
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


def _self_attribute(node: cst.BaseExpression) -> Optional[str]:
    """`x` for `self.x`, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _literal(node: cst.BaseExpression, module: cst.Module) -> frameworks.LiteralArg:
    """A framework argument: its literal value when it is one (string, number, True/False/None)."""
    text = module.code_for_node(node)
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        if isinstance(value, str):
            return frameworks.LiteralArg(text, value, True)
    if isinstance(node, cst.Integer):
        return frameworks.LiteralArg(text, int(node.evaluated_value), True)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return frameworks.LiteralArg(text, {"True": True, "False": False, "None": None}[node.value], True)
    return frameworks.LiteralArg(text)


def _annotation_class(node: cst.BaseExpression) -> Optional[str]:
    """The class an annotation names: `Net`, `models.Net`, `"Net"`, `Optional[Net]`, `Net | None`."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = dotted_name(node)
        return None if name in ("None", "Any", "typing.Any") else name
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, str) and all(part.isidentifier() for part in value.strip().split(".")):
            return value.strip()
        return None
    if isinstance(node, cst.Subscript) and dotted_name(node.value) in ("Optional", "typing.Optional") and \
            len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return _annotation_class(node.slice[0].slice.value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(other, cst.Name) and other.value == "None":
                return _annotation_class(side)
    return None


class _AttributeAssignments(cst.CSTVisitor):
    """Every value a class assigns to `self.<attr>` (or to `<attr>` in its body)."""

    def __init__(self, attr: str) -> None:
        super().__init__()
        self.attr = attr
        self.values: List[cst.BaseExpression] = []
        self.depth = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.depth += 1
        return self.depth == 1  # not into nested classes

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if _self_attribute(target.target) == self.attr or (
                isinstance(target.target, cst.Name) and target.target.value == self.attr
            ):
                self.values.append(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and (_self_attribute(node.target) == self.attr or (
                isinstance(node.target, cst.Name) and node.target.value == self.attr)):
            self.values.append(node.value)


def _dtype_kinds(node: cst.BaseExpression, imports: ImportTable) -> Optional[Set[Precision]]:
    """The dtypes an expression may be (IfExp branches included); None when one is not a dtype literal."""
    if isinstance(node, cst.IfExp):
        body, orelse = _dtype_kinds(node.body, imports), _dtype_kinds(node.orelse, imports)
        return None if body is None or orelse is None else body | orelse
    names = imports.qualnames(node)
    from amplint.regions import BFLOAT16_NAMES, FLOAT16_NAMES, WIDE_FLOAT_NAMES

    if names & FLOAT16_NAMES:
        return {Precision.FLOAT16}
    if names & BFLOAT16_NAMES:
        return {Precision.BFLOAT16}
    if names & WIDE_FLOAT_NAMES:
        return {Precision.OTHER}
    return None


def _attribute_dtype(cls: cst.ClassDef, attr: str, imports: ImportTable) -> Optional[Precision]:
    """What `dtype=self.<attr>` computes in, from every assignment in the class; None when unknown.

    `self.amp_dtype = torch.bfloat16 if cfg.bf16 else torch.float32` is never
    float16, so its region is not a float16 region.
    """
    visitor = _AttributeAssignments(attr)
    walk(cls, visitor)
    kinds: Set[Precision] = set()
    for value in visitor.values:
        found = _dtype_kinds(value, imports)
        if found is None:
            return None
        kinds |= found
    if not kinds:
        return None
    if Precision.FLOAT16 in kinds:
        return Precision.FLOAT16 if kinds == {Precision.FLOAT16} else Precision.MAYBE_FLOAT16
    return Precision.BFLOAT16 if Precision.BFLOAT16 in kinds else Precision.OTHER
