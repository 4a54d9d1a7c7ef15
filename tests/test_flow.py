"""Values that cross calls (`amplint/project/flow.py`): each way real code hands a model or a function on.

Every project here is also run under `amplint trace`: what the check reports must be what the run computed
in float16 (`check --compare` finds nothing missed), so each expectation is the program's, not ours.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import run_amplint, traced_comparison

MODEL = """\
import torch
from torch import nn
from torch.distributions import Normal


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def loss(self, obs, act):
        mu, s = self.fc(obs).chunk(2, -1)
        return Normal(mu, s.exp()).log_prob(act)

    def forward(self, obs, act):
        mu, s = self.fc(obs).chunk(2, -1)
        return Normal(mu, s.exp()).entropy()


def make():
    return Policy().to("cpu")
"""

PROJECTS: Dict[str, Dict[str, str]] = {
    # the model is a parameter of the function that opens the region; the caller builds it
    "parameter": {"train.py": """\
        import torch
        from model import Policy


        def update(policy, obs, act):
            with torch.autocast("cpu", dtype=torch.float16):
                return policy.loss(obs, act)


        update(Policy(), torch.randn(8, 4), torch.randn(8, 2))
        """},
    # a constructor argument kept on `self`, in a file that never imports the model's module
    "constructor": {"agent.py": """\
        class Agent:
            def __init__(self, policy):
                self.policy = policy

            def act(self, obs, act):
                return self.policy.loss(obs, act)
        """, "train.py": """\
        import torch
        from agent import Agent
        from model import make


        def run(agent, obs, act):
            with torch.autocast("cpu", dtype=torch.float16):
                return agent.act(obs, act)


        run(Agent(make()), torch.randn(8, 4), torch.randn(8, 2))
        """},
    # heads in an `nn.ModuleDict`, iterated with `.items()`, the dict handed to a constructor
    "moduledict": {"heads.py": """\
        from torch import nn


        class Heads(nn.Module):
            def __init__(self, heads):
                super().__init__()
                self.heads = nn.ModuleDict(heads)

            def forward(self, obs, act):
                return [head(obs, act) for name, head in self.heads.items()]
        """, "train.py": """\
        import torch
        from heads import Heads
        from model import Policy

        heads = Heads({"a": Policy()})
        with torch.autocast("cpu", dtype=torch.float16):
            heads(torch.randn(8, 4), torch.randn(8, 2))
        """},
    # a nested def handed to a helper in a module that imports nothing of the project, which calls it
    "callback": {"engine.py": """\
        def call_loss(objective, module, obs, act):
            return objective(module, obs, act)
        """, "train.py": """\
        import torch
        from engine import call_loss
        from model import Policy


        @torch.autocast("cpu", dtype=torch.float16)
        def step(model, obs, act):
            def local_loss(m, o, a):
                return m(o, a)
            return call_loss(local_loss, model, obs, act)


        step(Policy(), torch.randn(8, 4), torch.randn(8, 2))
        """},
    # a class picked from a module by name, then a registry dict, then `importlib`
    "lookup": {"train.py": """\
        import importlib

        import torch
        import model as models

        REGISTRY = {"policy": models.Policy}


        def build(name):
            return REGISTRY[name]()


        def run(net, obs, act):
            with torch.autocast("cpu", dtype=torch.float16):
                return net.loss(obs, act)


        obs, act = torch.randn(8, 4), torch.randn(8, 2)
        run(getattr(models, "Policy")(), obs, act)
        run(build("policy"), obs, act)
        run(importlib.import_module("model").make(), obs, act)
        """},
    # a method called on a value the summary has no name for: a fresh object, an element of a dict
    "expression": {"scorer.py": """\
        class Scorer:
            def evaluate(self, head, obs, act):
                return head.loss(obs, act)
        """, "train.py": """\
        import torch
        from model import Policy
        from scorer import Scorer


        def step(heads, obs, act):
            return Scorer().evaluate(heads["pi"], obs, act)


        with torch.autocast("cpu", dtype=torch.float16):
            step({"pi": Policy()}, torch.randn(8, 4), torch.randn(8, 2))
        """},
    # a bound method kept in a name, called later
    "bound": {"train.py": """\
        import torch
        from model import Policy


        def run(policy, obs, act):
            score = policy.loss
            with torch.autocast("cpu", dtype=torch.float16):
                return score(obs, act)


        run(Policy(), torch.randn(8, 4), torch.randn(8, 2))
        """},
}
# a module global passed on from a function in which only a nested def binds the same name to another class
PROJECTS["global"] = {"train.py": """\
    import torch
    from torch import nn
    from model import Policy

    policy = Policy()


    class Baseline(nn.Module):
        def loss(self, obs, act):
            return -((obs[:, :2] - act) ** 2).mean()


    def fit(model, obs, act):
        with torch.autocast("cpu", dtype=torch.float16):
            return model.loss(obs, act)


    def main():
        def baseline_loss(obs, act):
            policy = Baseline()
            return policy.loss(obs, act)

        baseline_loss(torch.randn(8, 4), torch.randn(8, 2))
        return fit(policy, torch.randn(8, 4), torch.randn(8, 2))


    main()
    """}
EXPECTED: Dict[str, List[Tuple[str, int, int, str]]] = {
    "global": [("model.py", 13, 16, "AMP001")],
    "bound": [("model.py", 13, 16, "AMP001")],
    "expression": [("model.py", 13, 16, "AMP001")],
    "parameter": [("model.py", 13, 16, "AMP001")],
    "constructor": [("model.py", 13, 16, "AMP001")],
    "moduledict": [("model.py", 17, 16, "AMP001")],
    "callback": [("model.py", 17, 16, "AMP001")],
    "lookup": [("model.py", 13, 16, "AMP001")],
}


def _project(root: Path, files: Dict[str, str]) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'flow'\n")
    (root / "model.py").write_text(MODEL)
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text))
    return root


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_the_class_or_function_is_followed_across_the_call(tmp_path: Path, name: str) -> None:
    project = _project(tmp_path / name, PROJECTS[name])
    result = run_amplint(["check", "--format", "json", "--exit-zero", "."], cwd=project)
    found = [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(result.stdout)]
    assert found == EXPECTED[name], result.stderr


@pytest.mark.parametrize("name", sorted(PROJECTS))
def test_what_is_reported_is_what_the_run_computes_in_float16(tmp_path: Path, name: str) -> None:
    report = traced_comparison(_project(tmp_path / name, PROJECTS[name]))
    assert (report["missed"], report["sites"]) == ([], 1), report


def test_a_parameter_no_caller_fills_stays_unknown(tmp_path: Path) -> None:
    """Nothing passes a model to `update`: its parameter holds nothing known, and nothing is guessed."""
    project = _project(tmp_path / "p", {"train.py": """\
        import torch


        def update(policy, obs, act):
            with torch.autocast("cpu", dtype=torch.float16):
                return policy.score(obs, act)
        """})
    result = run_amplint(["check", "--format", "json", "--exit-zero", "."], cwd=project)
    assert json.loads(result.stdout) == []
