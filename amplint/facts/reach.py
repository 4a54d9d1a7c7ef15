"""Which functions of a file run under a region they do not open themselves, and through which chain.

A site with no region of its own in its function (`site.state is None`) is
decided by its callers' region. `reached` follows calls made in enabled
float16 regions of this file, transitively, through helpers and methods of
the same file (breadth first: the shortest chain wins). `entered` turns the
project walk's entry contexts (functions of this file entered from a region
in another place) into the same `Reach` records. Rules read these; this module
knows no rule codes.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Deque, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from amplint.facts.model import CallRecord, FileFacts, RegionEntry, Scope
from amplint.model import Hop
from amplint.regions import RegionSpec

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.entry import EntryContext


@dataclass(frozen=True)
class Reach:
    """A function entered from `region` through `chain` (outermost first: each function at the call that
    entered it; hops of this file have no path, `pipeline.to_finding` names it)."""

    scope: Scope
    region: RegionEntry
    chain: Tuple[Hop, ...]
    origin: str = ""  # the region's file (display path) when the project walk found it elsewhere
    origin_file: str = ""  # the same file as discovered (like `Finding.path`)


def resolve_call(call: CallRecord, caller: Scope, scopes: Dict[str, Scope],
                 bases: Dict[str, List[str]]) -> Optional[Scope]:
    """The function of this file a call record of `caller` lands in, if the file defines it.

    The record does not point back at `caller`, which holds it: a scope and its calls in a cycle would stay
    in memory, with the tree the scope holds, until the cyclic collector ran (`amplint.collection`)."""
    if call.kind == "name":
        scope: Optional[Scope] = caller
        while scope is not None:
            if call.name in scope.nested:
                return scopes.get(scope.nested[call.name])
            scope = scope.parent
        return scopes.get(call.name)
    if call.kind == "method":
        return scopes.get(call.name)
    if call.kind == "instance":  # single-file mode: calling an instance runs `__call__`, a module's `forward`
        return _method_of(call.name, "__call__", scopes, bases) or _method_of(call.name, "forward", scopes, bases)
    if call.kind != "self" or not caller.class_name:
        return None
    return _method_of(caller.class_name, call.name, scopes, bases)


def _method_of(class_name: str, method: str, scopes: Dict[str, Scope], bases: Dict[str, List[str]]
               ) -> Optional[Scope]:
    """`class_name.method` of this file: in the class, else in its bases of this file, in declaration order."""
    pending = [class_name]
    seen: Set[str] = set()
    while pending:
        cls = pending.pop(0)
        if cls in seen:
            continue
        seen.add(cls)
        target = scopes.get(f"{cls}.{method}")
        if target is not None:
            return target
        pending.extend(b.rsplit(".", 1)[-1] for b in bases.get(cls, []))
    return None


def reached(facts: FileFacts) -> Iterator[Reach]:
    """Functions called, transitively, from an enabled float16 region of this file, each once, nearest first."""
    return reached_in(facts.scopes, facts.class_bases)


def reached_in(scopes: Dict[str, Scope], class_bases: Dict[str, List[str]]) -> Iterator[Reach]:
    """`reached` over a file's scopes and class bases, as either tree's reader records them."""
    queue: Deque[Tuple[Scope, RegionEntry, Tuple[Hop, ...]]] = deque()
    for scope in scopes.values():
        for call in scope.calls:
            if call.state is not None and call.state.is_float16 and not call.protected:
                target = resolve_call(call, scope, scopes, class_bases)
                if target is not None:
                    queue.append((target, call.state, (_hop(target, call),)))
    visited: Set[str] = set()
    while queue:
        scope, region, chain = queue.popleft()
        if scope.key in visited:
            continue
        visited.add(scope.key)
        yield Reach(scope, region, chain)
        for call in scope.calls:
            if call.state is None and not call.protected:
                target = resolve_call(call, scope, scopes, class_bases)
                if target is not None and target.key not in visited:
                    queue.append((target, region, chain + (_hop(target, call),)))


def _hop(target: Scope, call: CallRecord) -> Hop:
    """`target` entered at `call`, in this file (its path is the finding's: `pipeline.to_finding`)."""
    return Hop(target.display, line=call.line, column=call.column)


def entered(facts: FileFacts, entries: Sequence["EntryContext"]) -> Iterator[Reach]:
    """Functions the project walk entered from a region elsewhere: shortest chain first, then path order."""
    order = sorted(entries, key=lambda e: (len(e.chain), e.region_path, e.region.line, e.function, e.chain))
    for entry in order:
        scope = facts.scopes.get(entry.function)
        if scope is None:
            continue
        info = entry.region
        region = RegionEntry(RegionSpec(info.precision, info.enabled, info.device, info.device_code), info.line,
                             None, entry.label)
        yield Reach(scope, region, entry.chain, entry.region_path, entry.region_file)
