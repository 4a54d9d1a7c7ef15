"""Accelerators built elsewhere (rule A across calls): `with accelerator.autocast():` on a parameter, a `self.`
attribute or a factory's result.

The collector reads `with x.autocast():` as a region when the file binds `x`
to `Accelerator(...)` itself. Otherwise it records the `with` as pending
(`FunctionSummary.accels`, `CallSummary.accel`: `x` as written and the line),
and this module asks the value flow (`flow.py`) what `x` holds: a parameter
the join of the arguments at every call site in the project (through
parameters of callers, to `MAX_HOPS`), a local the value of its assignments
(a factory's returns: `return Accelerator(...)`, `return acc or
Accelerator(...)`), a `self.` attribute the join of its assignments
(`self.accelerator = accelerator` in `__init__`, then the constructor's call
sites). Each `Accelerator(...)` found is an `flow.Accelerated` value, with its
precision read as rule A reads it.

- The walk starts at the calls made in such a region (`accel_seeds`), as it
  starts at the calls of any float16 region (`walk.call_seeds`).
- The file itself gets a `HeldAccelerator` per receiver (`held_accelerators`),
  and its collector then opens the region, for its own sites and the
  functions of the file the region calls (and `accelerator.prepare(model)` on
  it prepares `model`).

Of several constructions a receiver may hold, the one whose region is most
float16 counts: `"fp16"`, then a precision not read (maybe-float16), then
`"bf16"`, then `"no"` (no region). A receiver for which the project builds no
accelerator anywhere (a library's entry point, called by code outside the
project) holds nothing: no region. Its precision is configured where the
object is built, and this project does not show it; a parameter that is
only ever used as `.autocast()` may well be an Accelerate object, but it may
as well be Fabric's or a user's own, and a guess there would report code the
project never runs in float16.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from amplint.facts.entry import HeldAccelerator
from amplint.model import Precision, RegionInfo
from amplint.project.flow import Accelerated
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import CallSummary, FunctionSummary, RegionRef
from amplint.project.walk import Seed, call_hop, followed, shown

RANK = {Precision.FLOAT16: 0, Precision.MAYBE_FLOAT16: 1, Precision.BFLOAT16: 2, None: 3}


def held(resolver: Resolver, path: str, scope: str, receiver: str) -> Optional[Accelerated]:
    """The `Accelerator(...)` `receiver` (a dotted name read in `scope` of `path`) may hold whose region is most
    float16; None when the flow finds none."""
    try:
        expr = ast.parse(receiver, mode="eval").body
        values = resolver.flow.value(path, scope, expr)
    except (SyntaxError, RecursionError):
        return None
    found = sorted((v for v in values if isinstance(v, Accelerated)),
                   key=lambda v: (RANK.get(v.precision, 3), v.path, v.line))
    return found[0] if found else None


def built_label(accelerated: Accelerated, root: str) -> str:
    """The construction as messages show it, with where it is built."""
    return f"{accelerated.label} (built at {shown(accelerated.path, root)}:{accelerated.line})"


def region(resolver: Resolver, path: str, function: FunctionSummary, accel: Tuple[str, int],
           root: str) -> Optional[RegionRef]:
    """The region of the pending `with` `accel` (receiver, line) of `function`: None when it opens none."""
    found = held(resolver, path, function.key, accel[0])
    if found is None or found.precision is None:
        return None
    info = RegionInfo(accel[1], found.precision, True, "cuda", '"cuda"')
    return RegionRef(info, f"accelerator.autocast() region of {built_label(found, root)}")


def accel_seeds(loader: Loader, resolver: Resolver, root: str) -> List[Seed]:
    """The calls made in the pending accelerator regions of the region files that hold a float16 one."""
    seeds: List[Seed] = []
    for path in loader.region_files():
        summary = loader.summary(path)
        if summary is None or not any(f.accels for f in summary.functions.values()):
            continue
        calls: List[Tuple[CallSummary, FunctionSummary]] = [
            (call, function) for function in summary.functions.values() for call in function.calls if call.accel]
        where = shown(path, root)
        opens: Dict[Tuple[str, Tuple[str, int]], Optional[RegionRef]] = {}  # one answer per `with`, not per call
        for call, function in sorted(calls, key=lambda item: (item[0].line, item[0].column)):
            key = (function.key, call.accel)
            if key not in opens:
                opens[key] = region(resolver, path, function, call.accel, root)
            opened = opens[key]
            if opened is None or not opened.float16:
                continue
            call = replace(call, region=opened)
            for target in followed(call, resolver.call_targets(path, function, call, None, False)):
                start = call_hop(call.text or f"{call.callee}(...)", call, path, where)
                seeds.append(Seed(target, opened, where, (start, replace(start, name=resolver.display(target))),
                                  path))
    return seeds


def held_accelerators(loader: Loader, resolver: Resolver, path: str, root: str) -> Tuple[HeldAccelerator, ...]:
    """What the file's pending accelerator receivers hold, for its collector (`AnalysisOptions.accelerators`)."""
    summary = loader.summary(path) if path in loader.info else None
    found: List[HeldAccelerator] = []
    for function in summary.functions.values() if summary is not None else ():
        for receiver in dict.fromkeys(receiver for receiver, _ in function.accels):
            accelerated = held(resolver, path, function.key, receiver)
            if accelerated is not None:
                found.append(HeldAccelerator(function.key, receiver, accelerated.precision,
                                             built_label(accelerated, root)))
    return tuple(found)
