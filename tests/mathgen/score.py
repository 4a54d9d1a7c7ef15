"""Set AMP003/AMP004's verdict on each generated expression against the measured truth, per device.

amplint is asked through `amplint.engine.check_source`, what `amplint check`
runs on a file, with the module `render` writes: a CPU float16 region for the
CPU truth, a CUDA float16 region for the CUDA-policy truth. Its verdict is
whether AMP003 or AMP004 reports a finding in the function: every statement
there is part of the one expression (the intermediate values it names), so a
finding on any of them is a report of it. Recall is the share of hazardous
expressions reported; precision the share of reported ones that are hazardous.
An expression whose run raised is not scored, and is counted.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import torch

from amplint.config import Config
from amplint.engine import check_source

from .generate import WIDTH, MathCase, body_line, generate, render
from .regimes import all_inputs
from .truth import DEVICES, Runner, Truth

CODES = ("AMP003", "AMP004")
CONFIG = Config()


@dataclass(frozen=True)
class Verdict:
    codes: Tuple[str, ...]   # AMP003/AMP004 codes reported in the function, sorted
    lines: Tuple[int, ...]   # the body statements (0-based) they are on
    other: Tuple[str, ...] = ()  # any other code reported (none expected)
    error: Optional[str] = None  # amplint could not read the module
    claims: bool = False  # a finding says it fails on the region's device: its risk is not `low`

    @property
    def reported(self) -> bool:
        return bool(self.codes)


@dataclass(frozen=True)
class CaseResult:
    case: MathCase
    device: str
    truth: Truth
    verdict: Verdict

    @property
    def scored(self) -> bool:
        return self.truth.error is None and self.verdict.error is None

    @property
    def outcome(self) -> str:
        """tp (hazardous, reported), fn (a miss), fp (a false alarm), tn, or unscored."""
        return self.outcome_of(self.verdict.reported)

    @property
    def claim_outcome(self) -> str:
        """The outcome when only findings that say the expression fails on this device count (risk not `low`:
        what `--min-risk high` keeps); a finding whose device's policy spares it says it holds there."""
        return self.outcome_of(self.verdict.claims)

    def outcome_of(self, reported: bool) -> str:
        if not self.scored:
            return "unscored"
        return {(True, True): "tp", (True, False): "fn", (False, True): "fp", (False, False): "tn"}[
            (self.truth.hazardous, reported)]

    def to_dict(self) -> Dict[str, Any]:
        return {"seed": self.case.seed, "index": self.case.index, "device": self.device, "outcome": self.outcome,
                "family": self.case.family, "top_op": self.case.top_op, "cast": self.case.cast,
                "eps": self.case.eps, "bound": self.case.bound, "ops": list(self.case.ops),
                "claim_outcome": self.claim_outcome, "codes": list(self.verdict.codes),
                "finding_statements": list(self.verdict.lines),
                "other_codes": list(self.verdict.other), "amplint_error": self.verdict.error,
                "truth": self.truth.to_dict(),
                "source": render(self.case, self.device)}


def verdict(case: MathCase, device: str) -> Verdict:
    result = check_source(render(case, device), f"mathgen_{case.seed}_{case.index}_{device}.py", CONFIG)
    if result.error is not None:
        return Verdict((), (), error=str(result.error))
    ours = [f for f in result.findings if f.code in CODES]
    lines = sorted({n for n in (body_line(case, f.line) for f in ours) if n is not None})
    return Verdict(tuple(sorted({f.code for f in ours})), tuple(lines),
                   tuple(sorted({f.code for f in result.findings if f.code not in CODES})),
                   claims=any(f.risk is None or f.risk.level != "low" for f in ours))


