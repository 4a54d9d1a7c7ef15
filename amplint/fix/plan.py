"""Decide, per finding, which nodes to cast and which statement to wrap.

The plan acts only on `SourceAnalysis.pairs`, which select/ignore/noqa have
already filtered and `fixability.refine_pairs` has narrowed, and only on the
nodes the analysis recorded for each site. It re-checks the noqa and
shared-statement rules itself, because `only` (fixing one finding) can leave
a statement-mate unfixed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Union

import libcst as cst

from amplint.facts.distrefs import constructors
from amplint.fix.distargs import sort_inputs
from amplint.fix.expr import Wide, wide_predicate
from amplint.fix.fixability import DISABLE, NoqaGuard, wrap_conflicts, wraps_statement
from amplint.fix.safety import wrap_blocker
from amplint.model import Finding
from amplint.rulebase import HIDDEN_DISTRIBUTION
from amplint.rules import rule_for

if TYPE_CHECKING:  # pragma: no cover
    from amplint.analysis import Diagnosis
    from amplint.engine import SourceAnalysis
    from amplint.regions import RegionSpec

NOQA_REASON = "left as is: the fix would rewrite a line marked `# noqa`"
HIDDEN_DISTRIBUTION_REASON = HIDDEN_DISTRIBUTION
SHARED_REASON = "not fixable with --strategy disable-autocast: the statement also holds a computation it cannot fix"


@dataclass(frozen=True)
class CastTarget:
    """An input expression to cast, with the scope's notion of "already float32"."""

    node: cst.BaseExpression
    wide: Wide
    star: str = ""  # "*"/"**": a starred argument, cast element by element (`expr.cast_starred`)


@dataclass(frozen=True)
class WrapTarget:
    """A statement to put under `autocast(device_type=device_code, enabled=False)`."""

    statement: cst.SimpleStatementLine
    device_code: str


@dataclass(frozen=True)
class Skipped:
    """A finding the plan leaves alone, and why (shown to the user)."""

    finding: Finding
    reason: str


@dataclass
class FixPlan:
    casts: Dict[int, CastTarget] = field(default_factory=dict)
    wraps: Dict[int, WrapTarget] = field(default_factory=dict)
    planned: List[Finding] = field(default_factory=list)
    skipped: List[Skipped] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.casts and not self.wraps


@dataclass
class _Edit:
    diagnosis: "Diagnosis"
    finding: Finding
    casts: List[CastTarget]
    wrap: Optional[WrapTarget]


def wrap_device(spec: "RegionSpec") -> Optional[str]:
    """The device expression for the disabled block: the region's literal device, else its expression."""
    if spec.device is not None:
        code = spec.device_code
        try:
            literal = cst.ensure_type(cst.parse_expression(code), cst.SimpleString).evaluated_value
        except Exception:  # not a plain string literal: spell the device out
            literal = None
        return code if literal == spec.device else f'"{spec.device}"'
    return spec.device_code or None


def plan_fixes(
    source: "SourceAnalysis",
    strategy: str,
    only: Optional[Callable[[Finding], bool]] = None,
    extra: FrozenSet[str] = frozenset(),
) -> FixPlan:
    """Which edits fix which findings with `strategy`; findings that cannot be fixed are listed with a reason.

    `only` limits the plan to some findings (one finding, for a SARIF fix); the others are left as they are.
    `extra`: the configured extra distribution classes (`extend-distributions`).
    """
    plan = FixPlan()
    pairs = [pair for pair in source.pairs if only is None or only(pair[1])]
    if source.module is None or source.analysis is None or not pairs:
        return plan
    guard = NoqaGuard(source)
    edits: List[_Edit] = []
    for diagnosis, finding in pairs:
        if strategy not in finding.fix_strategies:
            plan.skipped.append(Skipped(finding, _why_not(diagnosis, finding, strategy, guard, source)))
        elif guard.blocks(diagnosis, strategy):
            plan.skipped.append(Skipped(finding, NOQA_REASON))
        else:
            edit = _edit_for(diagnosis, finding, strategy, source, extra)
            if isinstance(edit, str):
                plan.skipped.append(Skipped(finding, edit))
            else:
                edits.append(edit)
    wrapped = [edit.diagnosis for edit in edits if edit.wrap is not None]
    conflicts = set(wrap_conflicts(source, wrapped))
    for edit in edits:
        if edit.wrap is not None and id(edit.wrap.statement) in conflicts:
            plan.skipped.append(Skipped(edit.finding, SHARED_REASON))
            continue
        for target in edit.casts:
            plan.casts.setdefault(id(target.node), target)
        if edit.wrap is not None:
            plan.wraps.setdefault(id(edit.wrap.statement), edit.wrap)
        plan.planned.append(edit.finding)
    return plan


def _why_not(
    diagnosis: "Diagnosis", finding: Finding, strategy: str, guard: NoqaGuard, source: "SourceAnalysis"
) -> str:
    site = diagnosis.site
    if not finding.fix_strategies:
        rule = rule_for(diagnosis.code)
        if rule is not None:
            return rule.why_unfixable(diagnosis)
    if guard.blocks(diagnosis, strategy):
        return NOQA_REASON
    hint = f" (try --strategy {finding.fix_strategies[0]})" if finding.fix_strategies else ""
    if strategy == DISABLE and site.statement is not None:
        if wrap_conflicts(source, [diagnosis]):
            return SHARED_REASON + hint
        blocker = wrap_blocker(site.statement, site.call)
        if blocker is not None:
            return f"not fixable with --strategy {strategy}: {blocker}{hint}"
    return f"not fixable with --strategy {strategy}: no simple statement to wrap, or no known device{hint}"


def _edit_for(
    diagnosis: "Diagnosis", finding: Finding, strategy: str, source: "SourceAnalysis", extra: FrozenSet[str]
) -> Union[_Edit, str]:
    """The casts and wrap that fix one finding, or why there are none: an input is a distribution it cannot
    reach, or one built in another file whose constructor is not cast there (`amplint.fix.remote`)."""
    site = diagnosis.site
    assert source.analysis is not None
    if any(ref.remote and ref.inputs for ref in site.dists):
        rule = rule_for(diagnosis.code)
        return rule.why_unfixable(diagnosis) if rule is not None else HIDDEN_DISTRIBUTION_REASON
    table = source.analysis.imports
    inputs = sort_inputs(site.local_uncast(), (c for ref in site.dists for c in constructors(ref)), table, extra)
    if inputs.blocked:
        return HIDDEN_DISTRIBUTION_REASON
    wide = wide_predicate(table, site.wide_names.__contains__)
    casts = [CastTarget(site.cast_at.get(id(node), node), wide, inputs.stars.get(id(node), ""))
             for node in inputs.tensors]
    wrap: Optional[WrapTarget] = None
    if wraps_statement(diagnosis, strategy):
        device = wrap_device(diagnosis.region.spec)
        assert site.statement is not None and device is not None  # engine.fix_strategies checked both
        wrap = WrapTarget(site.statement, device)
    return _Edit(diagnosis, finding, casts, wrap)
