"""Density calls whose callee reports for itself: one hazard, one finding, where the math is.

A call of the project's own density (`posterior.kl()`, `losses.gaussian_nll(mu, s, x)`)
is a site, because single-file mode cannot see the body. When the call
resolves to a body that holds sites, those sites say more (they point at the
math, and `--fix` can change it; cast ones are safe), so the call's own
finding is dropped: the file is analysed with a `CoveredCall` for it. A body
with no sites of its own (a CDF written with `sigmoid` or `erf`) leaves the
call as the only place to report.
"""
from __future__ import annotations

from typing import Tuple

from amplint.facts.entry import CoveredCall
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver


def covered_density_calls(loader: Loader, resolver: Resolver, path: str) -> Tuple[CoveredCall, ...]:
    """The density calls of `path` that resolve to a body holding sites, in line order."""
    summary = loader.summary(path) if path in loader.info else None
    covered = []
    for function in summary.functions.values() if summary is not None else ():
        for call in function.calls:
            if call.density and any(_has_sites(loader, t.path, t.key)
                                    for t in resolver.call_targets(path, function, call, None, False)):
                covered.append(CoveredCall(call.line, call.column))
    return tuple(sorted(set(covered), key=lambda c: (c.line, c.column)))


def _has_sites(loader: Loader, path: str, key: str) -> bool:
    summary = loader.summary(path)
    function = summary.functions.get(key) if summary is not None else None
    return function is not None and function.sites > 0
