"""Recognise autocast calls and work out what their region computes in.

Each spelling has its own positional signature: `torch.autocast(device_type,
dtype, enabled, ...)` but `torch.cuda.amp.autocast(enabled, dtype, ...)`, so
`torch.cuda.amp.autocast(False)` is a disabled region.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, Optional, Sequence, Set, Tuple, TypeVar

from amplint.autocast_names import AUTOCAST_NAMES, Style
from amplint.model import Precision, RegionInfo

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

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


_RANK = {Precision.FLOAT16: 0, Precision.MAYBE_FLOAT16: 1, Precision.BFLOAT16: 2, Precision.OTHER: 3}


def strongest(specs: Iterable[Optional[RegionSpec]]) -> Optional[RegionSpec]:
    """Of the regions an attribute may hold (`self.amp = ... if fp16 else ...` in two branches), the one a
    finding must assume: an enabled one before a disabled one, float16 before maybe-float16, bfloat16, other."""
    return min((s for s in specs if s is not None),
               key=lambda s: (not s.enabled, _RANK[s.precision], s.device_code), default=None)


@dataclass(frozen=True)
class AutocastFactory:
    """An autocast callable, possibly with arguments pre-bound by functools.partial."""

    style: Style
    bound_args: Tuple[cst.Arg, ...] = ()
    # A project helper that returns (or enters) a region of its own, `def amp(): return torch.autocast("cpu",
    # dtype=torch.float16)`: the region it opens, read where it is defined (`project.spellings`).
    opens: Optional[RegionSpec] = None


@lru_cache(maxsize=8192)  # asked for every callee the readers see; the import table hands out the same sets
def style_of(names: FrozenSet[str], extra: FrozenSet[str], aliases: Tuple[Tuple[object, ...], ...] = ()
             ) -> Optional[Style]:
    """`autocast_style` for the qualified names a callee may stand for (CPython's tree reads them too)."""
    styles = {AUTOCAST_NAMES[n] for n in names if n in AUTOCAST_NAMES}
    for alias, wrapped, *_ in aliases:
        if _names_alias(names, alias):
            styles.add(AUTOCAST_NAMES[wrapped])
    for style in (Style.GENERIC, Style.CUDA, Style.CPU):  # fixed order: never set order
        if style in styles:
            return style
    if names & extra:
        return Style.EXTENDED
    return None


def _names_alias(names: FrozenSet[str], alias: str) -> bool:
    """`self.amp_cm` matches as written; a plain name any qualified name ending in it (imported)."""
    return alias in names or ("." not in alias and any(n.rsplit(".", 1)[-1] == alias for n in names))


def opened(names: FrozenSet[str], aliases: Tuple[Tuple[object, ...], ...]) -> Optional[RegionSpec]:
    """The region the project helper that `names` may stand for opens (an alias's third element), if any. The
    library's own autocast is never one, whatever a project helper is named (`def autocast(self): ...`)."""
    if names & AUTOCAST_NAMES.keys():
        return None
    for alias in aliases:
        if len(alias) > 2 and isinstance(alias[2], RegionSpec) and _names_alias(names, str(alias[0])):
            return alias[2]
    return None


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
