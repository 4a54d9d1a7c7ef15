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

from typing import Sequence, Tuple

from amplint.densitynames import is_density_name
from amplint.facts.entry import CoveredCall, DensityCall
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import EntryContext
from amplint.project.walk import shown


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


def resolved_density_calls(loader: Loader, resolver: Resolver, path: str, root: str,
                           entered: Sequence[EntryContext]) -> Tuple[DensityCall, ...]:
    """Calls named like a density that only the walk can resolve (`posterior = encoder(x); posterior.kl()`),
    to a project density with no sites of its own: the call is the one place to report it."""
    summary = loader.summary(path) if path in loader.info else None
    found = []
    for function, call in summary.float16_calls({e.function for e in entered}) if summary is not None else ():
        if call.density or not is_density_name(call.callee.rsplit(".", 1)[-1]):
            continue
        for target in resolver.call_targets(path, function, call, None, False):
            callee = loader.summary(target.path)
            built = callee.functions.get(target.key) if callee is not None else None
            if built is not None and built.density and built.sites == 0:
                found.append(DensityCall(call.line, call.column, resolver.display(target), shown(target.path, root)))
                break
    return tuple(found)
