"""The recorder: torch hooks that note each probability computation a project runs, and its dtypes.

Two hooks, both installed by `Recorder.start` and removed by `stop`:
- `torchpatch` wraps every distribution's `log_prob`/`entropy`/`cdf`/`icdf`
  and `kl_divergence`, as the guard does; classes a script defines later are
  wrapped as they are defined;
- a `TorchFunctionMode` sees every torch function and Tensor method; the
  math ops in `MATH_KINDS` called from a project line are noted. Inside a
  distribution method they are not: that computation is the method's.
`torch.autocast.__enter__` is wrapped too, to know which project frame opened
the enabled region, where a site's recorded stack begins.

The work per call is bounded: a name lookup for every torch call, and for a
noted one a walk of the frames above it and one `isfinite` on its result.
"""
from __future__ import annotations

import functools
import sys
import threading
from types import FrameType
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from amplint import torchpatch
from amplint.trace.frames import Place, ProjectFiles
from amplint.trace.records import LOG_KINDS, Record

# torch function or Tensor method name -> the kind recorded.
MATH_KINDS: Dict[str, str] = {
    **{name: name for name in LOG_KINDS},
    "log_": "log", "log1p_": "log1p", "log2_": "log2", "log10_": "log10", "lgamma_": "lgamma",
    "digamma_": "digamma", "xlogy_": "xlogy",
    "exp": "exp", "exp_": "exp", "expm1": "exp", "exp2": "exp",
    "pow": "pow", "pow_": "pow", "__pow__": "pow", "__rpow__": "pow", "__ipow__": "pow", "float_power": "pow",
    "square": "pow", "square_": "pow", "sqrt": "sqrt", "rsqrt": "sqrt",
    "softmax": "softmax", "sigmoid": "sigmoid", "sigmoid_": "sigmoid", "erf": "erf", "erfc": "erf",
    "div": "div", "div_": "div", "true_divide": "div", "__truediv__": "div", "__rtruediv__": "div",
    "__itruediv__": "div", "__div__": "div", "reciprocal": "div", "reciprocal_": "div",
}
KeyT = Tuple[str, int, int, str]


def _tensors(values: Any) -> Iterator[Any]:
    import torch

    for value in values:
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            yield from (item for item in value if isinstance(item, torch.Tensor))


