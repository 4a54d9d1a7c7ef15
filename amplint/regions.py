"""Recognise autocast calls and work out what their region computes in.

Each spelling has its own positional signature: `torch.autocast(device_type,
dtype, enabled, ...)` but `torch.cuda.amp.autocast(enabled, dtype, ...)`, so
`torch.cuda.amp.autocast(False)` is a disabled region.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from amplint.autocast_names import AUTOCAST_NAMES, PARTIAL_NAMES, Style
from amplint.model import Precision, RegionInfo
from amplint.names import ImportTable


FLOAT16_NAMES = frozenset({"torch.float16", "torch.half"})
BFLOAT16_NAMES = frozenset({"torch.bfloat16"})
WIDE_FLOAT_NAMES = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})
# Devices whose autocast defaults to float16 when no dtype is given.
FLOAT16_DEFAULT_DEVICES = frozenset({"cuda", "mps"})
_POSITIONAL: Dict[Style, Tuple[str, ...]] = {
    Style.GENERIC: ("device_type", "dtype", "enabled", "cache_enabled"),
    Style.CUDA: ("enabled", "dtype", "cache_enabled"),
    Style.CPU: ("enabled", "dtype", "cache_enabled"),
    Style.EXTENDED: (),
}


@dataclass(frozen=True)
class RegionSpec:
    """An autocast call's meaning, before it is tied to a line."""

    precision: Precision
    enabled: bool
    device: Optional[str]
    device_code: str

    def at(self, line: int) -> RegionInfo:
        return RegionInfo(line, self.precision, self.enabled, self.device, self.device_code)


@dataclass(frozen=True)
class AutocastFactory:
    """An autocast callable, possibly with arguments pre-bound by functools.partial."""

    style: Style
    bound_args: Tuple[cst.Arg, ...] = ()


def autocast_style(func: cst.BaseExpression, table: ImportTable, extra: FrozenSet[str],
                   aliases: Tuple[Tuple[str, str], ...] = ()) -> Optional[Style]:
    """The style of `func` if it resolves to any autocast name (all candidates are tried).

    `aliases` are a project's own spellings: `self.amp_cm` matches as written, a
    decorator's function name by the last part of what it resolves to.
    """
    names = table.qualnames(func)
    styles = {AUTOCAST_NAMES[n] for n in names if n in AUTOCAST_NAMES}
    for alias, wrapped in aliases:
        if alias in names or ("." not in alias and any(n.rsplit(".", 1)[-1] == alias for n in names)):
            styles.add(AUTOCAST_NAMES[wrapped])
    for style in (Style.GENERIC, Style.CUDA, Style.CPU):  # fixed order: never set order
        if style in styles:
            return style
    if names & extra:
        return Style.EXTENDED
    return None


def factory_of(expr: cst.BaseExpression, table: ImportTable, extra: FrozenSet[str],
               aliases: Tuple[Tuple[str, str], ...] = ()) -> Optional[AutocastFactory]:
    """`torch.autocast` itself, or `functools.partial(torch.autocast, ...)`; a branch of a conditional counts.

    `amp_cm = autocast if args.amp else nullcontext` may be an enabled region: a
    flag from the configuration does not disable it (the `enabled=` rule).
    """
    if isinstance(expr, cst.IfExp):
        return factory_of(expr.body, table, extra, aliases) or factory_of(expr.orelse, table, extra, aliases)
    style = autocast_style(expr, table, extra, aliases)
    if style is not None:
        return AutocastFactory(style)
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
    bound: Dict[str, cst.BaseExpression] = {}
    names = _POSITIONAL[style]
    position = 0
    for arg in args:
        if arg.star:
            continue
        if arg.keyword is not None:
            bound[arg.keyword.value] = arg.value
        else:
            if position < len(names):
                bound[names[position]] = arg.value
            position += 1
    return bound


def _device(style: Style, bound: Dict[str, cst.BaseExpression], module: cst.Module) -> Tuple[Optional[str], str]:
    if style is Style.CUDA:
        return "cuda", '"cuda"'
    if style is Style.CPU:
        return "cpu", '"cpu"'
    node = bound.get("device_type")
    if node is None:
        return None, ""
    literal = _literal_string(node)
    code = module.code_for_node(node)
    return (literal.split(":")[0] if literal is not None else None), code


def _precision(style: Style, device: Optional[str], dtype: Optional[cst.BaseExpression],
               table: ImportTable) -> Precision:
    if dtype is not None and not (isinstance(dtype, cst.Name) and dtype.value == "None"):
        names = table.qualnames(dtype)
        if names & FLOAT16_NAMES:
            return Precision.FLOAT16
        if names & BFLOAT16_NAMES:
            return Precision.BFLOAT16
        if names & WIDE_FLOAT_NAMES:
            return Precision.OTHER
        return Precision.MAYBE_FLOAT16
    if style is Style.CUDA:
        return Precision.FLOAT16
    if style is Style.CPU:
        return Precision.BFLOAT16
    if device is None:
        return Precision.MAYBE_FLOAT16
    return Precision.FLOAT16 if device in FLOAT16_DEFAULT_DEVICES else Precision.BFLOAT16


def _enabled(node: Optional[cst.BaseExpression]) -> bool:
    """Only a literal False disables; anything not literal may be enabled."""
    return not (isinstance(node, cst.Name) and node.value == "False")


def bound_argument(factory: AutocastFactory, call_args: Iterable[cst.Arg], name: str) -> Optional[cst.BaseExpression]:
    """The expression an autocast call passes for parameter `name` (e.g. "dtype"), if any."""
    return _bind(factory.style, list(factory.bound_args) + list(call_args)).get(name)


def region_spec(
    factory: AutocastFactory, call_args: Iterable[cst.Arg], table: ImportTable, module: cst.Module
) -> RegionSpec:
    args: List[cst.Arg] = list(factory.bound_args) + list(call_args)
    bound = _bind(factory.style, args)
    device, device_code = _device(factory.style, bound, module)
    precision = _precision(factory.style, device, bound.get("dtype"), table)
    return RegionSpec(precision, _enabled(bound.get("enabled")), device, device_code)
