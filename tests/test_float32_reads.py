"""A value cast where it is made stays float32 wherever it is read: through wrappers, attributes, rebinding.

The false alarms the generated projects of `benchmarks/reachgen.py` found
(issue 50): a distribution built from cast tensors and kept in a project
wrapper (`d.dist.log_prob`), cast tensors kept by a density class's
constructor (`self.mu`), a name cast after it was bound (`mu = mu.float()`),
a head that builds one of two distributions. Each case is a package whose
step runs under CPU float16 autocast, in two twins: one casts, one does not.
The truth is torch's: CPU autocast runs `log_prob` and `log` in their inputs'
dtype, so the logs they take (of a scale) run in float16 exactly when the inputs
were float16. amplint must report that twin, at the exact line, and not the other.
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import write_package

RUN = '''\
import torch
from pkg.heads import Head
from pkg.step import step


def main():
    torch.manual_seed(0)
    return step(Head(), torch.randn(8, 4), torch.randn(8, 2))
'''
STEP = '''\
import torch
from pkg.objective import objective


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return objective(model, h, y)
'''


def _head(imports: str, returned: str) -> str:
    """A head module: a Linear whose output's halves `forward` returns as `returned`."""
    return ("import torch\nfrom torch import nn\n" + "".join(f"{line}\n" for line in imports.splitlines()) +
            "\n\nclass Head(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(4, 4)\n\n"
            "    def forward(self, h):\n        loc, raw = self.lin(h).chunk(2, dim=-1)\n"
            f"        return {returned}\n")


WRAPPER_HEAD = _head("from torch.distributions import Normal\nfrom pkg.belief import Belief",
                     "Belief(Normal(loc.float(), raw.exp().float()))")
PARAMS_HEAD = _head("", "loc, raw.exp()")
SUBCLASS = '''\
from torch.distributions import Normal


class MyNormal(Normal):
    pass
'''
SUBCLASS_HEAD = _head("from pkg.dists import MyNormal", "MyNormal(loc.float(), raw.exp().float())")
NORMAL_HEAD = _head("from torch.distributions import Normal", "Normal(loc.float(), raw.exp().float())")
# The subclass defined in the head's own file, with a constructor of its own (generated seed 468).
LOCAL_SUBCLASS_HEAD = _head("from torch.distributions import Normal", "LocalNormal(loc.float(), raw.exp().float())") + (
    "\n\nclass LocalNormal(Normal):\n    def __init__(self, loc, scale):\n        super().__init__(loc, scale)\n"
    "        self.low = -1.0\n")


BELIEF = '''\
class Belief:
    def __init__(self, dist):
        self.dist = dist
'''
WRAPPER_OBJECTIVE = '''\
def objective(model, h, y):
    d = model(h)
    return d.dist.log_prob(y).mean()
'''
DENSITY = '''\
import math
import torch


class Density:
    def __init__(self, mu, sigma):
        self.mu = mu
        self.sigma = sigma

    def log_p(self, x):
        return -0.5 * ((x - self.mu) / self.sigma) ** 2 - torch.log(self.sigma) - 0.5 * math.log(2 * math.pi)
'''
DENSITY_OBJECTIVE = '''\
from pkg.density import Density


def objective(model, h, y):
    mu, sigma = model(h)
    return Density(mu.float(), sigma.float()).log_p(y).mean()
'''
REBOUND_OBJECTIVE = '''\
from pkg.density import Density


def objective(model, h, y, cast=True):
    mu, sigma = model(h)
    mu, sigma = mu.float(), sigma.float()
    return Density(mu, sigma).log_p(y).mean()
'''
BRANCH_OBJECTIVE = '''\
from pkg.density import Density


def objective(model, h, y, cast=False):
    mu, sigma = model(h)
    if cast:
        mu, sigma = mu.float(), sigma.float()
    return Density(mu, sigma).log_p(y).mean()
'''
TWO_FAMILIES_HEAD = '''\
import torch
from torch import nn
from torch.distributions import Laplace, Normal


class Head(nn.Module):
    def __init__(self, family="normal"):
        super().__init__()
        self.family = family
        self.lin = nn.Linear(4, 4)

    def forward(self, h):
        loc, raw = self.lin(h).chunk(2, dim=-1)
        if self.family == "normal":
            d = Normal(loc.float(), raw.exp().float())
        else:
            d = Laplace(loc.float(), raw.exp().float())
        return d
'''
TWO_FAMILIES_OBJECTIVE = '''\
def objective(model, h, y):
    d = model(h)
    return d.log_prob(y).mean()
'''

