"""Facts in, diagnoses out: the one analysis every front end calls (through `engine.analyze_source`).

`amplint.facts.collect_facts` reads a file once: regions, bindings, dtype
provenance, probability sites and call records, with no rule codes. This
module only dispatches: each registered rule (`amplint.rules.ALL_RULES`)
looks at every site under its own region (`Rule.at_site`), then at the sites
of functions reached from a float16 region of this file (`Rule.when_reached`,
`facts.reach.reached`), then at the whole file (`Rule.check_file`). In
project mode the walk in `amplint.project` hands back "entry contexts"
(functions of this file entered from a region elsewhere); `analyze_module(...,
entries=...)` and `with_entries` turn them into diagnoses the same way, so the
codemod gets the same `Diagnosis` objects whichever way a site was reached.
A site gets one diagnosis: the first rule, in the first pass, that flags it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from amplint.facts.build import collect_facts, drop_covered, is_covered
from amplint.facts.entry import (
    CallReturn, Constructor, CoveredCall, DensityCall, DistArgument, EntryContext, Float32Reads, HeldAccelerator,
    ProbabilityCallees,
)
from amplint.facts.frameworks import FrameworkCall
from amplint.facts.model import (  # noqa: F401 - the facts' names, as `amplint.analysis` has always given them
    FLOAT16_LIKE, MODULE_KEY, AccelBinding, AnalysisOptions, CallRecord, DistRef, FileFacts, RegionEntry, Scope, Site,
)
from amplint.facts.reach import Reach, entered, reached
from amplint.facts.sitespec import site_spec  # noqa: F401
from amplint.names import ImportTable
from amplint.positions import PositionSource
from amplint.rulebase import Diagnosis, Rule


@dataclass
class ModuleAnalysis:
    """A file's facts and the diagnoses the rules drew from them."""

    facts: FileFacts
    diagnoses: List[Diagnosis]
    rules: Tuple[Rule, ...] = ()

    @property
    def module(self) -> cst.Module:
        return self.facts.module

    @property
    def imports(self) -> ImportTable:
        return self.facts.imports

    @property
    def scopes(self) -> Dict[str, Scope]:
        return self.facts.scopes

    @property
    def class_bases(self) -> Dict[str, List[str]]:
        return self.facts.class_bases

    @property
    def class_attrs(self) -> Dict[str, Dict[str, Tuple[str, bool]]]:
        return self.facts.class_attrs

    @property
    def framework_calls(self) -> List[FrameworkCall]:
        return self.facts.framework_calls


def _registered() -> Tuple[Rule, ...]:
    from amplint.rules import ALL_RULES

    return ALL_RULES


def _reached_sites(reaches: Iterable[Reach], rules: Sequence[Rule], claimed: Set[int]) -> List[Diagnosis]:
    """Diagnoses for exposed sites (no region of their own) of the functions `reaches` enter."""
    found: List[Diagnosis] = []
    for reach in reaches:
        for site in reach.scope.sites:
            if site.state is not None or id(site) in claimed:
                continue
            for rule in rules:
                if rule.when_reached is not None and rule.when_reached(site, reach):
                    claimed.add(id(site))
                    found.append(Diagnosis(rule.code, site, reach.region, reach.chain, reach.origin,
                                           reach.origin_file))
                    break
    return found


def diagnose(facts: FileFacts, rules: Sequence[Rule], entries: Sequence["EntryContext"] = ()) -> List[Diagnosis]:
    """Every rule over the file's facts, in pass order (own regions, reached, whole file, entered)."""
    diagnoses: List[Diagnosis] = []
    claimed: Set[int] = set()
    for scope in facts.scopes.values():
        for site in scope.sites:
            if site.state is None:
                continue
            for rule in rules:
                if rule.at_site is not None and rule.at_site(site):
                    claimed.add(id(site))
                    diagnoses.append(Diagnosis(rule.code, site, site.state))
                    break
    diagnoses.extend(_reached_sites(reached(facts), rules, claimed))
    for rule in rules:
        if rule.check_file is not None:
            for diagnosis in rule.check_file(facts, claimed):
                claimed.add(id(diagnosis.site))
                diagnoses.append(diagnosis)
    if entries:
        diagnoses.extend(_reached_sites(entered(facts, entries), rules, claimed))
    return diagnoses


