"""Parse trees kept between a file's summary and its entry findings, within a memory budget.

A file parsed for its summary may be entered by the walk; its findings with
those entries then come from the same tree (`analysis.with_entries`) instead
of a second parse. The loader keeps one such memory, and so does each pool
worker (`amplint.workers`) for the files it parsed: a findings job is pinned
to the worker that holds the file's tree.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from amplint.analysis import ModuleAnalysis
    from amplint.project.summary import FileSummary

# Parse trees kept for the entry pass, by the source size they were parsed from; older ones are
# parsed again when needed. A LibCST tree takes ~500 bytes of memory per byte of source (measured:
# transformers' trainer.py, 190 KB, ~90 MB), so this bounds peak memory whatever the project's size.
KEEP_SOURCE_BYTES = 400_000


def worth_keeping(summary: "FileSummary") -> bool:
    """Could the walk give this file entries or covered calls, so that its tree is wanted again?"""
    return any(f.exposed or any(c.density for c in f.calls) for f in summary.functions.values())


class KeptTrees:
    """Analyses with the text each came from, by path; the oldest go first when over the budget."""

    def __init__(self, budget: int = KEEP_SOURCE_BYTES) -> None:
        self._budget = budget
        self._trees: "OrderedDict[str, Tuple[ModuleAnalysis, str]]" = OrderedDict()

    def keep(self, path: str, analysis: "ModuleAnalysis", text: str) -> bool:
        """Keep it unless its source alone is above the budget (then nothing is evicted for it)."""
        if len(text) > self._budget:
            return False
        self._trees[path] = (analysis, text)
        self._trees.move_to_end(path)
        while sum(len(kept) for _, kept in self._trees.values()) > self._budget:
            self._trees.popitem(last=False)
        return path in self._trees

    def __contains__(self, path: str) -> bool:
        return path in self._trees

    def findings(self, path: str, config: Config, entries: Sequence[object]) -> Optional[List[Finding]]:
        """What a fresh analysis with `entries` finds, from the kept tree; None when the file must be parsed."""
        from amplint.analysis import can_reuse, with_entries
        from amplint.pipeline import finish

        kept = self._trees.get(path)
        if kept is None or not can_reuse(entries):
            return None
        analysis, text = kept
        return finish(text, path, with_entries(analysis, entries), config).findings
