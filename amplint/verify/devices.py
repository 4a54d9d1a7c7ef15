"""Where and under which autocast policy a computation runs: cpu, cuda, cuda-emulated.

CPU and CUDA autocast cast different ops: CUDA promotes `pow`, `log`, `exp`,
`softmax`, `sum` and others to float32, CPU autocast leaves them in float16.
Without a GPU, `cuda-emulated` still gives CUDA's real policy: tensors are a
wrapper subclass whose device is `cuda:0`, so they carry the AutocastCUDA
dispatch key and the torch build's own AutocastCUDA kernels decide each cast;
`__torch_dispatch__` then runs every aten op on the wrapped CPU tensor.

Which ops each policy casts is data in `amplint.policies` (PyTorch's own lists);
each Device carries its policy, and the emulation leaves the casting to the
torch build's registered kernels, which tests/test_policies.py checks against
those lists.

Limits of the emulation, each worked around here:
- `torch.autocast("cuda")` disables itself without a GPU, so the state is set
  with `torch.set_autocast_enabled/dtype("cuda", ...)`.
- The device carries index 0 because `to()` asks a CUDA device guard for the
  current index of an index-less device, and a CPU build has none.
- Python indexing and factory calls with `device="cuda"` also need CUDA
  internals; a TorchFunctionMode turns them into dispatcher ops / CPU factories.
- CUDA's `_softmax(half_to_float=True)` has no CPU kernel: it is run as the
  float32 softmax it computes.
- Autograd on these tensors aborts the process (its engine needs the CUDA
  device guard), so the emulation is forward-only: gradients are not measured.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterator, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_map

from amplint import policies
from amplint.model import RegionInfo
from amplint.verify.choices import DEVICE_CHOICES


@dataclass(frozen=True)
class Device:
    """A device semantics: how tensors are placed and how autocast is switched."""

    name: str  # "cpu", "cuda" or "cuda-emulated", as the report names it
    autocast_type: str  # the device_type autocast is set for
    description: str
    measures_grads: bool
    put: Callable[[torch.Tensor], torch.Tensor]
    session: Callable[[], ContextManager[None]]
    policy: policies.AutocastPolicy = policies.CPU

    @property
    def emulated(self) -> bool:
        return self.name == "cuda-emulated"

    def autocast(self, enabled: bool, dtype: Optional[torch.dtype] = None) -> ContextManager[None]:
        """Autocast on or off for this device, as `with torch.autocast(...)` would set it."""
        if self.name == "cuda-emulated":
            return _autocast_state(self.autocast_type, enabled, dtype)
        if enabled:
            return torch.autocast(self.autocast_type, dtype=dtype)
        return torch.autocast(self.autocast_type, enabled=False)


@dataclass(frozen=True)
class DeviceChoice:
    """The resolved `--device`, or the reason it cannot be used."""

    device: Optional[Device]
    error: Optional[str] = None


def resolve_device(choice: str) -> DeviceChoice:
    """`auto`: real CUDA when present, else CPU float16 autocast (the issue's rule)."""
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    if choice == "cpu":
        return DeviceChoice(CPU)
    if choice == "cuda":
        if not torch.cuda.is_available():
            return DeviceChoice(None, "CUDA is not available here; use --device cuda-emulated or --device cpu")
        return DeviceChoice(CUDA)
    if choice == "cuda-emulated":
        return DeviceChoice(CUDA_EMULATED)
    return DeviceChoice(None, f"unknown device {choice!r}; choose one of {', '.join(DEVICE_CHOICES)}")


def device_for(region: Optional[RegionInfo], choice: str) -> Device:
    """The device a target runs on: `choice`, or with `auto` the region's own device.

    A CUDA region runs on CUDA when there is one, else under the emulated CUDA
    policy (not CPU's, which keeps pow/log/exp in float16 and would report
    failures CUDA does not have). A CPU region, or one whose device is not a
    literal, runs as `auto` always did: CUDA when present, else CPU.
    """
    if choice != "auto":
        device = resolve_device(choice).device
        assert device is not None, "run_verify rejects unusable choices before any target runs"
        return device
    region_device = (region.device or "").split(":", 1)[0] if region is not None else ""
    if region_device == "cuda":
        return CUDA if torch.cuda.is_available() else CUDA_EMULATED
    if region_device == "cpu":
        return CPU
    return CUDA if torch.cuda.is_available() else CPU


# What the CUDA emulation cannot run on a CPU build (CUDA internals, CPU kernels without Half): not a measurement.
EMULATION_LIMITS = ("not linked with support for cuda", "from the 'CUDA' backend", "_cpu\" not implemented for 'Half'")


def emulation_limit(device: Device, error: Optional[str]) -> bool:
    """Whether `error` is the emulation's own limit rather than the computation's failure."""
    return device.emulated and error is not None and any(text in error for text in EMULATION_LIMITS)


def to_host(tensor: torch.Tensor) -> torch.Tensor:
    """A plain CPU tensor with the same values, whatever device semantics made it."""
    if isinstance(tensor, EmulatedCudaTensor):
        return tensor.elem
    return tensor.detach().cpu()


@contextlib.contextmanager
def _autocast_state(device_type: str, enabled: bool, dtype: Optional[torch.dtype]) -> Iterator[None]:
    """What `torch.autocast.__enter__/__exit__` do, for a device torch thinks is absent."""
    prev_enabled = torch.is_autocast_enabled(device_type)
    prev_dtype = torch.get_autocast_dtype(device_type)
    torch.set_autocast_enabled(device_type, enabled)
    if dtype is not None:
        torch.set_autocast_dtype(device_type, dtype)
    torch.autocast_increment_nesting()
    try:
        yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled(device_type, prev_enabled)
        torch.set_autocast_dtype(device_type, prev_dtype)


class EmulatedCudaTensor(torch.Tensor):
    """A CPU tensor dressed as `cuda:0` so CUDA autocast's kernels see it."""

    elem: torch.Tensor
    __slots__ = ("elem",)

    @staticmethod
    def __new__(cls, elem: torch.Tensor) -> "EmulatedCudaTensor":
        wrapper = torch.Tensor._make_wrapper_subclass(  # type: ignore[attr-defined]
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(),
            dtype=elem.dtype, device=torch.device("cuda", 0), requires_grad=False,
        )
        wrapper.elem = elem
        return wrapper

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"EmulatedCudaTensor({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        args = tree_map(_unwrap, args)
        kwargs = tree_map(_unwrap, kwargs or {})
        if func in _HALF_TO_FLOAT and args[2]:
            args = (args[0].float(), args[1], False)
        return tree_map(_wrap, func(*args, **kwargs))


_HALF_TO_FLOAT = (torch.ops.aten._softmax.default, torch.ops.aten._log_softmax.default)


def _unwrap(value: Any) -> Any:
    if isinstance(value, EmulatedCudaTensor):
        return value.elem
    if isinstance(value, torch.device) and value.type == "cuda":
        return torch.device("cpu")
    return value


def _wrap(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and not isinstance(value, EmulatedCudaTensor):
        return EmulatedCudaTensor(value)
    return value


def _is_cuda(device: Any) -> bool:
    if isinstance(device, str):
        return device.startswith("cuda")
    return isinstance(device, torch.device) and device.type == "cuda"


class _EmulationMode(TorchFunctionMode):
    """Routes the two things the dispatcher cannot: indexing and CUDA factories."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if func is torch.Tensor.__getitem__ and isinstance(args[0], EmulatedCudaTensor):
            return _getitem(args[0], args[1])
        if _is_cuda(kwargs.get("device")):
            return _wrap(func(*args, **dict(kwargs, device="cpu")))
        return func(*args, **kwargs)


def _getitem(tensor: torch.Tensor, index: Any) -> torch.Tensor:
    """Basic indexing (ints, slices, None, Ellipsis, one tensor) as dispatcher ops."""
    items = index if isinstance(index, tuple) else (index,)
    consumed = sum(1 for item in items if item is not None and item is not Ellipsis)
    out, dim = tensor, 0
    for item in items:
        if item is Ellipsis:
            dim += tensor.dim() - consumed
        elif item is None:
            out, dim = out.unsqueeze(dim), dim + 1
        elif isinstance(item, bool):
            raise NotImplementedError("boolean scalar indexing is not emulated")
        elif isinstance(item, int):
            out = out.select(dim, item)
        elif isinstance(item, slice):
            step = 1 if item.step is None else item.step
            out, dim = torch.ops.aten.slice.Tensor(out, dim, item.start, item.stop, step), dim + 1
        elif isinstance(item, torch.Tensor) and len(items) == 1:
            out = torch.ops.aten.index.Tensor(out, [item])
        else:
            raise NotImplementedError(f"indexing with {type(item).__name__} is not emulated")
    return out


@contextlib.contextmanager
def _emulation_session() -> Iterator[None]:
    with torch.no_grad(), _EmulationMode():
        yield


_PROMOTED = "/".join(policies.promoted_ops(policies.CUDA))
CPU = Device(
    "cpu", "cpu",
    f"CPU float16 autocast: CPU keeps {_PROMOTED} in float16, so it shows more failures than CUDA would",
    True, lambda t: t, contextlib.nullcontext, policies.CPU,
)
CUDA = Device(
    "cuda", "cuda", "CUDA float16 autocast on a real GPU",
    True, lambda t: t.to("cuda"), contextlib.nullcontext, policies.CUDA,
)
CUDA_EMULATED = Device(
    "cuda-emulated", "cuda",
    f"CUDA autocast's dtype policy ({_PROMOTED} in float32) emulated on CPU (forward only: gradients not measured)",
    False, EmulatedCudaTensor, _emulation_session, policies.CUDA,
)
