"""The value flow never ends a run with a RecursionError (`Flow._guarded`).

`MAX_HOPS` counts only parameter-to-caller steps. A chain of names, calls and
attributes can outgrow Python's stack before it: a cold project run on
25,000 files of real code (`benchmarks/large.py`) ended after eight minutes
in a RecursionError traceback, with no findings at all. The question nearest
the limit now answers nothing, unsure, and the run goes on, saying that it cut
something (`budget.STACK_CUT`), from the cache too.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from amplint.project.budget import STACK_CUT

HEAD = '''\
import torch
from torch import nn
from torch.distributions import Normal


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, h):
        loc, raw = self.lin(h).chunk(2, dim=-1)
        return Normal(loc, raw.exp()).log_prob(h[:, :2]).mean()


def step(model, h):
    m0 = model
'''


def _project(root: Path, links: int) -> None:
    chain = "".join(f"    m{i + 1} = m{i}\n" for i in range(links))
    (root / "run.py").write_text(HEAD + chain + f'''\
    with torch.autocast("cpu", dtype=torch.float16):
        return m{links}(h)


def main():
    return step(Head(), torch.randn(8, 4))
''')


@pytest.mark.parametrize("links,found", [(20, True), (600, False)])
def test_a_chain_of_names_is_followed_until_the_stack_runs_short(tmp_path: Path, links: int, found: bool) -> None:
    """20 names deep the head's `log_prob` is reached; 600 deep the question is cut, and the run still ends
    with its report, not a traceback, and says that it cut something; a second run, from the cache, too."""
    _project(tmp_path, links)
    env = {**os.environ, "AMPLINT_CACHE_DIR": str(tmp_path / "cache"), "AMPLINT_NO_CACHE": ""}
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "amplint", "check", "."], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path, env=env)
        assert "Traceback" not in done.stderr and done.returncode == (1 if found else 0), done.stderr[-2000:]
        assert ("run.py:13:16: AMP001" in done.stdout) is found, done.stdout
        assert done.stderr == ("" if found else f".: warning: {STACK_CUT}\n")
