"""The fact collector: one LibCST pass over a file that records scopes, regions, bindings, sites and calls.

It records, per function, the autocast state at each point (a stack of
regions, local to the function), which names hold wide (float32) values or
were made in a float16 region (dtype provenance), which names are bound to
distributions, autocast factories, instances, accelerators and prepared
models, every probability site (`amplint.facts.sites`) and every call. It
decides nothing: rules read the result (`FileFacts`).

No LibCST metadata is used: positions of calls, decorators, `with` statements
and site nodes come from `amplint.positions`, names from `names.ImportTable`.
Project mode (`AnalysisOptions.project`) also records what the cross-file walk
needs: dotted calls with the instance their receiver is bound to, class bases
and `self.` attributes, framework constructor calls, and the file-local
framework regions (Accelerate's `accelerator.autocast()` and prepared models).
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Dict, List, Optional, Sequence, Set, Tuple, Type

import libcst as cst

from amplint import dtypes
from amplint.facts import frameworks
from amplint.facts.containers import element_callee, element_classes, loop_elements
from amplint.facts.densitycalls import DENSITY
from amplint.facts.cstflow import CstFlow, is_none
from amplint.facts.cstwithregions import WithRegions
from amplint.facts.distrefs import requested_at, split_components
from amplint.facts.flowstate import Branches, augmented
from amplint.facts.signatures import distribution_arguments
from amplint.facts.frameworks import FrameworkCall
from amplint.facts.model import (
    MODULE_KEY, AccelBinding, AnalysisOptions, CallRecord, DistRef, RegionEntry, Requested, Scope, Site,
)
from amplint.facts.nodes import declared_class, literal_pairs, names_in, self_attribute, tainted_inputs
from amplint.facts.nodes import target_names
from amplint.facts.nodes import call_text, framework_call, param_names, record_params
from amplint.facts.nodes import trainer_model
from amplint.facts.mathenv import Env, Statements, class_bindings, scope_env
from amplint.facts.entry import Element
from amplint.facts.returns import ReturnIndex, given_ref, returned_element, unpacked
from amplint.facts.modulecalls import ELEMENT, expression_callee, without_module_hop
from amplint.facts.samemodule import CstParallelMarks, prepared_arguments, same_module
from amplint.facts.sites import DISTRIBUTION, SiteRecognizer, parameter_inputs, wide_result
from amplint.model import Precision
from amplint.names import ImportTable, dotted_name
from amplint.positions import PositionSource, positions, within

# Positions the collector reads: calls, decorators, `with` lines, float literals (epsilons), and site node types.
POSITIONED = frozenset({cst.Call, cst.Decorator, cst.With, cst.Float})


SELF_NAMES = ("self", "cls")  # a method's own receiver


class Collector(CstParallelMarks, CstFlow, WithRegions, cst.CSTVisitor):
    """The visitor behind `collect_facts`; also the `SiteContext` recognizers read the current state from."""

    def __init__(
        self, module: cst.Module, imports: ImportTable, options: AnalysisOptions,
        recognizers: Sequence[SiteRecognizer], source: PositionSource = None,
    ) -> None:
        super().__init__()
        self.module = module
        self.recognizers: Dict[type, Tuple[SiteRecognizer, ...]] = {}
        for recognizer in recognizers:
            self.recognizers[recognizer.node_type] = self.recognizers.get(recognizer.node_type, ()) + (recognizer,)
        self.positions = positions(module, POSITIONED | frozenset(self.recognizers), source=source)
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
        self.pending_pushed: Dict[int, int] = {}  # id(With) -> pending accelerator `with`s pushed (`PendingAccel`)
        self.stacks: List[Tuple[int, str]] = []  # (id(With), name) of each `with ExitStack() as name:` around
        # Project mode only.
        self.class_nodes: List[cst.ClassDef] = []
        self.class_attrs: Dict[str, Dict[str, Tuple[str, bool]]] = {}
        self.class_items: Dict[str, Dict[str, Tuple[str, ...]]] = {}  # container attributes' element classes
        self.class_accels: Dict[str, Dict[str, AccelBinding]] = {}
        self.class_prepared: Dict[str, Dict[str, AccelBinding]] = {}
        self.attr_dtypes: Dict[Tuple[str, str], Optional[Precision]] = {}
        self.framework_calls: List[FrameworkCall] = []
        self.math_envs: Dict[int, Env] = {}  # id(scope node) -> bindings the math recognizers follow
        self.bodies = Statements()  # the bindings of function bodies and classes, read once for every reader
        self.site_nodes: List[cst.CSTNode] = []  # recorded sites' nodes, for `inside_site`
        self.flow = Branches()  # the compound statements around the current one (`facts.flowstate`)
        self.claimed_sums: Set[int] = set()  # inner nodes of sums a recognizer judged whole
        # The qualified class a callee names, if a distribution's.
        self.dist_class = partial(dtypes.distribution_class, table=imports, extra=options.extend_distributions)
        # Not the collector's bound methods: the collector holds the index, and a cycle would keep the tree
        # until the cyclic collector ran (`amplint.collection`).
        self.returns = ReturnIndex(module, imports, self.dist_class, self.positions.line, self.bodies,
                                   options.builds_distributions)
        self.requested: List[Requested] = []  # the constructors `options.requests` names

    # --- helpers -----------------------------------------------------------
    def _wide(self, node: cst.BaseExpression, promote: bool = False) -> bool:
        scope, entry = self.scope, self.scope.effective()
        promoted = dtypes.promoted_by(entry.policy if promote and entry is not None else None, self.imports)
        return dtypes.is_wide(node, self.imports, lambda name: name in scope.wide_names, promoted) or wide_result(
            node, self)

    def _dist_ref(self, node: cst.BaseExpression) -> Optional[DistRef]:
        """A constructor call, or a local name bound to one, as a DistRef."""
        if isinstance(node, cst.Name):
            found = self.scope.dist_bindings.get(node.value)
            return found if found is not None or not self.options.arguments else given_ref(
                self.options.arguments, self.scope, node.value)
        if not isinstance(node, cst.Call):  # `net(x)[0]`, `out["dist"]` (an element a call returns), `self.dist`
            element = returned_element(node, self._bound_call)
            found = self._returned(*element) if element else None
            return found if found is not None else self.returns.attribute(node, self.scope.class_name,
                                                                          self.options.arguments)
        qualname = self.dist_class(node.func)
        if qualname is None:
            return self._returned(node)
        ref = DistRef(node, qualname, None)
        values, ref.has_star = dtypes.constructor_arguments(qualname, node, self.imports)
        ref.components, ref.inputs = split_components(qualname, node, values, self._dist_ref)
        return ref

    def _bound_call(self, name: str) -> Optional[cst.Call]:
        """The call a local name holds, when its one binding is one (`out = model(h)`)."""
        env = self.math_env()
        values = env.values(name) if env.is_local(name) else ()
        return values[0] if len(values) == 1 and isinstance(values[0], cst.Call) else None

    def _returned(self, call: cst.Call, index: Element = None) -> Optional[DistRef]:
        """The distribution `call` returns, built in this file or another (`amplint.facts.returns`)."""
        return self.returns.ref(call, self.math_env(), self.scope.class_name, index, self.options.returns,
                                self.positions[call].start)

    def _lookup(self, name: str, table: str) -> object:
        return self.scope.find(name, table)

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
        container = self.containers[-1] if self.containers else "module"
        scope = self.scope.child(node.name.value, container, self.class_stack[-1] if container == "class" else None,
                                 node)
        key = scope.key
        scope.bound.update(param_names(node.params))
        record_params(scope, node.params, container == "class", self.options.project)
        for decorator in node.decorators:
            spec = self._decorator_region(decorator.decorator)
            if spec is not None:
                scope.regions.append(RegionEntry(spec, self.positions.line(decorator), decorator))
        self.scopes.setdefault(key, scope)
        self.scope = scope
        self.containers.append("function")

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        assert self.scope.parent is not None
        self.scope = self.scope.parent
        self.containers.pop()

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
        names = [n for t in original_node.targets for n in target_names(t.target)]
        first = original_node.targets[0].target
        single = first.value if len(original_node.targets) == 1 and isinstance(first, cst.Name) else None
        pairs = literal_pairs(original_node.targets, original_node.value)
        for name, value in pairs or ():
            self._bind([name], name, value)
        if pairs is None:  # `mu, s = out.float().chunk(2)`: a float32 value unpacks to float32 names
            self._bind(names, single, original_node.value, keep_wide=single is None and self._wide(original_node.value))
        for index, name in unpacked(original_node.targets[0].target, original_node.value):
            ref = self._returned(original_node.value, index)  # type: ignore[arg-type]
            if ref is not None:  # `preds, dist = self.evaluation_forward(x)`
                self.scope.dist_bindings[name] = replace(ref, binding=name)
        if self.options.project:
            for target in original_node.targets:
                self._bind_project(target.target, original_node.value)
            return
        if single is not None:
            self._bind_own_instance(single, original_node.value)
        for target in original_node.targets:
            self._bind_own_accelerator(target.target, original_node.value)

    def _bind_own_instance(self, name: str, value: cst.BaseExpression) -> None:
        """Single-file mode: `model = Model()`, a class of this file: `model(x)` in a region enters its `forward`."""
        self.scope.instances.pop(name, None)
        callee = dotted_name(value.func) if isinstance(value, cst.Call) else None
        if callee is not None and callee in self.class_defs:
            self.scope.instances[name] = (callee, True)

    def _bind_own_accelerator(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Single-file mode: `accelerator = Accelerator(...)` (or `self.accelerator = ...`): `with
        accelerator.autocast():` in this file opens its region, as in project mode; a rebinding ends that."""
        for name in target_names(target):
            self.scope.accelerators.pop(name, None)
        accel = self._accelerator_ctor(value)
        if accel is not None:
            self._set(target, accelerator=accel)

    def leave_AnnAssign(self, original_node: cst.AnnAssign) -> None:
        if original_node.value is not None:
            names = target_names(original_node.target)
            single = original_node.target.value if isinstance(original_node.target, cst.Name) else None
            self._bind(names, single, original_node.value)
            if self.options.project:
                self._bind_project(original_node.target, original_node.value)
                declared = declared_class(original_node.annotation.annotation, original_node.value)
                if declared is not None:  # `self.reg: AbstractRegularizer = instantiate_from_config(...)`
                    self._set(original_node.target, (declared, False))

    def visit_For(self, node: cst.For) -> None:
        if self.options.project:  # a loop variable is a local name of unknown class, or a container's element
            self._forget(node.target)
            self.scope.elements.update(loop_elements(node))

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if self.options.project and node.asname is not None:
            self._forget(node.asname.name)

    def _forget(self, target: cst.BaseExpression) -> None:
        for name in target_names(target):
            self.scope.assigned.add(name)
            self.scope.instances.pop(name, None)
            self.scope.accelerators.pop(name, None)
            self.scope.prepared.pop(name, None)

    def leave_AugAssign(self, original_node: cst.AugAssign) -> None:
        names, value = target_names(original_node.target), original_node.value
        wide, number = augmented(self.scope, names, self._wide(value), dtypes.is_number(value))
        self._bind(names, None, value, keep_wide=wide)
        self.scope.numbers.update(names if number else ())

    def _bind(
        self, names: Sequence[str], single: Optional[str], value: cst.BaseExpression, keep_wide: bool = False
    ) -> None:
        scope = self.scope
        wide = keep_wide or (single is not None and self._wide(value))
        dists = self.dist_refs_of(value) if single is not None else []
        autocast = self._autocast_value(value) if single is not None else None
        state = scope.effective()
        made_in = state.line if state is not None and state.is_float16 else None
        if made_in is None and not wide and scope.tainted:
            made_in = next((scope.tainted[n] for n in sorted(set(names_in(value))) if n in scope.tainted), None)
        scope.bound.update(names)
        scope.numbers.difference_update(names)
        if single is not None and dtypes.is_number(value):
            scope.numbers.add(single)
        for name in names:
            scope.wide_names.discard(name)
            scope.dist_bindings.pop(name, None)
            scope.dist_alternatives.pop(name, None)
            scope.factories.pop(name, None)
            scope.tainted.pop(name, None)
            if wide:
                scope.wide_names.add(name)
            elif made_in is not None:
                scope.tainted[name] = made_in
        if single is not None and dists:
            refs = [replace(each, binding=single) for each in dists]
            scope.dist_bindings[single], scope.dist_alternatives[single] = refs[0], refs[1:]
        if single is not None and autocast is not None:
            scope.factories[single] = autocast

    def _bind_project(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        """Instances (`model = Net()`), accelerators and prepared models, on names and `self.` attributes."""
        # What the value is, read before the targets are rebound (`flow = accelerator.prepare(flow)`).
        accel = self._accelerator_ctor(value)
        prepare = self._prepare_call(value) if accel is None else None
        returned = prepare[1] if prepare is not None else None if accel is not None else prepared_arguments(value)
        bound: List[Tuple[cst.BaseExpression, Optional[Tuple[str, bool]], bool]] = []
        if returned is not None:  # `model, opt = accelerator.prepare(model, opt)`: each as given, maybe wrapped
            targets = target.elements if isinstance(target, (cst.Tuple, cst.List)) else None
            pairs = [(t.value, a) for t, a in zip(targets, returned)] if targets is not None else [
                (target, returned[0])]
            bound = [(each, self._instance_of(arg), True) for each, arg in pairs]
        elif accel is None:
            bound = [(target, self._instance_of(value), same_module(value, self.imports)[1])]
        self._forget(target)
        if accel is not None:
            self._set(target, accelerator=accel)
        for each, instance, parallel in bound:
            self._set(each, instance=instance, prepared=None if prepare is None else prepare[0])
            self._mark_parallel(each, parallel and instance is not None)
        items, attr = element_classes(value, self.imports), self_attribute(target)
        if items and attr is not None and self.scope.class_name is not None:  # `self.heads = nn.ModuleDict({...})`
            self.class_items.setdefault(self.scope.class_name, {})[attr] = items

    def _set(self, target: cst.BaseExpression, instance: Optional[Tuple[str, bool]] = None,
             accelerator: Optional[AccelBinding] = None, prepared: Optional[AccelBinding] = None) -> None:
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
        attr = self_attribute(target)
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
        """The class an expression is an instance of, as written: `Net(...)` or a name/attribute bound to one,
        through calls that return the same module (`Net().to(dev)`, `DDP(net)`, `ddp.module`)."""
        value = self._unwrapped(value)
        if isinstance(value, cst.Call):
            callee = dotted_name(value.func)
            return None if callee is None else (callee, True)
        if isinstance(value, cst.Name):
            return self._lookup(value.value, "instances")  # type: ignore[return-value]
        attr = self_attribute(value)
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
        if not accel.line:  # held by a parameter or attribute (`HeldAccelerator`): the region starts here
            accel = replace(accel, line=self.positions.line(value))
        return accel, [a.value for a in value.args]

    # --- calls ---------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        for wanted in requested_at(node, self.options.requests, self.positions.line, self.module.code_for_node):
            ref = self._dist_ref(node)
            self.requested.extend([Requested(wanted, ref, self.scope)] if ref is not None else [])
        site = self.recognize(node)
        if site is None or site.kind == DENSITY:  # a probability site is not also a call, but a density is entered
            self._record_call(node, site is not None)
        elif self._unseen_receiver(site):
            self._record_call(node, opaque=True)

    def _unseen_receiver(self, site: Site) -> bool:
        """`x.log_prob(v)` with no constructor of `x` in sight is also a call, in project mode: where the value flow
        knows `x` may be an instance of a project class that is no distribution (a wrapper whose
        `proba_distribution` returns `self`), the walk enters its method, where the distribution is built and read.
        The call stays a site unless `x` is bound here to a construction of such a class (`project.covered`):
        the flow does not know that nothing else reaches `x`."""
        return self.options.project and site.kind == DISTRIBUTION and not site.dists and \
            isinstance(site.call, cst.Call) and isinstance(site.call.func, cst.Attribute)

    def _record_call(self, node: cst.Call, density: bool = False, opaque: bool = False) -> None:
        func = node.func
        kind: Optional[str] = None
        if isinstance(func, cst.Name):
            kind, name = "name", func.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in SELF_NAMES:
            kind, name = "self", func.attr.value
        elif self.options.project and isinstance(func, (cst.Attribute, cst.Subscript, cst.Call)):
            kind, name = "attr", func.attr.value if isinstance(func, cst.Attribute) else ELEMENT
        if kind is None:
            return
        args = [a.value for a in node.args]
        protected = bool(args) and all(self._wide(a) for a in args)
        if not self.options.project:
            instance = self._lookup(name, "instances") if kind == "name" else None
            if instance is not None:  # `model(x)` on an instance of a class (`model = Model()` here or at top level)
                kind, name = "instance", instance[0]  # type: ignore[index]
            start = self.positions.start(node)  # a chain names the call's line and column (`Hop`)
            self.scope.calls.append(
                CallRecord(kind, name, self.scope.effective(), start.line, protected, start.column + 1)
            )
            return
        callee = element_callee(func, self.scope.elements) or dotted_name(func) or expression_callee(name)
        self._record_project_call(node, kind, name, without_module_hop(callee, self._holds_parallel), protected,
                                  density, opaque)

    def _record_project_call(self, node: cst.Call, kind: str, name: str, callee: str, protected: bool,
                             density: bool, opaque: bool) -> None:
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
        accel = scope.pending[-1] if scope.pending and state is None else ()  # the project solve's question
        text = call_text(self.module, node, callee) if accel or state is not None and state.is_float16 else ""
        slots, given = distribution_arguments(node, self.dist_refs, self._wide, self.module.code_for_node,
                                              self.positions.line, scope.display)
        self.scope.calls.append(
            CallRecord(kind, name, state, position.line, protected, position.column + 1, callee, text,  # type: ignore
                       receiver, scope.binds_locally(root), density, slots, given, accel, opaque)
        )
        if callee.rsplit(".", 1)[-1].endswith(frameworks.RECORDED_SUFFIXES):  # rules L and H
            model = trainer_model(node)
            self.framework_calls.append(framework_call(
                node, callee, (position.line, position.column + 1), self.module, self.imports, scope.key,
                None if model is None else self._instance_of(model)))

    # --- the SiteContext that recognizers read -----------------------------------
    def dist_ref(self, node: cst.BaseExpression) -> Optional[DistRef]:
        """A distribution constructor call, or a local name bound to one (see `_dist_ref`)."""
        return self._dist_ref(node)

    def dist_refs_of(self, node: cst.BaseExpression) -> List[DistRef]:
        """Every constructor that may reach `node`: each one a name holds on some path (`facts.flowstate`), both
        arms of `a if c else b` (an arm out of sight, a parameter or a call, leaves the whole out of sight; a
        `None` arm adds nothing)."""
        if isinstance(node, cst.IfExp):
            arms = [[] if is_none(arm) else self.dist_refs_of(arm) for arm in (node.body, node.orelse)]
            known = all(refs or is_none(arm) for refs, arm in zip(arms, (node.body, node.orelse)))
            return arms[0] + arms[1] if known else []
        ref = self._dist_ref(node)
        extra = self.scope.dist_alternatives.get(node.value, []) if isinstance(node, cst.Name) and ref else []
        return ([ref] if ref is not None else []) + extra

    dist_refs = dist_refs_of  # the `SiteContext` name

    def is_wide(self, node: cst.BaseExpression) -> bool:
        """Float32 or wider here: a cast, a factory, a name bound to one (`facts.devicemath` asks the device)."""
        return self._wide(node)

    def math_env(self) -> Env:
        """The current function's bindings (and its class's `self.` attributes), for `amplint.facts.probmath`."""
        owner = self.class_nodes[-1] if self.scope.class_name is not None and self.class_nodes else None
        key = id(self.scope.node)
        if key not in self.math_envs:  # a class's attribute bindings are read once for all its methods
            attributes = class_bindings(owner, self.bodies)
            self.math_envs[key] = scope_env(self.scope.node, self.imports, attributes, self.bodies,
                                            self.options.producers)
        return self.math_envs[key]

    def inside_site(self, node: cst.CSTNode) -> bool:
        """Is `node` within the last site recorded? The walk is top-down: an enclosing site came first."""
        return bool(self.site_nodes) and self.site_nodes[-1] is not node and within(
            self.positions[node], self.positions[self.site_nodes[-1]])

    def make_site(
        self, node: cst.CSTNode, method: str, dists: List[DistRef], values: List[cst.BaseExpression],
        inputs: List[cst.BaseExpression], kind: str, at: Optional[cst.CSTNode] = None,
    ) -> Site:
        """A site at `node` in the current scope and region, with its uncast and region-made inputs.

        It is reported at `at` (an epsilon's literal) when that has a recorded position.
        """
        uncast = [i for i in inputs if not self._wide(i)]
        scope = self.scope
        statement = self.statements[-1] if self.statements else None
        return Site(
            node, method, dists, values, statement, scope.wide_names,  # type: ignore[arg-type]
            scope.effective(), uncast, tainted_inputs(scope.tainted, uncast),
            self.positions[at if at is not None and at in self.positions else node], kind,
            promoted=[i for i in uncast if self._wide(i, promote=True)],
            data=parameter_inputs(scope.node, uncast, self.math_env()) if kind != DISTRIBUTION else [],
        )

    def recognize(self, node: cst.CSTNode) -> Optional[Site]:
        """The first recognizer's site for `node`, recorded in the current scope; None when no recognizer has one."""
        for recognizer in self.recognizers.get(type(node), ()):
            site = recognizer.recognize(node, self)
            if site is not None:
                self.scope.sites.append(site)
                self.site_nodes.append(node)
                return site
        return None

    def visit_recognized(self, node: cst.CSTNode) -> None:
        """The hook `collector_class` installs for node types only recognizers ask for."""
        self.recognize(node)


def collector_class(recognizers: Sequence[SiteRecognizer]) -> Type[Collector]:
    """`Collector`, or a subclass with a `visit_X` hook for each other node type a recognizer asks for.

    `amplint.cstwalk.walk` reads hooks from the class, so a new node type needs one there.
    """
    extra = {f"visit_{r.node_type.__name__}": Collector.visit_recognized for r in recognizers
             if r.node_type is not cst.Call}
    if not extra:
        return Collector
    # The collector's own hooks (LibCST's CSTVisitor defines a no-op `visit_X` for every type: those are free).
    own = {name for name in vars(Collector) if name.startswith("visit_")}
    clash = sorted(name for name in extra if name in own)
    if clash:
        raise ValueError(f"site recognizers cannot take over the collector's own hooks: {', '.join(clash)}")
    return type("Collector", (Collector,), extra)
