"""`x.log_prob(v)` where `x` is an instance of a project class that wraps a distribution, as Stable-Baselines3 and
Dreamer write their policies' distributions.

The wrapper builds the torch distribution in one method and reads it in its own `log_prob`:
`dist = self.action_dist.proba_distribution(mean, log_std)` returns `self`, and `dist.log_prob(a)` runs
`self.distribution.log_prob(a)`. The call names no constructor, so it was an opaque site (risk unknown, never
fixable) and the walk never entered the wrapper: the computation the run does in float16 was not reported, and
`--fix` changed nothing. In project mode such a call is now also a call (`CallSummary.opaque`): where the value
flow knows the receiver may be a project class that is no distribution, the walk enters its method and reports
the `Normal.log_prob` it computes, built from the float16 Linear outputs, where fix A casts them. Where the
receiver is bound, where it is called, to a construction of the wrapper (`d = DiagGaussian(2)`), the call is
that method and no finding of its own; a receiver only the value flow knows (a method's return) stays one. A
project distribution subclass (`class TanhNormal(Distribution)`) is not entered: its call is the site.

Dreamer's `ContDist` is handed the distribution (`self._dist = dist` in `__init__`) and reads it in its own
`log_prob`: the attribute was opaque too. Where every store of the attribute is of a parameter its method never
rebinds, the attribute now holds what callers give those parameters (the walk's `DistArgument`s): the finding
names where they are built, and fix A casts each of them.

Each project runs under `amplint trace`; after `--fix` the run computes nothing in float16.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict

import pytest

from conftest import check_json, found_places, run_amplint, traced_comparison

DISTS = """\
import torch
from torch import nn
from torch.distributions import Categorical, Normal


class Distribution:
    def __init__(self):
        self.distribution = None


class DiagGaussian(Distribution):
    def __init__(self, action_dim):
        super().__init__()
        self.action_dim = action_dim

    def nets(self, latent_dim):
        return nn.Linear(latent_dim, self.action_dim), nn.Linear(latent_dim, self.action_dim)

    def proba_distribution(self, mean_actions, log_std):
        self.distribution = Normal(mean_actions, torch.sigmoid(log_std) * 1e-3 + 1e-4)
        return self

    def log_prob(self, actions):
        return self.distribution.log_prob(actions).sum(dim=1)


class CategoricalDist(Distribution):
    def __init__(self, action_dim):
        super().__init__()
        self.action_dim = action_dim

    def nets(self, latent_dim):
        return nn.Linear(latent_dim, self.action_dim), None

    def proba_distribution(self, logits, log_std=None):
        self.distribution = Categorical(logits=logits)
        return self

    def log_prob(self, actions):
        return self.distribution.log_prob(actions)


def make_distribution(kind, action_dim):
    return {"box": DiagGaussian, "discrete": CategoricalDist}[kind](action_dim)
"""
POLICY = """\
from torch import nn

from pkg.dists import make_distribution


class Policy(nn.Module):
    def __init__(self, kind="box"):
        super().__init__()
        self.action_dist = make_distribution(kind, 2)
        self.mean, self.log_std = self.action_dist.nets(8)

    def distribution(self, obs):
        log_std = self.log_std(obs) if self.log_std is not None else None
        return self.action_dist.proba_distribution(self.mean(obs), log_std)

    def evaluate(self, obs, actions):
        dist = self.distribution(obs)
        return dist.log_prob(actions)
"""
TRAIN = """\
import torch

from pkg.policy import Policy


def train(policy, obs, actions):
    with torch.autocast("cpu", dtype=torch.float16):
        return -policy.evaluate(obs, actions).mean()


torch.manual_seed(0)
print(train(Policy(), torch.randn(64, 8), torch.randn(64, 2)))
"""
# A project distribution: its `log_prob` is the site where it is called, as before.
TANH = """\
import torch
from torch import nn
from torch.distributions import Distribution, Normal


class TanhNormal(Distribution):
    arg_constraints = {}

    def __init__(self, mean, std):
        self.normal = Normal(mean, std)
        super().__init__(validate_args=False)

    def log_prob(self, value):
        return self.normal.log_prob(value)


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.mean, self.std = nn.Linear(8, 2), nn.Linear(8, 2)

    def forward(self, obs):
        return TanhNormal(self.mean(obs), torch.sigmoid(self.std(obs)) * 1e-3 + 1e-4)
"""
TANH_TRAIN = """\
import torch

from pkg.tanh import Head


def train(head, obs, actions):
    with torch.autocast("cpu", dtype=torch.float16):
        dist = head(obs)
        return -dist.log_prob(actions).mean()


