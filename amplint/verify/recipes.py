"""Inputs known to break float16 log_prob, and the generic fallback from constraints.

The recipes are the measured float16 failures (CPU float16 autocast, batch
65,536; see shared/reference/float16-log-prob-measurements.md): small scales
with a deviation, large deviations, concentrations of 1e4, a Poisson rate of
exp(12), an event sum over 256 dims. Classes without a recipe get inputs
from their own `arg_constraints` and `support`: real values spread with
outliers, positive scales in [1e-4, 1e-3], peaked simplexes, logits spread
over 30. Every sampler draws float64 from torch's global generator, which the
synthesiser seeds inside `torch.random.fork_rng`, so runs are reproducible and
leave the caller's RNG alone.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, Mapping, Optional, Tuple

import torch

if TYPE_CHECKING:
    from amplint.verify.resolve import DistPlan

Shape = Tuple[int, ...]
Known = Mapping[str, object]  # targets already drawn for this constructor, and its literals
ParamSampler = Callable[[Shape, Known], torch.Tensor]
ValueSampler = Callable[[torch.distributions.Distribution], torch.Tensor]


@dataclass(frozen=True)
class Recipe:
    """One input regime: parameter samplers by name, and how the value is chosen."""

    name: str
    params: Mapping[str, ParamSampler] = field(default_factory=dict)
    value: Optional[ValueSampler] = None  # None: a sample of the distribution with tails
    event_size: int = 8  # K of vector parameters (logits, Dirichlet, MVN)
    independent_size: int = 16  # D of each dimension Independent reinterprets
    mixture_size: int = 5  # K of MixtureSameFamily


def log_uniform(lo: float, hi: float) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        u = torch.rand(shape, dtype=torch.float64)
        return torch.exp(torch.log(torch.tensor(lo, dtype=torch.float64)) * (1 - u)
                         + torch.log(torch.tensor(hi, dtype=torch.float64)) * u)
    return draw


def uniform(lo: float, hi: float) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        return lo + (hi - lo) * torch.rand(shape, dtype=torch.float64)
    return draw


def spread(std: float, outlier_fraction: float = 0.01, outlier_factor: float = 30.0) -> ParamSampler:
    """Real values N(0, std), with a fraction pushed `outlier_factor` times further out."""
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        x = std * torch.randn(shape, dtype=torch.float64)
        outliers = torch.rand(shape, dtype=torch.float64) < outlier_fraction
        return torch.where(outliers, x * outlier_factor, x)
    return draw


def peaked_simplex(width: float = 30.0) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        return torch.softmax(uniform(-width / 2, width / 2)(shape, known), -1)
    return draw


def peaked_unit(width: float = 30.0) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        return torch.sigmoid(uniform(-width / 2, width / 2)(shape, known))
    return draw


def lower_cholesky(lo: float = 0.01, hi: float = 1.0) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        diag = log_uniform(lo, hi)(shape[:-1], known)
        off = torch.tril(0.1 * torch.randn(shape, dtype=torch.float64), -1)
        return off + torch.diag_embed(diag)
    return draw


def positive_definite(lo: float = 0.01, hi: float = 1.0) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        tril = lower_cholesky(lo, hi)(shape, known)
        return tril @ tril.transpose(-1, -2)
    return draw


def small_integers(hi: int = 20) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        return torch.randint(1, hi + 1, shape).double()
    return draw


def gamma_rate(mean_lo: float, mean_hi: float) -> ParamSampler:
    """rate = concentration / mean, so the mean stays in a sensible range."""
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        concentration = known.get("concentration", 1.0)
        return torch.as_tensor(concentration, dtype=torch.float64) / uniform(mean_lo, mean_hi)(shape, known)
    return draw


def uniform_high(width_lo: float, width_hi: float) -> ParamSampler:
    def draw(shape: Shape, known: Known) -> torch.Tensor:
        low = torch.as_tensor(known.get("low", 0.0), dtype=torch.float64)
        return low + log_uniform(width_lo, width_hi)(shape, known)
    return draw


# --- values --------------------------------------------------------------------------------------

def _rows(x: torch.Tensor, fraction: float) -> torch.Tensor:
    """A mask over the batch dimension, broadcast over the rest."""
    mask = torch.rand(x.shape[:1], dtype=torch.float64) < fraction
    return mask.reshape(mask.shape + (1,) * (x.dim() - 1))


def sample_plus(std: float) -> ValueSampler:
    """A sample moved by N(0, std): e.g. 0.01 away from a mean whose scale is 1e-4."""
    def draw(dist: torch.distributions.Distribution) -> torch.Tensor:
        x = dist.sample()
        return x + std * torch.randn(x.shape, dtype=torch.float64)
    return draw


def sample_times_lognormal(std: float) -> ValueSampler:
    def draw(dist: torch.distributions.Distribution) -> torch.Tensor:
        x = dist.sample()
        return x * torch.exp(std * torch.randn(x.shape, dtype=torch.float64))
    return draw


def mean_plus_band(lo: float, hi: float, standardized: bool = False) -> ValueSampler:
    """mean ± U(lo, hi), in absolute units or in standard deviations."""
    def draw(dist: torch.distributions.Distribution) -> torch.Tensor:
        mean = dist.mean
        sign = torch.where(torch.rand(mean.shape, dtype=torch.float64) < 0.5, -1.0, 1.0)
        offset = sign * (lo + (hi - lo) * torch.rand(mean.shape, dtype=torch.float64))
        return mean + offset * (dist.stddev if standardized else 1.0)
    return draw


def with_tails(dist: torch.distributions.Distribution) -> torch.Tensor:
    """A sample of `dist`; for continuous unbounded supports, 10% of rows pushed into the tails."""
    x = dist.sample()
    kind, _ = constraint_kind(dist.support)
    if kind == "real":
        try:
            mean = dist.mean
        except NotImplementedError:
            mean = torch.zeros_like(x)
        mean = torch.where(torch.isfinite(mean), mean, torch.zeros_like(mean))
        stretch = 3.0 + 7.0 * torch.rand(x.shape, dtype=torch.float64)
        return torch.where(_rows(x, 0.1), mean + (x - mean) * stretch, x)
    if kind == "positive":
        return torch.where(_rows(x, 0.1), x * torch.exp(2.0 * torch.randn(x.shape, dtype=torch.float64)), x)
    return x


def probabilities(dist: torch.distributions.Distribution) -> torch.Tensor:
    """icdf inputs: uniform in (0, 1), 10% of rows within 1e-6 of either end."""
    shape = dist.batch_shape + dist.event_shape
    u = torch.rand(shape, dtype=torch.float64)
    edge = torch.where(torch.rand(shape, dtype=torch.float64) < 0.5, 1e-6, 1 - 1e-6)
    return torch.where(_rows(u, 0.1), edge, u)


# --- constraints -----------------------------------------------------------------------------------

def constraint_kind(constraint: object) -> Tuple[str, int]:
    """A coarse kind for a torch constraint, and its event_dim, without private imports."""
    event_dim = int(getattr(constraint, "event_dim", 0))
    base = constraint
    while hasattr(base, "base_constraint"):  # independent(...), MixtureSameFamilyConstraint(...)
        base = base.base_constraint  # type: ignore[attr-defined]
    name = type(base).__name__
    if getattr(base, "is_discrete", False):
        return "discrete", event_dim
    if name == "_Real":
        return "real", event_dim
    try:  # a support built from parameters (Uniform's) has tensor bounds: no kind of its own
        if name in ("_GreaterThan", "_GreaterThanEq"):
            return ("positive" if float(base.lower_bound) == 0.0 else "above"), event_dim  # type: ignore[attr-defined]
        if name in ("_Interval", "_HalfOpenInterval"):
            lo, hi = float(base.lower_bound), float(base.upper_bound)  # type: ignore[attr-defined]
            return ("unit" if (lo, hi) == (0.0, 1.0) else "interval"), event_dim
    except (TypeError, ValueError, RuntimeError):
        return "other", event_dim
    return {"_Simplex": "simplex", "_LowerCholesky": "lower_cholesky",
            "_PositiveDefinite": "positive_definite"}.get(name, "other"), event_dim


SCALE_WORDS = ("scale", "std", "sigma", "temperature")


def generic_sampler(param: str, constraint: object) -> Optional[ParamSampler]:
    """The issue's rules: real spread, small positive scales, peaked simplex, logits over 30."""
    if param == "logits":
        return uniform(-15.0, 15.0)
    kind, _ = constraint_kind(constraint)
    if kind == "real":
        return spread(1.0)
    if kind == "positive":
        if any(word in param for word in SCALE_WORDS):
            return log_uniform(1e-4, 1e-3)
        if param.startswith("concentration"):
            return log_uniform(1.0, 1e4)
        if param == "df":
            return uniform(2.0, 10.0)
        return log_uniform(1e-3, 1e3)
    if kind == "above":
        lower = float(constraint.lower_bound)  # type: ignore[attr-defined]
        return lambda shape, known: lower + log_uniform(1e-3, 1e3)(shape, known)
    if kind == "unit":
        return peaked_unit()
    if kind == "interval":
        return uniform(float(constraint.lower_bound), float(constraint.upper_bound))  # type: ignore[attr-defined]
    if kind == "simplex":
        return peaked_simplex()
    if kind == "lower_cholesky":
        return lower_cholesky()
    if kind == "positive_definite":
        return positive_definite()
    if kind == "discrete":
        return small_integers()
    return None


