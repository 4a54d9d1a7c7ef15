"""`collect_facts`: one file's facts, computed once (one LibCST walk, then receiver refinement).

This is the fact layer's entry point. The rules (`amplint.rules`, dispatched by
`amplint.analysis`) and the project summaries (`amplint.project.summarize`)
both read its `FileFacts`, so single-file and project results cannot drift.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import AbstractSet, Dict, Iterator, Optional, Sequence, Tuple

import libcst as cst

from amplint.cstwalk import walk
from amplint.facts.collector import Collector, collector_class
from amplint.facts.densitycalls import DENSITY
from amplint.facts.distclasses import local_distribution_classes
from amplint.facts.entry import CoveredCall
from amplint.facts.model import AnalysisOptions, CallRecord, FileFacts, Scope, Site
from amplint.facts.sites import DISTRIBUTION, RECOGNIZERS, SiteRecognizer
from amplint.names import ImportTable, dotted_name, import_table
from amplint.screen import SITE_METHODS
from amplint.positions import PositionSource, SourceTree
from amplint.receivers import Receivers


def collect_facts(
    module: cst.Module,
    options: AnalysisOptions = AnalysisOptions(),
    imports: Optional[ImportTable] = None,
    recognizers: Sequence[SiteRecognizer] = RECOGNIZERS,
    source: PositionSource = None,
) -> FileFacts:
    """The facts of a parsed module; raises nothing for valid LibCST trees.

    `imports` is the file's `names.import_table`, when the caller has CPython's tree.
    `recognizers` decide which nodes are probability sites (`amplint.facts.sites`).
    `source`: where the positions come from besides code generation (`amplint.positions.positions`).
    """
    if imports is None:  # one parse for the imports and the classes: CPython's error raises, as it did
        tree = source.tree if isinstance(source, SourceTree) else ast.parse(module.code)
        imports = import_table(tree)
    else:
        tree = _cpython_tree(module, source)
    own = local_distribution_classes(tree, imports, options.extend_distributions)
    if own:  # this file's subclasses of a distribution are distributions here
        options = replace(options, extend_distributions=options.extend_distributions | {c.name for c in own},
                          distribution_bases=options.distribution_bases + own)
    collector = collector_class(recognizers)(module, imports, options, recognizers, source)
    walk(module, collector)
    _drop_non_distributions(collector)
    _drop_densities_with_sites(collector.scopes)
    return FileFacts(module, imports, collector.scopes, collector.class_bases, collector.class_attrs,
                     collector.framework_calls, collector.class_items, collector.returns, collector.requested,
                     collector.positions, options.extend_distributions, options.distribution_bases)


def _cpython_tree(module: cst.Module, source: PositionSource) -> ast.Module:
    """CPython's tree of `module`: the caller's, or a parse of its code (a kept tree analysed again, a retabbed
    copy); an empty tree where CPython rejects what LibCST accepted."""
    if isinstance(source, SourceTree):
        return source.tree
    try:
        return ast.parse(module.code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ast.Module(body=[], type_ignores=[])


def _drop_non_distributions(collector: Collector) -> None:
    """Forget `x.log_prob(v)` sites whose receiver is known not to be a distribution (`amplint.receivers`).

    Only sites that could be reported are examined (no visible constructor,
    an uncast input), so files without them pay nothing. A receiver of a class
    of this file becomes a call into its method instead: a wrapper whose
    `log_prob` builds a distribution is still reached from the region.
    """
    receivers: Optional[Receivers] = None
    for scope in list(collector.scopes.values()):
        for site in list(scope.sites):
            if site.dists or not site.uncast or not isinstance(site.call, cst.Call) or \
                    not isinstance(site.call.func, cst.Attribute):
                continue
            if receivers is None:
                receivers = Receivers(collector.module, collector.imports, collector.class_defs,
                                      collector.options.extend_distributions)
            if _import_time_receiver(site, scope, receivers):
                scope.sites.remove(site)
                continue
            chain = [s.node for s in _scope_chain(scope) if s.node is not None]
            callees = receivers.callees(site.call.func.value, chain, scope.class_name)
            if not callees or not all(receivers.is_non_distribution_class(c) for c in callees):
                continue
            scope.sites.remove(site)
            for callee in callees:
                _call_method(collector.scopes, receivers, scope, site, callee)


def _import_time_receiver(site: Site, scope: Scope, receivers: Receivers) -> bool:
    """`scipy.stats.beta.cdf(x)`: a distribution method's receiver an imported module holds
    (`Receivers.import_time_object`), its root not rebound in the functions around the site."""
    if site.kind != DISTRIBUTION or site.call.func.attr.value not in SITE_METHODS:
        return False
    root = (dotted_name(site.call.func.value) or "").split(".")[0]
    return not any(root in each.bound for each in _scope_chain(scope) if each.parent) and \
        receivers.import_time_object(site.call.func.value)


def _drop_densities_with_sites(scopes: Dict[str, Scope]) -> None:
    """Forget a call of a density of this file whose body holds sites of its own: those report the hazard.

    The call stays a call, so the body is still reached from the region.
    """
    for scope in scopes.values():
        for site in [s for s in scope.sites if s.kind == DENSITY]:
            func = site.call.func if isinstance(site.call, cst.Call) else None
            key = None
            if isinstance(func, cst.Name):
                key = func.value
            elif isinstance(func, cst.Attribute) and scope.class_name is not None:
                key = f"{scope.class_name}.{func.attr.value}"
            callee = scopes.get(key) if key is not None else None
            if callee is not None and callee is not scope and callee.sites:
                scope.sites.remove(site)


def drop_covered(facts: FileFacts, covered: Sequence[CoveredCall]) -> None:
    """Forget the sites the project walk found covered by the bodies they call."""
    places = {(c.line, c.column) for c in covered}
    for scope in facts.scopes.values() if places else ():
        scope.sites[:] = [s for s in scope.sites if not is_covered(s, places)]


def is_covered(site: Site, places: AbstractSet[Tuple[int, int]]) -> bool:
    """Is `site` at one of `places` (line, 1-based column) a call whose bodies speak for it (`project.covered`):
    a density call, or a distribution's method on a receiver no constructor of a distribution reaches?"""
    return (site.kind == DENSITY or site.kind == DISTRIBUTION and not site.dists) and \
        (site.position.start.line, site.position.start.column + 1) in places


def _scope_chain(scope: Scope) -> Iterator[Scope]:
    each: Optional[Scope] = scope
    while each is not None:
        yield each
        each = each.parent


def _call_method(scopes: Dict[str, Scope], receivers: Receivers, scope: Scope, site: Site,
                 callee: cst.BaseExpression) -> None:
    """Record `C(...).log_prob(v)` on a class of this file as a call of `C.log_prob` (or a base's)."""
    local = receivers.file_class(callee)
    owners = [] if local is None else receivers.method_owners(local)
    key = next((k for k in (f"{owner}.{site.method}" for owner in owners) if k in scopes), None)
    if key is not None:
        start = site.position.start
        scope.calls.append(CallRecord("method", key, site.state, start.line, False, start.column + 1))