print(train(Head(), torch.randn(64, 8), torch.randn(64, 2)))
"""
# Dreamer's `ContDist`: the wrapper is handed the distribution and keeps it on `self`.
TOOLS = """\
class ContDist:
    def __init__(self, dist=None):
        self._dist = dist

    def log_prob(self, x):
        return self._dist.log_prob(x)
"""
NETS = """\
import torch
from torch import distributions as torchd
from torch import nn

from pkg import tools


class MLP(nn.Module):
    def __init__(self, kind="normal"):
        super().__init__()
        self._kind = kind
        self.mean, self.std = nn.Linear(8, 2), nn.Linear(8, 2)

    def forward(self, features):
        return self.dist(self._kind, self.mean(features), self.std(features))

    def dist(self, kind, mean, std):
        if kind == "normal":
            return tools.ContDist(torchd.Normal(mean, torch.sigmoid(std) * 1e-3 + 1e-4))
        return tools.ContDist(torchd.Laplace(mean, torch.exp(std)))
"""
WORLD = """\
import torch
from torch import nn

from pkg.nets import MLP


class WorldModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"decoder": MLP(), "reward": MLP("laplace")})

    def loss(self, feat, data):
        with torch.autocast("cpu", dtype=torch.float16):
            total = 0
            for name, head in self.heads.items():
                pred = head(feat)
                total = total - pred.log_prob(data[name]).mean()
            return total


torch.manual_seed(0)
print(WorldModel().loss(torch.randn(64, 8), {"decoder": torch.randn(64, 2), "reward": torch.randn(64, 2)}))
"""
KEPT = ("pkg/tools.py", 6, 16, "AMP001")  # `self._dist.log_prob(x)`
LOOP = ("train.py", 17, 33, "AMP001")  # `pred.log_prob(...)`: still an opaque site
INNER = ("pkg/dists.py", 24, 16, "AMP001")  # `self.distribution.log_prob(actions)` of `DiagGaussian`
OUTER = ("pkg/policy.py", 18, 16, "AMP001")  # `dist.log_prob(actions)`: still an opaque site


def _project(root: Path, files: Dict[str, str]) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'wrappers'\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _wrappers(root: Path) -> Path:
    return _project(root, {"pkg/dists.py": DISTS, "pkg/policy.py": POLICY, "train.py": TRAIN})


def test_the_wrapper_s_computation_is_reported_where_it_is_built(tmp_path: Path) -> None:
    """The registry's key is the default "box": the categorical wrapper never runs, and is not reported."""
    assert found_places(_wrappers(tmp_path / "p")) == [INNER, OUTER]


def test_the_wrapper_s_finding_names_its_chain_and_is_fixable(tmp_path: Path) -> None:
    root = _wrappers(tmp_path / "p")
    inner = next(f for f in check_json(root) if f["path"] == "pkg/dists.py")
    assert inner["fixable"] and inner["risk"]["level"] == "high"
    assert [hop["name"] for hop in inner["chain"]][:3] == [
        "policy.evaluate(obs, actions)", "Policy.evaluate", "DiagGaussian.log_prob"]


def test_a_project_distribution_s_call_is_the_site(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", {"pkg/tanh.py": TANH, "train.py": TANH_TRAIN})
    assert found_places(root) == [("train.py", 9, 17, "AMP001")]


def test_what_is_reported_is_what_the_run_computes_in_float16(tmp_path: Path) -> None:
    """Both findings stand for the one site the run computes in float16 (the call's, through its chain)."""
    report = traced_comparison(_wrappers(tmp_path / "p"))
    assert report["sites"] == 1 and report["missed"] == [] and report["unreached"] == [], report
    assert sorted((f["path"], f["line"]) for f in report["found"]) == [("pkg/dists.py", 24), ("pkg/policy.py", 18)]


def test_after_the_fix_the_run_computes_nothing_in_float16(tmp_path: Path) -> None:
    root = _wrappers(tmp_path / "p")
    fixed = run_amplint(["check", "--fix", "."], cwd=root)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # the call stays reported (below)
    assert "Normal(mean_actions.float(), torch.sigmoid(log_std.float()) * 1e-3 + 1e-4)" in \
        (root / "pkg" / "dists.py").read_text()
    assert found_places(root) == [OUTER]
    ran = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True, text=True, timeout=300)
    if ran.returncode != 0 and "No module named 'torch'" in ran.stderr:
        pytest.skip("torch is not installed")
    assert ran.returncode == 0, ran.stderr
    report = traced_comparison(root)
    assert report["sites"] == 0 and report["missed"] == [], report
    # The limit this leaves: the flow cannot prove that nothing but the wrapper reaches `dist`, so the call stays
    # a site, and after the fix its computation runs in float32.
    assert [(f["path"], f["line"]) for f in report["float32"]] == [("pkg/policy.py", 18)], report