REWRAPPED_OBJECTIVE = '''\
from pkg.belief import Belief


def objective(model, h, y):
    d = model(h)
    d = Belief(d)
    return d.dist.log_prob(y).mean()
'''
TUPLE_HEAD = _head("from torch.distributions import Normal", "Normal(loc.float(), raw.exp().float()), loc")
ELEMENT_OBJECTIVE = '''\
from pkg.belief import Belief


def objective(model, h, y):
    d = model(h)[0]
    d = Belief(d)
    return d.dist.log_prob(y).mean()
'''
UNPACKED_OBJECTIVE = '''\
from pkg.belief import Belief


def objective(model, h, y):
    d, loc = model(h)
    kept = Belief(d)
    return kept.dist.log_prob(y).mean() + loc.sum()
'''
BELIEF_METHOD = '''\
class Belief:
    def __init__(self, dist):
        self.dist = dist

    def log_prob(self, x):
        return self.dist.log_prob(x)
'''
METHOD_OBJECTIVE = '''\
from pkg.belief import Belief


def objective(model, h, y):
    d = model(h)
    d = Belief(d)
    return d.log_prob(y).mean()
'''
BUNDLE_STEP = '''\
import torch
from pkg.objective import objective


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return objective({"policy": model}, h, y)
'''
BUNDLE_OBJECTIVE = '''\
def objective(bundle, h, y):
    net = bundle.get("policy")
    return net(h).log_prob(y).mean()
'''
DICT_HEAD = _head("from torch.distributions import Normal",
                  '{"dist": Normal(loc.float(), raw.exp().float()), "loc": loc}')
# The scorer keeps what one method takes out of the head's output on `self`; another reads it. The item beside
# it (`loc`) stays float16, so only the item asked for may be proved.
STORED_OBJECTIVE = '''\
class Scorer:
    def observe(self, model, h):
        out = model(h)
        self.d = out[KEY]

    def score(self, y):
        return self.d.log_prob(y).mean()


def objective(model, h, y):
    scorer = Scorer()
    scorer.observe(model, h)
    return scorer.score(y)
'''


def _project(tmp_path: Path, files: Dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "run.py").write_text(RUN)
    write_package(tmp_path, {"step.py": STEP, **files})  # a case's own `step.py` replaces this one
    return tmp_path


def _findings(root: Path) -> List[Tuple[str, int, int, str]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(done.stdout)]


def _log_dtypes(root: Path) -> List[str]:
    """The dtypes every `log` of the step ran in, run for real (`Normal.log_prob` takes the log of its scale):
    float16 exactly when the probability code was given float16 inputs."""
    torch = pytest.importorskip("torch")
    from torch.overrides import TorchFunctionMode

    seen: List[str] = []

    class Logs(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if func in (torch.log, torch.Tensor.log) and args:
                seen.append(str(args[0].dtype))
            return func(*args, **(kwargs or {}))

    sys.path.insert(0, str(root))
    try:
        for name in [m for m in sys.modules if m in ("pkg", "run") or m.startswith("pkg.")]:
            del sys.modules[name]
        main = importlib.import_module("run").main
        with Logs():
            main()
        return sorted(set(seen))
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m in ("pkg", "run") or m.startswith("pkg.")]:
            del sys.modules[name]


