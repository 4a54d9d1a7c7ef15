"""What a verification produced: plain dataclasses, serialised by report.py."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from amplint.rulebase import CAST, DISABLE

TIMING_THREADS = 1  # torch's CPU threads while timing (`Timing`'s docstring says why)


class Verdict(str, enum.Enum):
    CONFIRMED = "confirmed"  # the original has non-finite values, both fixes have none
    NOT_REPRODUCED = "not-reproduced"  # the original is finite on these inputs
    FIX_INSUFFICIENT = "fix-insufficient"  # a fix still has non-finite values (or raises)
    UNVERIFIABLE = "unverifiable"  # the computation could not be rebuilt; `reason` says why


@dataclass(frozen=True)
class VersionResult:
    """One run (original, fix A or fix C).

    Counts are taken where the float64 reference is finite, so a value that is
    legitimately outside the support does not count against a version.
    """

    dtype: Optional[str]
    neg_inf: int = 0
    pos_inf: int = 0
    nan: int = 0
    max_abs_error: Optional[float] = None  # over entries finite in both the run and the reference
    grads_finite: Optional[bool] = None  # of -out.mean(); None where not measured
    error: Optional[str] = None  # the exception the computation raised, e.g. "ValueError: ..."

    @property
    def nonfinite(self) -> int:
        return self.neg_inf + self.pos_inf + self.nan

    @property
    def failed(self) -> bool:
        """An exception counts as a failure, as a non-finite value does."""
        return self.error is not None or self.nonfinite > 0

    def to_json(self) -> dict:
        return {
            "dtype": self.dtype,
            "neg_inf": self.neg_inf,
            "pos_inf": self.pos_inf,
            "nan": self.nan,
            "max_abs_error": self.max_abs_error,
            "grads_finite": self.grads_finite,
            "error": self.error,
        }


@dataclass(frozen=True)
class Timing:
    """What each version costs: the median seconds of its forward (and backward) pass on the rebuilt inputs.

    The ratio of a fix to the original is what a user weighs against the failures it removes; the
    seconds themselves depend on the machine, so the text report prints only the ratios. CPU work runs
    on one thread (TIMING_THREADS): with several, a thread another process delays stalls the others at
    torch's barriers; on a busy two-core machine two threads put a fix's cost as far off as +287%, where
    one thread stayed within 46% (the same three findings, timed twice each way).
    """

    runs: int  # timed runs per version, after `warmups` untimed calls
    warmups: int
    calls: int  # back-to-back calls in one timed run; the seconds are per call
    device: str  # the device semantics the timing ran under, as FindingReport.device
    emulated: bool  # CUDA's policy emulated on CPU: not a GPU's timing
    backward: bool  # each run took the gradient of -out.mean() at the heads too
    original: Optional[float]  # None where the version raised
    fix_cast: Optional[float]
    fix_disable: Optional[float]

    def ratio(self, fixed: Optional[float]) -> Optional[float]:
        """The fix's time over the original's: 1.031 is 3.1% slower."""
        if fixed is None or not self.original:
            return None
        return fixed / self.original

    @property
    def passes(self) -> str:
        return "forward+backward" if self.backward else "forward only"

    def to_json(self) -> dict:
        def overhead(strategy: str, fixed: Optional[float]) -> Dict[str, object]:
            ratio = self.ratio(fixed)
            return {"strategy": strategy, "ratio": None if ratio is None else round(ratio, 4),
                    "percent": None if ratio is None else round((ratio - 1) * 100, 2)}

        return {
            "runs": self.runs,
            "warmups": self.warmups,
            "calls_per_run": self.calls,
            "cpu_threads": TIMING_THREADS,
            "device": self.device,
            "emulated": self.emulated,
            "passes": self.passes,
            "median_seconds": {"original": _seconds(self.original), "fix_cast": _seconds(self.fix_cast),
                               "fix_disable": _seconds(self.fix_disable)},
            "fix_overhead": {"fix_cast": overhead(CAST, self.fix_cast),
                             "fix_disable": overhead(DISABLE, self.fix_disable)},
        }

    def describe(self) -> str:
        """The text report's cost line: `fix A: +3.1% time, fix C: +2.0% time (median of 5 runs of 8 calls ...)`."""
        parts = []
        for name, fixed in (("fix A", self.fix_cast), ("fix C", self.fix_disable)):
            ratio = self.ratio(fixed)
            parts.append(f"{name}: {(ratio - 1) * 100:+.1f}% time" if ratio is not None else f"{name}: no ratio")
        where = self.device if self.device == "cuda" else f"{self.device}, one thread"
        if self.emulated:
            where += ": emulated timing, CPU running CUDA's dtype policy through a Python wrapper, not a GPU's"
        runs = f"{_plural(self.runs, 'run')} of {_plural(self.calls, 'call')}"
        lost = "; the original raised, so no ratio" if self.original is None else ""
        return f"{', '.join(parts)} (median of {runs} after {_plural(self.warmups, 'warm-up')}, {self.passes}, " \
               f"{where}){lost}"


