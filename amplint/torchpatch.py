"""Run-time hooks on torch's probability methods, shared by `amplint.guard` and `amplint trace`.

Both need the same three things: every `Distribution` method that computes a
probability wrapped (and unwrapped again, leaving torch as it was), the dtypes
a distribution really holds, and the autocast state of a device. Keeping them
here means the guard and the recorder see the same computations.

torch is imported inside the functions: importing this module stays torch-free.
"""
from __future__ import annotations

import functools
import importlib
import sys
import threading
from types import FrameType
from typing import Any, Callable, Dict, List, Optional, Tuple

METHODS = ("log_prob", "entropy", "cdf", "icdf")
KL_MODULES = ("torch.distributions", "torch.distributions.kl")
# (owner, attribute, original): what `unpatch` puts back, last first.
Saved = List[Tuple[Any, str, Any]]
HERE = __file__  # frames of this module are never the user's
Wrapper = Callable[[Callable[..., Any], str], Callable[..., Any]]


def distribution_classes() -> List[type]:
    """`Distribution` and every subclass defined so far."""
    import torch.distributions as td

    seen: List[type] = []
    pending = [td.Distribution]
    while pending:
        cls = pending.pop()
        if cls in seen:
            continue
        seen.append(cls)
        pending.extend(cls.__subclasses__())
    return seen


def outermost(original: Callable[..., Any], local: threading.local,
              on_result: Callable[[Any, Tuple[Any, ...], Dict[str, Any], FrameType], None]) -> Callable[..., Any]:
    """`original`, calling `on_result(result, args, kwargs, caller)` for the outermost call only.

    `MixtureSameFamily.log_prob` calls `Normal.log_prob` inside torch: the computation the user called is the
    outer one. The depth is per thread (`local.depth`); `on_result` runs before it goes back down, so what it
    computes itself is not seen as another call.
    """
    @functools.wraps(original)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        depth = getattr(local, "depth", 0)
        local.depth = depth + 1
        try:
            result = original(*args, **kwargs)
            if depth == 0:
                on_result(result, args, kwargs, sys._getframe(1))
        finally:
            local.depth = depth
        return result

    wrapped.__amplint_patch__ = True  # type: ignore[attr-defined]
    return wrapped


def patch_class(cls: type, wrap: Wrapper, saved: Saved) -> None:
    """Wrap the probability methods `cls` itself defines (inherited ones are wrapped on their class)."""
    for name in METHODS:
        original = cls.__dict__.get(name)
        if callable(original):
            saved.append((cls, name, original))
            setattr(cls, name, wrap(original, name))


def patch_probability(wrap: Wrapper, follow_new_classes: bool = False) -> Saved:
    """Wrap every distribution's probability methods and `kl_divergence`; returns what `unpatch` restores.

    `follow_new_classes` also wraps the subclasses defined afterwards (a
    project's own distributions, pyro's), through `__init_subclass__`: a
    script's classes do not exist yet when a recorder starts.
    """
    saved: Saved = []
    for cls in distribution_classes():
        patch_class(cls, wrap, saved)
    for module_name in KL_MODULES:
        module = importlib.import_module(module_name)
        original = module.__dict__.get("kl_divergence")
        if callable(original):
            saved.append((module, "kl_divergence", original))
            setattr(module, "kl_divergence", wrap(original, "kl_divergence"))
    if follow_new_classes:
        _follow_subclasses(wrap, saved)
    return saved


def _follow_subclasses(wrap: Wrapper, saved: Saved) -> None:
    import torch.distributions as td

    base = td.Distribution
    previous = base.__dict__.get("__init_subclass__")

    def init_subclass(cls: type, **kwargs: Any) -> None:
        super(base, cls).__init_subclass__(**kwargs)  # type: ignore[misc]
        patch_class(cls, wrap, saved)

    saved.append((base, "__init_subclass__", previous))
    base.__init_subclass__ = classmethod(init_subclass)  # type: ignore[assignment]


def unpatch(saved: Saved) -> None:
    """Put back what `patch_probability` replaced, last first (an attribute that was absent is deleted)."""
    while saved:
        owner, name, original = saved.pop()
        if original is None:
            try:
                delattr(owner, name)
            except AttributeError:
                pass
        else:
            setattr(owner, name, original)


def dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def distribution_dtypes(dist: Any, prefix: str = "") -> List[Tuple[str, str]]:
    """(name, dtype) of the tensors a distribution holds, through `base_dist` and other wrapped distributions.

    Declared parameters (`arg_constraints`) come first, then any other tensor
    attribute (a project's own distribution keeps its parameters where it
    likes). Lazy properties that were never computed are not triggered.
    """
    import torch

    out: List[Tuple[str, str]] = []
    seen: List[int] = []
    constraints = getattr(type(dist), "arg_constraints", {})
    declared = list(constraints) if isinstance(constraints, dict) else []
    attributes: Dict[str, Any] = vars(dist) if hasattr(dist, "__dict__") else {}
    for name in declared + [n for n in attributes if n not in declared]:
        value = attributes.get(name)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and id(value) not in seen:
            seen.append(id(value))
            out.append((prefix + name.lstrip("_"), dtype_name(value.dtype)))
    for name, value in attributes.items():
        if isinstance(value, torch.distributions.Distribution) and value is not dist:
            out.extend(distribution_dtypes(value, f"{prefix}{name.lstrip('_')}."))
    return out


def call_dtypes(method: str, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Tuple[Tuple[str, str], ...]:
    """The dtypes a probability call computes with: the distribution's (p's and q's for KL) and the value's."""
    import torch

    out: List[Tuple[str, str]] = []
    if method == "kl_divergence":
        for label, dist in zip(("p.", "q."), args):
            out.extend(distribution_dtypes(dist, label))
    elif args:
        out.extend(distribution_dtypes(args[0]))
        value = args[1] if len(args) > 1 else kwargs.get("value")
        if isinstance(value, torch.Tensor):
            out.append(("value", dtype_name(value.dtype)))
    return tuple(out)


def autocast_of(device_type: str) -> Optional[str]:
    """`"cpu float16"` while autocast is enabled on that device, else None."""
    import torch

    try:
        enabled = torch.is_autocast_enabled(device_type)
        dtype = torch.get_autocast_dtype(device_type)
    except (TypeError, RuntimeError):  # torch < 2.4: no per-device query
        if device_type == "cpu":
            enabled, dtype = torch.is_autocast_cpu_enabled(), torch.get_autocast_cpu_dtype()
        else:
            enabled, dtype = torch.is_autocast_enabled(), torch.get_autocast_gpu_dtype()
    return f"{device_type} {dtype_name(dtype)}" if enabled else None
