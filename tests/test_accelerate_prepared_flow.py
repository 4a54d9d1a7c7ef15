"""Models prepared by an accelerator, followed across calls (issue #50, "Regions spelled through objects").

`accelerator.prepare(model)` with `Accelerator(mixed_precision="fp16")` wraps `model.forward` in autocast. The
collector follows that only where the file builds the accelerator and the preparing function calls the model.
The value flow now evaluates `accelerator.prepare(...)` as `Prepared` values, and `project.preparedflow` carries
them to their calls: through parameters, `self.` attributes and factories' returns, with the accelerator itself
reaching `prepare` as a parameter. A bf16 or "no" accelerator, or one the project never builds, opens nothing.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, List, Tuple

from amplint.config import Config
from amplint.engine import check_paths
from conftest import run_amplint

MODEL = '''\
import torch
from torch import nn
class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 4)
    def forward(self, x, y):
        mu, log_std = self.head(x).chunk(2, dim=-1)
        return torch.distributions.Normal(mu, log_std.exp()).log_prob(y)
'''
TRAIN = '''\
from accelerate import Accelerator
from model import Policy
from loop import fit, fit_prepared
def main(x, y):
    accelerator = Accelerator(mixed_precision="{precision}")
    fit(accelerator, Policy(), x, y)
    prepared = accelerator.prepare(Policy())
    fit_prepared(prepared, x, y)
'''
LOOP = '''\
def fit(accelerator, model, x, y):
    model = accelerator.prepare(model)
    return model(x, y).mean()
def fit_prepared(model, x, y):
    return model(x, y).mean()
'''
SITE = ("model.py", 9, 16, "AMP001")
REGION = 'prepared-model region of Accelerator(mixed_precision="fp16") (built at {})'
Found = List[Tuple[str, int, int, str]]


def _project(root: Path, files: Dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _findings(root: Path) -> Tuple[Found, Dict[Tuple[str, int], str]]:
    results = check_paths([str(root)], Config())
    found = sorted((os.path.relpath(f.path, root).replace(os.sep, "/"), f.line, f.column, f.code)
                   for r in results for f in r.findings)
    messages = {(os.path.relpath(f.path, root).replace(os.sep, "/"), f.line): f.message
                for r in results for f in r.findings}
    return found, messages


def test_a_model_prepared_by_a_parameter_and_a_prepared_model_passed_on(tmp_path: Path) -> None:
    """The issue's reproduction: `fit` prepares with the accelerator it is given, `fit_prepared` is given the
    prepared model. One finding (the engine keeps one per site), reached from a prepared-model region."""
    root = _project(tmp_path, {"model.py": MODEL, "train.py": TRAIN.format(precision="fp16"), "loop.py": LOOP})
    found, messages = _findings(root)
    assert found == [SITE]
    assert f"reached from {REGION.format('train.py:5')} at loop.py:3 via model(x, y) (loop.py:3:12) → " \
           "Policy.forward" in messages[("model.py", 9)]
    proc = run_amplint(["check", "--format", "json", str(root)], cwd=tmp_path)
    assert [(f["line"], f["column"], f["code"]) for f in json.loads(proc.stdout)] == [SITE[1:]]


def test_each_path_alone_reaches_the_forward(tmp_path: Path) -> None:
    """Either call alone is enough: the parameter's accelerator, or the prepared model handed to a parameter."""
    only_fit = TRAIN.replace("    prepared = accelerator.prepare(Policy())\n    fit_prepared(prepared, x, y)\n", "")
    assert _findings(_project(tmp_path / "fit", {"model.py": MODEL, "train.py": only_fit.format(
        precision="fp16"), "loop.py": LOOP}))[0] == [SITE]
    only_prepared = TRAIN.replace("    fit(accelerator, Policy(), x, y)\n", "")
    found, messages = _findings(_project(tmp_path / "prepared", {
        "model.py": MODEL, "train.py": only_prepared.format(precision="fp16"), "loop.py": LOOP}))
    assert found == [SITE]
    assert f"reached from {REGION.format('train.py:5')} at loop.py:5 via model(x, y) (loop.py:5:12)" in messages[
        ("model.py", 9)]


def test_bf16_and_no_open_no_region(tmp_path: Path) -> None:
    for precision in ("bf16", "no"):
        root = _project(tmp_path / precision, {"model.py": MODEL, "train.py": TRAIN.format(precision=precision),
                                               "loop.py": LOOP})
        assert _findings(root)[0] == [], precision


def test_an_accelerator_the_project_never_builds_opens_no_region(tmp_path: Path) -> None:
    """`fit(accelerator, ...)` called by code outside the project: its precision is set there, not here."""
    root = _project(tmp_path, {"model.py": MODEL, "loop.py": LOOP, "other.py": "from accelerate import Accelerator\n"
                               "def build():\n    return Accelerator(mixed_precision='fp16')\n"})
    assert _findings(root)[0] == []


TRAINER = '''\
from accelerate import Accelerator
from model import Policy


class Runner:
    def __init__(self, accelerator, net):
        self.accelerator = accelerator
        self.model = accelerator.prepare(net)

    def step(self, x, y):
        return self.model(x, y).mean()


def main(x, y):
    Runner(Accelerator(mixed_precision="fp16"), Policy()).step(x, y)
'''


