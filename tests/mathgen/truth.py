"""Run a generated expression in float16 on each device and against float32: the measured truth.

Devices:
- `cpu`: the statements under `torch.autocast("cpu", dtype=torch.float16)` on CPU tensors.
- `cuda`: CUDA autocast's policy, emulated on CPU by `amplint.verify.devices.CUDA_EMULATED`: the tensors
  carry the AutocastCUDA dispatch key, so torch's own AutocastCUDA kernels decide every cast (`exp`,
  `log`, `pow`, `softmax`, `sum`, ... in float32; `sigmoid`, `+`, `/`, `clamp`, `lgamma` in their
  inputs' dtype), and the ops then run on CPU. docs/measurements.md section 3 compares it with an H200.

The reference is the same statements with autocast off, on float32 tensors,
where `head(x)` returns the float16 head output of that device's run cast to
float32: the same parameter values the float16 run sees. So the rounding of the
Linear itself, which no cast in the expression could undo, is not counted, and
a cast at the head makes an expression equal its reference exactly.

An expression is hazardous on a device when, in any regime:
- a value is non-finite (inf or NaN) where the reference is finite, or
- the largest error over the values finite in both exceeds `TOLERANCE` = 1e-2, the error of a value
  being |float16 - reference| / max(|reference|, 1). Relative for values above 1 in magnitude, absolute
  below: a log-probability near 0 is a difference of larger terms, and dividing by it would call the
  unit roundoff of those terms (4.9e-4) a 100% error. The maximum, not a quantile, because the non-finite
  test is per value too: one row's wrong loss is one example's wrong gradient.

Rows are independent (every reduction runs over the last dimension), so a
row whose float32 reference is itself non-finite (`log(1 - sigmoid(20))` is
`-inf` in float32 too) is left out of that regime, and counted: those inputs
say nothing about float16.
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F

from amplint.verify.devices import CUDA_EMULATED, EmulatedCudaTensor, emulation_limit, to_host

from .generate import MathCase, runnable
from .regimes import Inputs

TOLERANCE = 1e-2
DEVICES = ("cpu", "cuda")


@dataclass(frozen=True)
class RegimeResult:
    regime: str
    rows: int              # rows compared (reference finite)
    dropped: int           # rows left out: the float32 reference is non-finite there
    nonfinite: int         # float16 values non-finite where the reference is finite
    max_rel_error: float   # over values finite in both (0 when none)
    dtype: str             # the float16 run's output dtype

    @property
    def hazardous(self) -> bool:
        return self.nonfinite > 0 or self.max_rel_error > TOLERANCE


@dataclass(frozen=True)
class Truth:
    """One expression on one device, over every regime."""

    device: str
    regimes: Tuple[RegimeResult, ...] = ()
    error: Optional[str] = None  # the float16 or the reference run raised: not scored

    @property
    def hazardous(self) -> bool:
        return self.error is None and any(r.hazardous for r in self.regimes)

    @property
    def cause(self) -> str:
        """`non-finite`, `error` (finite but off by more than 1e-2), or `` when not hazardous."""
        if any(r.nonfinite for r in self.regimes):
            return "non-finite"
        return "error" if self.hazardous else ""

    @property
    def worst(self) -> Optional[RegimeResult]:
        """The regime to quote: most non-finite values, then largest error."""
        if not self.regimes:
            return None
        return max(self.regimes, key=lambda r: (r.nonfinite, r.max_rel_error))

    @property
    def dropped(self) -> int:
        return sum(r.dropped for r in self.regimes)

    def to_dict(self) -> Dict[str, Any]:
        worst = self.worst
        return {"device": self.device, "hazardous": self.hazardous, "cause": self.cause, "error": self.error,
                "dropped_rows": self.dropped,
                "worst": None if worst is None else {**worst.__dict__, "hazardous": worst.hazardous},
                "hazardous_regimes": [r.regime for r in self.regimes if r.hazardous]}


class Runner:
    """Compiles an expression once and runs it on the regimes' inputs, per device and for the reference."""

    def __init__(self, inputs: Sequence[Inputs]) -> None:
        self.inputs = tuple(inputs)

    def truth(self, case: MathCase, devices: Sequence[str] = DEVICES) -> Dict[str, Truth]:
        namespace: Dict[str, Any] = {}
        exec(compile(runnable(case), f"<mathgen {case.seed}:{case.index}>", "exec"), namespace)
        return {device: self._device_truth(namespace, device) for device in devices}

    def _device_truth(self, namespace: Dict[str, Any], device: str) -> Truth:
        results: List[RegimeResult] = []
        for inputs in self.inputs:
            try:
                low, head16 = _run_low(namespace, device, inputs)
                ref = _run_reference(namespace, inputs, head16)
            except Exception as exc:  # the expression's failure is data: reported, not raised
                message = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                if device == "cuda" and emulation_limit(CUDA_EMULATED, message):
                    message = "not emulated: " + message
                return Truth(device, tuple(results), error=message)
            results.append(compare(inputs.regime, low, ref))
        return Truth(device, tuple(results))


def _run_low(namespace: Dict[str, Any], device: str, inputs: Inputs) -> Tuple[torch.Tensor, torch.Tensor]:
    """The float16 run and the float16 head output it computed from, both as CPU tensors."""
    seen: List[torch.Tensor] = []
    if device == "cpu":
        put: Callable[[torch.Tensor], torch.Tensor] = lambda t: t
        session: Any = contextlib.nullcontext()
        region: Callable[[], Any] = lambda: torch.autocast("cpu", dtype=torch.float16)
    else:
        put, session = EmulatedCudaTensor, CUDA_EMULATED.session()
        region = functools.partial(CUDA_EMULATED.autocast, True, torch.float16)
    linear = functools.partial(F.linear, weight=put(inputs.weight), bias=put(inputs.bias))

    def head(x: torch.Tensor) -> torch.Tensor:
        out = linear(x)
        seen.append(out)
        return out

    namespace["region"] = region
    with torch.no_grad(), session:
        out = namespace["loss"](head, put(inputs.x), put(inputs.y), put(inputs.t), put(inputs.k))
        return to_host(out), to_host(seen[0])


def _run_reference(namespace: Dict[str, Any], inputs: Inputs, head16: torch.Tensor) -> torch.Tensor:
    head32 = head16.float()
    namespace["region"] = contextlib.nullcontext
    with torch.no_grad():
        return namespace["loss"](lambda x: head32, inputs.x, inputs.y, inputs.t, inputs.k)


def compare(regime: str, low: torch.Tensor, ref: torch.Tensor) -> RegimeResult:
    """Non-finite float16 values and the largest error, on the rows whose reference is finite."""
    rows = ref.shape[0] if ref.dim() else 1
    ref64 = ref.detach().double().reshape(rows, -1)
    low64 = low.detach().double().reshape(rows, -1)
    keep = torch.isfinite(ref64).all(dim=1)
    ref64, low64 = ref64[keep], low64[keep]
    finite = torch.isfinite(low64)
    nonfinite = int((~finite).sum())
    if bool(finite.any()):
        err = (low64 - ref64).abs() / ref64.abs().clamp(min=1.0)
        max_err = float(err[finite].max())
    else:
        max_err = 0.0
    return RegimeResult(regime, int(keep.sum()), rows - int(keep.sum()), nonfinite, max_err,
                        str(low.dtype).replace("torch.", ""))
