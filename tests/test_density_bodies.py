"""A call named like a density is judged by the body it runs, wherever that body is defined (issue 51, item 1).

Real projects call their own helpers `kl_weight(step)` (an annealing schedule
on step counts), `kl_balance(terms, weights)` (a weighted sum of terms already
computed) and `kl_fused(logits, target)` (a fused `log_softmax`). Imported
from another file, each was an AMP003 finding on its name alone; renaming the
function made it go away. The project walk reads the body instead: a body
with no tensor op float16 can push out of range reports nothing, one with
sites reports there, and one that loses range only through a helper it calls
(a CDF difference whose `erfc` is in `_cumulative`) leaves the call reported.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

TRAIN = '''\
import torch

from losses import gaussian_nll, kl_balance, kl_fused, kl_weight


def step(model, x, y, target, it):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, log_std, logits = model(x)
        w = kl_weight(it)
        total = kl_balance([mu.sum(), log_std.sum()], [0.5, 0.5])
        nll = gaussian_nll(mu, log_std, y)
        ce = kl_fused(logits, target)
        return w * total + nll + ce
'''
LOSSES = '''\
import math

import torch


def kl_weight(step, warmup=1000):
    return max(0.0, min(1.0, step / warmup))


def kl_balance(terms, weights):
    return sum(t * w for t, w in zip(terms, weights))


def gaussian_nll(mu, log_std, y):
    z = (y - mu) / log_std.exp()
    return 0.5 * z.pow(2) + log_std + 0.5 * math.log(2 * math.pi)


def kl_fused(logits, target):
    return torch.nn.functional.kl_div(torch.log_softmax(logits, -1), target, reduction="batchmean")
'''
CDF_TRAIN = '''\
import torch

from likelihoods import gaussian_likelihood


def step(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, scale = head(x).chunk(2, dim=-1)
        return -torch.log(gaussian_likelihood(y, mu, scale.exp())).mean()
'''
CDF_HELPERS = '''\
import torch


def _cumulative(z):
    return 0.5 * torch.erfc(-(2 ** -0.5) * z)


def gaussian_likelihood(values, means, scales):
    centred = torch.abs(values - means)
    return _cumulative((0.5 - centred) / scales) - _cumulative((-0.5 - centred) / scales)
'''


def _project(root: Path, files: Dict[str, str]) -> None:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    for name, text in files.items():
        (root / name).write_text(text)


def _findings(root: Path, *arguments: str) -> List[Dict[str, object]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", *arguments], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _places(findings: List[Dict[str, object]]) -> List[Tuple[object, ...]]:
    return [(f["path"], f["line"], f["column"], f["code"]) for f in findings]


def test_only_the_body_that_computes_a_density_is_reported(tmp_path: Path) -> None:
    _project(tmp_path, {"train.py": TRAIN, "losses.py": LOSSES})
    assert _places(_findings(tmp_path, ".")) == [("losses.py", 16, 12, "AMP003")]
    assert _places(_findings(tmp_path, "train.py")) == []  # the named file's calls: the body speaks for them


def test_renaming_the_helpers_changes_nothing(tmp_path: Path) -> None:
    renamed = {"kl_weight": "weight_at", "kl_balance": "balance", "kl_fused": "fused", "gaussian_nll": "gauss"}
    train, losses = TRAIN, LOSSES
    for old, new in renamed.items():
        train, losses = train.replace(old, new), losses.replace(old, new)
    _project(tmp_path, {"train.py": train, "losses.py": losses})
    assert _places(_findings(tmp_path, ".")) == [("losses.py", 16, 12, "AMP003")]


def test_a_body_that_loses_range_through_its_helper_leaves_the_call_reported(tmp_path: Path) -> None:
    _project(tmp_path, {"train.py": CDF_TRAIN, "likelihoods.py": CDF_HELPERS})
    [finding] = _findings(tmp_path, ".")
    assert _places([finding]) == [("train.py", 9, 27, "AMP003")]
    # `y` is the step's parameter, the caller's data (float32 there, as its region reads it): not listed.
    assert "not cast to float32: `mu`, `scale.exp()`;" in str(finding["message"])


def test_the_message_lists_tensors_only(tmp_path: Path) -> None:
    """Single-file mode cannot see the body, so the call is reported; its inputs leave out the literals."""
    (tmp_path / "train.py").write_text(TRAIN)
    [balance] = [f for f in _findings(tmp_path, "--no-project", "train.py") if f["line"] == 10]
    assert balance["column"] == 17
    assert "not cast to float32: `[mu.sum(), log_std.sum()]`;" in str(balance["message"])


PROB_TRAIN = '''\
import torch

from critics import nll


def step(policy, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return nll(policy, h, y)
'''
PROB_CRITICS = '''\
import torch

from densities import to_probs


def nll(module, feats, target):
    p = to_probs(module(feats))
    logp = torch.log(p + 1e-10)
    return -logp.mean()
'''
PROB_DENSITIES = '''\
import torch


def to_probs(out):
    return torch.softmax(out, dim=-1)
'''


def test_a_body_computing_on_another_files_probabilities_reports_them_itself(tmp_path: Path) -> None:
    """Its summary counts no site (its file alone cannot tell `p` holds probabilities), but it is judged with
    `to_probs` known as probabilities: the log and the floor are reported there, and the call is not."""
    _project(tmp_path, {"train.py": PROB_TRAIN, "critics.py": PROB_CRITICS, "densities.py": PROB_DENSITIES})
    assert _places(_findings(tmp_path, ".")) == [("critics.py", 8, 12, "AMP003"), ("critics.py", 8, 26, "AMP004")]


def test_a_body_that_casts_those_probabilities_leaves_nothing(tmp_path: Path) -> None:
    cast = PROB_CRITICS.replace("    logp = torch.log(p + 1e-10)\n", '''\
    p = p.float()
    with torch.autocast("cpu", enabled=False):
        logp = torch.log(p + 1e-10)
''')
    _project(tmp_path, {"train.py": PROB_TRAIN, "critics.py": cast, "densities.py": PROB_DENSITIES})
    assert _places(_findings(tmp_path, ".")) == []


CHAIN = "import torch\n\n\ndef gaussian_likelihood(values, means, scales):\n" \
    + "    return relay1((values - means) / scales)\n" \
    + "".join(f"\n\ndef relay{n}(z):\n    return relay{n + 1}(z) * 0.5\n" for n in range(1, 5)) \
    + "\n\ndef relay5(z):\n    return z * 0.5\n"


def test_a_density_whose_helpers_never_lose_range_at_any_depth_is_not_reported(tmp_path: Path) -> None:
    """Five helpers deep, none with an op float16 can push out of range: no depth cuts the search (past four
    it once assumed one, and the call was reported)."""
    _project(tmp_path, {"train.py": CDF_TRAIN, "likelihoods.py": CHAIN})
    assert _places(_findings(tmp_path, ".")) == []
    _project(tmp_path, {"likelihoods.py": CHAIN.replace("return z * 0.5", "return torch.erfc(z)")})
    assert _places(_findings(tmp_path, ".")) == [("train.py", 9, 27, "AMP003")]
