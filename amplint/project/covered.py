"""Density calls whose callee reports for itself: one hazard, one finding, where the math is.

A call of the project's own density (`posterior.kl()`, `losses.gaussian_nll(mu, s, x)`)
is a site, because single-file mode cannot see the body. When the call
resolves to a body that holds sites, those sites say more (they point at the
math, and `--fix` can change it; cast ones are safe), so the call's own
finding is dropped. A body with no sites of its own (a CDF written with
`sigmoid` or `erf`) leaves the call as the only place to report.
"""
from __future__ import annotations

from typing import Iterable, List, Set, Tuple

from amplint.densitynames import DENSITY_KIND
from amplint.model import Finding
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver

Position = Tuple[str, int, int]


def covered_density_calls(loader: Loader, resolver: Resolver, files: Iterable[str]) -> Set[Position]:
    """(path, line, column) of each density call that resolves to a body holding sites."""
    covered: Set[Position] = set()
    for path in files:
        summary = loader.summary(path) if path in loader.info else None
        for function in summary.functions.values() if summary is not None else ():
            for call in function.calls:
                if not call.density:
                    continue
                targets = resolver.call_targets(path, function, call, None, False)
                if any(_has_sites(loader, t.path, t.key) for t in targets):
                    covered.add((path, call.line, call.column))
    return covered


def _has_sites(loader: Loader, path: str, key: str) -> bool:
    summary = loader.summary(path)
    function = summary.functions.get(key) if summary is not None else None
    return function is not None and function.sites > 0


def without_covered(path: str, findings: List[Finding], covered: Set[Position]) -> List[Finding]:
    return [f for f in findings if not (f.site is not None and f.site.kind == DENSITY_KIND
                                        and (path, f.line, f.column) in covered)]