def score_cases(cases: Iterable[MathCase], seed: int, devices: Sequence[str] = DEVICES,
                progress: Optional[Callable[[int], None]] = None) -> List[CaseResult]:
    """Truth and verdict for each case on each device; the inputs are the regimes' for `seed`.

    On one thread: a float16 reduction split across threads may round differently, and a value near the
    tolerance must not change its verdict with the machine's core count.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        runner = Runner(all_inputs(seed, WIDTH))
        results: List[CaseResult] = []
        for n, case in enumerate(cases, 1):
            truths = runner.truth(case, devices)
            results += [CaseResult(case, device, truths[device], verdict(case, device)) for device in devices]
            if progress is not None:
                progress(n)
        return results
    finally:
        torch.set_num_threads(threads)


def score(seed: int, count: int, devices: Sequence[str] = DEVICES,
          progress: Optional[Callable[[int], None]] = None) -> List[CaseResult]:
    return score_cases((generate(seed, i) for i in range(count)), seed, devices, progress)


# --- summaries ---------------------------------------------------------------------------------

def _ratio(num: int, den: int) -> Optional[float]:
    return num / den if den else None


def counts(results: Iterable[CaseResult], claims: bool = False) -> Dict[str, Any]:
    """Outcome counts, recall and precision over `results` (one device's); `claims`: of `claim_outcome`."""
    c: Dict[str, int] = defaultdict(int)
    for r in results:
        c[r.claim_outcome if claims else r.outcome] += 1
    tp, fn, fp, tn = c["tp"], c["fn"], c["fp"], c["tn"]
    return {"expressions": tp + fn + fp + tn + c["unscored"], "scored": tp + fn + fp + tn,
            "hazardous": tp + fn, "reported": tp + fp, "tp": tp, "fn": fn, "fp": fp, "tn": tn,
            "unscored": c["unscored"], "recall": _ratio(tp, tp + fn), "precision": _ratio(tp, tp + fp),
            "agreement": _ratio(tp + tn, tp + fn + fp + tn)}


Key = Callable[[CaseResult], Iterable[str]]
BREAKDOWNS: Dict[str, Key] = {
    "family": lambda r: (r.case.family,),
    "top_op": lambda r: (r.case.top_op,),
    "cast": lambda r: (r.case.cast,),
    "eps": lambda r: (r.case.eps,),
    "bound": lambda r: ("names intermediates" if r.case.bound else "one expression",),
    "op": lambda r: r.case.ops,
    "cause": lambda r: (r.truth.cause or "not hazardous",),
    "codes": lambda r: ("+".join(r.verdict.codes) or "none",),
}


def breakdown(results: Sequence[CaseResult], key: Key, claims: bool = False) -> Dict[str, Dict[str, Any]]:
    groups: Dict[str, List[CaseResult]] = defaultdict(list)
    for r in results:
        for value in key(r):
            groups[value].append(r)
    return {name: counts(group, claims) for name, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))}


def summarize(results: Sequence[CaseResult]) -> Dict[str, Any]:
    """Per device: the overall counts, each breakdown, the regimes that made expressions hazardous."""
    out: Dict[str, Any] = {}
    for device in sorted({r.device for r in results}, key=DEVICES.index):
        mine = [r for r in results if r.device == device]
        regimes: Dict[str, int] = defaultdict(int)
        for r in mine:
            for name in r.truth.to_dict()["hazardous_regimes"]:
                regimes[name] += 1
        out[device] = {"overall": counts(mine), "claims": counts(mine, claims=True),
                       **{name: breakdown(mine, key) for name, key in BREAKDOWNS.items()},
                       "family_claims": breakdown(mine, BREAKDOWNS["family"], claims=True),
                       "hazardous_by_regime": dict(regimes),
                       "dropped_rows": sum(r.truth.dropped for r in mine),
                       "errors": [(r.case.index, r.truth.error or r.verdict.error) for r in mine if not r.scored]}
    return out


def misclassified(results: Sequence[CaseResult]) -> List[Dict[str, Any]]:
    """Every miss and false alarm, with its source and measurement, for the rule authors."""
    return [r.to_dict() for r in results if r.outcome in ("fn", "fp") or r.claim_outcome in ("fn", "fp")]
