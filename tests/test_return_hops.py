"""A distribution returned through wrappers, each of which may hold any of several inner modules
(`returnflow.returned`): seven levels of five wrappers picked from a registry, then five heads that build a
Laplace. Each (function, hops left) is answered once: followed path by path, the same project asked 97,656
times (5 ** 7 paths and their prefixes), and on transformers, whose `self.lm_head(h)` may run any of
thousands of modules, the run never ended."""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from amplint.config import Config
from amplint.project import returnflow
from amplint.project.run import run_project

WIDTH, LEVELS = 5, 7
HEAD = '''
class Head{j}(nn.Module):
    def __init__(self):
        super().__init__()
        self.loc = nn.Linear(4, 4)
        self.scale = nn.Linear(4, 4)

    def forward(self, h):
        return torch.distributions.Laplace(self.loc(h), torch.sigmoid(self.scale(h)) * 1e-3)
'''
WRAP = '''
class Wrap{level}_{j}(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.inner = {inner}

    def forward(self, h):
        return self.inner(h)
'''
TRAIN = '''import torch

from pkg.wrap0 import Wrap0_0


def train(kind):
    model = Wrap0_0(kind)
    x = torch.randn(8, 4)
    with torch.autocast("cpu", dtype=torch.float16):
        d = model(x)
        return -d.log_prob(x).mean()
'''


def registry(prefix: str) -> str:
    return "\nWRAPS = {" + ", ".join(f'"k{j}": {prefix}{j}' for j in range(WIDTH)) + "}\n"


@pytest.fixture
def wrappers(tmp_path: Path) -> Path:
    files: Dict[str, str] = {"pyproject.toml": "", "pkg/__init__.py": "", "train.py": TRAIN}
    files[f"pkg/wrap{LEVELS}.py"] = "import torch\nfrom torch import nn\n" + "".join(
        HEAD.format(j=j) for j in range(WIDTH)) + registry("Head")
    for level in range(LEVELS):
        inner = "INNER[kind]()" if level + 1 == LEVELS else "INNER[kind](kind)"
        header = f"from torch import nn\n\nfrom .wrap{level + 1} import WRAPS as INNER\n"
        files[f"pkg/wrap{level}.py"] = header + "".join(
            WRAP.format(level=level, j=j, inner=inner) for j in range(WIDTH)) + registry(f"Wrap{level}_")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


def test_each_function_is_asked_once_per_hop_count(wrappers: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []
    original = returnflow.returned

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        asked.append(args[2])
        return original(*args, **kwargs)

    monkeypatch.setattr(returnflow, "returned", counted)
    monkeypatch.chdir(wrappers)
    run = run_project(["."], Config(jobs=1), use_cache=False)
    (finding,) = [f for result in run.results for f in result.findings]
    assert (finding.path, finding.line, finding.column, finding.code) == ("train.py", 11, 17, "AMP001")
    assert "the distribution is built in `Head0.forward` at pkg/wrap7.py:11 and 4 other places" in finding.message
    # 156 asks: each class of a level is asked by each of the five above it, and answered from memory after
    # the first; path by path it was 97,656
    assert len(asked) < 500, len(asked)
    assert len(set(asked)) == 1 + WIDTH * LEVELS  # Wrap0_0, the five classes of levels 1 to 6, the five heads
