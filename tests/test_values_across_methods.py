"""Values that cross a method boundary the call graph does not show, each project run for real under CPU autocast.

- Probabilities one method stores on `self` and another logs (`self.p = to_probs(net(x))` in `observe`,
  `torch.log(self.p + 1e-10)` in `score`): the summary of `score` sees no probabilities, since the helper's
  result counts only once the project resolves it, so the walk enters a method whose class calls such a
  helper (`walk.stores_probabilities`), and the judge reads the attribute's assignments across the class.
- A distribution a wrapper hands on (`return self.inner(h)` in `Shell.forward`): the wrapper's summary returns
  no distribution of its own, so the project follows the call whose value it returns to the head that builds
  one (`returnflow.returned`), and the finding names that constructor, which `--fix` casts.

- A metric updated through torchmetrics' `MetricCollection` (`self.val_metrics.update(probs, y)`): the
  collection's calls run every member's (`flow.Fanout`), so the walk enters `CategoricalNLL.update`.

Each project runs as a script: the float16 version gives non-finite values, the cast one does not, and amplint
reports exactly the first.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from amplint.config import Config
from amplint.fix.apply import fix_paths
from amplint.project.run import run_project

pytestmark = pytest.mark.torch

STORED = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/densities.py": "import torch\n\n\ndef probabilities(out):\n    return torch.sigmoid(out)\n",
    "pkg/objectives.py": '''\
import torch

from .densities import probabilities


class Scorer:
    def observe(self, net, feats):
        p = probabilities({feats})
        self.p = p

    def score(self):
        return -torch.log(self.p + 1e-10).mean(-1)
''',
    "train.py": '''\
import torch
from torch import nn

from pkg.objectives import Scorer


def step(net, x):
    with torch.autocast("cpu", dtype=torch.float16):
        scorer = Scorer()
        scorer.observe(net, x)
        return scorer.score()


if __name__ == "__main__":
    net = nn.Linear(4, 8)
    with torch.no_grad():
        net.weight.copy_(torch.linspace(-30, 30, 32).reshape(8, 4))
        net.bias.zero_()
    out = step(net, torch.ones(16, 4))
    print(int((~torch.isfinite(out)).sum()))
''',
}

HANDED_ON = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/heads.py": '''\
import torch
from torch import nn
from torch.distributions import Normal


class PolicyHead(nn.Module):
    def __init__(self, d_in, k):
        super().__init__()
        self.lin = nn.Linear(d_in, 2 * k)

    def forward(self, h):
        loc, raw = self.lin(h).chunk(2, dim=-1)
        return Normal({loc}, {scale}), loc
''',
    "pkg/wrappers.py": '''\
from torch import nn


class Shell(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, h):
{forward}
''',
    "pkg/objectives.py": "def nll(model, h, y):\n    d = {read}\n    return -d.log_prob(y)\n",
    "train.py": '''\
import torch

from pkg.heads import PolicyHead
from pkg.objectives import nll
from pkg.wrappers import Shell


def step(model, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return nll(model, h, y)


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Shell(PolicyHead(4, 2))
    with torch.no_grad():
        model.inner.lin.bias[2:] = -9.0
    out = step(model, torch.randn(64, 4), torch.randn(64, 2) * 3)
    print(int((~torch.isfinite(out)).sum()))
''',
}


def write(root: Path, files: Dict[str, str], **fill: str) -> Path:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.format(**fill) if fill and "{" in text else text)
    return root


def findings(root: Path) -> List[Tuple[str, int, int, str]]:
    results = run_project([str(root)], Config(), use_cache=False).results
    return sorted((Path(f.path).relative_to(root).as_posix(), f.line, f.column, f.code)
                  for r in results for f in r.findings)


def nonfinite(root: Path) -> int:
    done = subprocess.run([sys.executable, "train.py"], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_probabilities_stored_on_self_by_another_method(tmp_path: Path) -> None:
    root = write(tmp_path / "float16", STORED, feats="net(feats)")
    assert findings(root) == [("pkg/objectives.py", 12, 17, "AMP003"), ("pkg/objectives.py", 12, 36, "AMP004")]
    assert nonfinite(root) > 0


def test_probabilities_stored_from_a_cast_input_are_float32(tmp_path: Path) -> None:
    root = write(tmp_path / "cast", STORED, feats="net(feats).float()")
    assert findings(root) == []
    assert nonfinite(root) == 0


WRAPPERS = {  # Shell.forward's body, and how `nll` reads the distribution from what the model returns
    "returns the inner call": ("        return self.inner(h)", "model(h)[0]"),
    "returns an element of it": ("        return self.inner(h)[0]", "model(h)"),
    "returns a local bound to it": ("        out = self.inner(h)\n        return out", "model(h)[0]"),
}


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_a_distribution_a_wrapper_hands_on(tmp_path: Path, wrapper: str) -> None:
    forward, read = WRAPPERS[wrapper]
    root = write(tmp_path / "float16", HANDED_ON, forward=forward, read=read, loc="loc", scale="raw.exp()")
    results = run_project([str(root)], Config(), use_cache=False).results
    [finding] = [f for r in results for f in r.findings]
    assert (Path(finding.path).relative_to(root).as_posix(), finding.line, finding.column, finding.code) == (
        "pkg/objectives.py", 3, 13, "AMP001")
    assert "(the distribution is built in `PolicyHead.forward` at pkg/heads.py:13)" in finding.message
    assert nonfinite(root) > 0
    fix_paths([str(root)], Config())
    assert "return Normal(loc.float(), raw.float().exp()), loc" in (root / "pkg/heads.py").read_text()
    assert findings(root) == []
    assert nonfinite(root) == 0


@pytest.mark.parametrize("wrapper", list(WRAPPERS))
def test_a_cast_distribution_a_wrapper_hands_on_is_float32(tmp_path: Path, wrapper: str) -> None:
    forward, read = WRAPPERS[wrapper]
    root = write(tmp_path / "cast", HANDED_ON, forward=forward, read=read, loc="loc.float()",
                 scale="raw.exp().float()")
    assert findings(root) == []
    assert nonfinite(root) == 0


FANNED_OUT = {
    "pyproject.toml": "",
    "pkg/__init__.py": "",
    "pkg/metrics.py": '''\
import torch
import torch.nn.functional as F
from torchmetrics import Metric


class CategoricalNLL(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("total", default=torch.tensor(0.0), dist_reduce_fx="sum")

    def update(self, probs, target):
        self.total += F.nll_loss(torch.log(probs), target, reduction="sum")

    def compute(self):
        return self.total
''',
    "train.py": '''\
import torch
from torch import nn
from torchmetrics import MetricCollection

from pkg.metrics import CategoricalNLL


class Routine:
    def __init__(self):
        metrics = {{"nll": CategoricalNLL()}}
        collection = MetricCollection(metrics)
        self.val_metrics = collection.clone(prefix="val/")

    def validation_step(self, net, x, y):
        with torch.autocast("cpu", dtype=torch.float16):
            probs = torch.softmax({logits}, dim=-1)
            self.val_metrics.update(probs, y)
        return self.val_metrics.compute()


if __name__ == "__main__":
    net = nn.Linear(4, 8)
    with torch.no_grad():
        net.weight.zero_()
        net.bias.copy_(torch.linspace(0, -40, 8))
    values = Routine().validation_step(net, torch.ones(16, 4), torch.full((16,), 7))
    print(sum(int((~torch.isfinite(v)).sum()) for v in values.values()))
''',
}


@pytest.mark.parametrize("logits, reported", [("net(x)", True), ("net(x).float()", False)])
def test_a_metric_updated_through_a_metric_collection(tmp_path: Path, logits: str, reported: bool) -> None:
    pytest.importorskip("torchmetrics")
    root = write(tmp_path / "project", FANNED_OUT, logits=logits)
    assert findings(root) == ([("pkg/metrics.py", 12, 34, "AMP003")] if reported else [])
    assert (nonfinite(root) > 0) is reported
