"""Plain data shared by every front end: findings, file errors and site specs.

These classes carry no LibCST nodes, so they pickle across a process pool and
serialise to JSON/SARIF without the parse tree that produced them.
"""
from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import List, Optional, Tuple


class Precision(str, enum.Enum):
    """What dtype an autocast region computes in, as far as the source tells."""

    FLOAT16 = "float16"
    BFLOAT16 = "bfloat16"
    MAYBE_FLOAT16 = "maybe-float16"
    OTHER = "other"


@dataclass(frozen=True)
class RegionInfo:
    """The autocast region a finding depends on (its opening line and semantics)."""

    line: int
    precision: Precision
    enabled: bool
    device: Optional[str]  # literal device ("cuda", "cpu") or None when not a literal
    device_code: str  # the device expression as written, e.g. '"cuda"' or 'self.device'


@dataclass(frozen=True)
class ArgSpec:
    """One tensor input of a probability computation, as the verifier rebuilds it."""

    name: Optional[str]  # keyword name, or None for positional
    position: Optional[int]  # positional index, or None for keyword
    code: str  # source text (never evaluated)
    cast: bool  # already float32/float64 at the point of use
    literal: bool  # a Python number literal


@dataclass(frozen=True)
class DistributionBase:
    """A project class derived from a library distribution, and what it changes of it (`facts.distclasses`).

    Its library base's measurements stand for it only where the project's classes between the two leave the
    method computed and the constructor alone: `defines` says which methods they write.
    """

    name: str  # as the analysis qualifies it: `SquashedNormal` in its own file, `pkg.dists.SquashedNormal`
    base: str  # the library class it derives from, `torch.distributions.Normal`; "" for a configured one
    defines: Tuple[str, ...] = ()  # the methods it and the project classes up to `base` define, sorted


@dataclass(frozen=True)
class DistSpec:
    """A distribution constructor visible in the source."""

    qualname: str  # e.g. "torch.distributions.Normal"
    args: Tuple[ArgSpec, ...]
    components: Tuple["DistSpec", ...] = ()  # distributions passed as arguments
    mapping: Optional[ArgSpec] = None  # `**params` with keys unknown: it feeds each tensor parameter of the class
    derived: Optional[DistributionBase] = None  # a project subclass: its library base


PROBE_TOLERANCE = 1e-2  # the largest error |float16 - reference| / max(|reference|, 1) that is no loss


@dataclass(frozen=True)
class Probed:
    """What hand-written math gives in float16 on the probe activations, under its region's device policy
    (`amplint.facts.probes`): computed by emulating float16, not measured on the user's model."""

    values: int  # values compared: those whose float64 reference is finite
    nonfinite: int  # of them, non-finite in float16
    max_error: float  # the largest |float16 - reference| / max(|reference|, 1) over values finite in both

    @property
    def holds(self) -> bool:
        return self.nonfinite == 0 and self.max_error <= PROBE_TOLERANCE


@dataclass(frozen=True)
class OnDevice:
    """How one device's autocast policy computes a hand-written value: `spared` when it runs no op that loses
    range in float16; otherwise `probed`, float16 on the probe activations, when the value's numbers are known."""

    device: str = ""  # "cpu", "cuda"; "" for the site's own region, whichever it is
    spared: bool = False
    probed: Optional[Probed] = None


@dataclass(frozen=True)
class SiteSpec:
    """What a probability computation computes, without its source semantics.

    The verifier builds tensors from this; the codemod does not need it.
    """

    method: str  # log_prob, entropy, cdf, icdf, kl_divergence
    dists: Tuple[DistSpec, ...]  # one, or two for kl_divergence; empty if unknown
    values: Tuple[ArgSpec, ...]  # the value argument(s) of the method
    kind: str = "distribution"  # which recognizer found it (`amplint.facts.sites`)
    spared: bool = False  # hand-written math its region's device computes with no range lost in float16
    probed: Optional[Probed] = None  # hand-written math on the probe activations, where its numbers are known
    # Hand-written math with no region of its own, per device a region elsewhere may reach it from: how that
    # device's policy computes it with its parameters holding the region's values (`mathsites._spared`).
    reached: Tuple["OnDevice", ...] = ()


@dataclass(frozen=True)
class Risk:
    """Whether the finding's computation was measured to fail on its region's device (amplint/risk.py)."""

    level: str  # "high", "low" or "unknown"
    device: Optional[str]  # the region's literal device ("cuda", "cpu"), None when not a literal
    detail: str  # what was measured, or why nothing applies
    nonfinite: Optional[int] = None  # of the worst measured regime
    rows: Optional[int] = None  # rows that regime ran
    measured_as: Optional[str] = None  # the table's column: "cpu", "cuda" or "cuda-emulated"
    params: Optional[str] = None  # how the worst regime made the parameters
    max_abs_error: Optional[float] = None  # low: the largest error over the measured regimes
    disabled: bool = False  # autocast disabled around the computation (AMP002)
    max_rel_error: Optional[float] = None  # low: the same, relative to the float64 value (`risk._judge`)

    def text(self) -> str:
        """`risk high on CUDA: 532 of 4,096 -inf measured (...)`, as the message quotes it."""
        if self.level == "unknown":
            return f"risk unknown: {self.detail}"
        where = {"cuda": "CUDA", "cpu": "CPU"}.get(self.device or "", self.device or "?")
        return f"risk {self.level} on {where}{' (autocast disabled)' if self.disabled else ''}: {self.detail}"

    def to_json(self) -> dict:
        return asdict(self)


