"""Fix A across files: cast a distribution's parameters in the file that builds it (issue 13, item 6).

`dist.log_prob(y)` in `losses.py` may read a distribution that
`trainer.py` builds from float16 tensors and hands over. Casting `y` alone
leaves the parameters float16, so the fix must also edit `trainer.py`, where
the distribution is built: the finding's remote `DistRef` lists those
constructors (`built_at`, one per caller).

In project mode `--fix` therefore runs in three steps, before anything is
written:

1. the files with findings are planned: the constructors their fixable
   findings need cast elsewhere are *requests* (`requests_of`);
2. each requested file is analysed with its requests, and a request is
   *granted* when the constructor is found there, every tensor it is built
   from can be cast, no `# noqa` line is in the way, and the file is one the
   user asked to fix (`granted`);
3. every file is fixed once: a requested file casts the granted constructors
   (`constructor_casts`), and a file with findings is analysed as if those
   constructors were cast (`as_cast`), so a finding counts as fixed, and its
   value is cast here, only when its constructors are cast there. A finding
   with a constructor that cannot be cast keeps its reason.

Casting a constructor's parameters changes that function for every caller.
That is safe: a distribution built from float32 tensors gives the same
values, in float32, to callers that did not ask for them.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, List, Sequence, Set, Tuple, Union

from amplint.facts.distrefs import constructors
from amplint.facts.entry import CallReturn, Constructor, DistArgument
from amplint.fix.distargs import sort_inputs
from amplint.fix.expr import wide_predicate
from amplint.fix.fixability import NoqaGuard

if TYPE_CHECKING:  # pragma: no cover
    from amplint.fix.plan import CastTarget
    from amplint.model import FileError
    from amplint.source_analysis import SourceAnalysis


def hands_over(entries: Iterable[object]) -> bool:
    """Do these contexts give the file a distribution built elsewhere from uncast tensors? (else skip step 1)"""
    return any(isinstance(e, (CallReturn, DistArgument)) and e.dist.uncast and e.dist.castable for e in entries)


def requests_of(source: "SourceAnalysis", strategy: str) -> List[Tuple[Constructor, ...]]:
    """Step 1: per finding of `source` that `strategy` fixes, the constructors in other files it needs cast
    (all of them, or the finding is not fixed and none is cast for it)."""
    from amplint.fix.fixability import refine_pairs

    if source.analysis is None or source.module is None:
        return []
    found: List[Tuple[Constructor, ...]] = []
    for diagnosis, finding in refine_pairs(source, strategy):
        needed = tuple(dict.fromkeys(c for ref in diagnosis.site.dists if ref.remote and ref.inputs
                                     for c in ref.built_at))
        if needed and strategy in finding.fix_strategies:
            found.append(needed)
    return found


def constructor_casts(source: "SourceAnalysis", extra: FrozenSet[str]) -> Tuple[List["CastTarget"], Set[Constructor]]:
    """The casts that make the requested constructors of `source` float32, and the requests they grant."""
    from amplint.fix.plan import CastTarget

    if source.analysis is None or source.module is None or source.module.code != source.parsed_text:
        return [], set()
    table = source.analysis.imports
    guard = NoqaGuard(source)
    casts: List[CastTarget] = []
    granted: Set[Constructor] = set()
    for requested in source.analysis.facts.requested:
        wide = wide_predicate(table, lambda name, scope=requested.scope: name in scope.wide_names)
        inputs = [node for node in requested.ref.all_inputs() if not wide(node)]
        found = sort_inputs(inputs, constructors(requested.ref), table, extra)
        if found.blocked or guard.touches(found.tensors):
            continue
        casts.extend(CastTarget(node, wide, found.stars.get(id(node), "")) for node in found.tensors)
        granted.add(requested.constructor)
    return casts, granted


def granted(requests: Dict[str, Sequence[Constructor]],
            analyse: Callable[[str, Sequence[Constructor]], Union["SourceAnalysis", "FileError"]],
            extra: FrozenSet[str]) -> Set[Constructor]:
    """Step 2: the requests each file grants. `analyse(path, requests)` is its `SourceAnalysis` (or an error)."""
    from amplint.source_analysis import SourceAnalysis

    found: Set[Constructor] = set()
    for path, wanted in sorted(requests.items()):
        source = analyse(path, wanted)
        if isinstance(source, SourceAnalysis):
            found |= constructor_casts(source, extra)[1] & set(wanted)
    return found


def by_file(requests: Iterable[Constructor]) -> Dict[str, List[Constructor]]:
    """The requests grouped by the file that holds the constructor, each once."""
    grouped: Dict[str, List[Constructor]] = defaultdict(list)
    for constructor in dict.fromkeys(requests):
        grouped[constructor.file].append(constructor)
    return dict(grouped)


def as_cast(entries: Sequence[object], cast: Set[Constructor]) -> Tuple[object, ...]:
    """A file's `entries` as they read once the `cast` constructors are cast (step 3)."""
    out: List[object] = []
    for entry in entries:
        if isinstance(entry, (CallReturn, DistArgument)) and entry.dist.uncast:
            built = Constructor(entry.file, entry.dist.line, entry.dist.ctor)
            if built in cast:
                entry = replace(entry, dist=replace(entry.dist, uncast=()))
        out.append(entry)
    return tuple(out)
