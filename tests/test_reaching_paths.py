"""Every path to a computation counts: `try`/`except`, loops, conditional expressions, `match`, conditional casts.

Issue 54 (N8): each computation below gives -inf at run time under CPU float16
autocast, and amplint reported none of them. The binding that reached the
site on one path (an uncast distribution in `try`, a loop's rebinding on its
next iteration, one arm of `a if c else b`, a `match` arm, a cast under
`if flag:` that may not happen) was replaced by the one written last.
Each case runs the real CLI: the exact finding, `--fix` in place, a clean
re-check, and the original and fixed code run with torch on inputs that
provoke the failure. The safe twins, where every path casts or the uncast
path cannot reach the site, stay quiet.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

HEADER = '''\
import torch
from torch.distributions import Normal


def loss(head, x, y, flag):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(x)
        mu, log_std = out[:, 0], out[:, 1]
'''
BODIES = {
    "try_except": ('''\
        try:
            d = Normal(mu, log_std.exp())
        except ValueError:
            d = Normal(mu.float(), log_std.float().exp())
        return d.log_prob(y.float())
''', (13, 16), True),
    "loop_rebinding": ('''\
        d = Normal(mu.float(), log_std.float().exp())
        total = 0
        for _ in range(2):
            total = total + d.log_prob(y.float())
            d = Normal(mu, log_std.exp())
        return total
''', (12, 29), True),
    "conditional_expression": ('''\
        d = Normal(mu, log_std.exp()) if flag else Normal(mu.float(), log_std.float().exp())
        return d.log_prob(y.float())
''', (10, 16), True),
    "match_arms": ('''\
        match flag:
            case True:
                d = Normal(mu, log_std.exp())
            case _:
                d = Normal(mu.float(), log_std.float().exp())
        return d.log_prob(y.float())
''', (14, 16), True),
    "conditional_cast": ('''\
        if not flag:
            mu = mu.float()
            log_std = log_std.float()
        return Normal(mu, log_std.exp()).log_prob(y.float())
''', (12, 16), True),
}
SAFE = {
    "try_both_cast": '''\
        try:
            d = Normal(mu.float(), log_std.float().exp())
        except ValueError:
            d = Normal(mu.double(), log_std.double().exp())
        return d.log_prob(y.float())
''',
    "loop_rebinding_cast": '''\
        d = Normal(mu.float(), log_std.float().exp())
        for _ in range(2):
            d.log_prob(y.float())
            d = Normal(mu.float(), log_std.float().exp())
        return d.log_prob(y.float())
''',
    "cast_on_every_path": '''\
        if flag:
            mu = mu.float()
        else:
            mu = mu.double()
        return Normal(mu, log_std.float().exp()).log_prob(y.float())
''',
    "uncast_arm_returns": '''\
        m = mu.float()
        if flag:
            m = mu
            return None
        return Normal(m, log_std.float().exp()).log_prob(y.float())
''',
    "first_bound_in_a_loop": '''\
        for _ in range(2):
            m = mu.float()
        return Normal(m, log_std.float().exp()).log_prob(y.float())
''',
    "match_every_arm_casts": '''\
        match flag:
            case True:
                d = Normal(mu.float(), log_std.float().exp())
            case _:
                d = Normal(mu.double(), log_std.double().exp())
        return d.log_prob(y.float())
''',
}


def _check(path: Path, *extra: str) -> Tuple[int, List[Dict[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--no-project", "--format", "json", *extra,
                           str(path)], capture_output=True, text=True, timeout=120)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip().startswith("[") else []


def _fix(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "amplint", "check", "--no-project", "--fix", str(path)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("case", sorted(BODIES))
def test_every_path_reaches_the_site(tmp_path: Path, case: str) -> None:
    body, (line, column), _ = BODIES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(HEADER + body)
    _, findings = _check(path)
    assert [(f["line"], f["column"], f["code"]) for f in findings] == [(line, column, "AMP001")]
    assert "`mu`, `log_std.exp()`" in str(findings[0]["message"])


@pytest.mark.parametrize("case", sorted(SAFE))
def test_a_cast_on_every_path_that_reaches_is_quiet(tmp_path: Path, case: str) -> None:
    path = tmp_path / f"{case}.py"
    path.write_text(HEADER + SAFE[case])
    code, findings = _check(path)
    assert (code, findings) == (0, [])


def _non_finite(source: str, flag: bool) -> int:
    torch = pytest.importorskip("torch")
    head = torch.nn.Linear(2, 2)
    with torch.no_grad():
        head.weight.copy_(torch.eye(2))
        head.bias.zero_()
    generator = torch.Generator().manual_seed(0)
    mu = torch.randn(256, generator=generator)
    x = torch.stack([mu, torch.full((256,), -12.0)], dim=-1)  # scale exp(-12): its square is 0 in float16
    y = mu + 0.01 * torch.randn(256, generator=generator)
    namespace: Dict[str, object] = {}
    exec(compile(source, "m.py", "exec"), namespace)
    with torch.no_grad():
        values = namespace["loss"](head, x, y, flag)  # type: ignore[operator]
    return int((~torch.isfinite(values)).sum())


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(BODIES))
def test_the_fix_makes_every_path_finite(tmp_path: Path, case: str, unvalidated_distributions) -> None:
    body, _, flag = BODIES[case]
    path = tmp_path / f"{case}.py"
    original = HEADER + body
    path.write_text(original)
    done = _fix(path)
    assert done.returncode == 0, done.stdout + done.stderr
    fixed = path.read_text()
    assert fixed != original
    assert _check(path) == (0, [])
    assert _fix(path).returncode == 0 and path.read_text() == fixed  # idempotent
    assert _non_finite(original, flag) > 0
    for each in (True, False):
        assert _non_finite(fixed, each) == 0, (case, each)


TRAIN = '''\
import torch

from losses import nll


def step(head, x, y, flag):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(x)
        if flag:
            out = out.float()
        return nll(out, y.float())
'''
LOSSES = '''\
from torch.distributions import Normal


def nll(out, y):
    return -Normal(out[:, 0], out[:, 1].exp()).log_prob(y).mean()
'''


def test_a_cast_that_may_not_happen_does_not_stop_the_walk(tmp_path: Path) -> None:
    """The region's file holds no distribution, so CPython's tree is read for it (`facts.astflow`)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "losses.py").write_text(LOSSES)
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    found = [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(done.stdout)]
    assert found == [("losses.py", 5, 13, "AMP001")]
    cast = "        if flag:\n            out = out.float()\n"
    (tmp_path / "train.py").write_text(TRAIN.replace(cast, "        out = out.float()\n"))  # on every path
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr, json.loads(done.stdout)) == (0, "", [])
