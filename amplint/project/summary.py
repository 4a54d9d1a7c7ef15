"""Plain, picklable data the project pass works on: per-file summaries and entries.

A `FileSummary` is what one file defines (functions, classes, module-level
instances, imports), what it calls and from which autocast state, and whether
each function holds probability computations exposed to a caller's region. It
depends only on the file's content and amplint's version, which is why it can
be cached on disk and why the walk never needs the file's parse tree.
No LibCST here: a run whose summaries all come from the cache never imports it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import AbstractSet, Dict, Iterable, Iterator, List, Mapping, Optional, Set, Tuple, Union

from amplint.model import Precision, RegionInfo
from amplint.facts.entry import EntryContext, ReturnedDist
from amplint.facts.frameworks import FrameworkCall

__all__ = [
    "CallSummary", "ClassSummary", "EntryContext", "FileSummary", "FrameworkCall", "FunctionSummary", "RegionRef",
]

FLOAT16_LIKE = (Precision.FLOAT16, Precision.MAYBE_FLOAT16)
MODULE_KEY = "<module>"  # the scope key of a file's top level, as the collector names it
Imports = Tuple[Tuple[str, Tuple[str, ...]], ...]  # local name -> qualified names, sorted


def import_pairs(bindings: Mapping[str, Set[str]]) -> Imports:
    """An import table's bindings as plain sorted data (`names.ImportTable.bindings`)."""
    return tuple((local, tuple(sorted(quals))) for local, quals in sorted(bindings.items()))


def imported(imports: Imports, name: str) -> Tuple[str, ...]:
    return next((quals for local, quals in imports if local == name), ())


def methods_by_class(scopes: Iterable[Tuple[str, Optional[str]]]) -> Dict[str, List[str]]:
    """Per class, the functions defined directly in it, from (scope key, class name) in definition order:
    `C.m` is a method of `C`; `C.m.<locals>.f` is not."""
    methods: Dict[str, List[str]] = {}
    for key, class_name in scopes:
        if class_name is not None and key == f"{class_name}.{key.rsplit('.', 1)[-1]}":
            methods.setdefault(class_name, []).append(key.rsplit(".", 1)[-1])
    return methods


@dataclass(frozen=True)
class RegionRef:
    """The autocast state a call is made in (None on the call: no local region)."""

    info: RegionInfo
    label: str = "autocast region"

    @property
    def float16(self) -> bool:
        return self.info.enabled and self.info.precision in FLOAT16_LIKE


@dataclass(frozen=True)
class CallSummary:
    line: int
    column: int
    callee: str  # dotted, as written: "model", "self.policy.act", "utils.loss"
    text: str  # the call as written (for calls in float16 regions, where a chain starts)
    region: Optional[RegionRef]
    protected: bool  # every argument cast to float32: not followed
    receiver: Optional[Tuple[str, bool]]  # (class expression, exact) the callee's root is an instance of
    root_local: bool  # the root is a local name with no known class: not resolved further
    density: bool = False  # also a site: a call of the project's own density (`project.covered`)
    dist_args: Tuple[str, ...] = ()  # argument slots given a distribution: "0" (position) or "dist" (keyword)
    given: Tuple[Tuple[str, ReturnedDist], ...] = ()  # those built from tensors not cast: slot, what
    # Made in `with x.autocast():` where the file does not build `x`: (x as written, the `with`'s line)
    # (`project.accelflow` asks the value flow what `x` holds).
    accel: Union[Tuple[()], Tuple[str, int]] = ()  # `()`: none (the cache checks the stored value's type)
    # Also a site: a distribution's method on a receiver no constructor in sight makes (`x.log_prob(v)`); it runs
    # only methods of project classes that are no distribution (`Resolver.call_targets`), which cover it where
    # its receiver is bound to a construction of one (`project.covered`).
    opaque: bool = False


@dataclass(frozen=True)
class FunctionSummary:
    key: str  # the analysis's scope key: "f", "C.m", "f.<locals>.g", "<module>"
    display: str  # "f", "C.m", "f.g"
    class_name: Optional[str]
    parent: Optional[str]  # enclosing scope key
    nested: Tuple[Tuple[str, str], ...]  # local def name -> key
    exposed: int  # probability computations with no local region and uncast inputs
    calls: Tuple[CallSummary, ...]
    sites: int = 0  # probability computations of any kind, cast or not (`project.covered`)
    dist_params: Tuple[str, ...] = ()  # parameters annotated as distributions: their position and their name
    returns: Tuple[ReturnedDist, ...] = ()  # distributions it returns (`project.returnflow`)
    params: Tuple[str, ...] = ()  # positional parameters, `self`/`cls` left out, then keyword-only ones
    loses_range: bool = False  # computes with tensor ops float16 can push out of range (`densitycalls.loses_range`)
    returns_prob: bool = False  # may return probabilities it computes (`project.probreturns`)
    # Calls whose value it returns, whole or an element: (line, callee as written, index or -1) (`probreturns`)
    returned_calls: Tuple[Tuple[int, str, int], ...] = ()
    accels: Tuple[Tuple[str, int], ...] = ()  # every such `with x.autocast():` of the function: (x, line)


@dataclass(frozen=True)
class ClassSummary:
    name: str  # "C" or "Outer.Inner"
    bases: Tuple[str, ...]  # dotted, as written
    methods: Tuple[str, ...]  # defined directly in the class
    attrs: Tuple[Tuple[str, str, bool], ...]  # self.<attr> -> (class expression, exact)


@dataclass(frozen=True)
class FileSummary:
    imports: Imports  # local name -> qualified names (relative ones keep dots)
    star_modules: Tuple[str, ...]
    functions: Dict[str, FunctionSummary] = field(default_factory=dict)
    classes: Dict[str, ClassSummary] = field(default_factory=dict)
    instances: Tuple[Tuple[str, str, bool], ...] = ()  # module-level name -> (class expression, exact)
    framework_calls: Tuple[FrameworkCall, ...] = ()

    def imported(self, name: str) -> Tuple[str, ...]:
        return imported(self.imports, name)

    def float16_calls(self, entered: AbstractSet[str]) -> Iterator[Tuple[FunctionSummary, CallSummary]]:
        """Calls whose callee runs under float16: made in a float16 region, or with no region of their own in
        a function the walk `entered` (keys)."""
        for function in self.functions.values():
            for call in function.calls:
                if (call.region is not None and call.region.float16) or (
                        call.region is None and function.key in entered):
                    yield function, call

    def instance(self, name: str) -> Optional[Tuple[str, bool]]:
        return next(((text, exact) for local, text, exact in self.instances if local == name), None)
