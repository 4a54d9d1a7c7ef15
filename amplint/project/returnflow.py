"""Distributions returned across files: `policy(x).log_prob(a)` where `Policy.forward` is in another file.

The callee's summary lists what it returns (`FunctionSummary.returns`). For
each call in a float16 region, or in a function the walk entered, whose
callee in another file returns a distribution with parameters not cast
where it is built, the caller's analysis gets a `CallReturn`: its sites on
that value then read those parameters as inputs, and the message names the
constructor's file and line. The fixer does not edit the other file; the
finding says where to cast.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

from amplint.facts.entry import CallReturn
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import EntryContext
from amplint.project.walk import shown


def call_returns(loader: Loader, resolver: Resolver, path: str, root: str,
                 entries: Sequence[EntryContext]) -> Tuple[CallReturn, ...]:
    """The `CallReturn`s of one file, in line order."""
    summary = loader.summary(path)
    if summary is None:
        return ()
    entered = {entry.function for entry in entries}
    found: List[CallReturn] = []
    for function in summary.functions.values():
        for call in function.calls:
            in_region = call.region is not None and call.region.float16
            if not (in_region or (function.key in entered and call.region is None)):
                continue
            for target in resolver.call_targets(path, function, call, None, False):
                callee = loader.summary(target.path) if target.path != path else None
                built = callee.functions.get(target.key) if callee is not None else None
                for dist in built.returns if built is not None else ():
                    if dist.uncast:
                        found.append(CallReturn(call.line, call.column, dist, shown(target.path, root)))
    return tuple(sorted(dict.fromkeys(found), key=lambda r: (r.line, r.column, r.dist.index)))