def _uncast(text: str) -> str:
    return text.replace(".float()", "")


CASES = {
    # name: (files of the casting twin, the finding of the twin that does not cast)
    "wrapper": ({"belief.py": BELIEF, "heads.py": WRAPPER_HEAD, "objective.py": WRAPPER_OBJECTIVE},
                ("pkg/objective.py", 3, 12, "AMP001")),
    "constructor_attributes": ({"density.py": DENSITY, "heads.py": PARAMS_HEAD, "objective.py": DENSITY_OBJECTIVE},
                               ("pkg/density.py", 11, 16, "AMP003")),
    "rebinding": ({"density.py": DENSITY, "heads.py": PARAMS_HEAD, "objective.py": REBOUND_OBJECTIVE},
                  ("pkg/density.py", 11, 16, "AMP003")),
    "two_families": ({"heads.py": TWO_FAMILIES_HEAD, "objective.py": TWO_FAMILIES_OBJECTIVE},
                     ("pkg/objective.py", 3, 12, "AMP001")),
    # `d = Belief(d)` reads the `d` bound before it.
    "rewrapped": ({"belief.py": BELIEF, "heads.py": NORMAL_HEAD, "objective.py": REWRAPPED_OBJECTIVE},
                  ("pkg/objective.py", 7, 12, "AMP001")),
    # Element 0 of the tuple a head returns (`return Normal(...), loc`: `loc` stays float16), indexed or unpacked.
    "tuple_element": ({"belief.py": BELIEF, "heads.py": TUPLE_HEAD, "objective.py": ELEMENT_OBJECTIVE},
                      ("pkg/objective.py", 7, 12, "AMP001")),
    "tuple_unpacked": ({"belief.py": BELIEF, "heads.py": TUPLE_HEAD, "objective.py": UNPACKED_OBJECTIVE},
                       ("pkg/objective.py", 7, 12, "AMP001")),
    # A plain project class's own `log_prob` on what it holds: the instance carries only the cast distribution.
    # `d = Belief(d); d.log_prob(y)` runs `Belief.log_prob` (`CallSummary.opaque`): its `self.dist.log_prob(x)`
    # is what the run computes in float16, and where it is reported.
    "wrapper_method": ({"belief.py": BELIEF_METHOD, "heads.py": NORMAL_HEAD, "objective.py": METHOD_OBJECTIVE},
                       ("pkg/belief.py", 6, 16, "AMP001")),
    # An item of the dict, or an element of the tuple, a head returns, stored on `self` by one method and read
    # by another (generated seed 785): the item beside it is float16.
    "stored_dict_item": ({"heads.py": DICT_HEAD, "objective.py": STORED_OBJECTIVE.replace("KEY", '"dist"')},
                         ("pkg/objective.py", 7, 16, "AMP001")),
    "stored_tuple_element": ({"heads.py": TUPLE_HEAD, "objective.py": STORED_OBJECTIVE.replace("KEY", "0")},
                             ("pkg/objective.py", 7, 16, "AMP001")),
    # The project's own distribution class, built from casts by a head in another file, stored on `self` by one
    # method and read by another (generated seed 908): a float32 distribution, as torch's classes are.
    "stored_subclass": ({"dists.py": SUBCLASS, "heads.py": SUBCLASS_HEAD,
                         "objective.py": STORED_OBJECTIVE.replace("out[KEY]", "out")},
                        ("pkg/objective.py", 7, 16, "AMP001")),
    # The same, the class defined and built in the head's own file: its own module names it there.
    "local_subclass": ({"heads.py": LOCAL_SUBCLASS_HEAD, "objective.py": STORED_OBJECTIVE.replace("out[KEY]", "out")},
                       ("pkg/objective.py", 7, 16, "AMP001")),
    # A model handed over in a dict and taken out with `.get`.
    "dict_get": ({"heads.py": NORMAL_HEAD, "objective.py": BUNDLE_OBJECTIVE, "step.py": BUNDLE_STEP},
                 ("pkg/objective.py", 3, 12, "AMP001")),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_value_cast_where_it_is_made_is_float32_where_it_is_read(tmp_path: Path, case: str) -> None:
    files, _ = CASES[case]
    root = _project(tmp_path, files)
    assert _log_dtypes(root) == ["torch.float32"]
    assert _findings(root) == []


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(CASES))
def test_the_twin_that_does_not_cast_is_reported(tmp_path: Path, case: str) -> None:
    files, expected = CASES[case]
    root = _project(tmp_path, {name: _uncast(text) for name, text in files.items()})
    assert "torch.float16" in _log_dtypes(root)
    assert _findings(root) == [expected]


