"""Synthesize the tensors a plan needs: head data, and the float64 reference.

Parameters reach the computation the way real code makes them: as the output
of an `nn.Linear` inside the autocast region (so float16), then through the
argument's own transform (`exp`, `sigmoid`, ...). The synthesiser picks a
target for each parameter from the recipe, inverts the transform to get the
head, and feeds the head to an identity Linear at run time. The reference is
the same computation in float64 on the heads rounded to the autocast dtype,
i.e. on the same parameter values the run sees.

Values go through a Linear too when their support is unbounded and
continuous (a float32 value would promote the whole computation to float32).
Values on bounded or discrete supports stay float32/long data: rounding them
to float16 can put them on the support's edge, which no fix of the
computation can repair, so it would blame the fix for the generator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Tuple, Union

import torch

from amplint.verify.chains import apply_chain, invert_chain
from amplint.verify.recipes import Recipe, constraint_kind, generic_sampler, probabilities, with_tails
from amplint.verify.resolve import DistPlan, SitePlan, Unverifiable, arg_constraints_of
from amplint.transforms import Chain

Shape = Tuple[int, ...]


@dataclass(frozen=True)
class Head:
    """One synthesized tensor input: the data fed to its Linear (or used as is)."""

    key: str  # where it goes, e.g. "0.component_distribution.scale" or "value"
    data: torch.Tensor  # float32 (long for integer values)
    through_linear: bool
    chain: Chain  # the steps applied to it at run time (casts only, for a value used as data)


@dataclass
class Synthesis:
    """All heads of one computation, and the float64 reference output."""

    heads: Dict[str, Head] = field(default_factory=dict)
    reference: Union[torch.Tensor, str, None] = None  # a tensor, or why the reference failed


def dtype_limit(dtype: torch.dtype) -> float:
    """A Linear output in `dtype` cannot exceed this; targets are clamped to it."""
    return 0.9 * float(torch.finfo(dtype).max)


def synthesize(plan: SitePlan, recipe: Recipe, batch: int, seed: int,
               low: torch.dtype) -> Union[Synthesis, Unverifiable]:
    """Draw every input of `plan` under `recipe`, reproducibly, without touching the caller's RNG."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            return _synthesize(plan, recipe, batch, low)
        except _CannotSynthesize as exc:
            return Unverifiable(str(exc))


class _CannotSynthesize(Exception):
    pass


def _synthesize(plan: SitePlan, recipe: Recipe, batch: int, low: torch.dtype) -> Synthesis:
    out = Synthesis()
    refs = [_dist(dist, str(i), (batch,), recipe.event_size, recipe, low, out.heads)
            for i, dist in enumerate(plan.dists)]
    value64 = None
    if plan.value is not None:
        value64 = _value(plan, refs[0], recipe, low, out.heads)
    try:
        out.reference = reference_output(plan.method, refs, value64)
    except Exception as exc:  # the reference is ours; its failure is reported, not raised
        out.reference = f"{type(exc).__name__}: {exc}"
    return out


def reference_output(method: str, dists: List[torch.distributions.Distribution],
                     value: Union[torch.Tensor, None]) -> torch.Tensor:
    if method == "kl_divergence":
        return torch.distributions.kl_divergence(dists[0], dists[1])
    if method == "entropy":
        return dists[0].entropy()
    return getattr(dists[0], method)(value)


def _component_shapes(plan: DistPlan, batch_shape: Shape, recipe: Recipe) -> Dict[str, Tuple[Shape, int]]:
    """Batch shape and event size each component distribution is built with."""
    names = {klass.__name__ for klass in plan.cls.__mro__}
    literals = dict(plan.literals)
    shapes: Dict[str, Tuple[Shape, int]] = {}
    for name, _ in plan.components:
        if "Independent" in names and name == "base_distribution":
            ndims = int(literals.get("reinterpreted_batch_ndims", 1))  # type: ignore[call-overload]
            shapes[name] = (batch_shape + (recipe.independent_size,) * ndims, recipe.event_size)
        elif "MixtureSameFamily" in names and name == "mixture_distribution":
            shapes[name] = (batch_shape, recipe.mixture_size)
        elif "MixtureSameFamily" in names and name == "component_distribution":
            shapes[name] = (batch_shape + (recipe.mixture_size,), recipe.event_size)
        else:
            shapes[name] = (batch_shape, recipe.event_size)
    return shapes


