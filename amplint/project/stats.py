"""What a project run did, counted for tests and for the benchmark notes (`Loader.stats`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Set


@dataclass
class Stats:
    """What a run did, for tests and for the benchmark notes."""

    parsed: List[str] = field(default_factory=list)  # files parsed with LibCST (a path twice: parsed twice)
    summaries_cached: int = 0
    findings_cached: int = 0
    ahead: List[str] = field(default_factory=list)  # summaries parsed ahead of the walk in a pool (`parse_ahead`)
    ahead_unused: List[str] = field(default_factory=list)  # of those, the ones the walk never asked for
    waves: int = 0  # speculative passes of the walk (`project.ahead`)
    waves_stopped: bool = False  # a pass cost more than the pool saved: the last pass parsed the rest here
    started: List[str] = field(default_factory=list)  # of `ahead`, those sent to an idle worker as the pass wanted them
    shaped: List[str] = field(default_factory=list)  # files read with `ast` only, for their shape (`Loader.shape`)
    shapes_cached: int = 0  # shapes taken from the disk cache instead
    from_ast: List[str] = field(default_factory=list)  # summaries read from CPython's tree, with no LibCST parse
    flowed: List[str] = field(default_factory=list)  # files whose text or tree the value flow read, each once
    flow_questions: int = 0  # questions the value flow answered (`Flow._guarded`), every pass counted
    walk_work: int = 0  # units of work the last pass of the walk spent (`project.budget`)
    solution_cached: bool = False  # the walk's result came from the cache: nothing walked (`project.solution`)
    answer_cached: bool = False  # the whole answer came from the cache: nothing read (`project.answer`)
    _flowed: Set[str] = field(default_factory=set, repr=False)

    def flow_read(self, path: str) -> None:
        """The value flow read `path` (its words or its tree): listed once, however often it is read."""
        if path not in self._flowed:
            self._flowed.add(path)
            self.flowed.append(path)
