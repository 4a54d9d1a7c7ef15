"""The collector's reading of regions: `with` items, decorators, autocast factories bound to names, and
Accelerate's `accelerator.autocast()` (rule A), also bound to a name (`ctx = accelerator.autocast`, with or
without a conditional: `accelerator.autocast if amp else nullcontext`).

An accelerator the file does not build (a parameter, a `self.` attribute, a factory's result) is the project's
question: the `with` is recorded as pending (`Scope.pending`, `CallRecord.accel`), and the project's value
flow answers it (`HeldAccelerator`, from `project.accelflow`), when the file is analysed again with its entries.

A mixin of `Collector`: it reads the collector's imports, options, current scope, class stack and positions,
and pushes the regions a `with` statement opens on the scope's stack.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

import libcst as cst

from amplint.facts import frameworks
from amplint.facts.cstregions import bound_argument, factory_of, region_spec
from amplint.facts.mathenv import Env
from amplint.facts.model import AccelBinding, AnalysisOptions, Opener, PendingAccel, RegionEntry, Scope
from amplint.facts.nodes import accelerator_binding, attribute_dtype, attribute_values, self_attribute
from amplint.model import Precision
from amplint.names import ImportTable, dotted_name
from amplint.regions import AutocastFactory, RegionSpec, strongest

if TYPE_CHECKING:  # pragma: no cover
    from amplint.positions import Positions


class WithRegions:
    """Which `with` items and decorators open an autocast region, and what names bound to one hold."""

    module: cst.Module
    imports: ImportTable
    options: AnalysisOptions
    scope: Scope
    positions: "Positions"
    class_stack: List[str]
    class_nodes: List[cst.ClassDef]
    class_accels: Dict[str, Dict[str, AccelBinding]]
    attr_dtypes: Dict[Tuple[str, str], Optional[Precision]]
    pushed: Dict[int, int]
    pending_pushed: Dict[int, int]
    stacks: List[Tuple[int, str]]

    _lookup: Callable[[str, str], object]  # the collector's: a name in the scope's tables
    math_env: Callable[[], Env]  # the collector's: the current function's bindings and its class's attributes

    def _decorator_region(self, expr: cst.BaseExpression) -> Optional[RegionSpec]:
        if isinstance(expr, cst.Call):
            factory = self._factory(expr.func)
            if factory is None:
                return None
            return self._refined(region_spec(factory, expr.args, self.imports, self.module), factory, expr.args)
        factory = self._factory(expr)
        return None if factory is None else region_spec(factory, (), self.imports, self.module)

    # --- regions -------------------------------------------------------------
    def visit_With_body(self, node: cst.With) -> None:
        pushed = 0
        for item in node.items:
            spec = self._region_from_with_item(item)
            if spec is not None:
                self.scope.regions.append(RegionEntry(spec, self.positions.line(node), node))
                pushed += 1
                continue
            accel = self._accelerate_region(item.item)
            if accel is not None and accel.spec is not None:
                label = f"accelerator.autocast() region of {accel.label}"
                self.scope.regions.append(RegionEntry(accel.spec, self.positions.line(node), node, label))
                pushed += 1
            elif accel is None and self.options.project:
                receiver = self._pending_accelerator(item.item)
                if receiver is not None:  # the project solve answers what it holds (`HeldAccelerator`)
                    self.scope.pending.append((receiver, self.positions.line(node)))
                    self.scope.accel_reads.append(self.scope.pending[-1])
                    self.pending_pushed[id(node)] = self.pending_pushed.get(id(node), 0) + 1
        self.pushed[id(node)] = pushed
        self.stacks.extend((id(node), item.asname.name.value) for item in node.items
                           if item.asname is not None and isinstance(item.asname.name, cst.Name))

    def leave_With_body(self, node: cst.With) -> None:
        for _ in range(self.pushed.pop(id(node), 0)):
            self.scope.regions.pop()
        while self.stacks and self.stacks[-1][0] == id(node):
            self.stacks.pop()
        for _ in range(self.pending_pushed.pop(id(node), 0)):
            self.scope.pending.pop()

    def leave_Expr(self, original_node: cst.Expr) -> None:
        """`stack.enter_context(torch.autocast(...))` in `with ExitStack() as stack:`: a region from here to the
        end of that `with` (through the `if` it may sit in: an `ExitStack` closes only with its block)."""
        call = original_node.value
        receiver = entered_on(call.func) if isinstance(call, cst.Call) and len(call.args) == 1 and \
            not call.args[0].star and call.args[0].keyword is None else None
        owner = next((key for key, name in reversed(self.stacks) if name == receiver), None)
        if owner is None:
            return
        spec = self._region_from_with_item(cst.WithItem(item=call.args[0].value))  # type: ignore[union-attr]
        if spec is not None:
            self.scope.regions.append(RegionEntry(spec, self.positions.line(call), original_node))
            self.pushed[owner] = self.pushed.get(owner, 0) + 1

    def _factory(self, expr: cst.BaseExpression) -> Optional[AutocastFactory]:
        return factory_of(expr, self.imports, self.options.extend_autocast, self.options.autocast_aliases)

    def _region_from_with_item(self, item: cst.WithItem) -> Optional[RegionSpec]:
        expr = item.item
        while isinstance(expr, cst.IfExp):  # `with (autocast() if amp else nullcontext()):`
            expr = expr.body if self._region_expr(expr.body) else expr.orelse
        if isinstance(expr, cst.Call):
            attr = self_attribute(expr.func)
            own = self._attribute_region(attr, expr.args) if attr is not None else None
            if own is not None:  # what this class keeps there, its bound arguments read (before a project alias)
                return own
            factory = self._called_factory(expr)
            if factory is not None:
                args = self._spread(expr.args)
                return self._refined(region_spec(factory, args, self.imports, self.module), factory, args)
        elif isinstance(expr, cst.Name):
            bound = self.scope.lookup_factory(expr.value)
            if isinstance(bound, RegionSpec):
                return bound
        elif self_attribute(expr) is not None:
            return self._attribute_region(self_attribute(expr), None)  # type: ignore[arg-type]
        return None

    def _attribute_region(self, attr: str, args: Optional[Sequence[cst.Arg]]) -> Optional[RegionSpec]:
        """`with self.amp:` (`args` None) or `with self.amp():` where the class keeps an autocast region, or a
        factory of one (`functools.partial(torch.autocast, ...)`), in `self.amp`."""
        if not self.class_nodes:
            return None
        openers = [self._autocast_value(v) for v in attribute_values(self.class_nodes[-1], attr)]
        if args is None:
            return strongest(o for o in openers if isinstance(o, RegionSpec))
        return strongest(region_spec(o, args, self.imports, self.module) for o in openers
                         if isinstance(o, AutocastFactory))

    def _spread(self, args: Sequence[cst.Arg]) -> List[cst.Arg]:
        """`torch.autocast(**amp_kwargs)`: the keywords of the one dict `amp_kwargs` (a local or module name, or a
        `self.` attribute) is bound to, in place of the spread; any other spread stays as written."""
        spread: List[cst.Arg] = []
        for arg in args:
            pairs = self._keywords(arg.value) if arg.star == "**" else None
            spread.extend([cst.Arg(value, keyword=cst.Name(key)) for key, value in pairs] if pairs is not None
                          else [arg])
        return spread

    def _keywords(self, expr: cst.BaseExpression) -> Optional[List[Tuple[str, cst.BaseExpression]]]:
        attr = self_attribute(expr)
        if attr is not None:
            values: Sequence[cst.BaseExpression] = self.math_env().attribute_values(attr)
        elif isinstance(expr, cst.Name):
            values = self.math_env().values(expr.value) or [
                s.value for line in self.module.body if isinstance(line, cst.SimpleStatementLine)
                for s in line.body if isinstance(s, cst.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0].target, cst.Name) and s.targets[0].target.value == expr.value]
        else:
            values = [expr]
        return dict_pairs(values[0]) if len(values) == 1 else None

    def _called_factory(self, call: cst.Call) -> Optional[AutocastFactory]:
        """The autocast factory `call` calls: an autocast spelling, or a name bound to a factory here."""
        factory = self._factory(call.func)
        if factory is None and isinstance(call.func, cst.Name):
            bound = self.scope.lookup_factory(call.func.value)
            factory = bound if isinstance(bound, AutocastFactory) else None
        return factory

    def _region_expr(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Call) and self._factory(expr.func) is not None

    def _autocast_value(self, value: cst.BaseExpression) -> Optional[Opener]:
        """What `name = value` binds: an autocast factory, a region object, an accelerator's `autocast` method,
        or nothing (a branch counts)."""
        if isinstance(value, cst.IfExp):  # `ctx = torch.autocast("cuda") if amp else nullcontext()`
            return self._autocast_value(value.body) or self._autocast_value(value.orelse)
        factory = self._factory(value)  # an alias or functools.partial(...)
        if factory is not None:
            return factory
        if isinstance(value, cst.Attribute) and value.attr.value == "autocast":
            accel = self._accelerator(value.value)  # `ctx = accelerator.autocast`: `with ctx():` opens its region
            receiver = dotted_name(value.value) if accel is None and self.options.project else None
            if accel is not None or receiver is not None:
                return accel or PendingAccel(receiver)  # type: ignore[arg-type]
        if isinstance(value, cst.Call):
            called = self._called_factory(value)
            if called is not None:
                return region_spec(called, self._spread(value.args), self.imports, self.module)
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
            self.attr_dtypes[key] = attribute_dtype(self.class_nodes[-1], dtype.attr.value, self.imports)
        precision = self.attr_dtypes[key]
        return spec if precision is None else replace(spec, precision=precision)

    def _accelerate_region(self, expr: cst.BaseExpression) -> Optional[AccelBinding]:
        """Rule A: `with accelerator.autocast():` where `accelerator` is bound to `Accelerator(...)`, or
        `with ctx():` where `ctx` is bound to its `autocast` (a branch counts: `(... if amp else ...)`)."""
        if isinstance(expr, cst.IfExp):
            return self._accelerate_region(expr.body) or self._accelerate_region(expr.orelse)
        if not isinstance(expr, cst.Call):
            return None
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "autocast":
            return self._accelerator(expr.func.value)
        bound = self.scope.lookup_factory(expr.func.value) if isinstance(expr.func, cst.Name) else None
        return bound if isinstance(bound, AccelBinding) else None

    def _pending_accelerator(self, expr: cst.BaseExpression) -> Optional[str]:
        """`with x.autocast():` or `with ctx():` (`ctx = x.autocast`), a branch counting, where the file does not
        bind `x` to `Accelerator(...)`: `x` as written (a dotted name), for the project solve."""
        if isinstance(expr, cst.IfExp):
            return self._pending_accelerator(expr.body) or self._pending_accelerator(expr.orelse)
        if not isinstance(expr, cst.Call):
            return None
        if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "autocast":
            return None if self._factory(expr.func) is not None else dotted_name(expr.func.value)
        bound = self.scope.lookup_factory(expr.func.value) if isinstance(expr.func, cst.Name) else None
        return bound.receiver if isinstance(bound, PendingAccel) else None

    def _accelerator(self, node: cst.BaseExpression) -> Optional[AccelBinding]:
        found: Optional[AccelBinding] = None
        if isinstance(node, cst.Name):
            found = self._lookup(node.value, "accelerators")  # type: ignore[assignment]
        attr = self_attribute(node)
        if attr is not None and self.scope.class_name is not None:
            found = self.class_accels.get(self.scope.class_name, {}).get(attr)
        return found or self._held_accelerator(node)

    def _held_accelerator(self, node: cst.BaseExpression) -> Optional[AccelBinding]:
        """The accelerator the project solve found `node` (a parameter, `self.acc`, a factory's result) holding."""
        if not self.options.accelerators:
            return None
        receiver = dotted_name(node)
        held = next((h for h in self.options.accelerators
                     if h.function == self.scope.key and h.receiver == receiver), None)
        if held is None:
            return None
        spec = None if held.precision is None else RegionSpec(held.precision, True, "cuda", '"cuda"')
        return AccelBinding(spec, self.positions.line(node) if node in self.positions else 0, node, held.label)

    def _accelerator_ctor(self, value: cst.BaseExpression) -> Optional[AccelBinding]:
        if not (isinstance(value, cst.Call) and self.imports.matches(value.func, frameworks.ACCELERATOR)):
            return None
        return accelerator_binding(value, self.positions.line(value), self.module)


def entered_on(func: cst.BaseExpression) -> Optional[str]:
    """`stack` of `stack.enter_context`; None for any other callee."""
    if isinstance(func, cst.Attribute) and func.attr.value == "enter_context" and isinstance(func.value, cst.Name):
        return func.value.value
    return None


def dict_pairs(value: cst.BaseExpression) -> Optional[List[Tuple[str, cst.BaseExpression]]]:
    """`{"dtype": torch.float16, ...}` or `dict(dtype=torch.float16, ...)` with literal keys: its items."""
    if isinstance(value, cst.Dict):
        pairs = [(e.key.evaluated_value, e.value) for e in value.elements
                 if isinstance(e, cst.DictElement) and isinstance(e.key, cst.SimpleString)]
        whole = len(pairs) == len(value.elements) and all(isinstance(k, str) for k, _ in pairs)
        return pairs if whole else None  # type: ignore[return-value]
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" and \
            all(a.keyword is not None for a in value.args):
        return [(a.keyword.value, a.value) for a in value.args]  # type: ignore[union-attr]
    return None
