"""Memoized resolver answers, kept from one speculative pass of the walk to the next when they are sure.

The walk runs in speculative passes (`amplint.project.ahead`): while one runs,
a summary not parsed yet answers None, and resolver answers built on that
None are wrong for the next pass, which knows more. Each pass therefore
started from a fresh resolver and redid all its resolution, most of it right
the first time: on the real-code corpus, most of the parent's CPU at `-j 2`.

An answer here is *sure* when nothing unsure went into it: no summary answered
None for speculation (`Loader.misses`) while it was computed, and it read no
unsure answer, a cycle guard's (`Resolver.mro`) included. A sure answer then
depends only on summaries that are known, which do not change, and not on the
order of asking, so every later pass computes the same: it is kept. An unsure
one serves the rest of its pass, as a fresh resolver's memo did, and is
dropped when the next pass starts (`Doubts.new_pass`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Generic, Hashable, List, Optional, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.budget import FlowBudget

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
_MISSING = object()


class Doubts:
    """Counts what makes an answer unsure; one per resolver, shared by its memos."""

    def __init__(self, misses: Callable[[], int], budget: Optional["FlowBudget"] = None) -> None:
        self._misses = misses  # the loader's count of summaries answered None for speculation
        self.budget = budget  # what each answer costs, charged once per pass however it is found (`budget`)
        self._misses_before_pass = misses()
        self._read = 0  # unsure answers read
        self._memos: List["Memo"] = []

    def mark(self) -> int:
        """A stamp that moves whenever something unsure is used: equal stamps bracket a sure answer."""
        return self._misses() + self._read

    def missed_this_pass(self) -> bool:
        """Has a summary answered None for speculation since the pass began? Then its result is not the walk's."""
        return self._misses() != self._misses_before_pass

    def read_unsure(self) -> None:
        self._read += 1

    def memo(self) -> "Memo":
        made: Memo = Memo(self, len(self._memos))
        self._memos.append(made)
        return made

    def new_pass(self) -> None:
        """Forget every unsure answer: the pass that gave them is over."""
        for memo in self._memos:
            memo.unsure.clear()
        self._misses_before_pass = self._misses()


def width(value: object) -> int:
    """How many elements an answer holds, each a unit of work: answers are kept for the run, so a wide one is
    memory as well as time (on 24,000 files, answers of tens of thousands of targets filled memory while a
    bound that counted each answer as one unit was still far off)."""
    return len(value) if type(value) in _COLLECTIONS else 0  # type: ignore[arg-type]


_COLLECTIONS = (list, tuple, set, frozenset, dict)


class Memo(Generic[K, V]):
    """One kind of answer, by key: `sure` ones for the run, `unsure` ones for the current pass."""

    def __init__(self, doubts: Doubts, number: int = 0) -> None:
        self._doubts = doubts
        self._number = number  # which memo of its `Doubts`: an answer's name for the budget is (number, key)
        self.sure: Dict[K, V] = {}
        self.unsure: Dict[K, V] = {}

    def get(self, key: K, compute: Callable[[], V]) -> V:
        """The answer for `key`, computed once (per run when sure, per pass when not)."""
        budget = self._doubts.budget
        found = self.sure.get(key, _MISSING)
        if found is not _MISSING:
            if budget is not None:
                budget.read((self._number, key))
            return found  # type: ignore[return-value]
        found = self.unsure.get(key, _MISSING)
        if found is not _MISSING:
            self._doubts.read_unsure()
            if budget is not None:
                budget.read((self._number, key))
            return found  # type: ignore[return-value]
        mark = self._doubts.mark()
        if budget is None:
            value = compute()
        else:
            budget.begin((self._number, key))
            try:
                value = compute()
                budget.charge(width(value))  # a wide answer is held in memory: its elements are work too
            finally:
                budget.end()
        if self._doubts.mark() == mark:
            self.unsure.pop(key, None)  # a guard `compute` set, never read
            self.sure[key] = value
        else:
            self.unsure[key] = value
        return value

    def guard(self, key: K, value: V) -> None:
        """Answer `value` for `key` while its own answer is computed (a cycle ends there); reading it is unsure."""
        self.unsure[key] = value