def analyze_module(
    module: cst.Module,
    options: AnalysisOptions = AnalysisOptions(),
    entries: Sequence["EntryContext"] = (),
    imports: Optional[ImportTable] = None,
    rules: Optional[Sequence[Rule]] = None,
    source: PositionSource = None,
) -> ModuleAnalysis:
    """Analyze a parsed module; raises nothing for valid LibCST trees.

    `entries` are functions of this module entered from float16 regions found by
    the project walk; their exposed sites are diagnosed with the walk's chain.
    `imports` is the file's `names.import_table`, when the caller has CPython's tree.
    `rules` default to every registered rule.
    `source`: where the positions come from besides code generation (`amplint.positions.positions`).
    """
    chosen = tuple(_registered() if rules is None else rules)
    returns = tuple(e for e in entries if isinstance(e, CallReturn))  # the walk's other contexts
    arguments = tuple(e for e in entries if isinstance(e, DistArgument))
    densities = tuple(e for e in entries if isinstance(e, DensityCall))
    requests = tuple(e for e in entries if isinstance(e, Constructor))  # the fixer's, for another file's finding
    producers = frozenset(c for e in entries if isinstance(e, ProbabilityCallees) for c in e.callees)
    float32 = tuple(e for e in entries if isinstance(e, Float32Reads))
    accelerators = tuple(e for e in entries if isinstance(e, HeldAccelerator))
    if returns or arguments or densities or requests or producers or float32 or accelerators:
        options = replace(options, returns=options.returns + returns, arguments=options.arguments + arguments,
                          density_calls=options.density_calls + densities, requests=options.requests + requests,
                          producers=options.producers | producers, float32_reads=options.float32_reads + float32,
                          accelerators=options.accelerators + accelerators)
    facts = collect_facts(module, options, imports, source=source)
    drop_covered(facts, [e for e in entries if isinstance(e, CoveredCall)])
    reached = [e for e in entries if isinstance(e, EntryContext)]
    return ModuleAnalysis(facts, diagnose(facts, chosen, reached), chosen)


REUSABLE = (EntryContext, CoveredCall)  # the contexts `with_entries` applies to an analysis made without them


def with_entries(analysis: ModuleAnalysis, entries: Sequence[object]) -> ModuleAnalysis:
    """`analysis` plus the diagnoses `entries` add: what `analyze_module(..., entries)` gives, without a re-parse.

    Entries (`EntryContext`) add diagnoses and covered calls (`CoveredCall`) remove them; a `CallReturn`
    changes the facts themselves, so `can_reuse` says no and the facts are collected again (from the same
    tree when one is kept, `project.kept`).
    """
    rules = analysis.rules or _registered()
    reached = [e for e in entries if isinstance(e, EntryContext)]
    covered = {(e.line, e.column) for e in entries if isinstance(e, CoveredCall)}
    kept = [d for d in analysis.diagnoses if not _is_covered(d.site, covered)]
    added = _reached_sites(entered(analysis.facts, reached), rules, {id(d.site) for d in kept})
    return replace(analysis, diagnoses=kept + [d for d in added if not _is_covered(d.site, covered)])


def can_reuse(entries: Sequence[object]) -> bool:
    """Can `with_entries` give what a fresh analysis with these contexts would? Only for the two it applies
    (`EntryContext`, `CoveredCall`): any other context (a `CallReturn`, the fixer's `Constructor`, one added
    later) changes the facts themselves, so the facts are collected again."""
    return all(isinstance(e, REUSABLE) for e in entries)


def _is_covered(site: Site, covered: Set[Tuple[int, int]]) -> bool:
    return bool(covered) and is_covered(site, covered)
