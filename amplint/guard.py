"""`amplint.guard()`: catch non-finite log_prob/entropy/cdf/icdf/kl_divergence at run time.

The static check finds computations that *can* fail in float16; the guard
catches the ones that *do*, inside a real training loop, and names the line
to fix. For its duration, every `log_prob`, `entropy`, `cdf` and `icdf` of
every `torch.distributions.Distribution` subclass, and
`torch.distributions.kl_divergence`, is wrapped: when autocast is enabled (or
the inputs are float16 with autocast off, the AMP002 case) and the result has
-inf/+inf/NaN, it raises `AmpLintNonFiniteError`, or warns with `mode="warn"`.

Design:
- torch is imported on entry, never at import: `import amplint` stays torch-free.
- Patches are installed by the first active guard and removed by the last, under
  a lock, so nested guards and guards in several threads share one set of
  patches; once the last guard exits, the original functions are back and the
  cost is zero. That registry is the module's only state, and it is empty
  whenever no guard is active.
- Only the outermost patched call checks (MixtureSameFamily.log_prob calls
  Normal.log_prob inside torch): the error names the class the user called.
- Names bound before entry (`from torch.distributions import kl_divergence`)
  keep the unpatched function: the guard can only patch what torch exposes.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Tuple, TypeVar, Union, overload

from amplint import torchpatch

MODES = ("raise", "warn")
F = TypeVar("F", bound=Callable[..., Any])
_OURS = (os.path.abspath(__file__), os.path.abspath(torchpatch.HERE))  # the guard's frames and the wrapper's


class AmpLintNonFiniteError(FloatingPointError):
    """A probability computation returned -inf/+inf/NaN under float16 autocast."""

    def __init__(self, report: "NonFiniteReport") -> None:
        super().__init__(report.message())
        self.report = report
        self.filename = report.filename
        self.lineno = report.lineno
        self.rule = report.rule


class AmpLintNonFiniteWarning(RuntimeWarning):
    """The `mode="warn"` form of AmpLintNonFiniteError."""


@dataclass(frozen=True)
class NonFiniteReport:
    """Everything the message says, as fields a test or a logger can read."""

    filename: str
    lineno: int
    computation: str  # "Normal.log_prob", or "kl_divergence(Normal, Normal)"
    dist_class: str  # the class the user called (first argument's class for kl_divergence)
    input_dtypes: Tuple[Tuple[str, str], ...]
    neg_inf: int
    pos_inf: int
    nan: int
    total: int
    autocast: Optional[str]  # e.g. "cuda float16"; None when autocast is off (AMP002)
    rule: str

    def message(self) -> str:
        dtypes = ", ".join(f"{name}={dtype}" for name, dtype in self.input_dtypes) or "none recorded"
        where = f"under {self.autocast} autocast" if self.autocast else "with autocast disabled but float16 inputs"
        if self.rule == "AMP001":
            advice = ("amplint rule AMP001 flags this: cast the distribution's inputs and the value to float32 "
                      "(`amplint check --fix`)")
        else:
            advice = ("amplint rule AMP002 flags this: disabling autocast does not widen tensors made under it; "
                      "cast the inputs to float32")
        return (f"{self.filename}:{self.lineno}: {self.computation} returned {self.neg_inf} -inf, "
                f"{self.pos_inf} +inf, {self.nan} NaN of {self.total} values {where}; inputs: {dtypes}. {advice}")


@dataclass
class _Registry:
    """Installed patches and active guards; empty whenever no guard is active."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    active: List["_Guard"] = field(default_factory=list)
    saved: List[Tuple[Any, str, Any]] = field(default_factory=list)  # (owner, attribute, original)
    local: threading.local = field(default_factory=threading.local)


_REGISTRY = _Registry()


class _Guard(contextlib.ContextDecorator):
    """One `guard(...)`; usable as `with` and as a decorator (re-entrant)."""

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode

    def __enter__(self) -> "_Guard":
        with _REGISTRY.lock:
            if not _REGISTRY.active:
                _install()
            _REGISTRY.active.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        with _REGISTRY.lock:
            # remove this entry (the last one equal to self: decorators re-enter the same object)
            for index in range(len(_REGISTRY.active) - 1, -1, -1):
                if _REGISTRY.active[index] is self:
                    del _REGISTRY.active[index]
                    break
            if not _REGISTRY.active:
                _uninstall()


@overload
def guard(func: F) -> F: ...


@overload
def guard(func: None = None, *, mode: str = "raise") -> _Guard: ...


def guard(func: Optional[F] = None, *, mode: str = "raise") -> Union[F, _Guard]:
    """Check every distribution computation while active; `@guard`, `@guard()` and `with guard():` all work."""
    if func is not None and callable(func):
        return _Guard(mode)(func)
    return _Guard(mode)


# --- patching ----------------------------------------------------------------------------------------

def _install() -> None:
    _REGISTRY.saved.extend(torchpatch.patch_probability(_wrap))


def _uninstall() -> None:
    torchpatch.unpatch(_REGISTRY.saved)


def _wrap(original: Callable[..., Any], method: str) -> Callable[..., Any]:
    checked = torchpatch.outermost(
        original, _REGISTRY.local, lambda result, args, kwargs, _caller: _check(result, method, args, kwargs))
    checked.__amplint_guard__ = True  # type: ignore[attr-defined]
    return checked


# --- the check -----------------------------------------------------------------------------------------

def _caller() -> Tuple[str, int]:
    """The first frame outside torch and this module: the user's call site."""
    import torch

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
    frame: Optional[FrameType] = sys._getframe(2)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        if filename not in _OURS and not filename.startswith(torch_dir) and "contextlib" not in filename:
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "<unknown>", 0


def _check(result: Any, method: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> None:
    import torch

    if not isinstance(result, torch.Tensor) or not result.is_floating_point():
        return
    autocast = torchpatch.autocast_of(result.device.type)
    dtypes = torchpatch.call_dtypes(method, args, kwargs)
    low = any(dtype in ("float16", "bfloat16") for _, dtype in dtypes)
    if autocast is None and not low:
        return
    finite = torch.isfinite(result)
    if bool(finite.all()):
        return
    values = result.detach()
    filename, lineno = _caller()
    classes = [type(arg).__name__ for arg in args[:2]]
    if method == "kl_divergence":
        computation = f"kl_divergence({', '.join(classes)})"
    else:
        computation = f"{classes[0]}.{method}"
    report = NonFiniteReport(
        filename=filename, lineno=lineno, computation=computation, dist_class=classes[0], input_dtypes=dtypes,
        neg_inf=int((values == float("-inf")).sum()), pos_inf=int((values == float("inf")).sum()),
        nan=int(torch.isnan(values).sum()), total=values.numel(), autocast=autocast,
        rule="AMP001" if autocast is not None else "AMP002",
    )
    with _REGISTRY.lock:
        mode = _REGISTRY.active[-1].mode if _REGISTRY.active else "raise"
    if mode == "warn":
        warnings.warn_explicit(report.message(), AmpLintNonFiniteWarning, filename, lineno)
        return
    raise AmpLintNonFiniteError(report)
