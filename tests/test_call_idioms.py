"""A model reaches the method that computes with it through Python's own call idioms, across files.

Each idiom was a miss of the generated projects (`tests/reachgen/idioms.py`, `habits.py`, issue 50) until the
flow read it as Python does (`project/flowcalls.py`, `project/callsites.py`):

- `super().loss(model, ...)` runs the base class's method, and `super().__init__(model)` is a call site of
  the base's `__init__`, whose `self.model = model` the method reads;
- `functools.partial(objective, model)` binds `objective`'s first argument, and calling it runs `objective`;
- a `**kwargs` parameter holds the keywords given to it (`kwargs["model"]`);
- `def logged(*args, **kwargs): return objective(*args, **kwargs)` hands its callers' arguments on unchanged;
- a `@dataclass` built with the model (`Setup(model=model)`) holds it in that field (`setup.model`);
- a `@property` gives what its getter returns (`self.model`, the getter returning `self._model`);
- a function stored in a dict and called by key (`OBJECTIVES[name](model, h, y)`) is called there;
- `setattr(self, "net", model)` stores the model as `self.net = model` would;
- `getattr(obj, f"loss_{kind}")` with `kind` a parameter: the strings that reach `kind` (its callers' arguments,
  its default) name the method, and `method(model, ...)` is a call site of it;
- `cls(model)` in a `@classmethod` constructs the class it is called on (`Session.create(model)`);
- calling an object (`loss_fn(model, h, y)`) is a call site of its `__call__`;
- a module global set by another function after `global CURRENT` holds what that function assigns;
- `copy.deepcopy(model)` (a target network) is an instance of the model's class;
- a chain of eight parameters from the model's construction to its call is followed (the flow stopped at six);
- a `@staticmethod` called on an instance (`Losses().nll(model, h, y)`) is given its arguments from the first
  (they were read one place off, so `model` held `h`, the distribution was opaque, and a head that casts was
  reported anyway: four false alarms in 1,000 generated projects).

Each project runs: under CPU float16 autocast the distribution's parameters are float16 where `log_prob` runs
(recorded with torch). Without the region, the same project has no finding.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import LINEAR_NORMAL_HEAD, check_json, run_recording_normals, write_package

HEADS = LINEAR_NORMAL_HEAD
OBJECTIVE = '''\
def objective(model, h, y):
    d = model(h)
    return d.log_prob(y).mean()
'''


def _step(source: str, names: str, expr: str, before: str = "", params: str = "model, h, y") -> str:
    """A `pkg/step.py` that imports `names` from `pkg.<source>` and returns `expr` under CPU float16 autocast
    (`before`: lines that run first, outside the region)."""
    return (f"import torch\nfrom pkg.{source} import {names}\n\n\ndef step({params}):\n{before}"
            f'    with torch.autocast("cpu", dtype=torch.float16):\n        return {expr}\n')


SUPER_METHOD = {
    "base.py": '''\
class BaseStep:
    def loss(self, model, h, y):
        d = model(h)
        return d.log_prob(y).mean()
''',
    "step.py": '''\
import torch
from pkg.base import BaseStep


class Weighted(BaseStep):
    def loss(self, model, h, y):
        return super().loss(model, h, y) * 0.5


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return Weighted().loss(model, h, y)
''',
}
SUPER_INIT = {
    "base.py": '''\
class Holder:
    def __init__(self, model):
        self.model = model

    def loss(self, h, y):
        d = self.model(h)
        return d.log_prob(y).mean()
''',
    "step.py": '''\
import torch
from pkg.base import Holder


class Scaled(Holder):
    def __init__(self, scale, net):
        super().__init__(net)
        self.scale = scale


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return Scaled(0.5, model).loss(h, y)
''',
}
PARTIAL = {
    "objective.py": OBJECTIVE,
    "step.py": '''\
import functools

import torch
from pkg.objective import objective


def step(model, h, y):
    bound = functools.partial(objective, model)
    with torch.autocast("cpu", dtype=torch.float16):
        return bound(h, y)
''',
}
KWARGS = {
    "objective.py": '''\
def objective(h, y, **kwargs):
    model = kwargs["model"]
    d = model(h)
    return d.log_prob(y).mean()
''',
    "step.py": _step('objective', 'objective', 'objective(h, y, model=model, verbose=False)'),
}
FORWARD = {
    "objective.py": OBJECTIVE,
    "logged.py": '''\
from pkg.objective import objective


def logged(*args, **kwargs):
    return objective(*args, **kwargs)
''',
    "step.py": _step('logged', 'logged', 'logged(model, h, y=y)'),
}
DATACLASS_FIELD = {
    "objective.py": OBJECTIVE,
    "step.py": '''\
from dataclasses import dataclass

import torch
from pkg.objective import objective


@dataclass
class Setup:
    model: object
    epoch: int = 0


def run(setup, h, y):
    return objective(setup.model, h, y)


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return run(Setup(model=model), h, y)
''',
}
PROPERTY = {
    "objective.py": OBJECTIVE,
    "step.py": '''\
import torch
from pkg.objective import objective


class Owner:
    def __init__(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    def loss(self, h, y):
        return objective(self.model, h, y)


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return Owner(model).loss(h, y)
''',
}
REGISTRY = {
    "objective.py": OBJECTIVE + '''

def baseline(model, h, y):
    return (y - y.mean()).pow(2).mean()


OBJECTIVES = {"nll": objective, "mse": baseline}


def by_name(name, model, h, y):
    return OBJECTIVES[name](model, h, y)
''',
    "step.py": _step('objective', 'by_name', 'by_name("nll", model, h, y)'),
}
SETATTR = {
    "objective.py": OBJECTIVE + '''

class Slots:
    def __init__(self, model):
        setattr(self, "net", model)

    def loss(self, h, y):
        return objective(self.net, h, y)
''',
    "step.py": _step('objective', 'Slots', 'Slots(model).loss(h, y)'),
}
GETATTR = {
    "objective.py": '''\
class Objectives:
    def loss_nll(self, model, h, y):
        d = model(h)
        return d.log_prob(y).mean()

    def loss_mse(self, model, h, y):
        return (y - y.mean()).pow(2).mean()

    def loss_nll_unused(self, model, h, y):
        d = model(h)
        return d.log_prob(y).sum()


def run_named(kind, model, h, y):
    method = getattr(Objectives(), f"loss_{kind}")
    return method(model, h, y)
''',
    "step.py": _step(
        'objective', 'run_named', 'run_named(kind, model, h, y)', params='model, h, y, kind="nll"'),
}
# The name comes from the environment: every method of the owner may be called (one value per owner, expanded
# where it is called: `flowvalues.MethodOf`).
GETATTR_UNKNOWN = {
    "objective.py": "import os\n\n\n" + GETATTR["objective.py"].split("\n\n    def loss_nll_unused")[0] + '''


def run_named(model, h, y):
    method = getattr(Objectives(), os.environ.get("AMPLINT_OBJECTIVE", "loss_nll"))
    return method(model, h, y)
''',
    "step.py": _step('objective', 'run_named', 'run_named(model, h, y)'),
}
CLASSMETHOD = {
    "objective.py": OBJECTIVE + '''

class Session:
    def __init__(self, model):
        self.model = model

    @classmethod
    def create(cls, model):
        session = cls(model)
        return session

    def loss(self, h, y):
        return objective(self.model, h, y)
''',
    "step.py": _step('objective', 'Session', 'Session.create(model).loss(h, y)'),
}
CALL_OBJECT = {
    "objective.py": OBJECTIVE + '''

class Criterion:
    def __call__(self, model, h, y):
        return objective(model, h, y)
''',
    "step.py": _step('objective', 'Criterion', 'loss_fn(model, h, y)', before='    loss_fn = Criterion()\n'),
}
GLOBAL = {
    "objective.py": OBJECTIVE + '''

CURRENT = None


def install(model):
    global CURRENT
    CURRENT = model


def current_loss(h, y):
    return objective(CURRENT, h, y)
''',
    "step.py": _step('objective', 'current_loss, install', 'current_loss(h, y)', before='    install(model)\n'),
}
DEEPCOPY = {
    "objective.py": OBJECTIVE + '''

def target_loss(model, h, y):
    frozen = copy.deepcopy(model)
    return objective(frozen, h, y)
''',
    "step.py": _step('objective', 'target_loss', 'target_loss(model, h, y)'),
}
DEEPCOPY["objective.py"] = "import copy\n\n\n" + DEEPCOPY["objective.py"]
RELAYS = 8  # parameter hops from `objective` back to the model's construction: more than the flow once followed
DEEP = {
    "objective.py": OBJECTIVE,
    "relay.py": "from pkg.objective import objective\n" + "".join(
        f"\n\ndef relay{n}(m, h, y):\n    return {'objective' if n == 1 else f'relay{n - 1}'}(m, h, y)\n"
        for n in range(1, RELAYS)),
    "step.py": f'''\
import torch
from pkg.relay import relay{RELAYS - 1}


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return relay{RELAYS - 1}(model, h, y)
''',
}
STATIC_ON_INSTANCE = {
    "objective.py": '''\
class Losses:
    @staticmethod
    def nll(model, h, y):
        d = model(h)
        return d.log_prob(y).mean()
''',
    "step.py": _step('objective', 'Losses', 'Losses().nll(model, h, y)'),
}
RUN = '''\
from pkg.heads import Head
from pkg.step import step


def main(h, y):
    return step(Head(), h, y)
'''
CASES = {
    "super_method": (SUPER_METHOD, ("pkg/base.py", 4, 16)),
    "super_init": (SUPER_INIT, ("pkg/base.py", 7, 16)),
    "partial": (PARTIAL, ("pkg/objective.py", 3, 12)),
    "kwargs": (KWARGS, ("pkg/objective.py", 4, 12)),
    "forward": (FORWARD, ("pkg/objective.py", 3, 12)),
    "dataclass_field": (DATACLASS_FIELD, ("pkg/objective.py", 3, 12)),
    "property": (PROPERTY, ("pkg/objective.py", 3, 12)),
    "deep": (DEEP, ("pkg/objective.py", 3, 12)),
    "registry": (REGISTRY, ("pkg/objective.py", 3, 12)),
    "setattr": (SETATTR, ("pkg/objective.py", 3, 12)),
    "getattr_by_name": (GETATTR, ("pkg/objective.py", 4, 16)),
    "getattr_unknown_name": (GETATTR_UNKNOWN, ("pkg/objective.py", 7, 16)),
    "classmethod": (CLASSMETHOD, ("pkg/objective.py", 3, 12)),
    "call_object": (CALL_OBJECT, ("pkg/objective.py", 3, 12)),
    "global": (GLOBAL, ("pkg/objective.py", 3, 12)),
    "deepcopy": (DEEPCOPY, ("pkg/objective.py", 6, 12)),
    "staticmethod_on_instance": (STATIC_ON_INSTANCE, ("pkg/objective.py", 5, 16)),
}


def _project(tmp_path: Path, files: Dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "run.py").write_text(RUN)
    write_package(tmp_path, {"heads.py": HEADS, **files})
    return tmp_path


def _found(root: Path) -> List[Tuple[object, ...]]:
    return [(f["path"], f["line"], f["column"], f["code"]) for f in check_json(root)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_model_reaches_the_computation_through_the_idiom(tmp_path: Path, case: str) -> None:
    files, (path, line, column) = CASES[case]
    findings = check_json(_project(tmp_path, files))
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [(path, line, column, "AMP001")]
    # The model's class is known where it is called: the distribution is the head's, not an opaque one.
    message = str(findings[0]["message"])
    assert "`Normal.log_prob`" in message and "built in `Head.forward` at pkg/heads.py:13" in message, message
    assert findings[0]["fixable"] is True


@pytest.mark.parametrize("case", sorted(CASES))
def test_without_the_region_nothing_is_reported(tmp_path: Path, case: str) -> None:
    files, _ = CASES[case]
    quiet = {name: text.replace('with torch.autocast("cpu", dtype=torch.float16):', "if True:")
             for name, text in files.items()}
    assert _found(_project(tmp_path, quiet)) == []


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_log_prob_runs_on_float16_parameters(tmp_path: Path, case: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    files, _ = CASES[case]
    seen, _ = run_recording_normals(_project(tmp_path, files), monkeypatch, torch.randn(8, 4), torch.randn(8, 1))
    assert seen == [torch.float16]


def test_a_method_picked_by_an_unknown_name_is_one_value_per_owner(tmp_path: Path) -> None:
    """`getattr(a, name)` with `name` unknown is one value for `a`, not one per method (transformers'
    `get_input_embeddings` gave 70,880 of them); calling it runs each method, dunders left out."""
    from amplint.config import Config
    from amplint.files import discover
    from amplint.project.cache import DiskCache
    from amplint.project.flowvalues import Instance, MethodOf
    from amplint.project.loader import Loader
    from amplint.project.modules import ModuleIndex
    from amplint.project.resolve import ClassRef, Resolver

    (tmp_path / "m.py").write_text(
        "import os\n\n\nclass A:\n    def __init__(self):\n        self.n = 1\n\n    def f(self):\n        return 1\n\n"
        "    def g(self):\n        return 2\n\n\ndef pick(a):\n    return getattr(a, os.environ['N'])\n\n\n"
        "picked = pick(A())\n")
    files, _ = discover([str(tmp_path)])
    loader = Loader(files, Config(jobs=1), DiskCache(None), ModuleIndex.build(files, [str(tmp_path)]), "t")
    loader.scan()
    resolver = Resolver(loader)
    path = str(tmp_path / "m.py")
    picked = resolver.flow.returns(path, "pick")
    assert picked == frozenset({MethodOf(Instance(ClassRef(path, "A"), True), ("*",))})
    assert [t.key for t in resolver.flow.method_targets(next(iter(picked)))] == ["A.f", "A.g"]


def test_a_static_method_called_on_an_instance_sees_a_head_that_casts(tmp_path: Path) -> None:
    """The float32 twin of `staticmethod_on_instance`: the head casts what it builds `Normal` from, and the
    value is cast, so nothing is reported (with the arguments read one place off, `d` was an opaque
    distribution, reported with risk unknown whatever the head did)."""
    head = HEADS.replace("Normal(loc, raw.exp())", "Normal(loc.float(), raw.exp().float())")
    files = {name: text.replace("d.log_prob(y)", "d.log_prob(y.float())") for name, text in STATIC_ON_INSTANCE.items()}
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "run.py").write_text(RUN)
    write_package(tmp_path, {"heads.py": head, **files})
    assert _found(tmp_path) == []
