"""Densities with no log of probabilities in sight: a log-gamma normaliser and the log-parameter form.

Found missing by the expression oracle (`tests/mathgen`, issue 51): a Gamma,
Beta or Dirichlet normaliser `torch.lgamma(alpha)`, a VAE's KL in
log-variance form `1 + logvar - mu ** 2 - logvar.exp()`, a log-variance
Gaussian NLL `s + (y - mu) ** 2 * torch.exp(-s)` and a log-rate Poisson NLL
`eta.exp() - k * eta`. Each is run here under CPU float16 autocast on a head
whose outputs reach what real heads give (a log-variance of 12), and is
non-finite there; the same code with the head's output cast is finite and
quiet. Across files, the helper is read from CPython's tree for the summary
and from LibCST's for the findings: both must see the same site.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import write_package

HEADER = '''\
import torch


def loss(head, x, k):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(x)
'''
BODIES = {  # name -> (body, the finding's (line, column))
    "gamma_normaliser": ('''\
        alpha = out.exp()
        return torch.lgamma(alpha).sum(-1)
''', (8, 16)),
    "vae_kl": ('''\
        mu, logvar = out.chunk(2, dim=-1)
        return -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)
''', (8, 33)),
    "log_variance_nll": ('''\
        mu, s = out.chunk(2, dim=-1)
        return 0.5 * (s + (k - mu) ** 2 * torch.exp(-s)).sum(-1)
''', (8, 23)),
    "log_rate_poisson": ('''\
        return (out.exp() - k * out).sum(-1)
''', (7, 17)),
}


def _check(path: Path, *extra: str) -> Tuple[int, List[Dict[str, object]]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", *extra, path.name],
                          capture_output=True, text=True, timeout=120, cwd=path.parent)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip().startswith("[") else []


@pytest.mark.parametrize("case", sorted(BODIES))
def test_the_shape_is_found_where_it_is_written(tmp_path: Path, case: str) -> None:
    body, (line, column) = BODIES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(HEADER + body)
    code, findings = _check(path, "--no-project")
    assert code == 1
    assert [(f["line"], f["column"], f["code"], f["fixable"]) for f in findings] == [(line, column, "AMP003", False)]


@pytest.mark.parametrize("case", sorted(BODIES))
def test_a_cast_head_output_is_quiet(tmp_path: Path, case: str) -> None:
    path = tmp_path / f"{case}.py"
    path.write_text((HEADER + BODIES[case][0]).replace("out = head(x)", "out = head(x).float()"))
    assert _check(path, "--no-project") == (0, [])


def _non_finite(source: str) -> int:
    torch = pytest.importorskip("torch")
    head = torch.nn.Linear(8, 8)
    with torch.no_grad():
        head.weight.copy_(torch.eye(8))
        head.bias.zero_()
    x = torch.linspace(-12.0, 12.0, 64 * 8).reshape(64, 8)  # a log-variance up to 12: exp(12) > 65504
    k = torch.tensor(3.0)  # a count, as the loader gives it: float32
    namespace: Dict[str, object] = {}
    exec(compile(source, "m.py", "exec"), namespace)
    with torch.no_grad():
        value = namespace["loss"](head, x, k)  # type: ignore[operator]
    return int((~torch.isfinite(value)).sum())


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(BODIES))
def test_what_is_found_is_non_finite_and_the_cast_is_not(case: str) -> None:
    source = HEADER + BODIES[case][0]
    assert _non_finite(source) > 0
    assert _non_finite(source.replace("out = head(x)", "out = head(x).float()")) == 0


TRAIN = '''\
import torch
from pkg.losses import kl


def step(encoder, x):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, logvar = encoder(x).chunk(2, dim=-1)
        return kl(mu, logvar)
'''
LOSSES = '''\
import torch


def kl(mu, logvar):
    return -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)
'''


def test_a_helper_in_another_file_is_found_there(tmp_path: Path) -> None:
    """`losses.py` holds no distribution: its summary comes from CPython's tree, its findings from LibCST's."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    write_package(tmp_path, {"train.py": TRAIN, "losses.py": LOSSES})
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    findings = json.loads(done.stdout)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [("pkg/losses.py", 5, 29, "AMP003")]
    assert "`logvar`, `mu`" in findings[0]["message"]


OWN_REGION = '''\
import torch


def poisson_nll(eta, k):
    with torch.autocast("cpu", dtype=torch.float16):
        return (eta.exp() - k * eta).sum(-1)
'''


def test_math_on_the_callers_values_alone_is_not_the_regions(tmp_path: Path) -> None:
    """`eta` and `k` are parameters: the region in this function makes neither float16 (`Site.data`)."""
    path = tmp_path / "own.py"
    path.write_text(OWN_REGION)
    assert _check(path, "--no-project") == (0, [])


def test_the_same_math_entered_from_a_region_reads_that_regions_values(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    write_package(tmp_path, {
        # Named like nothing: the file is read for its `.exp()` (`prefilter.MATH_WORDS`), not for a name.
        "losses.py": "def objective(eta, k):\n    return (eta.exp() - k * eta).sum(-1)\n",
        "train.py": "import torch\nfrom pkg.losses import objective\n\n\ndef step(head, x, k):\n"
                    "    with torch.autocast('cpu', dtype=torch.float16):\n        return objective(head(x), k)\n",
    })
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    findings = json.loads(done.stdout)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [("pkg/losses.py", 2, 13, "AMP003")]