@pytest.mark.torch
def test_a_cast_in_one_branch_does_not_reach_past_it(tmp_path: Path) -> None:
    root = _project(tmp_path, {"density.py": DENSITY, "heads.py": PARAMS_HEAD, "objective.py": BRANCH_OBJECTIVE})
    assert "torch.float16" in _log_dtypes(root)
    assert _findings(root) == [("pkg/density.py", 11, 16, "AMP003")]


@pytest.mark.torch
def test_one_family_built_from_float16_is_reported_and_named(tmp_path: Path) -> None:
    head = TWO_FAMILIES_HEAD.replace("Laplace(loc.float(), raw.exp().float())", "Laplace(loc, raw.exp())")
    root = _project(tmp_path, {"heads.py": head, "objective.py": TWO_FAMILIES_OBJECTIVE})
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."],
                          capture_output=True, text=True, timeout=120, cwd=root)
    findings = json.loads(done.stdout)
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("pkg/objective.py", 3, "AMP001")]
    assert "`loc`, `raw.exp()`" in findings[0]["message"] and "pkg/heads.py:17" in findings[0]["message"]


# Reaching definitions: what the parameters of `Density` hold depends on which bindings of `mu` and `sigma`
# reach the call. Each body runs; `reported` is what torch computes in (a float16 log: reported).
BODIES = {
    "if_else_both_cast": (False, '''\
    if mode == "a":
        mu, sigma = mu.float(), sigma.float()
    else:
        mu, sigma = mu.float() * 1.0, sigma.float() * 1.0
'''),
    "conditional_expression": (True, '''\
    mu = mu.float() if mode == "b" else mu
'''),
    "try_except_both_cast": (False, '''\
    try:
        mu, sigma = mu.float(), sigma.float()
    except RuntimeError:
        mu, sigma = mu.double().float(), sigma.double().float()
'''),
    "a_later_arm_undoes_the_cast": (True, '''\
    try:
        mu, sigma = mu.float(), sigma.float()
    except RuntimeError:
        pass
    if mode == "a":
        sigma = sigma.half()
'''),
    "match_every_arm_casts": (False, '''\
    match mode:
        case "a":
            mu, sigma = mu.float(), sigma.float()
        case _:
            mu, sigma = mu.float() + 0.0, sigma.float() + 0.0
'''),
    "match_without_catch_all": (True, '''\
    match mode:
        case "b":
            mu, sigma = mu.float(), sigma.float()
'''),
    "loop_casts_before_the_read": (False, '''\
    total = 0.0
    for _ in range(2):
        mu, sigma = mu.float(), sigma.float()
        total = total + Density(mu, sigma).log_p(y).mean()
'''),
    "loop_casts_after_the_read": (True, '''\
    total = 0.0
    for _ in range(2):
        total = total + Density(mu, sigma).log_p(y).mean()
        mu, sigma = mu.float(), sigma.float()
'''),
}


def _body_objective(body: str) -> str:
    tail = "    return total\n" if "total" in body else "    return Density(mu, sigma).log_p(y).mean()\n"
    return ("from pkg.density import Density\n\n\ndef objective(model, h, y, mode=\"a\"):\n"
            "    mu, sigma = model(h)\n" + body + tail)


