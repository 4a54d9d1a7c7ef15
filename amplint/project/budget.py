"""The bound on the value flow's work in one pass of the walk, and what the run says when it is reached.

The flow answers its questions to a fixpoint, each once (`memo`), so on most projects a pass ends by itself.
On a very large class hierarchy it does not end in useful time: transformers' Trainer hands any of its 3,910
`PreTrainedModel` subclasses to Accelerate, and a parameter of a base class's `forward` is the join over
every call of every subclass's instance in 2,935 files. So a pass's work is bounded, not its answers: no
count of classes or overrides is cut, and when the bound is reached the run says so (`Cut`, a `Notice`).

A unit of work is one answer computed (of the flow or of the resolver: every `memo.Memo`), one element of
an answer (answers are held for the run, so a wide one is memory as well as work: `memo.width`), or one
candidate a question examines (a class of a hierarchy whose `self.` assignments are joined, a file or a call
searched for call sites). An answer kept from an earlier pass costs, at its first read in a pass, what computing it
cost, with the answers it read, each once per pass: so a pass is charged what a serial run's only pass is,
whatever the passes before it left (`project.ahead`).

A pass (its seeds, then its walk) may spend `flow-budget` units per file checked, a project of fewer than
`MIN_FILES` files counting as that many, so that a small project with deep flows is not cut. The cut falls
between two steps whose order is fixed: the seed sources in turn, then the functions of the walk. The step
during which the count passed the bound is dropped whole, with every step after it, and the questions begun
under it answer nothing, unsure, so that none is kept. Which step that is depends only on the order of the
steps and on how much the complete steps before it cost, never on the order in which a question iterates a
set, so a run cut by the bound gives the same findings every time and with any `--jobs`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Hashable, List, Optional, Set

# A project of fewer files is budgeted as this many: at the default, 100,000 units, eleven times what the
# most costly labelled repository spends (stable-audio-tools, 9,175 units for 58 files).
MIN_FILES = 500


@dataclass(frozen=True)
class Cut:
    """Where the bound stopped a pass: its limit, in which step, and what it did and did not do."""

    limit: int
    per_file: int
    stage: str  # the step dropped: a seed source's name, or "walk"
    entered: int  # functions the walk entered and followed before the cut
    left: int  # functions queued and not entered (the walk), or seed sources not searched

    def message(self) -> str:
        bound = (f"project analysis stopped at its work bound (flow-budget = {_count(self.per_file, 'unit')} per "
                 f"file checked, {self.limit:,} in all)")
        advice = "raise flow-budget (0: no bound) to follow them"
        if self.stage == "walk":
            return (f"{bound} after entering {_count(self.entered, 'function')} reached from float16 regions; "
                    f"{self.left:,} more {'was' if self.left == 1 else 'were'} not entered, and findings in "
                    f"{'it' if self.left == 1 else 'them'} or in what {'it calls' if self.left == 1 else 'they call'} "
                    f"may be missing; {advice}")
        return (f"{bound} while finding {self.stage}; those and {_count(self.left, 'later source')} of region "
                f"entries were not followed, and findings in the functions they reach may be missing; {advice}")


STACK_CUT = ("project analysis cut what it followed where Python's stack ran short (a chain of imports, names or "
             "calls too long to follow); findings past the cut may be missing")


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


@dataclass
class _Cost:
    """What computing one answer cost: its own units, and the answers it read, each once (a dict kept as an
    ordered set: a join reads the same answer over and over, and a list of every read filled gigabytes)."""

    own: int = 1
    read: Dict[Hashable, None] = field(default_factory=dict)


class FlowBudget:
    """The units one pass may spend: charged by the memos and the flow, read by the seeds and the walk."""

    def __init__(self, per_file: int, files: int) -> None:
        self.per_file = per_file
        self.limit: Optional[int] = per_file * max(files, MIN_FILES) if per_file > 0 else None  # None: no bound
        self.spent = 0
        self.open = False  # the bound applies inside a pass only: the contexts after it finish their questions
        self.reached = False
        self.recording = True  # are bills kept for a later pass (`start`)?
        self.cut: Optional[Cut] = None
        self._costs: Dict[Hashable, _Cost] = {}  # every answer computed in the run, by its memo and key
        self._computing: List[_Cost] = []  # the answers being computed, innermost last
        self._charged: Set[Hashable] = set()  # the answers this pass has paid for

    def start(self, recording: bool = True) -> None:
        """A pass begins: nothing spent, nothing cut, no answer paid for.

        `recording`: another pass may follow and read this one's answers (a speculative pass), so what each
        costs is kept for it. The last pass (any pass of a serial run) keeps no bills: nothing reads them."""
        self.spent, self.open, self.reached, self.cut = 0, True, False, None
        self.recording = recording
        self._charged = set()

    # --- answers: called by `memo.Memo.get` -------------------------------------------------------------
    def begin(self, name: Hashable) -> None:
        """The answer `name` is computed now: one unit, and what it examines and reads goes on its bill."""
        self._charged.add(name)
        self._add(1)
        if self.recording:
            self._note(name)
            cost = _Cost()
            self._costs[name] = cost
            self._computing.append(cost)

    def end(self) -> None:
        if self.recording:
            self._computing.pop()

    def read(self, name: Hashable) -> None:
        """The answer `name` is read from memory: free if this pass paid for it, else what it cost when it was
        computed, with the answers it read that this pass has not paid for (as computing it now would)."""
        self._note(name)
        waiting = [name]
        while waiting:
            each = waiting.pop()
            if each in self._charged:
                continue
            self._charged.add(each)
            cost = self._costs.get(each)
            if cost is not None:
                self._add(cost.own)
                waiting.extend(cost.read)

    def _note(self, name: Hashable) -> None:
        if self._computing:
            self._computing[-1].read[name] = None

    def stop(self) -> None:
        """The pass is over: later questions run to their answers."""
        self.open = False

    def charge(self, units: int = 1) -> None:
        """Candidates examined by the answer being computed."""
        if self._computing:
            self._computing[-1].own += units
        self._add(units)

    def _add(self, units: int) -> None:
        if not self.open:
            return
        self.spent += units
        if self.limit is not None and self.spent > self.limit:
            self.reached = True

    @property
    def exhausted(self) -> bool:
        """Must a question answer nothing now? Only inside a pass, once the bound is reached."""
        return self.open and self.reached

    def cut_at(self, stage: str, entered: int, left: int) -> None:
        """Record the step the bound stopped (the first one: the steps after it never ran)."""
        if self.cut is None:
            self.cut = Cut(self.limit or 0, self.per_file, stage, entered, left)