# --- the table ------------------------------------------------------------------------------------

SMALL_SCALE = log_uniform(1e-4, 1e-3)
LOC = spread(1.0, 0.0)

RECIPES: Dict[str, Tuple[Recipe, ...]] = {
    "Normal": (
        Recipe("scale in [1e-4, 1e-3], value - loc ~ N(0, 0.01)",
               {"loc": LOC, "scale": SMALL_SCALE}, sample_plus(0.01)),
        Recipe("scale in [0.5, 2], |value - loc| in [100, 400]",
               {"loc": LOC, "scale": uniform(0.5, 2.0)}, mean_plus_band(100.0, 400.0)),
    ),
    "LogNormal": (
        Recipe("scale in [1e-4, 1e-3], log value - loc ~ N(0, 0.01)",
               {"loc": LOC, "scale": SMALL_SCALE}, sample_times_lognormal(0.01)),
    ),
    "Laplace": (
        Recipe("scale in [1e-4, 1e-3], value - loc ~ N(0, 10)", {"loc": LOC, "scale": SMALL_SCALE}, sample_plus(10.0)),
    ),
    "StudentT": (
        Recipe("scale in [1e-3, 1e-2], df in [2, 10], value - loc ~ N(0, 5)",
               {"loc": LOC, "scale": log_uniform(1e-3, 1e-2), "df": uniform(2.0, 10.0)}, sample_plus(5.0)),
    ),
    "Independent": (
        Recipe("256 dims, scale in [0.05, 1], |value - loc| / scale in [20, 30]: the event sum overflows",
               {"loc": LOC, "scale": uniform(0.05, 1.0)}, mean_plus_band(20.0, 30.0, standardized=True),
               independent_size=256),
        Recipe("16 dims, scale in [1e-4, 1e-3], value - loc ~ N(0, 0.01)",
               {"loc": LOC, "scale": SMALL_SCALE}, sample_plus(0.01)),
    ),
    "MixtureSameFamily": (
        Recipe("5 components, scale in [1e-4, 1e-3], value - loc_k ~ N(0, 0.01)",
               {"logits": spread(2.0, 0.0), "loc": LOC, "scale": SMALL_SCALE}, sample_plus(0.01)),
    ),
    "Beta": (
        Recipe("concentrations in [1, 1e4]", {"concentration1": log_uniform(1.0, 1e4),
                                              "concentration0": log_uniform(1.0, 1e4)}),
    ),
    "Gamma": (
        Recipe("concentration in [1, 1e4], mean in [0.5, 2]",
               {"concentration": log_uniform(1.0, 1e4), "rate": gamma_rate(0.5, 2.0)}),
    ),
    "Dirichlet": (
        Recipe("20 categories, concentration in [1, 1e4]", {"concentration": log_uniform(1.0, 1e4)}, event_size=20),
    ),
    "Poisson": (
        Recipe("rate in [1, 1e5] (e.g. exp(head) with head up to 11.5)", {"rate": log_uniform(1.0, 1e5)}),
    ),
    "Categorical": (
        Recipe("100 categories, logits spread over 30, peaked probs", event_size=100),
    ),
    "OneHotCategorical": (
        Recipe("100 categories, logits spread over 30, peaked probs", event_size=100),
    ),
    "Bernoulli": (
        Recipe("logits in [-15, 15], peaked probs"),
    ),
    "MultivariateNormal": (
        Recipe("8 dims, scale_tril diagonal in [0.01, 1]", {"loc": LOC}),
    ),
    "Uniform": (
        Recipe("low ~ N(0, 1), high - low in [1e-3, 1]", {"low": LOC, "high": uniform_high(1e-3, 1.0)}),
    ),
}
GENERIC = Recipe("generic: inputs from arg_constraints and support")


def recipes_for(cls: type) -> Tuple[Recipe, ...]:
    """The recipes of the nearest class in `cls`'s MRO that has some (pyro subclasses included)."""
    for klass in cls.__mro__:
        if klass.__module__.startswith(("torch.distributions", "pyro.distributions")) and klass.__name__ in RECIPES:
            return RECIPES[klass.__name__]
    return (GENERIC,)


def recipes_for_plan(plan: "DistPlan") -> Tuple[Recipe, ...]:
    """A wrapper's recipes (`Independent`, `MixtureSameFamily`) where it wraps a Normal, as they are written
    for (`loc`, `scale`, a value from the mean); else those of its innermost component, whose support and
    moments the wrapper's value recipe would get wrong (a Cauchy has no mean, a Gamma no negative values)."""
    leaf = plan
    while leaf.components:
        leaf = leaf.components[-1][1]
    if leaf is plan or any(klass.__name__ == "Normal" for klass in leaf.cls.__mro__):
        return recipes_for(plan.cls)
    return recipes_for(leaf.cls)
