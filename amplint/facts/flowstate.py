"""Which bindings reach a point of a function when its control flow branches.

The fact readers walk a function once, top to bottom, and keep per name what
it holds: a float32 value (`Scope.wide_names`), a value made in a float16
region (`tainted`), the distributions it may be bound to (`dist_bindings`
and `dist_alternatives`), an autocast factory (`factories`). Read straight
down, the last assignment wins, which is wrong wherever one path skips it: a
cast under `if flag:` may not happen, a distribution assigned in `try` is
still there when `except` assigns another, a loop's rebinding reaches its
top on the next iteration, each `match` arm is one path.

So each compound statement forks the state, every arm starts from the state
that reaches it, and the arms that fall through are joined: a name is
float32 only if it is on every path that binds it, holds every distribution
any path gives it, and is tainted if any path taints it. An arm that ends in
`return`, `raise`, `break` or `continue` joins nothing. A loop's body starts
from its entry joined with what its own assignments may carry round
(`loop_entry`). Both readers (LibCST's collector and CPython's `astcalls`)
drive the same `Branches`, so single-file and project mode agree.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, Iterable, List, Mapping, Optional, Sequence, Tuple, TypeVar

from amplint.facts.model import DistRef, Scope

V = TypeVar("V")  # a value as a reader's tree holds it


@dataclass(frozen=True)
class State:
    """What a scope's names hold at one point, copied so that an arm's changes leave it as it was."""

    wide: FrozenSet[str]
    bound: FrozenSet[str]
    numbers: FrozenSet[str]
    tainted: Mapping[str, int]
    dists: Mapping[str, Tuple[DistRef, ...]]
    factories: Mapping[str, object]


def snapshot(scope: Scope) -> State:
    dists = {name: (ref, *scope.dist_alternatives.get(name, ())) for name, ref in scope.dist_bindings.items()}
    return State(frozenset(scope.wide_names), frozenset(scope.bound), frozenset(scope.numbers), dict(scope.tainted),
                 dists, dict(scope.factories))


def restore(scope: Scope, state: State) -> None:
    scope.wide_names = set(state.wide)
    scope.bound = set(state.bound)
    scope.numbers = set(state.numbers)
    scope.tainted = dict(state.tainted)
    scope.dist_bindings = {name: refs[0] for name, refs in state.dists.items()}
    scope.dist_alternatives = {name: list(refs[1:]) for name, refs in state.dists.items() if len(refs) > 1}
    scope.factories = dict(state.factories)  # type: ignore[arg-type]


def join(states: Sequence[State]) -> State:
    """The state after paths meet. A name some path leaves unbound tells nothing about the others' values."""
    if len(states) == 1:
        return states[0]
    bound = frozenset().union(*(s.bound for s in states))
    wide = frozenset(name for name in frozenset().union(*(s.wide for s in states))
                     if all(name in s.wide or name not in s.bound for s in states))
    numbers = frozenset().union(*(s.numbers for s in states))
    tainted: Dict[str, int] = {}
    dists: Dict[str, Tuple[DistRef, ...]] = {}
    factories: Dict[str, object] = {}
    for state in states:
        for name, line in state.tainted.items():
            tainted.setdefault(name, line)
        for name, refs in state.dists.items():
            dists[name] = _union(dists.get(name, ()), refs)
        for name, factory in state.factories.items():
            factories.setdefault(name, factory)
    return State(wide, bound, numbers, tainted, dists, factories)


def _union(old: Tuple[DistRef, ...], new: Iterable[DistRef]) -> Tuple[DistRef, ...]:
    out = list(old)
    for ref in new:
        if all(ref.ctor is not each.ctor for each in out):
            out.append(ref)
    return tuple(out)


@dataclass
class _Frame:
    """One open compound statement: the scope it is in, the state at its start, and the arms that fell through."""

    scope: Scope
    entry: State
    ends: List[State] = field(default_factory=list)
    tried: Optional[State] = None  # a `try` body's end, where its `else` starts


