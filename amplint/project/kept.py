"""Parse trees kept between a file's summary and its entry findings, within a memory budget.

A file parsed for its summary may be entered by the walk; its findings with
those entries then come from the same tree instead of a second parse: the
first analysis plus what the entries add (`analysis.with_entries`), or, when
the walk's contexts change the facts themselves (`analysis.can_reuse`), the
facts collected again from that tree. A tree parsed from a tab-expanded copy
(`amplint.tabs`) is not kept: its columns are not the file's. The loader
keeps one such memory, and so does each pool worker (`amplint.workers`) for
the files it parsed: a findings job is pinned to the worker that holds the
file's tree.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, List, NamedTuple, Optional, Sequence

from amplint.config import Config
from amplint.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from amplint.analysis import ModuleAnalysis
    from amplint.project.summary import FileSummary
    from amplint.source_analysis import SourceAnalysis

# Parse trees kept for the entry pass, by the source size they were parsed from; older ones are
# parsed again when needed. A LibCST tree takes ~500 bytes of memory per byte of source (measured:
# transformers' trainer.py, 190 KB, ~90 MB), so this bounds peak memory whatever the project's size.
KEEP_SOURCE_BYTES = 400_000


def worth_keeping(summary: "FileSummary") -> bool:
    """Is the walk likely to give this file entries or covered calls, so that its tree is wanted again?

    Other contexts (a call that returns another file's distribution, a distribution passed in) may come
    to any file: its tree is kept too, but it goes first when the budget is full.
    """
    return any(f.exposed or any(c.density or c.opaque for c in f.calls) for f in summary.functions.values())


class _Kept(NamedTuple):
    analysis: "ModuleAnalysis"
    text: str
    likely: bool  # `worth_keeping`


class KeptTrees:
    """Analyses with the text each came from, by path; over the budget, the oldest of the trees not
    `worth_keeping` go first, then the oldest of the others."""

    def __init__(self, budget: int = KEEP_SOURCE_BYTES) -> None:
        self._budget = budget
        self._size = 0
        self._trees: "OrderedDict[str, _Kept]" = OrderedDict()

    def keep(self, path: str, outcome: "SourceAnalysis", likely: bool) -> bool:
        """Keep its analysis unless its source alone is above the budget (then nothing is evicted for it)."""
        text = outcome.parsed_text  # what the tree was parsed from: its findings are in its columns
        if outcome.analysis is None or outcome.moves_columns or len(text) > self._budget:
            return False
        self._forget(path)
        self._trees[path] = _Kept(outcome.analysis, text, likely)
        self._size += len(text)
        while self._size > self._budget:
            self._forget(next((p for p, kept in self._trees.items() if not kept.likely), next(iter(self._trees))))
        return path in self._trees

    def _forget(self, path: str) -> None:
        kept = self._trees.pop(path, None)
        if kept is not None:
            self._size -= len(kept.text)

    def __contains__(self, path: str) -> bool:
        return path in self._trees

    def findings(self, path: str, config: Config, entries: Sequence[object]) -> Optional[List[Finding]]:
        """What a fresh analysis with `entries` finds, from the kept tree; None when the file must be parsed."""
        kept = self._trees.get(path)
        if kept is None:
            return None  # asked before the analysis is imported: with no tree kept, LibCST may not be loaded yet
        from amplint.analysis import analyze_module, can_reuse, with_entries
        from amplint.pipeline import analysis_options, finish

        analysis, text, _ = kept
        if can_reuse(entries):
            return finish(text, path, with_entries(analysis, entries), config).findings
        try:
            again = analyze_module(analysis.module, analysis_options(config, True, text), entries, analysis.imports,
                                   source=analysis.facts.positions)
        except RecursionError:  # a deep tree: the parse path has the deep-stack retry
            return None
        return finish(text, path, again, config).findings
