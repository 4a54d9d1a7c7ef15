"""The graph walk: from calls made in float16 regions to the functions they run.

Seeds are calls made in an enabled float16 (or maybe-float16) region and not
protected by casts of every argument, plus the framework entries of
`implied.py`. From each function reached, the walk follows the calls made
with no local region of their own: a call under `autocast(enabled=False)` or
in a bfloat16 region is not followed, and one made after the region closed is
not a seed. It is breadth-first from seeds sorted by chain length, so the
first chain that reaches a function is a shortest one; a (function, receiver)
pair is entered once (cycles end there: that bounds the work, so no depth is
needed to), and chains stop at `max_depth` functions only when the
configuration sets one. A reached function with exposed probability computations becomes
an `EntryContext` for its file; one that only hands a distribution to a call
(`loss = self.loss(dist, y)` in a `training_step`) is kept apart, for the
join over call sites (`returnflow.dist_arguments`), without making its file
one to analyse.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, replace
from typing import Deque, Dict, List, Optional, Set, Tuple

from amplint.facts.modulecalls import EXPRESSION
from amplint.model import Hop
from amplint.project.budget import Cut
from amplint.project.loader import Loader
from amplint.project.resolve import Resolver, Target
from amplint.project.summary import CallSummary, EntryContext, FunctionSummary, RegionRef


@dataclass(frozen=True)
class Seed:
    """Where a chain starts: the first function, the region and how the chain begins."""

    target: Target
    region: RegionRef
    region_path: str  # as messages show it
    chain: Tuple[Hop, ...]  # the call in the region, then each function entered, at the call that entered it
    region_file: str = ""  # as discovered


def shown(path: str, root: str) -> str:
    """A path as messages show it: relative to the checked directory, with forward slashes."""
    relative = os.path.relpath(os.path.abspath(path), root)
    return (path if relative.startswith("..") else relative).replace(os.sep, "/")


def call_seeds(loader: Loader, resolver: Resolver, root: str) -> List[Seed]:
    """Calls made in float16 regions of the region files, in file and line order."""
    seeds: List[Seed] = []
    for path in loader.region_files():
        summary = loader.summary(path)
        if summary is None:
            continue
        calls = [(call, function) for function in summary.functions.values() for call in function.calls
                 if call.region is not None and call.region.float16]
        where = shown(path, root)
        for call, function in sorted(calls, key=lambda item: (item[0].line, item[0].column)):
            for target in followed(call, resolver.call_targets(path, function, call, None, False)):
                start = call_hop(call.text or f"{call.callee}(...)", call, path, where)
                seeds.append(Seed(target, call.region, where, (start, replace(start, name=resolver.display(target))),
                                  path))
    return seeds


def call_hop(name: str, call: CallSummary, path: str, where: str) -> Hop:
    """`name` reached at `call` of file `path` (`where`: as messages show it)."""
    return Hop(name, path, call.line, call.column, where)


def followed(call: CallSummary, targets: List[Target]) -> List[Target]:
    """The targets a call in a float16 region runs under it. A call whose every argument is float32 runs a
    plain function in float32; a method of an object still runs its layers (`nn.Linear`) in float16."""
    return [t for t in targets if t.receiver is not None] if call.protected else targets


def returns_prob(loader: Loader, target: Target) -> bool:
    """Does the project function `target` return probabilities it computes (`probreturns`)?"""
    summary = loader.summary(target.path)
    function = summary.functions.get(target.key) if summary is not None else None
    return function is not None and function.returns_prob


def names_a_function(call: CallSummary) -> bool:
    """`to_probs(x)`, `heads.to_probs(x)`: a callee its name or its module names, not a method of some object
    (whose class the walk asks the flow about, and by name at worst)."""
    root = call.callee.split(".", 1)[0]
    return call.receiver is None and not call.root_local and root not in ("self", "cls", EXPRESSION)


def stores_probabilities(loader: Loader, resolver: Resolver, path: str, function: FunctionSummary) -> bool:
    """May a method read probabilities its class's other methods stored on `self` (`self.p = to_probs(x)` in one,
    `torch.log(self.p)` in another)? Its summary cannot see them: a call of a project function that returns
    probabilities counts only once resolved. True when a method of its class makes such a call."""
    summary = loader.summary(path)
    cls = summary.classes.get(function.class_name) if summary is not None and function.class_name else None
    if cls is None:
        return False
    methods = [summary.functions.get(f"{cls.name}.{name}") for name in cls.methods]
    return any(returns_prob(loader, target) for method in methods if method is not None
               for call in method.calls if names_a_function(call)
               for target in resolver.call_targets(path, method, call, None, False))


@dataclass
class Walked:
    """What the walk reached, per file path: functions with exposed sites, and those that give distributions."""

    entries: Dict[str, List[EntryContext]]
    givers: Dict[str, List[EntryContext]]
    cut: Optional[Cut] = None  # where the flow's work bound stopped the pass (`project.budget`)
    stack_cut: bool = False  # a question of the pass was cut where Python's stack ran short (`budget.STACK_CUT`)


def walk(seeds: List[Seed], loader: Loader, resolver: Resolver, max_depth: Optional[int], root: str = "") -> Walked:
    """Each function reached, once, with its shortest chain (its places shown relative to `root`), until the
    flow's work bound is reached (`project.budget`: the function during which it is reached is left)."""
    queue: Deque[Tuple[Seed, int]] = deque((seed, 1) for seed in sorted(seeds, key=lambda s: len(s.chain)))
    entered: Set[Target] = set()
    # A target is queued once: the first copy in the queue is the one entered (it has the shortest chain), and
    # a copy per call that reaches it (thousands on transformers, each with its chain) filled gigabytes.
    queued: Set[Target] = {seed.target for seed in seeds}
    reported: Set[Tuple[str, str]] = set()
    entries: Dict[str, List[EntryContext]] = {}
    stored: Dict[Tuple[str, str], bool] = {}  # (path, class): `stores_probabilities` of its methods
    givers: Dict[str, List[EntryContext]] = {}
    budget = resolver.flow.budget
    done = 0  # functions entered and followed
    if budget.reached:  # the seeds spent the bound
        return Walked(entries, givers, budget.cut)
    while queue:
        seed, depth = queue.popleft()
        target = seed.target
        if target in entered or (max_depth is not None and depth > max_depth):
            continue
        entered.add(target)
        if not loader.worth_entering(target.path) and not target.flowed:
            continue
        summary = loader.summary(target.path)
        function = summary.functions.get(target.key) if summary is not None else None
        if function is None:
            continue
        gives = any(call.given and call.region is None for call in function.calls)
        targets = [(call, resolver.call_targets(target.path, function, call, target.receiver, target.exact))
                   for call in function.calls if call.region is None]
        # A call of a project function that returns probabilities may feed a site the summary could not see.
        probable = any(returns_prob(loader, t) for _, found in targets for t in found) or (
            not function.exposed and _class_stores(stored, loader, resolver, target.path, function))
        if budget.reached:  # its answers were cut: it is left, with all that is queued
            budget.cut_at("walk", done, 1 + len(queue))
            return Walked(entries, givers, budget.cut)
        done += 1
        if (function.exposed or gives or probable) and (target.path, target.key) not in reported:
            reported.add((target.path, target.key))
            found = entries if function.exposed or probable else givers
            found.setdefault(target.path, []).append(
                EntryContext(target.key, seed.region.info, seed.region.label, seed.region_path, seed.chain,
                             seed.region_file)
            )
        if max_depth is not None and depth >= max_depth:
            continue
        where = shown(target.path, root) if root else target.path
        for call, found in targets:
            at: Optional[Hop] = None  # the call's hop, built once for its targets
            for nxt in followed(call, found):
                if nxt in queued:
                    continue
                queued.add(nxt)
                if at is None:
                    at = call_hop("", call, target.path, where)
                chain = seed.chain + (replace(at, name=resolver.display(nxt)),)
                queue.append((Seed(nxt, seed.region, seed.region_path, chain, seed.region_file), depth + 1))
    return Walked(entries, givers)


def _class_stores(memo: Dict[Tuple[str, str], bool], loader: Loader, resolver: Resolver, path: str,
                  function: FunctionSummary) -> bool:
    """`stores_probabilities`, once per class: every method of a class asks the same question."""
    if function.class_name is None:
        return False
    key = (path, function.class_name)
    if key not in memo:
        memo[key] = stores_probabilities(loader, resolver, path, function)
    return memo[key]