def test_a_prepared_model_kept_on_self_and_called_in_another_method(tmp_path: Path) -> None:
    root = _project(tmp_path, {"model.py": MODEL, "runner.py": TRAINER})
    found, messages = _findings(root)
    assert found == [SITE]
    assert f"reached from {REGION.format('runner.py:15')} at runner.py:11 via self.model(x, y) (runner.py:11:16)" \
        in messages[("model.py", 9)]
    bf16 = _project(tmp_path / "bf16", {"model.py": MODEL, "runner.py": TRAINER.replace('"fp16"', '"bf16"')})
    assert _findings(bf16)[0] == []


FACTORY = '''\
from accelerate import Accelerator
from model import Policy


def build(precision):
    accelerator = Accelerator(mixed_precision=precision)
    model, optimizer = accelerator.prepare(Policy(), object())
    return model
'''
USER = '''\
from factory import build


def evaluate(x, y):
    model = build("fp16").to("cuda")
    return model.forward(x, y).sum() + model(x, y).sum()
'''


def test_a_factory_returns_the_prepared_model(tmp_path: Path) -> None:
    """`build` prepares and returns it; `evaluate` calls it, as `model.forward(x)` too (Accelerate wraps
    `forward` itself). The precision is a parameter of the factory: maybe-float16, and the message says so."""
    root = _project(tmp_path, {"model.py": MODEL, "factory.py": FACTORY, "user.py": USER})
    found, messages = _findings(root)
    assert found == [SITE]
    assert "prepared-model region of Accelerator(mixed_precision=precision) (built at factory.py:6) at user.py:6 " \
           "via model.forward(x, y) (user.py:6:12)" in messages[("model.py", 9)]
    literal = _project(tmp_path / "bf16", {"model.py": MODEL, "user.py": USER, "factory.py": FACTORY.replace(
        "mixed_precision=precision", 'mixed_precision="bf16"')})
    assert _findings(literal)[0] == []


def test_a_call_before_the_model_is_prepared_runs_outside_the_region(tmp_path: Path) -> None:
    source = LOOP.replace("def fit(accelerator, model, x, y):\n    model = accelerator.prepare(model)\n"
                          "    return model(x, y).mean()\n",
                          "def fit(accelerator, model, x, y):\n    first = model(x, y)\n"
                          "    model = accelerator.prepare(model)\n    return first\n")
    root = _project(tmp_path, {"model.py": MODEL, "loop.py": source, "train.py": TRAIN.format(precision="fp16").replace(
        "    prepared = accelerator.prepare(Policy())\n    fit_prepared(prepared, x, y)\n", "")})
    assert _findings(root)[0] == []


HOLDER_TRAIN = '''\
from dataclasses import dataclass
from accelerate import Accelerator
from model import Policy
from steps import step


@dataclass
class State:
    model: object
    epoch: int = 0


class Box:
    def __init__(self, net):
        self.net = net


def main(x, y):
    accelerator = Accelerator(mixed_precision="{precision}")
    step({holder}, x, y)
'''
HOLDER_STEP = '''\
def step(holder, x, y):
    return holder.{attr}(x, y).mean()
'''
GLOBAL_STATE = '''\
from accelerate import Accelerator
from model import Policy

accelerator = Accelerator(mixed_precision="{precision}")
MODEL = accelerator.prepare(Policy())
'''
GLOBAL_USER = '''\
from state import MODEL as prepared


def step(x, y):
    return prepared(x, y).mean()
'''


def test_a_prepared_model_held_by_another_object_and_called_through_it(tmp_path: Path) -> None:
    """`State(accelerator.prepare(m))` of a data class, or `Box(...)` whose `__init__` keeps it on `self`, handed
    to a function in another file that calls `holder.model(x)`: the object's attribute is the prepared model."""
    for name, holder, attr in (("dataclass", "State(accelerator.prepare(Policy()))", "model"),
                               ("keyword", "State(model=accelerator.prepare(Policy()), epoch=1)", "model"),
                               ("init", "Box(accelerator.prepare(Policy()))", "net")):
        files = {"model.py": MODEL, "steps.py": HOLDER_STEP.format(attr=attr)}
        root = _project(tmp_path / name, {**files, "train.py": HOLDER_TRAIN.format(precision="fp16", holder=holder)})
        found, messages = _findings(root)
        assert found == [SITE], name
        assert f"{REGION.format('train.py:19')} at steps.py:2 via holder.{attr}(x, y) (steps.py:2:12)" in \
            messages[("model.py", 9)], name
        bf16 = _project(tmp_path / f"{name}-bf16",
                        {**files, "train.py": HOLDER_TRAIN.format(precision="bf16", holder=holder)})
        assert _findings(bf16)[0] == [], name


def test_a_prepared_model_kept_in_a_module_global_and_imported_elsewhere(tmp_path: Path) -> None:
    root = _project(tmp_path / "fp16", {"model.py": MODEL, "state.py": GLOBAL_STATE.format(precision="fp16"),
                                        "user.py": GLOBAL_USER})
    found, messages = _findings(root)
    assert found == [SITE]
    assert f"{REGION.format('state.py:4')} at user.py:5 via prepared(x, y) (user.py:5:12)" in messages[("model.py", 9)]
    bf16 = _project(tmp_path / "bf16", {"model.py": MODEL, "state.py": GLOBAL_STATE.format(precision="bf16"),
                                        "user.py": GLOBAL_USER})
    assert _findings(bf16)[0] == []
