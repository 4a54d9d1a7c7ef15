"""Narrow a finding's fix strategies to those `--fix` will really apply.

A rule's `fix_strategies` judges a site alone. Two things need the whole file:

- an edit must not rewrite a line carrying an amplint `# noqa` (the cast
  nodes, and for fix C the wrapped statement);
- fix C wraps a whole statement, so it applies only when every other
  computation in that statement is fixed with fix C too; otherwise the wrap
  would change code nobody asked to change.

The pipeline (`amplint.pipeline.finish`) calls `refine_pairs` so that `fixable` in `amplint check` agrees
with what `amplint check --fix` does; the planner calls the same checks.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodeRange

from amplint.files import source_lines
from amplint.model import Finding
from amplint.noqa import noqa_texts, suppressed
from amplint.positions import Positions, positions

from amplint.rulebase import CAST, DISABLE  # noqa: F401 - the fixer's names for fix A and fix C
from amplint.rules import ALL_RULES, rule_for

if TYPE_CHECKING:  # pragma: no cover
    from amplint.rulebase import Diagnosis
    from amplint.source_analysis import SourceAnalysis

NOQA_CODES = tuple(rule.code for rule in ALL_RULES)
Pair = Tuple["Diagnosis", Finding]


def wraps_statement(diagnosis: "Diagnosis", strategy: str) -> bool:
    """Fix C wraps the statement of a site whose rule asks for it (`Rule.wraps_statement`); others are only cast."""
    rule = rule_for(diagnosis.code)
    return strategy == DISABLE and rule is not None and rule.wraps_statement and diagnosis.site.statement is not None


class NoqaGuard:
    """Which lines carry an amplint noqa, and whether a fix would touch one."""

    def __init__(self, source: "SourceAnalysis") -> None:
        lines = source_lines(source.text) if "noqa" in source.text.lower() else []  # the engine's split
        logical = noqa_texts(source.text) if lines else {}  # and the engine's (flake8's) noqa scope
        self.protected = [False] + [
            any(suppressed(code, logical.get(number) or line) for code in NOQA_CODES)
            for number, line in enumerate(lines, 1)
        ]
        self.module = source.module
        diagnoses = source.analysis.diagnoses if source.analysis is not None else []
        # The nodes `blocks` asks about: every site's inputs and statement, positioned in one pass.
        statements = tuple(d.site.statement for d in diagnoses if d.site.statement is not None)
        self._nodes = tuple(node for d in diagnoses for node in d.site.local_uncast()) + statements
        self._positions: Optional[Positions] = None

    @property
    def active(self) -> bool:
        return any(self.protected)

    def _span(self, node: cst.CSTNode) -> CodeRange:
        if self._positions is None:
            assert self.module is not None
            self._positions = positions(self.module, nodes=self._nodes)
        if node not in self._positions:  # not a site's input or statement: position it on its own
            assert self.module is not None
            return positions(self.module, nodes=(node,))[node]
        return self._positions[node]

    def touches(self, nodes: Sequence[cst.CSTNode]) -> bool:
        if not self.active:
            return False
        for node in nodes:
            span = self._span(node)
            last = min(span.end.line, len(self.protected) - 1)
            if any(self.protected[line] for line in range(span.start.line, last + 1)):
                return True
        return False

    def blocks(self, diagnosis: "Diagnosis", strategy: str) -> bool:
        nodes: List[cst.CSTNode] = list(diagnosis.site.local_uncast())
        if wraps_statement(diagnosis, strategy):
            assert diagnosis.site.statement is not None
            nodes.append(diagnosis.site.statement)
        return self.touches(nodes)


def wrap_conflicts(source: "SourceAnalysis", wrapped: Sequence["Diagnosis"]) -> List[int]:
    """Statements (by id) that hold a diagnosis outside `wrapped`: wrapping them would change it too."""
    assert source.analysis is not None
    inside = {id(d.site) for d in wrapped}
    statements = {id(d.site.statement) for d in wrapped if d.site.statement is not None}
    return sorted(
        {
            id(d.site.statement)
            for d in source.analysis.diagnoses
            if d.site.statement is not None and id(d.site.statement) in statements and id(d.site) not in inside
        }
    )


def refine_pairs(source: "SourceAnalysis", strategy: str) -> List[Pair]:
    """The pairs with strategies dropped where noqa lines or shared statements forbid them."""
    if source.module is None or source.analysis is None or not source.pairs:
        return list(source.pairs)
    guard = NoqaGuard(source)
    strategies: Dict[int, Tuple[str, ...]] = {}
    for diagnosis, finding in source.pairs:
        kept = tuple(s for s in finding.fix_strategies if not guard.blocks(diagnosis, s))
        strategies[id(diagnosis)] = kept
    while True:  # dropping C from one site can take it from a statement-mate: repeat until stable
        wrapped = [d for d, _ in source.pairs if DISABLE in strategies[id(d)] and wraps_statement(d, DISABLE)]
        conflicts = set(wrap_conflicts(source, wrapped))
        losing = [d for d in wrapped if id(d.site.statement) in conflicts]
        if not losing:
            break
        for diagnosis in losing:
            strategies[id(diagnosis)] = tuple(s for s in strategies[id(diagnosis)] if s != DISABLE)
    out: List[Pair] = []
    for diagnosis, finding in source.pairs:
        kept = strategies[id(diagnosis)]
        if kept != finding.fix_strategies:
            finding = replace(finding, fix_strategies=kept, fixable=strategy in kept)
        out.append((diagnosis, finding))
    return out