@pytest.mark.torch
@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_bindings_that_reach_the_call_decide(tmp_path: Path, name: str) -> None:
    reported, body = BODIES[name]
    root = _project(tmp_path, {"density.py": DENSITY, "heads.py": PARAMS_HEAD, "objective.py": _body_objective(body)})
    assert ("torch.float16" in _log_dtypes(root)) is reported
    assert _findings(root) == ([("pkg/density.py", 11, 16, "AMP003")] if reported else [])


SUBCLASS_OBJECTIVE = '''\
from pkg.dists import MyNormal


def objective(model, h, y):
    loc, scale = model(h)
    d = MyNormal(loc, scale)
    return d.log_prob(y.float()).mean()
'''


def test_an_instance_of_a_class_with_a_torch_base_is_not_proved_float32(tmp_path: Path) -> None:
    """A `Normal` subclass holds the tensors its torch base's `__init__` stores, which no `self.` assignment of
    the project shows: the instance is never proved float32 from its (empty) attributes."""
    root = _project(tmp_path, {"dists.py": SUBCLASS, "heads.py": PARAMS_HEAD, "objective.py": SUBCLASS_OBJECTIVE})
    assert _findings(root) == [("pkg/objective.py", 7, 12, "AMP001")]


@pytest.mark.torch
def test_only_the_item_asked_for_is_proved(tmp_path: Path) -> None:
    """The item beside the one read is float32 and the one read is not: the read is not proved."""
    head = _head("from torch.distributions import Normal", '{"dist": Normal(loc, raw.exp()), "loc": loc.float()}')
    root = _project(tmp_path, {"heads.py": head, "objective.py": STORED_OBJECTIVE.replace("KEY", '"dist"')})
    assert "torch.float16" in _log_dtypes(root)
    assert _findings(root) == [("pkg/objective.py", 7, 16, "AMP001")]


# A float32 buffer a class keeps (`DARPPseudoLabelingHook.pseudo_orig` of a semi-supervised learning library):
# made by a factory divided by a size, refreshed from itself, read back from a checkpoint. Every assignment is
# float32 where the refresh is given a cast tensor: `self.k` is an integer (the factory takes it as a size),
# `smooth` reads the attribute being asked about (assumed float32 while it is asked), and `torch.load` gives
# data no autocast op made. Given the float16 scale, the table and its log are float16.
PRIOR = '''\
import torch


class Prior:
    def __init__(self, n, k):
        self.k = k
        self.table = torch.ones(n, k) / self.k

    def refresh(self, new):
        self.table = new / new.sum(dim=1, keepdim=True)

    def smooth(self):
        self.table = (self.table + 1e-6) / (self.table + 1e-6).sum(dim=1, keepdim=True)

    def restore(self, path):
        state = torch.load(path)
        self.table = state["table"]

    def entropy(self):
        return -(self.table * torch.log(self.table + 1e-6)).sum(1)
'''
PRIOR_OBJECTIVE = '''\
from pkg.prior import Prior


def objective(model, h, y):
    loc, scale = model(h)
    prior = Prior(8, y.shape[1])
    prior.refresh(scale.float())
    prior.smooth()
    return (loc - y).pow(2).mean() + prior.entropy().mean()
'''


@pytest.mark.torch
@pytest.mark.parametrize("cast", [True, False])
def test_a_buffer_made_refreshed_and_loaded_as_float32_is_float32(tmp_path: Path, cast: bool) -> None:
    objective = PRIOR_OBJECTIVE if cast else _uncast(PRIOR_OBJECTIVE)
    root = _project(tmp_path, {"prior.py": PRIOR, "heads.py": PARAMS_HEAD, "objective.py": objective})
    assert ("torch.float16" in _log_dtypes(root)) is not cast
    # `prior = Prior(...)` then `prior.entropy()`: the call runs `Prior.entropy`, whose log is the finding
    assert _findings(root) == ([] if cast else [("pkg/prior.py", 20, 31, "AMP003")])