def _dist(plan: DistPlan, key: str, batch_shape: Shape, event_size: int, recipe: Recipe,
          low: torch.dtype, heads: Dict[str, Head]) -> torch.distributions.Distribution:
    """Draw this constructor's heads into `heads` and return its float64 reference distribution."""
    kwargs: Dict[str, object] = dict(plan.literals)
    shapes = _component_shapes(plan, batch_shape, recipe)
    for name, component in plan.components:
        sub_shape, sub_event = shapes[name]
        kwargs[name] = _dist(component, f"{key}.{name}", sub_shape, sub_event, recipe, low, heads)
    constraints = arg_constraints_of(plan.cls)
    order = list(constraints)
    known: Dict[str, object] = dict(plan.literals)
    for arg in sorted(plan.tensors, key=lambda a: order.index(a.param) if a.param in order else len(order)):
        constraint = constraints[arg.param]
        kind, event_dim = constraint_kind(constraint)
        sampler = recipe.params.get(arg.param) or generic_sampler(arg.param, constraint)
        if sampler is None:
            raise _CannotSynthesize(
                f"no input generator for {plan.cls.__name__}.{arg.param} (constraint {constraint})")
        target = sampler(batch_shape + (event_size,) * event_dim, known)
        known[arg.param] = target
        through_linear = kind != "discrete"
        head = _head(f"{key}.{arg.param}", arg.chain, invert_chain(arg.chain, target), through_linear, low, heads)
        kwargs[arg.param] = apply_chain(arg.chain, head, casts=False)
    kwargs["validate_args"] = False  # the reference must not reject float16-rounded simplexes
    try:
        return plan.cls(**kwargs)
    except Exception as exc:
        raise _CannotSynthesize(f"the float64 reference {plan.cls.__name__} could not be built: {exc}") from exc


def _head(key: str, chain: Chain, head64: torch.Tensor, through_linear: bool, low: torch.dtype,
          heads: Dict[str, Head]) -> torch.Tensor:
    """Record the head data; return it as the run will see it (rounded by the low-precision Linear)."""
    if through_linear:
        limit = dtype_limit(low)
        head64 = head64.clamp(-limit, limit)
    data = head64.float() if head64.is_floating_point() else head64
    heads[key] = Head(key, data, through_linear, chain)
    return data.to(low).double() if through_linear else data.double()


def _value(plan: SitePlan, ref: torch.distributions.Distribution, recipe: Recipe, low: torch.dtype,
           heads: Dict[str, Head]) -> torch.Tensor:
    assert plan.value is not None
    try:
        if plan.method == "icdf":
            target, kind = probabilities(ref), "unit"
        else:
            target = (recipe.value or with_tails)(ref)
            kind, _ = constraint_kind(ref.support)
    except NotImplementedError as exc:
        raise _CannotSynthesize(f"cannot draw a value from {type(ref).__name__}: {exc}") from exc
    chain = plan.value.chain
    if not target.is_floating_point():  # a long index (Categorical): data, no transform
        heads["value"] = Head("value", target, False, _casts_only(chain))
        return target
    if kind not in ("real", "positive", "above"):  # bounded or discrete support: float32 data
        return _head("value", _casts_only(chain), target, False, low, heads)
    head = _head("value", chain, invert_chain(chain, target), True, low, heads)
    return apply_chain(chain, head, casts=False)


def _casts_only(chain: Chain) -> Chain:
    return Chain(tuple(step for step in chain.steps if step.kind == "cast"), chain.head)
