"""Run a transform chain forward (on any device) and backward (to choose head values)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from amplint.transforms import Chain

WIDE = {"float32": torch.float32, "float64": torch.float64}


def apply_chain(chain: Chain, head: torch.Tensor, casts: bool = True) -> torch.Tensor:
    """`head` through the chain's steps, innermost first; `casts=False` keeps float64 references float64."""
    out = head
    for step in reversed(chain.steps):
        if step.kind == "cast":
            out = out.to(WIDE[step.dtype]) if casts else out
        elif step.kind == "exp":
            out = torch.exp(out)
        elif step.kind == "sigmoid":
            out = torch.sigmoid(out)
        elif step.kind == "softplus":
            out = F.softplus(out)
        elif step.kind == "softmax":
            out = torch.softmax(out, step.dim)
        elif step.kind == "log_softmax":
            out = torch.log_softmax(out, step.dim)
        elif step.kind == "scale":
            out = out * step.constant
        elif step.kind == "shift":
            out = out + step.constant
        else:  # pragma: no cover - transforms.py only makes the kinds above
            raise ValueError(f"unknown step {step.kind}")
    return out


def invert_chain(chain: Chain, target: torch.Tensor) -> torch.Tensor:
    """A head whose chain output is `target` (clamped into the chain's range), in float64."""
    out = target.double()
    for step in chain.steps:
        if step.kind == "scale":
            out = out / step.constant
        elif step.kind == "shift":
            out = out - step.constant
        elif step.kind == "exp":
            out = torch.log(out.clamp_min(1e-300))
        elif step.kind == "sigmoid":
            out = torch.logit(out.clamp(1e-12, 1 - 1e-12))
        elif step.kind == "softplus":
            out = out.clamp_min(1e-12)
            out = out + torch.log(-torch.expm1(-out))
        elif step.kind == "softmax":
            out = torch.log(out.clamp_min(1e-300))
        # log_softmax and cast: the target itself is a valid head
    return out
