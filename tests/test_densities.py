"""AMP003/AMP004 across files: the `fixtures/densities` project, its exact findings, and its fix run with torch.

The regions are in `train.py`; the hand-written math is in `dens/`. The test
copies the project, runs `--fix`, and executes the helpers before and after on
CPU float16 autocast with logits out of a Linear head, as `train.py` feeds them.
"""
from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path
from typing import Iterator, List

import pytest

from amplint.config import Config
from amplint.engine import check_paths
from conftest import FIXTURES, expected_lines

PROJECT = FIXTURES / "densities"


def _render(root: Path, config: Config = Config()) -> List[str]:
    results = check_paths([str(root)], config)
    assert [r.error for r in results if r.error is not None] == []
    return [f"{os.path.relpath(f.path, root).replace(os.sep, '/')}:{f.line}:{f.column} {f.code}"
            for r in results for f in r.findings]


def test_findings_are_exact_and_reached_from_train_py(tmp_path: Path) -> None:
    assert _render(PROJECT) == expected_lines(PROJECT / "expected")
    results = check_paths([str(PROJECT)], Config())
    flow = next(f for r in results for f in r.findings if f.path.endswith("flow.py"))
    assert flow.message.startswith("a Gaussian log-density written out runs under float16 autocast")
    chain = "reached from autocast region at train.py:12 via flow_nll(head(z), logdet) (train.py:17:27) → flow.flow_nll"
    assert flow.message.split("; risk")[0].endswith(chain)
    assert not flow.fixable  # its terms may be Python numbers: left to the user, with the reason


def test_single_file_mode_reports_the_density_calls_it_cannot_see_into() -> None:
    """Checked file by file (`--no-project`), the helpers hold no region and report nothing; train.py cannot
    see their bodies, so it reports each call of a density-named project helper with float16 arguments."""
    assert _render(PROJECT, Config(project=False)) == [
        "train.py:16:25 AMP003", "train.py:17:27 AMP003", "train.py:19:27 AMP003", "train.py:20:27 AMP003",
    ]
    assert _render(PROJECT / "dens", Config(project=False)) == []


@pytest.fixture
def fixed_copy(tmp_path: Path) -> Iterator[Path]:
    from amplint.fix.apply import fix_paths

    root = tmp_path / "densities"
    shutil.copytree(PROJECT, root)
    run = fix_paths([str(root)], Config(strategy="cast"))
    assert sum(fix.fixed_count for fix in run.fixes) == 6  # all but the written-out Gaussian
    yield root


def _load(root: Path, module: str):
    sys.path.insert(0, str(root))
    try:
        for name in [n for n in sys.modules if n == "dens" or n.startswith("dens.")]:
            del sys.modules[name]
        return importlib.import_module(module)
    finally:
        sys.path.remove(str(root))


@pytest.mark.torch
def test_fixed_helpers_are_finite_where_the_original_ones_are_not(fixed_copy: Path) -> None:
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    h = torch.rand(512, 16, generator=generator) * 60.0 - 30.0
    head = torch.nn.Linear(16, 16)
    with torch.no_grad():
        head.weight.copy_(torch.eye(16))
        head.bias.zero_()

    def run(root: Path) -> List[int]:
        classify = _load(root, "dens.classify")
        diffusion = _load(root, "dens.diffusion")
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
            logits = head(h)
            mean, log_scales = logits.chunk(2, dim=1)
            values = [classify.entropy_loss(logits), classify.diversity(logits),
                      diffusion.discretized_gaussian_log_likelihood(mean + 40.0, mean, log_scales - 20.0)]
        return [int((~torch.isfinite(v)).sum().item()) for v in values]

    before, after = run(PROJECT), run(fixed_copy)
    assert before[0] == 1 and before[2] > 0, before  # NaN entropy; -inf log-CDFs under the 1e-12 floor
    assert after == [0, 0, 0], after
    # Only the unfixable ones are left: the written-out Gaussian and KL (in log-variance form) and the calls of
    # density helpers.
    assert _render(fixed_copy) == [
        "dens/diffusion.py:8:19 AMP003", "dens/diffusion.py:18:16 AMP003", "dens/diffusion.py:19:15 AMP003",
        "dens/flow.py:8:22 AMP003", "train.py:14:18 AMP003",
    ]
