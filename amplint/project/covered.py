"""Density calls whose callee reports for itself: one hazard, one finding, where the math is.

A call of the project's own density (`posterior.kl()`, `losses.gaussian_nll(mu, s, x)`)
is a site, because single-file mode cannot see the body. When the walk
enters the body and finds sites there, those findings say more (they point at
the math, and `--fix` can change it), so the call's own finding is dropped.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Set, Tuple

from amplint.densitynames import DENSITY_KIND
from amplint.model import Finding
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import EntryContext

Position = Tuple[str, int, int]


def covered_density_calls(loader: Loader, resolver: Resolver, files: Iterable[str],
                          entries: Dict[str, List[EntryContext]]) -> Set[Position]:
    """(path, line, column) of each density call with a target the walk entered and found sites in."""
    reported = {(path, entry.function) for path, found in entries.items() for entry in found}
    covered: Set[Position] = set()
    for path in files:
        summary = loader.summary(path) if path in loader.info else None
        for function in summary.functions.values() if summary is not None else ():
            for call in function.calls:
                if not call.density:
                    continue
                targets = resolver.call_targets(path, function, call, None, False)
                if any((t.path, t.key) in reported or _own_sites(loader, t.path, t.key) for t in targets):
                    covered.add((path, call.line, call.column))
    return covered


def _own_sites(loader: Loader, path: str, key: str) -> bool:
    summary = loader.summary(path)
    function = summary.functions.get(key) if summary is not None else None
    return function is not None and function.exposed > 0


def without_covered(path: str, findings: List[Finding], covered: Set[Position]) -> List[Finding]:
    return [f for f in findings if not (f.site is not None and f.site.kind == DENSITY_KIND
                                        and (path, f.line, f.column) in covered)]