class Branches:
    """The compound statements open around the reader's position, innermost last.

    A reader calls `fork` where one starts, `start` at each arm (which begins
    from the statement's entry), `end` when an arm is done, and `close` when
    the statement is; nested statements push their own frames.
    """

    def __init__(self) -> None:
        self._frames: List[_Frame] = []

    def fork(self, scope: Scope) -> None:
        self._frames.append(_Frame(scope, snapshot(scope)))

    def start(self) -> None:
        frame = self._frames[-1]
        restore(frame.scope, frame.entry)

    def end(self, falls_through: bool = True) -> None:
        """The arm is done; its state joins the statement's end unless the arm never falls through."""
        frame = self._frames[-1]
        if falls_through:
            frame.ends.append(snapshot(frame.scope))

    def close(self, with_entry: bool) -> None:
        """Paths meet after the statement; `with_entry` when control may pass it by no arm (an `if` with no
        `else`, a `match` with no catch-all)."""
        frame = self._frames.pop()
        states = frame.ends + ([frame.entry] if with_entry or not frame.ends else [])
        restore(frame.scope, join(states))

    # --- `try` -------------------------------------------------------------------------------------
    def tried(self) -> None:
        """The `try` body is done: a handler may start anywhere in it, its `else` at its end."""
        frame = self._frames[-1]
        frame.tried = snapshot(frame.scope)

    def handler(self) -> None:
        frame = self._frames[-1]
        assert frame.tried is not None
        restore(frame.scope, join([frame.entry, frame.tried]))

    def orelse(self) -> None:
        """A `try`'s `else` starts where its body ended."""
        frame = self._frames[-1]
        assert frame.tried is not None
        restore(frame.scope, frame.tried)

    def finish_try(self, has_else: bool, body_falls: bool) -> None:
        """Paths meet after a `try`'s handlers and `else`, before its `finally`: the body's end (when it has
        no `else`) and each arm that falls through."""
        frame = self._frames[-1]
        if not has_else and body_falls:
            assert frame.tried is not None
            frame.ends.append(frame.tried)
        self.close(with_entry=False)

    # --- loops -------------------------------------------------------------------------------------
    def loop(self, scope: Scope, carried: State) -> None:
        """A loop's body starts from its entry joined with `carried`: what its assignments leave on the way
        round. Passing the loop by never entering it is the entry's path."""
        entry = join([snapshot(scope), carried])
        restore(scope, entry)
        self._frames.append(_Frame(scope, entry))


def loop_carried(scope: Scope, assignments: Iterable[Tuple[str, V, bool]], wide: Callable[[V], bool],
                 dists: Callable[[str, V], Tuple[DistRef, ...]]) -> State:
    """The state a loop body's own assignments may leave at its top, read before the body runs.

    `assignments` are (name, value, augmented) in source order; `wide` and
    `dists` are the reader's judgements of a value. A name comes round as its
    last assignment left it, with every distribution any of them gave. Like
    the readers, the body's first pass has not run yet, so a value is judged by
    the names that reach the loop; that is enough to say a name may come round
    uncast or rebound.
    """
    state = snapshot(scope)
    wide_names, bound = set(state.wide), set(state.bound)
    found = dict(state.dists)
    for name, value, is_augmented in assignments:
        bound.add(name)
        is_wide = augmented(scope, [name], wide(value), False)[0] if is_augmented else wide(value)
        (wide_names.add if is_wide else wide_names.discard)(name)
        refs = () if is_augmented else dists(name, value)
        if refs:
            found[name] = _union(found.get(name, ()), refs)
    return State(frozenset(wide_names), frozenset(bound), state.numbers, state.tainted, found, state.factories)


def augmented(scope: Scope, names: Sequence[str], value_wide: bool, value_number: bool) -> Tuple[bool, bool]:
    """`x op= v`: (x stays float32, x stays a Python number).

    In place, a tensor keeps its dtype whatever `v` is: `logits = raw.float(); logits /= t` is float32. A
    Python number takes a tensor's: `total = 0.0; total += term` is what `term` is.
    """
    wide = all(n in scope.wide_names and (n not in scope.numbers or value_wide) for n in names)
    return wide, bool(names) and value_number and all(n in scope.numbers for n in names)
