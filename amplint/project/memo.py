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

from typing import TYPE_CHECKING, Callable, Dict, Generic, Hashable, Iterable, List, Optional, Tuple, TypeVar

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
        self.stack_cuts = 0  # questions this pass cut where Python's stack ran short (`cut_by_stack`)
        self._memos: List["Memo"] = []

    def mark(self) -> int:
        """A stamp that moves whenever something unsure is used: equal stamps bracket a sure answer."""
        return self._misses() + self._read

    def missed_this_pass(self) -> bool:
        """Has a summary answered None for speculation since the pass began? Then its result is not the walk's."""
        return self._misses() != self._misses_before_pass

    def read_unsure(self) -> None:
        self._read += 1

    def cut_by_stack(self) -> None:
        """A question needed more of Python's stack than was left: it answers nothing, unsure, and the run
        says that something was cut (`budget.STACK_CUT`)."""
        self.stack_cuts += 1
        self.read_unsure()

    def memo(self) -> "Memo":
        made: Memo = Memo(self, len(self._memos))
        self._memos.append(made)
        return made

    def new_pass(self) -> None:
        """Forget every unsure answer: the pass that gave them is over."""
        for memo in self._memos:
            memo.unsure.clear()
        self._misses_before_pass = self._misses()
        self.stack_cuts = 0


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

    @property
    def doubts(self) -> Doubts:
        return self._doubts

    def forget(self, key: K) -> None:
        self.sure.pop(key, None)
        self.unsure.pop(key, None)


class UnionMemo(Generic[K, V]):
    """A memo for answers that are unions of the answers they ask for, which may ask each other in a cycle
    (re-exports that import each other): a chain of any length is followed, and no cap cuts it.

    A question asked inside its own answer answers nothing there: what it reaches, its own computation
    collects. An answer that read such a cut is partial, so it is kept only while the question it cut is
    being answered (Tarjan's low link: the shallowest question on the stack it read), and that question's
    answer, the union over the whole cycle, is the one kept. So every answer kept is the same whichever
    question of a cycle was asked first. An answer past Python's stack is nothing, and unsure."""

    def __init__(self, memo: Memo[K, Tuple[V, ...]]) -> None:
        self._memo = memo
        self._depth: Dict[K, int] = {}  # questions being answered, by depth
        self._low: List[int] = []  # per question being answered: the shallowest depth it read
        self._partial: Dict[K, Tuple[Tuple[V, ...], int]] = {}  # answers that read a cut, with its depth
        self._partial_at: List[List[K]] = []  # per depth: the partial answers that end when it is answered

    def get(self, key: K, compute: Callable[[], Iterable[V]]) -> Tuple[V, ...]:
        depth = self._depth.get(key)
        if depth is not None:  # a cycle: the question on the stack collects what this one would
            self._read(depth)
            return ()
        partial = self._partial.get(key)
        if partial is not None:
            self._read(partial[1])
            return partial[0]
        lows: List[int] = []
        value = self._memo.get(key, lambda: self._answer(key, compute, lows))
        if lows and lows[0] < len(self._low):  # it read a question still on the stack
            self._memo.forget(key)
            self._partial[key] = (value, lows[0])
            self._partial_at[lows[0]].append(key)
            self._read(lows[0])
        return value

    def _read(self, depth: int) -> None:
        if self._low:
            self._low[-1] = min(self._low[-1], depth)

    def _answer(self, key: K, compute: Callable[[], Iterable[V]], lows: List[int]) -> Tuple[V, ...]:
        depth = len(self._low)
        self._depth[key] = depth
        self._low.append(depth)
        self._partial_at.append([])
        try:
            return tuple(dict.fromkeys(compute()))
        except RecursionError:
            self._memo.doubts.cut_by_stack()
            return ()
        finally:
            del self._depth[key]
            lows.append(self._low.pop())
            for each in self._partial_at.pop():
                del self._partial[each]
