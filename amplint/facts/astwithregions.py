"""`facts.cstwithregions` for CPython's tree: which `with` items, decorators, names and `self.` attributes
open an autocast region, and `stack.enter_context(...)` of a `with ExitStack() as stack:`.

A mixin of `astcalls._Reader`, read in the collector's order so that the two
summaries stay equal (`tests/test_ast_summary.py`): it reads the reader's
imports, configured spellings, current scope, class stack and source, and
pushes the regions an `ExitStack` opens on the scope's stack.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from amplint.facts import astnodes as nodes
from amplint.facts import astregions as regions
from amplint.facts.astmathenv import Env, class_attributes
from amplint.facts.astsites import Unread
from amplint.facts.astsource import SourceText
from amplint.facts.model import RegionEntry, Scope
from amplint.model import Precision
from amplint.names import ImportTable
from amplint.regions import AutocastFactory, RegionSpec, strongest


class AstRegions:
    """The region half of `astcalls._Reader` (which provides `visit`, `_function` and `_owner`)."""

    tree: ast.Module
    source: SourceText
    imports: ImportTable
    extend: FrozenSet[str]
    aliases: Tuple[Tuple[object, ...], ...]
    scope: Scope
    class_stack: List[str]
    class_nodes: List[ast.ClassDef]
    attr_dtypes: Dict[Tuple[str, str], Optional[Precision]]
    stacks: List[List[Any]]
    in_regions: bool

    def visit(self, node: Optional[ast.AST]) -> None: ...  # pragma: no cover - the reader's

    def _function(self) -> Optional[ast.AST]: ...  # pragma: no cover - the reader's

    def _owner(self) -> Optional[ast.ClassDef]: ...  # pragma: no cover - the reader's

    def expression(self, node: ast.Expr) -> None:
        """`WithRegions.leave_Expr`: `stack.enter_context(torch.autocast(...))` opens a region until the end of
        the `with ExitStack() as stack:` block."""
        self.visit(node.value)
        call = node.value
        receiver = entered_on(call.func) if isinstance(call, ast.Call) and len(call.args) == 1 and \
            not call.keywords else None
        owner = next((entry for entry in reversed(self.stacks) if entry[0] == receiver), None)
        if owner is None or isinstance(call.args[0], ast.Starred):  # type: ignore[union-attr]
            return
        spec = self._region_from_with_item(call.args[0])  # type: ignore[union-attr]
        if spec is not None:
            self.scope.regions.append(RegionEntry(spec, node.lineno, None))
            self.in_regions = True
            owner[1] += 1

    # --- regions (`Collector._region_from_with_item` and its helpers) ------------------------------------
    def _factory(self, expr: ast.expr) -> Optional[AutocastFactory]:
        return regions.factory_of(expr, self.imports, self.extend, self.aliases)

    def _spec(self, factory: AutocastFactory, args: List[nodes.Arg]) -> RegionSpec:
        return regions.region_spec(factory, args, self.imports, self.source.code)

    def _region_from_with_item(self, expr: ast.expr) -> Optional[RegionSpec]:
        while isinstance(expr, ast.IfExp):
            expr = expr.body if self._region_expr(expr.body) else expr.orelse
        if isinstance(expr, ast.Call):
            attr = nodes.self_attribute(expr.func)
            own = self._attribute_region(attr, nodes.call_args(expr)) if attr is not None else None
            if own is not None:  # what this class keeps there, its bound arguments read (before a project alias)
                return own
            factory = self._called_factory(expr)
            if factory is not None:
                args = self._spread(nodes.call_args(expr))
                return self._refined(self._spec(factory, args), factory, args)
        elif isinstance(expr, ast.Name):
            bound = self.scope.lookup_factory(expr.id)
            if isinstance(bound, RegionSpec):
                return bound
        elif nodes.self_attribute(expr) is not None:
            return self._attribute_region(nodes.self_attribute(expr), None)  # type: ignore[arg-type]
        return None

    def _attribute_region(self, attr: str, args: Optional[List[nodes.Arg]]) -> Optional[RegionSpec]:
        """`cstwithregions.WithRegions._attribute_region`: a region or factory the class keeps in `self.<attr>`."""
        if not self.class_nodes:
            return None
        openers = [self._autocast_value(v) for v in regions.attribute_values(self.class_nodes[-1], attr)]
        if args is None:
            return strongest(o for o in openers if isinstance(o, RegionSpec))
        return strongest(self._spec(o, args) for o in openers if isinstance(o, AutocastFactory))

    def _spread(self, args: List[nodes.Arg]) -> List[nodes.Arg]:
        """`WithRegions._spread`: `**amp_kwargs` as the keywords of the one dict it is bound to."""
        spread: List[nodes.Arg] = []
        for arg in args:
            pairs = self._keywords(arg.value) if arg.star == "**" else None
            spread.extend([nodes.Arg(key, "", value) for key, value in pairs] if pairs is not None else [arg])
        return spread

    def _keywords(self, expr: ast.expr) -> Optional[List[Tuple[str, ast.expr]]]:
        attr = nodes.self_attribute(expr)
        function = self._function()
        if attr is not None:
            values: Sequence[ast.expr] = class_attributes(self._owner())().get(attr, ())
        elif isinstance(expr, ast.Name):
            local = Env(self.imports, self.source, function).values(expr.id) if isinstance(
                function, (ast.FunctionDef, ast.AsyncFunctionDef)) else ()
            values = local or [s.value for s in self.tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
                               and isinstance(s.targets[0], ast.Name) and s.targets[0].id == expr.id]
        else:
            values = [expr]
        return dict_pairs(values[0]) if len(values) == 1 else None

    def _called_factory(self, call: ast.Call) -> Optional[AutocastFactory]:
        """The autocast factory `call` calls: an autocast spelling, or a name bound to a factory here."""
        factory = self._factory(call.func)
        if factory is None and isinstance(call.func, ast.Name):
            bound = self.scope.lookup_factory(call.func.id)
            factory = bound if isinstance(bound, AutocastFactory) else None
        return factory

    def _region_expr(self, expr: ast.expr) -> bool:
        return isinstance(expr, ast.Call) and self._factory(expr.func) is not None

    def _accelerator_like(self, expr: ast.expr) -> bool:
        """`x.autocast()` that is no autocast spelling (an accelerator's, `Collector._pending_accelerator`)."""
        if isinstance(expr, ast.IfExp):
            return self._accelerator_like(expr.body) or self._accelerator_like(expr.orelse)
        return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "autocast"

    def _autocast_value(self, value: ast.expr) -> "Optional[AutocastFactory | RegionSpec]":
        if isinstance(value, ast.IfExp):
            return self._autocast_value(value.body) or self._autocast_value(value.orelse)
        factory = self._factory(value)
        if factory is not None:
            return factory
        if isinstance(value, ast.Attribute) and value.attr == "autocast":
            raise Unread  # `ctx = accelerator.autocast`: the collector's `PendingAccel`
        if isinstance(value, ast.Call):
            called = self._called_factory(value)
            if called is not None:
                return self._spec(called, self._spread(nodes.call_args(value)))
        return None

    def _refined(self, spec: RegionSpec, factory: AutocastFactory, args: List[nodes.Arg]) -> RegionSpec:
        if spec.precision is not Precision.MAYBE_FLOAT16 or not self.class_nodes:
            return spec
        dtype = regions.bound_argument(factory, args, "dtype")
        attr = nodes.self_attribute(dtype) if dtype is not None else None
        if attr is None:
            return spec
        key = (self.class_stack[-1], attr)
        if key not in self.attr_dtypes:
            self.attr_dtypes[key] = regions.attribute_dtype(self.class_nodes[-1], attr, self.imports)
        precision = self.attr_dtypes[key]
        return spec if precision is None else replace(spec, precision=precision)

    def _decorator_region(self, expr: ast.expr) -> Optional[RegionSpec]:
        if isinstance(expr, ast.Call):
            factory = self._factory(expr.func)
            if factory is None:
                return None
            args = nodes.call_args(expr)
            return self._refined(self._spec(factory, args), factory, args)
        factory = self._factory(expr)
        return None if factory is None else self._spec(factory, [])

    def _decorator_line(self, expr: ast.expr) -> int:
        """The line of the decorator's `@` (LibCST's position of the decorator)."""
        if self.source.decorator_at(expr.lineno, expr.col_offset) is None:
            raise Unread
        return expr.lineno


def entered_on(func: ast.expr) -> Optional[str]:
    """`stack` of `stack.enter_context`; None for any other callee (`cstwithregions.entered_on`)."""
    if isinstance(func, ast.Attribute) and func.attr == "enter_context" and isinstance(func.value, ast.Name):
        return func.value.id
    return None


def dict_pairs(value: ast.expr) -> Optional[List[Tuple[str, ast.expr]]]:
    """`cstwithregions.dict_pairs`: a dict display or `dict(...)` call with literal keys, as its items."""
    if isinstance(value, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in value.keys]
        return None if any(k is None for k in keys) else list(zip(keys, value.values))  # type: ignore[arg-type]
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" and \
            not value.args and all(k.arg is not None for k in value.keywords):
        return [(k.arg, k.value) for k in value.keywords]  # type: ignore[misc]
    return None