UNKNOWN_RISK = Risk("unknown", None, "not assessed")


@dataclass(frozen=True, order=True)
class Hop:
    """One step of a finding's call chain, with where it happened, so a reader can follow it file by file.

    A chain is the call made in the region (`name` as written, `model(x)`), then each function entered, each
    located at the call that entered it (`AutoEncoder.forward` at that same call, `utils.loss` at the call in
    `AutoEncoder.forward`). A last hop of role "built" is where the distribution was built, when it is built
    in another function. 0 for a line or a column not known (a framework hook: only the region's line).
    """

    name: str
    path: str = ""  # the file as discovered (like `Finding.path`); "" in the facts: the analysed file itself
    line: int = 0  # 1-based
    column: int = 0  # 1-based, in characters
    where: str = ""  # the file as messages show it (relative to the checked directory); "": the finding's own file
    role: str = "call"  # "call", or "built" for where the distribution was built
    cell: int = 0  # notebooks: the 1-based cell `line` counts within (0: not a notebook)

    def place(self) -> str:
        """`train.py:12:5`, `12:5` in the finding's own file, `train.py:12` without a column; "" when unknown."""
        if not self.line:
            return self.where
        where = self.where
        if self.cell:
            where = f"{where}:cell {self.cell}" if where else f"cell {self.cell}"
        spot = f"{self.line}:{self.column}" if self.column else str(self.line)
        return f"{where}:{spot}" if where else spot

    def describe(self, first: bool) -> str:
        """What happens at the hop's place, in words (SARIF's related locations, the language server's)."""
        if self.role != "call":
            return f"the distribution is built here: `{self.name}`"
        return f"call in the autocast region: `{self.name}`" if first else f"enters `{self.name}`"

    def to_json(self) -> dict:
        out = {"name": self.name, "path": self.path, "line": self.line or None, "column": self.column or None,
               "role": self.role}
        if self.cell:
            out["cell"] = self.cell
        return out


def chain_text(chain: Tuple[Hop, ...]) -> str:
    """`model(x) (train.py:16:9) → AutoEncoder.forward → utils.loss (model.py:22:16)`: each call's place once,
    after the first hop it took (a function entered names no place of its own when the call before it is it)."""
    parts: List[str] = []
    shown = None
    for hop in chain:
        if hop.role != "call":
            continue
        place = hop.place()
        at = (hop.where, hop.line, hop.column)
        parts.append(f"{hop.name} ({place})" if place and at != shown else hop.name)
        shown = at
    return " → ".join(parts)


@dataclass(frozen=True)
class Finding:
    """One reported problem, with 1-based line and column like every linter."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    message: str
    fixable: bool = False
    fix_strategies: Tuple[str, ...] = ()
    region: Optional[RegionInfo] = None
    chain: Tuple[Hop, ...] = ()  # the calls from the region to the site, then where the distribution was built
    site: Optional[SiteSpec] = None
    region_path: Optional[str] = None  # project mode: the region's file when the chain starts in another file
    risk: Optional[Risk] = None  # set by amplint.risk.with_risk where findings are built
    cell: Optional[int] = None  # notebooks: the 1-based cell (line and columns are then within the cell)

    def sort_key(self) -> Tuple[str, int, int, str]:
        return (self.path, self.line, self.column, self.code)

    def to_json(self) -> dict:
        """The stable JSON shape documented in the README."""
        out = {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "code": self.code,
            "message": self.message,
            "fixable": self.fixable,
            "fix_strategies": list(self.fix_strategies),
            "chain": [hop.to_json() for hop in self.chain],
            "risk": (self.risk or UNKNOWN_RISK).to_json(),
        }
        if self.region is not None:
            region = asdict(self.region)
            region["precision"] = self.region.precision.value
            if self.region_path is not None:
                region["path"] = self.region_path
            out["region"] = region
        if self.cell is not None:
            out["cell"] = self.cell
        return out


@dataclass(frozen=True)
class FileError:
    """A file that could not be read, decoded or parsed: reported, never raised."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: error: {self.message}"


@dataclass(frozen=True)
class Notice:
    """What a run says of itself, not of a file's code: that a bound stopped part of its analysis."""

    path: str  # the folder the run was about, as messages show it
    message: str

    def __str__(self) -> str:
        return f"{self.path}: warning: {self.message}"


@dataclass
class FileResult:
    """Everything one file produced: findings, or the error that stopped it."""

    path: str
    findings: list = field(default_factory=list)
    error: Optional[FileError] = None


@dataclass
class Checked:
    """A check's results, file by file, and what the run says of itself (`Notice`)."""

    results: List[FileResult]
    notices: Tuple[Notice, ...] = ()
