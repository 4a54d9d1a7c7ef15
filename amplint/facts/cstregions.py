"""Autocast regions read from LibCST's tree: `regions`' meanings, bound to the nodes the collector visits.

`regions` itself reads no tree, so CPython's collector (`facts.astregions`)
shares it without importing LibCST.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from amplint.autocast_names import PARTIAL_NAMES, Style
from amplint.names import ImportTable
from amplint.regions import AutocastFactory, RegionSpec, bind_arguments, opened, spec_of, style_of


def autocast_style(func: cst.BaseExpression, table: ImportTable, extra: FrozenSet[str],
                   aliases: Tuple[Tuple[object, ...], ...] = ()) -> Optional[Style]:
    """The style of `func` if it resolves to any autocast name (all candidates are tried).

    `aliases` are a project's own spellings: `self.amp_cm` matches as written, a
    decorator's function name by the last part of what it resolves to.
    """
    return style_of(table.qualnames(func), extra, aliases)


def factory_of(expr: cst.BaseExpression, table: ImportTable, extra: FrozenSet[str],
               aliases: Tuple[Tuple[object, ...], ...] = ()) -> Optional[AutocastFactory]:
    """`torch.autocast` itself, or `functools.partial(torch.autocast, ...)`; a branch of a conditional counts.

    `amp_cm = autocast if args.amp else nullcontext` may be an enabled region: a
    flag from the configuration does not disable it (the `enabled=` rule).
    """
    if isinstance(expr, cst.IfExp):
        return factory_of(expr.body, table, extra, aliases) or factory_of(expr.orelse, table, extra, aliases)
    style = autocast_style(expr, table, extra, aliases)
    if style is not None:
        return AutocastFactory(style, (), opened(table.qualnames(expr), aliases) if aliases else None)
    if isinstance(expr, cst.Call) and table.matches(expr.func, PARTIAL_NAMES) and expr.args:
        first = expr.args[0]
        if first.keyword is None and first.star == "":
            inner = autocast_style(first.value, table, extra, aliases)
            if inner is not None:
                return AutocastFactory(inner, tuple(expr.args[1:]))
    return None


def _literal_string(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _bind(style: Style, args: Sequence[cst.Arg]) -> Dict[str, cst.BaseExpression]:
    """Map parameter names to argument expressions for this autocast style."""
    return bind_arguments(style, [(None if a.keyword is None else a.keyword.value, a.star, a.value) for a in args])


def bound_argument(factory: AutocastFactory, call_args: Iterable[cst.Arg], name: str) -> Optional[cst.BaseExpression]:
    """The expression an autocast call passes for parameter `name` (e.g. "dtype"), if any."""
    return _bind(factory.style, list(factory.bound_args) + list(call_args)).get(name)


def region_spec(
    factory: AutocastFactory, call_args: Iterable[cst.Arg], table: ImportTable, module: cst.Module
) -> RegionSpec:
    if factory.opens is not None:  # a project helper's region: its arguments were read where it is defined
        return factory.opens
    args: List[cst.Arg] = list(factory.bound_args) + list(call_args)
    bound = _bind(factory.style, args)
    dtype, enabled = bound.get("dtype"), bound.get("enabled")
    given = dtype is not None and not (isinstance(dtype, cst.Name) and dtype.value == "None")
    # Only a literal False disables; anything not literal may be enabled.
    disabled = isinstance(enabled, cst.Name) and enabled.value == "False"
    return spec_of(factory.style, bound, _literal_string, module.code_for_node,
                   table.qualnames(dtype) if given else None, disabled)  # type: ignore[arg-type]
