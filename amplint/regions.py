"""Recognise autocast calls and work out what their region computes in.

Each spelling has its own positional signature: `torch.autocast(device_type,
dtype, enabled, ...)` but `torch.cuda.amp.autocast(enabled, dtype, ...)`, so
`torch.cuda.amp.autocast(False)` is a disabled region.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, TypeVar

import libcst as cst

from amplint.autocast_names import AUTOCAST_NAMES, PARTIAL_NAMES, Style
from amplint.model import Precision, RegionInfo
from amplint.names import ImportTable

Value = TypeVar("Value")


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
    return style_of(table.qualnames(func), extra, aliases)


def style_of(names: FrozenSet[str], extra: FrozenSet[str], aliases: Tuple[Tuple[str, str], ...] = ()
             ) -> Optional[Style]:
    """`autocast_style` for the qualified names a callee may stand for (CPython's tree reads them too)."""
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
    return bind_arguments(style, [(None if a.keyword is None else a.keyword.value, a.star, a.value) for a in args])


def bind_arguments(style: Style, args: Sequence[Tuple[Optional[str], str, Value]]) -> Dict[str, Value]:
    """Parameter names to the values given as (keyword or None, star, value), in the order written."""
    bound: Dict[str, Value] = {}
    names = _POSITIONAL[style]
    position = 0
    for keyword, star, value in args:
        if star:
            continue
        if keyword is not None:
            bound[keyword] = value
        else:
            if position < len(names):
                bound[names[position]] = value
            position += 1
    return bound


def fixed_device(style: Style) -> Optional[Tuple[str, str]]:
    """The device a spelling names itself (`torch.cuda.amp.autocast`), with its text; None for the generic one."""
    return {Style.CUDA: ("cuda", '"cuda"'), Style.CPU: ("cpu", '"cpu"')}.get(style)


def spec_of(style: Style, bound: Dict[str, Value], literal: Callable[[Value], Optional[str]],
            code: Callable[[Value], str], dtype: Optional[FrozenSet[str]], disabled: bool) -> RegionSpec:
    """A region's meaning from its bound arguments, read through `literal` (a string's value) and `code` (an
    argument as written), with the qualified names its `dtype=` may stand for (None: no dtype given)."""
    place = fixed_device(style)
    if place is None:
        node = bound.get("device_type")
        text = None if node is None else literal(node)
        place = (None, "") if node is None else (text.split(":")[0] if text is not None else None, code(node))
    device, device_code = place
    return RegionSpec(precision_of(style, device, dtype), not disabled, device, device_code)


def precision_of(style: Style, device: Optional[str], dtype: Optional[FrozenSet[str]]) -> Precision:
    """What a region computes in, from the qualified names its `dtype=` may stand for (None: no dtype given)."""
    if dtype is not None:
        if dtype & FLOAT16_NAMES:
            return Precision.FLOAT16
        if dtype & BFLOAT16_NAMES:
            return Precision.BFLOAT16
        if dtype & WIDE_FLOAT_NAMES:
            return Precision.OTHER
        return Precision.MAYBE_FLOAT16
    if style is Style.CUDA:
        return Precision.FLOAT16
    if style is Style.CPU:
        return Precision.BFLOAT16
    if device is None:
        return Precision.MAYBE_FLOAT16
    return Precision.FLOAT16 if device in FLOAT16_DEFAULT_DEVICES else Precision.BFLOAT16


def dtype_kinds(names: FrozenSet[str]) -> Optional[Set[Precision]]:
    """The dtype a literal names (from its qualified names), as a set to join with others; None: not a dtype."""
    if names & FLOAT16_NAMES:
        return {Precision.FLOAT16}
    if names & BFLOAT16_NAMES:
        return {Precision.BFLOAT16}
    if names & WIDE_FLOAT_NAMES:
        return {Precision.OTHER}
    return None


def precision_of_kinds(found: Iterable[Optional[Set[Precision]]]) -> Optional[Precision]:
    """What `dtype=self.<attr>` computes in, from the kinds of every value assigned to it; None when unknown."""
    kinds: Set[Precision] = set()
    for each in found:
        if each is None:
            return None
        kinds |= each
    if not kinds:
        return None
    if Precision.FLOAT16 in kinds:
        return Precision.FLOAT16 if kinds == {Precision.FLOAT16} else Precision.MAYBE_FLOAT16
    return Precision.BFLOAT16 if Precision.BFLOAT16 in kinds else Precision.OTHER


def bound_argument(factory: AutocastFactory, call_args: Iterable[cst.Arg], name: str) -> Optional[cst.BaseExpression]:
    """The expression an autocast call passes for parameter `name` (e.g. "dtype"), if any."""
    return _bind(factory.style, list(factory.bound_args) + list(call_args)).get(name)


def region_spec(
    factory: AutocastFactory, call_args: Iterable[cst.Arg], table: ImportTable, module: cst.Module
) -> RegionSpec:
    args: List[cst.Arg] = list(factory.bound_args) + list(call_args)
    bound = _bind(factory.style, args)
    dtype, enabled = bound.get("dtype"), bound.get("enabled")
    given = dtype is not None and not (isinstance(dtype, cst.Name) and dtype.value == "None")
    # Only a literal False disables; anything not literal may be enabled.
    disabled = isinstance(enabled, cst.Name) and enabled.value == "False"
    return spec_of(factory.style, bound, _literal_string, module.code_for_node,
                   table.qualnames(dtype) if given else None, disabled)  # type: ignore[arg-type]
