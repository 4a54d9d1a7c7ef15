"""Density calls judged by the bodies they run: one hazard, one finding, where the math is.

A call named like a density (`posterior.kl()`, `losses.gaussian_nll(mu, s, x)`)
is a site in single-file mode, which cannot see the body: the name is all it
has. The walk can, so there the body decides, wherever it is defined:

- a body that holds sites reports the hazard itself, and better (they point
  at the math, and `--fix` can change it; cast ones are safe), and so does one
  that computes on the probabilities another project function returns (its
  sites are known only once that call is: `probability_callees`);
- a body with no tensor op float16 can push out of range (a KL-annealing
  schedule on step counts, a weighted sum of terms already computed, a fused
  `log_softmax`) has no hazard to report.

Either way the call's own finding is dropped: the file is analysed with a
`CoveredCall` for it. A body that loses range with no site of its own (a CDF
written with `sigmoid` or `erf`) leaves the call as the one place to report,
and so does a call the walk cannot resolve. A distribution's method on a
receiver bound, where it is called, to a construction of a project class that
is no distribution (`prior = Prior(8, k); prior.entropy()`, `Prior` imported)
is judged the same way: the call runs that class's method, which the walk
entered (`CallSummary.opaque`).
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Set, Tuple

from amplint.densitynames import is_density_name
from amplint.facts.entry import CoveredCall, DensityCall, ProbabilityCallees
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver
from amplint.project.summary import CallSummary, EntryContext, FunctionSummary
from amplint.project.symbols import Target
from amplint.project.walk import names_a_function, returns_prob, shown
from amplint.torchnames import never_a_distribution_base


def covered_density_calls(loader: Loader, resolver: Resolver, path: str) -> Tuple[CoveredCall, ...]:
    """The density calls of `path` whose bodies speak for them (module doc), in line order."""
    summary = loader.summary(path) if path in loader.info else None
    covered = []
    for function in summary.functions.values() if summary is not None else ():
        for call in function.calls:
            spoken = call.density or call.opaque and _constructed_here(resolver, path, call)
            targets = resolver.call_targets(path, function, call, None, False) if spoken else []
            if spoken and _spoken_for(loader, resolver, targets):
                covered.append(CoveredCall(call.line, call.column))
    return tuple(sorted(set(covered), key=lambda c: (c.line, c.column)))


def _constructed_here(resolver: Resolver, path: str, call: CallSummary) -> bool:
    """Is the receiver of `x.log_prob(v)` bound, where it is called, to a construction of project classes that
    are no distribution (`prior = Prior(8, k)`, the class imported)? Then the call is that class's method, and
    nothing else: its body speaks for it. A receiver only the value flow knows (a method's return, a loop's
    variable) may hold more than the flow sees, and its call stays a site."""
    if call.receiver is None or not call.receiver[1]:
        return False
    classes = resolver.class_of(path, call.receiver[0])
    return bool(classes) and not any(resolver.is_distribution_class(c) or not all(
        map(never_a_distribution_base, resolver.external_bases(c))) for c in classes)  # another library's may be


def _spoken_for(loader: Loader, resolver: Resolver, targets: Sequence[Target]) -> bool:
    """Some body holds sites, or every body is known and none loses range, itself or through its calls."""
    bodies = [_body(loader, t.path, t.key) for t in targets]
    if any(body is not None and (body.sites > 0 or _reads_probabilities(loader, resolver, t.path, body))
           for t, body in zip(targets, bodies)):
        return True
    return bool(bodies) and all(
        body is not None and not _loses_range(loader, resolver, t.path, body)
        for t, body in zip(targets, bodies))


def _reads_probabilities(loader: Loader, resolver: Resolver, path: str, body: FunctionSummary) -> bool:
    """A body that loses range on what a project function returns as probabilities (`p = to_probs(out)`, then
    `torch.log(p + 1e-10)`): its summary counts no site, as the file alone cannot tell `p` is probabilities, but
    the judge reads that call as probabilities (`probability_callees`), so the body reports its own math."""
    return body.loses_range and any(returns_prob(loader, t) for call in body.calls if names_a_function(call)
                                    for t in resolver.call_targets(path, body, call, None, False))


def _loses_range(loader: Loader, resolver: Resolver, path: str, body: FunctionSummary) -> bool:
    """Does `body`, or a project function it calls at any depth, use a tensor op float16 can push out of range?
    A CDF difference often computes its `erfc` in a helper (`self._standardized_cumulative(...)`). Each
    function is read once: that bounds the work, and no depth cuts the answer."""
    pending: List[Tuple[str, FunctionSummary]] = [(path, body)]
    seen: Set[Tuple[str, str]] = {(path, body.key)}
    while pending:
        where, function = pending.pop()
        if function.loses_range:
            return True
        for call in function.calls:
            for target in resolver.call_targets(where, function, call, None, False):
                callee = _body(loader, target.path, target.key)
                if callee is not None and (target.path, target.key) not in seen:
                    seen.add((target.path, target.key))
                    pending.append((target.path, callee))
    return False


def _body(loader: Loader, path: str, key: str) -> Optional[FunctionSummary]:
    summary = loader.summary(path)
    return summary.functions.get(key) if summary is not None else None


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
            if built is not None and built.loses_range and built.sites == 0:
                found.append(DensityCall(call.line, call.column, resolver.display(target), shown(target.path, root)))
                break
    return tuple(found)


def probability_callees(loader: Loader, resolver: Resolver, path: str) -> Tuple[ProbabilityCallees, ...]:
    """The callees of `path`, as written, that resolve to project functions returning probabilities they compute:
    the judge counts a call of one as probabilities (`project.probreturns`)."""
    summary = loader.summary(path) if path in loader.info else None
    callees = sorted({call.callee for function in (summary.functions.values() if summary is not None else ())
                      for call in function.calls if names_a_function(call)
                      and any(returns_prob(loader, t)
                              for t in resolver.call_targets(path, function, call, None, False))})
    return (ProbabilityCallees(tuple(callees)),) if callees else ()
