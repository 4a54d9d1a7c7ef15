"""AMP002: autocast is disabled around a probability computation, but its float16 inputs are not cast."""
from __future__ import annotations

from typing import TYPE_CHECKING, Tuple

from amplint.facts.sites import DISTRIBUTION
from amplint.rulebase import CAST, DISABLE, DISABLED_REGION, Code, Diagnosis, Invalid, Rule, listing

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import Site


def disabled_with_float16_inputs(site: "Site") -> bool:
    """The site's own region disables autocast, and an uncast input was made in a float16 region before."""
    assert site.state is not None
    return site.kind == DISTRIBUTION and not site.state.spec.enabled and bool(site.tainted)


def message(diagnosis: Diagnosis, code: Code) -> str:
    site = diagnosis.site
    inputs = listing([node for node, _ in site.tainted], code)
    made = min(line for _, line in site.tainted)
    return (
        f"`{site.label}` runs with autocast disabled (line {diagnosis.region.line}), but its inputs "
        f"{inputs} were made in the float16 region at line {made} and are not cast to float32"
    )


def fix_strategies(diagnosis: Diagnosis) -> Tuple[str, ...]:
    """Casting fixes it under either strategy: the site already sits in a disabled region (fix C only casts)."""
    site = diagnosis.site
    if not site.constructor_visible or not site.uncast:
        return ()
    return (CAST, DISABLE)


RULE = Rule(
    code="AMP002",
    name="disabled-autocast-without-cast",
    summary="A probability computation sits in `autocast(enabled=False)`, but its inputs were made in a "
    "float16 region of the same function and are not cast.",
    what_it_does=(
        "Finds probability computations in a disabled autocast region (the fix many guides recommend) whose "
        "uncast tensor inputs were assigned inside an enclosing or earlier enabled float16 region of the same "
        "function."
    ),
    why_bad=(
        "Disabling autocast changes which dtype new ops are cast to; it does not convert tensors that "
        "already exist. Tensors made under autocast stay float16, and ops on them run in float16. Measured "
        "on torch 2.13 with CPU float16 autocast (docs/measurements.md): `Normal` with scales in [1e-4, 1e-3] "
        "and 65,536 rows gave 15,107 `-inf` and 378 NaN both with and without `enabled=False`, and 0 once the "
        "inputs were cast. Under CUDA's policy it can even add `-inf`: `pow` runs in float16 again once "
        "autocast stops promoting it (`Normal` with |x - loc| in [100, 400]: 0 under autocast, 31,584 `-inf` "
        "with `enabled=False` and no cast)."
    ),
    example="""
import torch
import torch.distributions as D

def loss(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        with torch.autocast("cuda", enabled=False):
            return -D.Normal(mu, sigma).log_prob(x).mean()
""",
    fix="Cast the inputs inside the disabled region: `D.Normal(mu.float(), sigma.float()).log_prob(x.float())`. "
    "`amplint check --fix` does this with either strategy.",
    valid=(
        """
import torch
from torch.distributions import Normal
with torch.autocast("cuda"):
    mu, sigma = head(h)
    with torch.autocast("cuda", enabled=False):
        lp = Normal(mu.float(), sigma.float()).log_prob(x.float())
""",
        # Inputs made outside any float16 region.
        """
import torch
from torch.distributions import Normal
with torch.autocast("cuda", enabled=False):
    lp = Normal(mu, sigma).log_prob(x)
""",
    ),
    invalid=(
        Invalid(
            """
import torch
from torch.distributions import Normal
with torch.autocast("cuda"):
    mu, sigma = head(h)
    with torch.autocast("cuda", enabled=False):
        lp = Normal(mu, sigma).log_prob(x)
""",
            6,
            14,
        ),
    ),
    at_site=disabled_with_float16_inputs,
    message=message,
    fix_strategies=fix_strategies,
    wraps_statement=False,
    verify_recipe=DISABLED_REGION,
)