def _kept(root: Path) -> Path:
    return _project(root, {"pkg/tools.py": TOOLS, "pkg/nets.py": NETS, "train.py": WORLD})


def test_a_distribution_handed_to_the_wrapper_is_read_where_the_caller_builds_it(tmp_path: Path) -> None:
    root = _kept(tmp_path / "p")
    findings = check_json(root)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [KEPT, LOOP]
    kept = findings[0]
    assert kept["fixable"] and "built in `MLP.dist` at pkg/nets.py:19 and 1 other place" in kept["message"]


def test_the_fix_casts_every_constructor_the_wrapper_is_handed(tmp_path: Path) -> None:
    root = _kept(tmp_path / "p")
    assert run_amplint(["check", "--fix", "."], cwd=root).returncode == 1  # the loop's call stays reported
    nets = (root / "pkg" / "nets.py").read_text()
    assert "torchd.Normal(mean.float(), torch.sigmoid(std.float()) * 1e-3 + 1e-4)" in nets
    assert "torchd.Laplace(mean.float(), torch.exp(std.float()))" in nets
    assert found_places(root) == [LOOP]
    report = traced_comparison(root)
    assert report["sites"] == 0 and report["missed"] == [], report


def test_the_handed_distribution_is_what_the_run_computes_in_float16(tmp_path: Path) -> None:
    report = traced_comparison(_kept(tmp_path / "p"))
    assert report["sites"] == 1 and report["missed"] == [] and report["unreached"] == [], report


# A wrapper that rebinds the name it wraps (`d = Belief(d)`), around a distribution built from float32 tensors.
REBOUND = """\
import torch
from torch import nn
from torch.distributions import Normal


class Belief:
    def __init__(self, dist):
        self.dist = dist

    def log_prob(self, x):
        return self.dist.log_prob(x)


def build_dist(out):
    loc, raw = out.chunk(2, dim=-1)
    return Normal(loc.float(), raw.exp().float())
"""
REBOUND_TRAIN = """\
import torch
from torch import nn

from pkg.belief import Belief, build_dist


def objective(model, h, x):
    d = build_dist(model(h))
    d = Belief(d)
    return d.log_prob(x.float()).mean()


model = nn.Linear(8, 4)
with torch.autocast("cpu", dtype=torch.float16):
    print(objective(model, torch.randn(64, 8), torch.randn(64, 2)))
"""


def test_a_name_s_own_rebinding_does_not_reach_its_right_hand_side(tmp_path: Path) -> None:
    """`d = Belief(d)`: the `d` given to `Belief` is `build_dist`'s float32 `Normal`, not a `Belief`. Read with
    every binding of `d`, `self.dist` could be a `Belief`, `self.dist.log_prob(x)` a call of the wrapper with an
    `x` of unknown dtype, and the wrapper's site was reported; the run computes nothing in float16."""
    root = _project(tmp_path / "p", {"pkg/belief.py": REBOUND, "train.py": REBOUND_TRAIN})
    assert found_places(root) == []
    report = traced_comparison(root)
    assert report["sites"] == 0 and report["float32"] == [], report


CONSTRUCTED = """\
import torch

from pkg.dists import DiagGaussian


def train(obs, actions):
    d = DiagGaussian(2)
    mean, log_std = d.nets(8)
    with torch.autocast("cpu", dtype=torch.float16):
        d.proba_distribution(mean(obs), log_std(obs))
        return -d.log_prob(actions).mean()


torch.manual_seed(0)
print(train(torch.randn(64, 8), torch.randn(64, 2)))
"""


def test_a_wrapper_constructed_where_it_is_called_is_no_site_of_its_own(tmp_path: Path) -> None:
    """`d = DiagGaussian(2)` then `d.log_prob(a)`: the call runs the wrapper's method and nothing else, so the
    method's computation is the one finding, and after `--fix` the run computes nothing in float16."""
    root = _project(tmp_path / "p", {"pkg/dists.py": DISTS, "train.py": CONSTRUCTED})
    assert found_places(root) == [INNER]
    report = traced_comparison(root)
    assert report["sites"] == 1 and report["missed"] == [] and report["unreached"] == [], report
    assert run_amplint(["check", "--fix", "."], cwd=root).returncode == 0
    assert found_places(root) == []
    assert traced_comparison(root)["sites"] == 0
