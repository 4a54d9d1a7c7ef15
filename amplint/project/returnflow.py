"""Distributions returned across files: `policy(x).log_prob(a)` where `Policy.forward` is in another file.

The callee's summary lists what it returns (`FunctionSummary.returns`). For
each call in a float16 region, or in a function the walk entered, whose
callee in another file returns a distribution, the caller's analysis gets a `CallReturn`: its sites on
that value then read the parameters not cast where it is built as inputs,
and the message names the constructor's file and line. One built from cast
tensors is handed on too: the caller then knows the value is float32. `--fix` casts the parameters in
the other file (`amplint.fix.remote`).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from amplint.facts.entry import CallReturn, DistArgument, ReturnedDist
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import CallSummary, EntryContext, FunctionSummary
from amplint.project.symbols import Target
from amplint.project.walk import call_hop, shown

MAX_RETURN_HOPS = 8  # calls whose value a function returns, followed from one call: bounds the work


def call_returns(loader: Loader, resolver: Resolver, path: str, root: str, entries: Sequence[EntryContext],
                 memo: Optional["Returns"] = None) -> Tuple[CallReturn, ...]:
    """The `CallReturn`s of one file, in line order (`memo`: what each function returns, for every file)."""
    summary = loader.summary(path)
    if summary is None:
        return ()
    found: List[CallReturn] = []
    for function, call in summary.float16_calls({entry.function for entry in entries}):
        for target in resolver.call_targets(path, function, call, None, False):
            if target.path == path:
                continue  # the file's own returns: `facts.returns` follows them
            for dist, where in returned(loader, resolver, target, memo=memo):  # one cast where built: no inputs
                found.append(CallReturn(call.line, call.column, dist, shown(where, root), where))
    return tuple(sorted(dict.fromkeys(found), key=lambda r: (r.line, r.column, r.dist.index, r.dist.key)))


Returns = Dict[Tuple[Target, int], Tuple[Tuple[ReturnedDist, str], ...]]


def returned(loader: Loader, resolver: Resolver, target: Target, depth: int = MAX_RETURN_HOPS,
             memo: Optional[Returns] = None) -> Tuple[Tuple[ReturnedDist, str], ...]:
    """The distributions `target` returns, each with the file that builds it: its own, and through a call whose
    value it returns (`return self.inner(h)`: a wrapper's `forward`; `return make(x)[0]`), what that call's
    targets return, up to `depth` such hops.

    Answered once per (function, hops left) in `memo`: followed path by path, a wrapper whose call runs any of
    thousands of modules (transformers' `self.lm_head(h)`) was read once per path, thousands to the eighth.
    A cycle needs no guard: each hop has one fewer left, and what a path through a cycle reaches, a shorter
    one without it reaches too."""
    memo = {} if memo is None else memo
    key = (target, depth)
    if key in memo:
        return memo[key]
    summary = loader.summary(target.path)
    built = summary.functions.get(target.key) if summary is not None else None
    found: List[Tuple[ReturnedDist, str]] = [(dist, target.path) for dist in built.returns] if built else []
    for line, callee, index in built.returned_calls if built and not built.returns and depth > 0 else ():
        call = next((c for c in built.calls if c.line == line and c.callee == callee and c.region is None), None)
        for inner in resolver.call_targets(target.path, built, call, None, False) if call is not None else ():
            for dist, where in returned(loader, resolver, inner, depth - 1, memo):
                if index < 0:
                    found.append((dist, where))
                elif dist.index == index:
                    found.append((replace(dist, index=-1), where))
    memo[key] = tuple(dict.fromkeys(found))
    return memo[key]


def dist_arguments(loader: Loader, resolver: Resolver, files: Sequence[str], entries: Dict[str, List[EntryContext]],
                   root: str) -> Tuple[Dict[str, List[EntryContext]], Dict[str, List[DistArgument]]]:
    """The join over call sites: each parameter a float16 caller gives a distribution, and what it is built from.

    Returns the entries the callees need (a function with no probability site of its own is not one of the
    walk's entries, yet its `d.entropy()` on such a parameter is a site) and, per file, the `DistArgument`s.
    """
    extra: Dict[str, List[EntryContext]] = {}
    given: Dict[str, List[DistArgument]] = {}
    for path in files:
        for function, call, how in _given_calls(loader, path, entries.get(path, ()), root):
            for target in resolver.call_targets(path, function, call, None, False):
                summary = loader.summary(target.path)
                callee = summary.functions.get(target.key) if summary is not None else None
                if callee is None:
                    continue
                for slot, dist in call.given:
                    name = _parameter(callee, slot)
                    if name is not None:
                        given.setdefault(target.path, []).append(
                            DistArgument(target.key, name, dist, shown(path, root), path))
                if not any(dist.uncast for _, dist in call.given):
                    continue  # a float32 distribution: nothing to report in the callee
                chain = how.chain + (call_hop(resolver.display(target), call, path, shown(path, root)),)
                extra.setdefault(target.path, []).append(EntryContext(
                    target.key, how.region, how.label, how.region_path, chain, how.region_file))
    return extra, {p: sorted(set(found), key=repr) for p, found in given.items()}


def _given_calls(loader: Loader, path: str, entered: Sequence[EntryContext],
                 root: str) -> Iterator[Tuple[FunctionSummary, CallSummary, EntryContext]]:
    """Calls that give a distribution: made in a float16 region, or in a function the walk entered."""
    summary = loader.summary(path)
    by_function = {entry.function: entry for entry in entered}
    for function, call in summary.float16_calls(set(by_function)) if summary is not None else ():
        if not call.given:
            continue
        if call.region is not None:  # a float16 region of this file: the chain starts at the call
            start = (call_hop(call.text or f"{call.callee}(...)", call, path, shown(path, root)),)
            yield function, call, EntryContext(function.key, call.region.info, call.region.label,
                                               shown(path, root), start, path)
        else:
            yield function, call, by_function[function.key]


def _parameter(callee: FunctionSummary, slot: str) -> Optional[str]:
    if slot.isdigit():
        index = int(slot)
        return callee.params[index] if index < len(callee.params) else None
    return slot if slot in callee.params else None
