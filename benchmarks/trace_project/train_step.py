"""One small real training step, timed from inside: what `benchmarks/trace_overhead.py` runs with and without the recorder.

An actor-critic MLP (two hidden layers of 256, a Gaussian policy head and a
value head) on a batch of 256 observations, under CPU float16 autocast:
forward, `Normal.log_prob`, `entropy`, a value loss, backward and an Adam
step. The script writes the median step time to the JSON file it is given, so
interpreter and torch start-up are not counted.
"""
import json
import statistics
import sys
import time

import torch
from torch import nn
from torch.distributions import Normal


class ActorCritic(nn.Module):
    def __init__(self, obs: int = 64, act: int = 8, hidden: int = 256) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.mu = nn.Linear(hidden, act)
        self.log_std = nn.Linear(hidden, act)
        self.value = nn.Linear(hidden, 1)

    def forward(self, obs: torch.Tensor):
        h = self.body(obs)
        scale = self.log_std(h).clamp(-5, 2).exp()
        return Normal(self.mu(h), scale, validate_args=False), self.value(h)


def step(model: ActorCritic, optim: torch.optim.Optimizer, obs, actions, advantages, returns) -> float:
    with torch.autocast("cpu", dtype=torch.float16):
        dist, value = model(obs)
        log_prob = dist.log_prob(actions).sum(-1)
        loss = -(log_prob * advantages).mean() - 0.01 * dist.entropy().mean()
        loss = loss + 0.5 * (value.squeeze(-1) - returns).pow(2).mean()
    optim.zero_grad()
    loss.backward()
    optim.step()
    return float(loss.detach())


def main(out: str, steps: int) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = ActorCritic()
    optim = torch.optim.Adam(model.parameters(), lr=1e-6)
    obs, actions = torch.randn(256, 64), torch.randn(256, 8)
    advantages, returns = torch.randn(256), torch.randn(256)
    times = []
    for index in range(steps + 5):
        start = time.perf_counter()
        step(model, optim, obs, actions, advantages, returns)
        if index >= 5:  # warm-up steps are not counted
            times.append(time.perf_counter() - start)
    with open(out, "w") as handle:
        json.dump({"median_s": statistics.median(times), "steps": steps}, handle)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200)
