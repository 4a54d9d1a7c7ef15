"""The input regimes truth is measured on: what a head's Linear gives in realistic training states.

The head is an `nn.Linear(2D, 2D)` with a random orthogonal weight and a small
bias, as a trained layer's are well conditioned; its input `x` is solved for so
that its float32 output follows the regime: the first D columns a location
(also read as logits), the last D a raw scale (what `exp`, `softplus` or
`sigmoid` turns into a standard deviation, or a log-variance). Under autocast
the Linear runs in float16 and rounds as a real head does. The targets are
float32 data, as a data loader gives them: `y` real values near the location,
`t` one-hot labels, `k` counts.

- `calm`: logits N(0, 1.5), raw scales in [-2, 2]: early training.
- `sharp`: logits in [-20, 20], raw scales in [-4, 4]: a confident classifier; a softmax or sigmoid of
  them holds probabilities float16 cannot (below 6.0e-8), `exp` of them overflows it (above 11.1).
- `small-scale`: raw scales in [-12, -5] (standard deviations down to 6e-6), targets 0.05 away.
- `large-scale`: location N(0, 5), raw scales in [3, 12] (up to 1.6e5), targets 30 away.
- `collapsed-scale`: raw scales in [-20, -12], targets 0.01 away: a scale at the bound real policies clamp
  a log-standard-deviation to (SAC's `LOG_STD_MIN = -20`), where `exp`, `softplus` and `sigmoid` give 2e-9,
  0 in float16.
- `exploded-scale`: location N(0, 5), raw scales in [12, 20], targets 30 away: the other end of the same
  range, a log-variance that has blown up.

Locations and logits reach ±20 in `sharp`; the last two regimes let raw scales reach ±20 too, so every
column of the head spans the range amplint's probes assume (`amplint.facts.probes.ENVELOPE`). They were
added after the first four, at the end of `REGIMES`, so the first four draw what they drew before.

Every draw comes from a `torch.Generator` seeded with the run's seed and the
regime's position, so a run's inputs are fixed by its seed and shared by all
its expressions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Tuple

import torch

ROWS = 256
Sampler = Callable[[Tuple[int, ...], torch.Generator], torch.Tensor]


def _normal(std: float) -> Sampler:
    return lambda shape, g: std * torch.randn(shape, generator=g, dtype=torch.float64)


def _uniform(lo: float, hi: float) -> Sampler:
    return lambda shape, g: lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float64)


@dataclass(frozen=True)
class Regime:
    name: str
    loc: Sampler
    scale: Sampler
    target_noise: float  # the targets' distance from the location (standard deviation)


REGIMES = (
    Regime("calm", _normal(1.5), _uniform(-2.0, 2.0), 1.0),
    Regime("sharp", _uniform(-20.0, 20.0), _uniform(-4.0, 4.0), 3.0),
    Regime("small-scale", _normal(1.0), _uniform(-12.0, -5.0), 0.05),
    Regime("large-scale", _normal(5.0), _uniform(3.0, 12.0), 30.0),
    Regime("collapsed-scale", _normal(1.0), _uniform(-20.0, -12.0), 0.01),
    Regime("exploded-scale", _normal(5.0), _uniform(12.0, 20.0), 30.0),
)


@dataclass(frozen=True)
class Inputs:
    """One regime's float32 tensors: the head's input and weights, and the targets."""

    regime: str
    x: torch.Tensor       # (rows, 2D)
    weight: torch.Tensor  # (2D, 2D), orthogonal
    bias: torch.Tensor    # (2D,)
    y: torch.Tensor       # (rows, D) real targets
    t: torch.Tensor       # (rows, D) one-hot labels
    k: torch.Tensor       # (rows, D) counts


def make_inputs(regime: Regime, position: int, seed: int, width: int, rows: int = ROWS) -> Inputs:
    g = torch.Generator().manual_seed(seed * 1_000 + position)
    q, _ = torch.linalg.qr(torch.randn(2 * width, 2 * width, generator=g, dtype=torch.float64))
    bias = 0.1 * torch.randn(2 * width, generator=g, dtype=torch.float64)
    loc = regime.loc((rows, width), g)
    out = torch.cat([loc, regime.scale((rows, width), g)], dim=1)
    x = (out - bias) @ q  # out = x @ q.T + bias: what F.linear(x, q, bias) gives back
    y = loc + regime.target_noise * torch.randn(rows, width, generator=g, dtype=torch.float64)
    labels = torch.randint(0, width, (rows,), generator=g)
    t = torch.nn.functional.one_hot(labels, width)
    k = torch.floor(20.0 * torch.rand(rows, width, generator=g, dtype=torch.float64))
    return Inputs(regime.name, x.float(), q.float(), bias.float(), y.float(), t.float(), k.float())


def all_inputs(seed: int, width: int, rows: int = ROWS) -> Tuple[Inputs, ...]:
    return tuple(make_inputs(regime, i, seed, width, rows) for i, regime in enumerate(REGIMES))
