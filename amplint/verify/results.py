"""What a verification produced: plain dataclasses, serialised by report.py."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional, Tuple


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
        }