class Recorder:
    """Records while started; `records()` is what it saw. One per traced process."""

    def __init__(self, files: ProjectFiles) -> None:
        self.files = files
        self._records: Dict[KeyT, Record] = {}
        self._local = threading.local()
        self._lock = threading.Lock()
        self._saved: torchpatch.Saved = []
        self._mode: Any = None

    # --- starting and stopping ------------------------------------------------------------------------

    def start(self) -> None:
        import torch
        from torch.overrides import TorchFunctionMode

        self.files = ProjectFiles(self.files.root)  # torch is imported now: its directory is a library
        self._saved = torchpatch.patch_probability(self._wrap, follow_new_classes=True)
        self._patch_autocast(torch.amp.autocast_mode.autocast)
        recorder = self

        class _Mode(TorchFunctionMode):
            def __torch_function__(self, func: Any, types: Any, args: Tuple[Any, ...] = (),
                                   kwargs: Optional[Dict[str, Any]] = None) -> Any:
                result = func(*args, **(kwargs or {}))
                kind = MATH_KINDS.get(getattr(func, "__name__", ""))
                if kind is not None and not getattr(recorder._local, "depth", 0):
                    recorder._math(kind, func, result, args, kwargs or {}, sys._getframe(1))
                return result

        self._mode = _Mode()
        self._mode.__enter__()

    def stop(self) -> None:
        if self._mode is not None:
            try:
                self._mode.__exit__(None, None, None)
            except RuntimeError:  # the script left another mode on top of ours: the process is ending anyway
                pass
            self._mode = None
        torchpatch.unpatch(self._saved)

    def records(self) -> List[Record]:
        with self._lock:
            return list(self._records.values())

    # --- hooks ---------------------------------------------------------------------------------------------

    def _patch_autocast(self, autocast: type) -> None:
        original_enter, original_exit = autocast.__enter__, autocast.__exit__
        recorder = self

        @functools.wraps(original_enter)
        def enter(instance: Any) -> Any:
            result = original_enter(instance)
            opened = torchpatch.autocast_of(getattr(instance, "device", "cpu")) is not None
            frame = recorder.files.first_project(sys._getframe(1)) if opened else None
            recorder._regions().append((frame, recorder.files.place(frame)) if frame is not None else None)
            return result

        @functools.wraps(original_exit)
        def exit_(instance: Any, *exc: Any) -> Any:
            regions = recorder._regions()
            if regions:
                regions.pop()
            return original_exit(instance, *exc)

        self._saved.append((autocast, "__enter__", original_enter))
        self._saved.append((autocast, "__exit__", original_exit))
        autocast.__enter__ = enter  # type: ignore[method-assign]
        autocast.__exit__ = exit_  # type: ignore[method-assign]

    def _regions(self) -> List[Optional[Tuple[FrameType, Place]]]:
        regions = getattr(self._local, "regions", None)
        if regions is None:
            regions = self._local.regions = []
        return regions

    def _wrap(self, original: Callable[..., Any], method: str) -> Callable[..., Any]:
        return torchpatch.outermost(
            original, self._local,
            lambda result, args, kwargs, caller: self._distribution(method, result, args, kwargs, caller))

    # --- noting a call ------------------------------------------------------------------------------------

    def _distribution(self, method: str, result: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any],
                      caller: FrameType) -> None:
        frame = self.files.caller(caller)
        if frame is None:
            return
        dtypes = torchpatch.call_dtypes(method, args, kwargs)
        classes = [type(arg).__name__ for arg in args[:2]]
        computation = f"kl_divergence({', '.join(classes)})" if method == "kl_divergence" else (
            f"{classes[0] if classes else '?'}.{method}")
        self._note(frame, method, computation, dtypes, result, always=True)

    def _math(self, kind: str, func: Any, result: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any],
              caller: FrameType) -> None:
        frame = self.files.caller(caller)
        if frame is None:
            return
        inputs = [t for t in _tensors(list(args) + list(kwargs.values())) if t.is_floating_point()]
        if not inputs:
            return
        names = ("input", "other") if len(inputs) == 2 else tuple(f"input{i}" for i in range(len(inputs)))
        dtypes = tuple((name, torchpatch.dtype_name(t.dtype)) for name, t in zip(names, inputs))
        owner = "Tensor" if getattr(func, "__objclass__", None) is not None or func.__name__.startswith("__") \
            else getattr(func, "__module__", "torch") or "torch"
        self._note(frame, kind, f"{owner}.{func.__name__}", dtypes, result, always=kind in LOG_KINDS)

    def _note(self, frame: FrameType, kind: str, computation: str, dtypes: Tuple[Tuple[str, str], ...],
              result: Any, always: bool) -> None:
        """Add one call to its place's record. `always`: note it even without float16 inputs (under autocast)."""
        import torch

        low = any(dtype == "float16" for _, dtype in dtypes)
        device = result.device.type if isinstance(result, torch.Tensor) else "cpu"
        autocast = torchpatch.autocast_of(device)
        if not low and not (always and autocast is not None and autocast.split(" ")[-1] == "float16"):
            return
        place = self.files.place(frame)
        values = nonfinite = 0
        if isinstance(result, torch.Tensor) and result.is_floating_point():
            values = result.numel()
            nonfinite = int((~torch.isfinite(result.detach())).sum())
        key = (place.path, place.line, place.column, kind)
        with self._lock:
            record = self._records.get(key)
            if record is None or (low and not record.float16):
                region = self._region()
                stack = self.files.stack(frame, region[0] if region else None)
                if record is None:
                    record = self._records[key] = Record(
                        place=place, kind=kind, computation=computation, float16=low, autocast=autocast,
                        dtypes=dtypes, stack=stack, region=region[1] if region else None)
                else:  # the first float16 call's facts replace a float32 call's
                    record.float16, record.dtypes, record.stack, record.computation = low, dtypes, stack, computation
                    record.autocast = autocast or record.autocast
            record.calls += 1
            record.float32_calls += 0 if low else 1
            record.nonfinite += nonfinite
            record.values += values
            record.autocast = record.autocast or autocast

    def _region(self) -> Optional[Tuple[FrameType, Place]]:
        """The project frame that opened the outermost enabled autocast region now active, and where it did."""
        return next((region for region in self._regions() if region is not None), None)