def _seconds(value: Optional[float]) -> Optional[float]:
    """Six significant digits: a timer's last digits are noise, and JSON readers need not see them."""
    return None if value is None else float(f"{value:.6g}")


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' if count != 1 else ''}"


class RunTimeVerdict(str, enum.Enum):
    CONFIRMED = "confirmed-at-run-time"  # a traced call at the site had float16 inputs
    FLOAT32 = "float32-at-run-time"  # the site ran, but never with float16 inputs
    NOT_REACHED = "not-reached"  # the trace holds no record of it


@dataclass(frozen=True)
class TracedCall:
    """One trace record a finding stands for: where it ran, with which dtypes, and what came out."""

    path: str
    line: int
    column: int
    computation: str  # "Normal.log_prob", "torch.log"
    float16: bool
    dtypes: Tuple[Tuple[str, str], ...]
    calls: int
    nonfinite: int
    values: int

    def describe(self) -> str:
        inputs = ", ".join(f"{name} {dtype}" for name, dtype in self.dtypes) or "no tensor inputs"
        plural = "s" if self.calls != 1 else ""
        return (f"{self.computation} at {self.path}:{self.line}:{self.column} ({inputs}): {self.nonfinite:,} of "
                f"{self.values:,} values non-finite over {self.calls:,} call{plural}")

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "column": self.column, "computation": self.computation,
                "float16": self.float16, "dtypes": [list(pair) for pair in self.dtypes], "calls": self.calls,
                "nonfinite": self.nonfinite, "values": self.values}


@dataclass(frozen=True)
class RunTime:
    """The verdict of the user's own run on one finding, from a trace (`amplint verify --trace`)."""

    verdict: RunTimeVerdict
    records: Tuple[TracedCall, ...] = ()  # the float16 ones when confirmed, else every one seen

    @property
    def nonfinite(self) -> int:
        return sum(record.nonfinite for record in self.records)

    def describe(self) -> str:
        if self.verdict is RunTimeVerdict.NOT_REACHED:
            return f"{self.verdict.value}: the trace has no record of it (never run with float16 inputs or " \
                   "under float16 autocast)"
        return f"{self.verdict.value}: " + "; ".join(record.describe() for record in self.records)

    def to_json(self) -> dict:
        return {"verdict": self.verdict.value, "nonfinite": self.nonfinite,
                "calls": sum(record.calls for record in self.records),
                "values": sum(record.values for record in self.records),
                "records": [record.to_json() for record in self.records]}


@dataclass(frozen=True)
class FindingReport:
    """The verdict on one finding (or one unflagged bfloat16 site), with its three runs."""

    path: str
    line: int
    column: int
    code: Optional[str]  # None for a bfloat16 site that `amplint check` does not flag
    verdict: Verdict
    device: str
    batch: int
    seed: int
    computation: str  # e.g. "Normal.log_prob"
    precision: Optional[str]  # the autocast dtype the run used
    recipe: Optional[str] = None
    reason: Optional[str] = None  # why unverifiable
    notes: Tuple[str, ...] = ()
    original: Optional[VersionResult] = None
    fix_cast: Optional[VersionResult] = None
    fix_disable: Optional[VersionResult] = None
    seconds: float = 0.0
    timing: Optional[Timing] = None  # None when not timed (--timing-runs 0, or no verdict was run)
    run_time: Optional[RunTime] = None  # with --trace, for a finding (a bfloat16 site is none)

    def to_json(self) -> dict:
        def version(result: Optional[VersionResult]) -> Optional[dict]:
            return result.to_json() if result is not None else None

        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "code": self.code,
            "verdict": self.verdict.value,
            "device": self.device,
            "batch": self.batch,
            "seed": self.seed,
            "computation": self.computation,
            "precision": self.precision,
            "recipe": self.recipe,
            "reason": self.reason,
            "notes": list(self.notes),
            "original": version(self.original),
            "fix_cast": version(self.fix_cast),
            "fix_disable": version(self.fix_disable),
            "seconds": round(self.seconds, 3),
            "timing": self.timing.to_json() if self.timing is not None else None,
            "run_time": self.run_time.to_json() if self.run_time is not None else None,
        }
