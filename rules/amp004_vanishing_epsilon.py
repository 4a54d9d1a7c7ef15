"""AMP004: an epsilon that float16 rounds to zero guards probabilities under float16 autocast."""
from __future__ import annotations

from typing import TYPE_CHECKING, Tuple

from amplint.facts.siteshape import EPSILON
from amplint.rulebase import Code, CAST, Diagnosis, Invalid, Rule, listing, region_phrase, uncast_under_float16

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import Site
    from amplint.facts.reach import Reach


def in_float16_region(site: "Site") -> bool:
    """A vanishing floor under its own enabled float16 region, reading a tensor not cast."""
    return uncast_under_float16(site, EPSILON)


def reached_from_float16(site: "Site", reach: "Reach") -> bool:
    """A vanishing floor, uncast, in a function entered from a float16 region (a call chain or the walk)."""
    return site.kind == EPSILON and bool(site.uncast)


def message(diagnosis: Diagnosis, code: Code) -> str:
    site = diagnosis.site
    floor = " ".join(code(site.call).split())
    return (
        f"the floor in `{floor}` rounds to 0 in float16 (smallest subnormal 6.0e-8), so it guards nothing: "
        f"{listing(site.uncast, code)} may be float16 under the {region_phrase(diagnosis)}"
    )


def fix_strategies(diagnosis: Diagnosis) -> Tuple[str, ...]:
    """Fix A casts the probabilities before the floor is added: the literal then keeps its float32 value."""
    return (CAST,) if diagnosis.site.uncast else ()


RULE = Rule(
    code="AMP004",
    name="float16-vanishing-epsilon",
    summary="A floor below float16's smallest subnormal (`p + 1e-10`, `p.clamp(min=1e-12)`) guards "
    "probabilities that may be float16 in a float16 autocast region.",
    what_it_does=(
        "Finds a positive literal below 2**-24 (about 6.0e-8) used as a floor for probabilities: "
        "`p + eps`, `eps + p`, `p.clamp(min=eps)`, `p.clip(eps)`, `p.clamp_min(eps)`, `torch.clamp(p, eps)` "
        "and `torch.maximum(p, torch.tensor(eps))`, where `eps` is a literal, a local or default argument "
        "bound to one, or a `self.` attribute set from one. `p` must hold probabilities (the shapes of "
        "AMP003) that are not cast to float32, in a float16 region or a function reached from one. It is "
        "reported at the literal. A literal between 6.0e-8 and float16's smallest normal (6.1e-5) survives "
        "as a subnormal and is not reported. It is reported on every device; where the region's policy computes the "
        "probabilities in float32 (CUDA runs a softmax in float32, not a sigmoid), the floor is kept there and "
        "the finding's risk is `low` (`--min-risk high` leaves it out)."
    ),
    why_bad=(
        "float16 cannot hold the literal: `torch.tensor(1e-10, dtype=torch.float16)` is 0, so `p + 1e-10` "
        "and `p.clamp(min=1e-12)` leave a zero probability at zero and `torch.log` returns `-inf`. Whenever "
        "`p` is float16 this holds on CUDA too: autocast promotes `log` to float32 there, but the addition or "
        "clamp before it runs in the input's dtype. Which probabilities are float16 depends on the device: on "
        "CUDA a softmax runs in float32 (so its floor survives), a sigmoid does not. Measured on torch 2.13 "
        "with CPU float16 autocast (tests/test_handwritten_numeric.py), on 1,024 x 16 logits in [-30, 30]: "
        "`torch.log(probs.clamp(min=1e-12))` gives 10,661 `-inf` of 16,384, and the entropy "
        "`-(p * torch.log(p + 1e-10)).sum(1)` is NaN in all 1,024 rows; on CUDA (an H200, docs/measurements.md) "
        "`torch.log(torch.sigmoid(x) + 1e-10)` still gives 3,437 `-inf` of 16,384. After the fix: 0."
    ),
    example="""
import torch
import torch.nn.functional as F

def entropy(head, x):
    with torch.autocast("cpu", dtype=torch.float16):
        probs = F.softmax(head(x), dim=1)
        return -(probs * torch.log(probs + 1e-10)).sum(1)
""",
    fix=(
        "`amplint check --fix` casts the probabilities before the floor (fix A): "
        "`torch.log(probs.float() + 1e-10)`; in float32 the literal keeps its value. Where `probs` is a local "
        "name bound to a softmax or sigmoid, it casts that softmax's input instead, so the probabilities are "
        "made in float32. Or choose a floor the dtype can hold: `p.clamp(min=torch.finfo(p.dtype).tiny)`."
    ),
    valid=(
        # Cast before the floor.
        """
import torch
import torch.nn.functional as F
with torch.autocast("cuda"):
    probs = F.softmax(head(x), dim=1)
    ent = -(probs * torch.log(probs.float() + 1e-10)).sum(1)
""",
        # A floor float16 can hold.
        """
import torch
with torch.autocast("cuda"):
    probs = head(x).sigmoid()
    ratio = target / probs.clamp(min=torch.finfo(probs.dtype).tiny)
""",
        # Not probabilities: a box size.
        """
import torch
with torch.autocast("cuda"):
    target = torch.log(head(x) / stride + 1e-8)
""",
    ),
    invalid=(
        Invalid(
            """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    probs = head(x).softmax(dim=1)
    ratio = target / probs.clamp(min=1e-12)
""",
            4,
            38,
        ),
        Invalid(
            """
import torch
def loss(logits, eps=1e-10):
    probs = logits.sigmoid()
    return probs + eps
with torch.autocast("cuda"):
    out = loss(head(x))
""",
            4,
            12,
        ),
    ),
    at_site=in_float16_region,
    when_reached=reached_from_float16,
    message=message,
    fix_strategies=fix_strategies,
)
