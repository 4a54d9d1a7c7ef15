"""What a trace saw at one place, and its shape in `amplint check`'s JSON.

One record per place and kind, however often it ran: a training loop of
10,000 steps gives one record with `calls` = 10,000, so the output is bounded by
the source, not by the run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

from amplint.trace.frames import Place, relative

DISTRIBUTION_KINDS = ("log_prob", "entropy", "cdf", "icdf", "kl_divergence")
# Math whose result is a log-density term: these are probability computations of their own.
LOG_KINDS = ("log", "log1p", "log2", "log10", "lgamma", "digamma", "xlogy")
# The code of the rule whose ground a record stands on, so that every front end reads it as a finding.
DISTRIBUTION_CODE, MATH_CODE = "AMP001", "AMP003"


def is_probability(kind: str) -> bool:
    return kind in DISTRIBUTION_KINDS or kind in LOG_KINDS


@dataclass
class Record:
    """One place where a probability computation (or float16 math) ran, summed over its calls."""

    place: Place
    kind: str  # log_prob, ..., kl_divergence, or the math op: log, exp, pow, softmax, div, ...
    computation: str  # "Normal.log_prob", "kl_divergence(Normal, Normal)", "torch.log"
    float16: bool  # some call saw a float16 input or parameter
    autocast: Optional[str]  # "cpu float16" when a call ran under enabled autocast, else None
    dtypes: Tuple[Tuple[str, str], ...]
    stack: List[Place]
    region: Optional[Place]  # the project frame that opened the enabled region, if any
    calls: int = 0
    nonfinite: int = 0
    values: int = 0
    float32_calls: int = field(default=0)  # calls whose inputs were all wider than float16

    @property
    def probability(self) -> bool:
        return is_probability(self.kind)

    def message(self) -> str:
        inputs = ", ".join(f"{name} {dtype}" for name, dtype in self.dtypes) or "no tensor inputs"
        where = f"under {self.autocast} autocast" if self.autocast else "with autocast off"
        runs = f"{self.calls} call{'s' if self.calls != 1 else ''}"
        if not self.float16:
            return f"traced: {self.computation} ran without float16 inputs {where} ({inputs}; {runs})"
        return (f"traced: {self.computation} ran with float16 inputs {where} ({inputs}); "
                f"{self.nonfinite:,} of {self.values:,} values non-finite over {runs}")

    def to_json(self, base: str) -> dict:
        """`amplint check --format json`'s shape, with the run-time facts under `trace`."""
        device = (self.autocast or "").split(" ")[0] or None
        if self.nonfinite:
            risk = {"level": "high", "detail": f"{self.nonfinite:,} of {self.values:,} values non-finite at run time"}
        else:
            risk = {"level": "unknown", "detail": "finite at run time on this run's data"}
        out = {
            "path": relative(self.place.path, base),
            "line": self.place.line,
            "column": self.place.column,
            "end_line": self.place.end_line,
            "end_column": self.place.end_column,
            "code": DISTRIBUTION_CODE if self.kind in DISTRIBUTION_KINDS else MATH_CODE,
            "message": self.message(),
            "fixable": False,
            "fix_strategies": [],
            "chain": [place.name for place in self.stack[:-1]],
            "risk": dict(risk, device=device, nonfinite=self.nonfinite, rows=self.values, measured_as="run time",
                         params=None, max_abs_error=None, disabled=self.autocast is None),
            "trace": {
                "kind": self.kind,
                "computation": self.computation,
                "probability": self.probability,
                "float16": self.float16,
                "autocast": self.autocast,
                "dtypes": [list(pair) for pair in self.dtypes],
                "calls": self.calls,
                "float32_calls": self.float32_calls,
                "nonfinite": self.nonfinite,
                "values": self.values,
                "stack": [place.to_json(base) for place in self.stack],
                "cwd": base,  # what relative paths are relative to
            },
        }
        if self.region is not None:
            out["region"] = {"line": self.region.line, "precision": (self.autocast or " other").split(" ")[-1],
                             "enabled": self.autocast is not None, "device": device, "device_code": "",
                             "path": relative(self.region.path, base)}
        return out


def sort_key(record: Record) -> Tuple[str, int, int, str]:
    return (record.place.path, record.place.line, record.place.column, record.kind)


def report(records: List[Record], base: str) -> List[dict]:
    """The records worth reporting, in path order: float16 ones, and probability ones seen under float16 autocast."""
    kept = [r for r in records if r.float16 or (r.probability and (r.autocast or "").endswith(" float16"))]
    return [record.to_json(os.path.realpath(base)) for record in sorted(kept, key=sort_key)]
