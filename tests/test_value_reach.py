"""Values cross calls however the call is spelled, and a helper counts by what it computes.

Three mechanisms, each found missing by the generated projects of
`benchmarks/reachgen.py` (issue 50), each a project whose computation gives
-inf at run time under CPU float16 autocast:

- a method called on an expression, `Scorer().loss(model, x)`: the call is
  recorded as `<expr>.loss`, the walk follows it, and the model given to it
  reaches the method's parameter (`flow.Flow.call_values`);
- a lambda handed to a helper that calls it: its parameters hold what the
  helper passes it (`flowtrees.lambda_key`);
- `p = to_probs(model(z)); torch.log(p + 1e-10)` where `to_probs`, in another
  file, returns a softmax: the helper's body, not its name, makes `p`
  probabilities (`project.probreturns`), and `--fix` casts what the helper is
  given, so that its softmax runs in float32.

Each runs the real CLI on a package and asserts the exact findings; the fix
case also runs the original and the fixed code with torch.
"""
from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import LINEAR_NORMAL_HEAD, write_package

HEADS = LINEAR_NORMAL_HEAD
CRITIC = '''\
class Critic:
    def loss(self, model, h, y):
        d = model(h)
        return d.log_prob(y).mean()
'''
EXPRESSION_STEP = '''\
import torch
from pkg.critic import Critic


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return Critic().loss(model, h, y)
'''
LAMBDA_STEP = '''\
import torch
from pkg.critic import Critic


def call_with(fn, model, h, y):
    return fn(model, h, y)


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return call_with(lambda m, a, b: Critic().loss(m, a, b), model, h, y)
'''
RUN = '''\
from pkg.heads import Head
from pkg.step import step


def main(h, y):
    return step(Head(), h, y)
'''


def _check(root: Path, *extra: str) -> Tuple[int, List[Dict[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", *extra, "."],
                          capture_output=True, text=True, timeout=120, cwd=root)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip().startswith("[") else []


def _project(tmp_path: Path, files: Dict[str, str]) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "run.py").write_text(RUN)
    write_package(tmp_path, files)
    return tmp_path


def _found(findings: List[Dict[str, object]]) -> List[Tuple[str, int, int, str]]:
    return [(str(f["path"]), int(f["line"]), int(f["column"]), str(f["code"])) for f in findings]  # type: ignore


@pytest.mark.parametrize("step", [EXPRESSION_STEP, LAMBDA_STEP], ids=["method_on_expression", "lambda"])
def test_a_model_reaches_the_method_it_is_handed_to(tmp_path: Path, step: str) -> None:
    root = _project(tmp_path, {"heads.py": HEADS, "critic.py": CRITIC, "step.py": step})
    code, findings = _check(root)
    assert code == 1
    assert _found(findings) == [("pkg/critic.py", 4, 16, "AMP001")]
    message = str(findings[0]["message"])
    assert "`Normal.log_prob`" in message and "`loc`, `raw.exp()`" in message
    assert "built in `Head.forward` at pkg/heads.py:13" in message


def test_a_method_on_an_expression_names_its_call_in_the_chain(tmp_path: Path) -> None:
    root = _project(tmp_path, {"heads.py": HEADS, "critic.py": CRITIC, "step.py": EXPRESSION_STEP})
    _, findings = _check(root)
    chain = findings[0]["chain"]
    assert [(hop["name"], hop["path"], hop["line"]) for hop in chain][:2] == [  # type: ignore[index]
        ("Critic().loss(model, h, y)", "pkg/step.py", 7), ("Critic.loss", "pkg/step.py", 7)]


PROBS = '''\
import torch


def to_probs(out):
    return torch.sigmoid(out)


def rescale(out):
    return out * 2
'''
OBJECTIVE = '''\
import torch
from pkg.probs import rescale, to_probs


def objective(model, z):
    p = to_probs(model(z))
    return -torch.log(p + 1e-10).mean(-1)


def not_probabilities(model, z):
    q = rescale(model(z))
    return -torch.log(q + 1e-10).mean(-1)
'''
PROBS_STEP = '''\
import torch
from pkg.objective import not_probabilities, objective


def step(model, z):
    with torch.autocast("cpu", dtype=torch.float16):
        return objective(model, z), not_probabilities(model, z)
'''


def test_a_helper_counts_by_its_body_not_its_name(tmp_path: Path) -> None:
    root = _project(tmp_path, {"probs.py": PROBS, "objective.py": OBJECTIVE, "step.py": PROBS_STEP})
    code, findings = _check(root)
    assert code == 1
    # `rescale` computes no probabilities: its log is no log of probabilities, whatever its name.
    assert _found(findings) == [("pkg/objective.py", 7, 13, "AMP003"), ("pkg/objective.py", 7, 27, "AMP004")]
    assert "`p`" in str(findings[0]["message"])


def test_the_same_helper_under_a_probability_name_in_a_region_it_never_reaches(tmp_path: Path) -> None:
    quiet = PROBS_STEP.replace('with torch.autocast("cpu", dtype=torch.float16):', "if True:")
    root = _project(tmp_path, {"probs.py": PROBS, "objective.py": OBJECTIVE, "step.py": quiet})
    assert _check(root) == (0, [])


def _non_finite(root: Path) -> int:
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(root))
    try:
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]
        step = importlib.import_module("pkg.step").step
        model = torch.nn.Linear(4, 4)
        with torch.no_grad():
            model.weight.copy_(torch.eye(4) * 30)  # sigmoid of -30 is 9e-14: 0 in float16
            model.bias.zero_()
        z = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            value, _ = step(model, z)
        return int((~torch.isfinite(value)).sum())
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]


@pytest.mark.torch
def test_the_fix_casts_what_the_helper_is_given(tmp_path: Path) -> None:
    root = _project(tmp_path, {"probs.py": PROBS, "objective.py": OBJECTIVE, "step.py": PROBS_STEP})
    original = _non_finite(root)
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--fix", "."], capture_output=True,
                          text=True, timeout=120, cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = (root / "pkg" / "objective.py").read_text()
    assert fixed == OBJECTIVE.replace("p = to_probs(model(z))", "p = to_probs(model(z).float())")
    assert _check(root) == (0, [])
    assert original > 0
    assert _non_finite(root) == 0


TUPLE_HEADS = HEADS.replace("        return Normal(loc, raw.exp())", "        return Normal(loc, raw.exp()), loc")
ELEMENT_CRITIC = '''\
class Critic:
    def loss(self, model, h, y):
        d = model(h)[0]
        return d.log_prob(y.float()).mean()
'''


@pytest.mark.parametrize("cast", [False, True])
def test_an_element_of_a_returned_tuple_is_the_distribution_built_there(tmp_path: Path, cast: bool) -> None:
    """`model(h)[0]` reads position 0 of what `forward` returns, as `d, _ = model(h)` does."""
    heads = TUPLE_HEADS.replace("Normal(loc, raw.exp())", "Normal(loc.float(), raw.float().exp())") if cast \
        else TUPLE_HEADS
    root = _project(tmp_path, {"heads.py": heads, "critic.py": ELEMENT_CRITIC, "step.py": EXPRESSION_STEP})
    code, findings = _check(root)
    if cast:
        assert (code, findings) == (0, [])
    else:
        assert _found(findings) == [("pkg/critic.py", 4, 16, "AMP001")]
        assert "built in `Head.forward` at pkg/heads.py:13" in str(findings[0]["message"])
