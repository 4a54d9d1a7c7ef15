"""`EntryContext`: a function of a file entered from a region elsewhere, as the project walk hands it to the facts.

The walk (`amplint.project`) makes these; `facts.reach.entered` reads them. Plain
data, no LibCST: cached project runs name it without importing the parser.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple, Union

from amplint.model import Hop, Precision, RegionInfo


@dataclass(frozen=True)
class EntryContext:
    """A function entered from a float16 region elsewhere: what `analyze_source(entries=...)` needs."""

    function: str  # scope key in the entered file
    region: RegionInfo
    label: str  # "autocast region", 'Trainer(precision="16-mixed") region', ...
    region_path: str  # the region's file, as shown in messages (relative to the checked directory)
    chain: Tuple[Hop, ...]  # the call in the region, then each function entered at the call that entered it
    region_file: str = ""  # the region's file as discovered (like `Finding.path`)


@dataclass(frozen=True)
class ReturnedDist:
    """A distribution a function returns: the value itself (`index` -1), element `index` of a returned tuple, or
    the item `key` of a returned dict or data class (`{"dist": d}`, `Output(dist=d)`: `index` -1)."""

    index: int
    qualname: str
    ctor: str  # the constructor as written
    line: int
    uncast: Tuple[str, ...]  # its tensor arguments not cast to float32 where it is built, as written
    owner: str  # the function that builds it: "Policy.forward"
    castable: bool = True  # fix A can cast every tensor it is built from, there (`facts.distrefs.castable`)
    key: str = ""

    @property
    def element(self) -> "Element":
        """Where in the returned value it is (`returns.Element`): None for the value itself."""
        return self.key or (None if self.index < 0 else self.index)


# Where a distribution sits in what a function returns: None (the value), a tuple position, a dict key or a field.
Element = Union[None, int, str]


@dataclass(frozen=True)
class Constructor:
    """A distribution constructor in a file: where fix A casts the parameters of a distribution used elsewhere.

    As a context of `analyze_source` it asks that file's analysis for the
    constructor's `DistRef` (`FileFacts.requested`), which the fixer casts.
    """

    file: str  # as discovered (like `Finding.path`)
    line: int
    ctor: str  # the constructor as written


@dataclass(frozen=True)
class CallReturn:
    """A call of the analysed file whose callee, in another file, returns a distribution (from the project walk).

    Travels with the `EntryContext`s given to `analyze_source`: the caller's
    sites then read the constructor's parameters as their inputs.
    """

    line: int
    column: int
    dist: ReturnedDist
    where: str  # the callee's file, as messages show it
    file: str = ""  # the callee's file as discovered


@dataclass(frozen=True)
class CoveredCall:
    """A call of the project's own density whose body, in the project, holds sites: those report, not the call."""

    line: int
    column: int


@dataclass(frozen=True)
class DistArgument:
    """A parameter of a function of the analysed file that a call elsewhere gives a distribution (the walk's join).

    `dist` is what the caller built, from tensors not cast to float32 there; the
    function's sites on the parameter read those tensors as inputs.
    """

    function: str  # scope key
    param: str
    dist: ReturnedDist
    where: str  # the caller's file, as messages show it
    file: str = ""  # the caller's file as discovered


@dataclass(frozen=True)
class DensityCall:
    """A call of the analysed file that the walk resolved to a project density (named like one, computing with
    tensors that float16 can push out of range) whose body holds no site: the call is where to report it."""

    line: int
    column: int
    owner: str  # the density: "DiagonalGaussian.kl"
    where: str  # its file, as messages show it


@dataclass(frozen=True)
class ProbabilityCallees:
    """Callees of the analysed file, as written (`to_probs`, `dens.probabilities`), that the walk resolved to
    project functions returning probabilities they compute (`project.probreturns`): a call of one holds
    probabilities, as a softmax written in place would."""

    callees: Tuple[str, ...]


@dataclass(frozen=True)
class Float32Reads:
    """Reads of function `function` of the analysed file (`x`, `self.mu`, `d.dist`, as written) that the project
    proved float32 on every path (`project.float32flow`): every binding, argument and assignment of them is."""

    function: str
    reads: Tuple[str, ...]


@dataclass(frozen=True)
class HeldAccelerator:
    """A receiver of `.autocast()` in a function of the analysed file (a parameter, a `self.` attribute, a local
    bound to a factory's result) that the project's value flow found bound to `Accelerator(...)` (rule A): a
    parameter joined over every call site, a factory through its returns, an attribute over its assignments.

    The collector reads `with receiver.autocast():` (or `ctx = receiver.autocast`) as that construction's region.
    """

    function: str  # scope key
    receiver: str  # as written: "accelerator", "self.accelerator"
    precision: Optional[Precision]  # what its `mixed_precision` gives (`frameworks.accelerate_precision`)
    label: str  # the construction and where it is built: 'Accelerator(mixed_precision="fp16") (built at main.py:5)'


# What the project walk hands a file to be analysed with (`project.run`'s contexts; the fixer's `Constructor` aside).
WalkContext = Union[EntryContext, CallReturn, DistArgument, CoveredCall, DensityCall, ProbabilityCallees,
                    Float32Reads, HeldAccelerator]
