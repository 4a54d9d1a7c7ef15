"""The input regimes for a user's density: a sampler per role (`userroles.py`), two recipes, a few shapes.

Like verify's recipes for distributions (recipes.py), each recipe is a regime
known to break float16: small scales (whose squares vanish), and large
deviations (whose squares overflow). Probabilities are a softmax of logits
spread over 30, so many are below float16's smallest subnormal. A hand-written
density does not declare its shapes, so the child tries `SHAPES` in order and
keeps the first on which the float64 reference runs. Runs in the child
process: torch only, seeded by the caller.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Mapping, Tuple

import torch

from amplint.verify.recipes import log_uniform, peaked_simplex, peaked_unit, spread, uniform
from amplint.verify.userroles import (
    EXP_LOGITS, LOG_SCALE, LOG_VARIANCE, LOGITS, PROBABILITY, REAL, SCALE, VARIANCE,
)

Shape = Tuple[int, ...]
Sampler = Callable[[Shape], torch.Tensor]
SHAPES: Tuple[Shape, ...] = ((8,), (), (8, 8), (4, 4, 4))  # what follows the batch dimension
MAX_ELEMENTS = 1 << 21  # as the runner's cap: no input beyond 2,097,152 elements


@dataclass(frozen=True)
class UserRecipe:
    """One regime: a sampler for each role."""

    name: str
    samplers: Mapping[str, Sampler]


def _draw(sampler: Callable[[Shape, Mapping[str, object]], torch.Tensor]) -> Sampler:
    return lambda shape: sampler(shape, {})


def _log_of(sampler: Sampler) -> Sampler:
    return lambda shape: torch.log(sampler(shape))


def _probabilities(shape: Shape) -> torch.Tensor:
    """A peaked simplex over the last dimension (a peaked probability when there is none)."""
    return (peaked_simplex() if len(shape) > 1 else peaked_unit())(shape, {})


def _exp_logits(shape: Shape) -> torch.Tensor:
    return torch.exp(uniform(-15.0, 15.0)(shape, {}))


def _recipe(name: str, real: Sampler, scale: Sampler) -> UserRecipe:
    variance: Sampler = lambda shape: scale(shape) ** 2  # noqa: E731 - one expression, named for the table
    return UserRecipe(name, {
        REAL: real, SCALE: scale, LOG_SCALE: _log_of(scale), VARIANCE: variance, LOG_VARIANCE: _log_of(variance),
        PROBABILITY: _probabilities, LOGITS: _draw(uniform(-15.0, 15.0)), EXP_LOGITS: _exp_logits,
    })


RECIPES: Tuple[UserRecipe, ...] = (
    _recipe("scales in [1e-4, 1e-3] (variances their squares), real values ~ N(0, 1) with 1% 30x outliers, "
            "probabilities a softmax of logits spread over 30", _draw(spread(1.0)), _draw(log_uniform(1e-4, 1e-3))),
    _recipe("scales in [0.5, 2], real values ~ N(0, 100) with 1% 30x outliers, probabilities a softmax of "
            "logits spread over 30", _draw(spread(100.0)), _draw(uniform(0.5, 2.0))),
)


def rows_for(shape: Shape, batch: int) -> int:
    """Rows so that no input exceeds MAX_ELEMENTS."""
    return max(1, min(batch, MAX_ELEMENTS // max(1, math.prod(shape))))


def draw(recipe: UserRecipe, roles: Mapping[str, str], shape: Shape, batch: int, seed: int) -> Dict[str, torch.Tensor]:
    """float64 targets for each input (by key), reproducibly, without touching the caller's generator."""
    full = (rows_for(shape, batch),) + shape
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return {key: recipe.samplers.get(role, recipe.samplers[REAL])(full) for key, role in sorted(roles.items())}
