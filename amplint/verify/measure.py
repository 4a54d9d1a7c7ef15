"""Count what a version computed: non-finite values where the float64 reference is finite, and its error.

Shared by the runner (distributions, in verify's own process) and by the
child process that runs a slice of user code (`userrun.py`), so both report
the same numbers the same way. Torch only.
"""
from __future__ import annotations

from typing import List, Optional, Union

import torch

from amplint.verify.results import VersionResult


def grads_finite(out: torch.Tensor, leaves: List[torch.Tensor]) -> Optional[bool]:
    """Whether -out.mean() has finite gradients at the heads (the Linear outputs)."""
    if not leaves or not out.requires_grad:
        return None
    try:
        grads = torch.autograd.grad(-out.mean(), leaves, allow_unused=True)
    except RuntimeError:
        return False
    return all(grad is None or bool(torch.isfinite(grad).all()) for grad in grads)


def measure(out: torch.Tensor, reference: Union[torch.Tensor, str, None], grads: Optional[bool],
            dtype: Optional[str] = None) -> VersionResult:
    """Counts over the entries whose reference is finite (all of them when there is no usable reference).

    `dtype`: what to report when `out` was assembled from the version's outputs (a slice may return several).
    """
    values = out.detach().double()
    usable = isinstance(reference, torch.Tensor) and reference.shape == values.shape
    considered = torch.isfinite(reference) if usable else torch.ones_like(values, dtype=torch.bool)  # type: ignore
    both = considered & torch.isfinite(values)
    error = None
    if usable and bool(both.any()):
        error = float((values - reference)[both].abs().max())  # type: ignore[operator]
    return VersionResult(
        dtype=dtype or str(out.dtype).replace("torch.", ""),
        neg_inf=int(((values == float("-inf")) & considered).sum()),
        pos_inf=int(((values == float("inf")) & considered).sum()),
        nan=int((torch.isnan(values) & considered).sum()),
        max_abs_error=error,
        grads_finite=grads,
    )
