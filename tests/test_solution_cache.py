"""The project's solution (what the walk found) is cached under a key of everything it read: a run over an
unchanged project walks nothing, and any change to a file, a config file or the configuration walks again."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

import pytest

from amplint.config import Config
from amplint.project.run import ProjectRun, run_project
from conftest import forget_answers

LOSSES = '''import torch


def nll(model, x):
    mu, log_sigma = model(x).chunk(2, dim=-1)
    return -torch.distributions.Normal(mu, log_sigma.exp()).log_prob(x[:, :1]).mean()
'''
TRAIN = '''import torch

from losses import nll


def step(model, x):
    with torch.autocast("cpu", dtype=torch.float16):
        return nll(model, x)
'''
LIGHTNING = '''import torch
import lightning.pytorch as pl


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(4, 2)

    def training_step(self, batch, batch_idx):
        mu, log_sigma = self.head(batch).chunk(2, dim=-1)
        return -torch.distributions.Normal(mu, log_sigma.exp()).log_prob(batch[:, :1]).mean()
'''


def _project(root: Path, files: Dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    return _project(tmp_path / "plain", {"losses.py": LOSSES, "train.py": TRAIN, "pyproject.toml": ""})


def _found(run: ProjectRun) -> List[tuple]:
    return [(Path(r.path).name, f.line, f.column, f.code, f.chain) for r in run.results for f in r.findings]


def _run(root: Path, cache: Path, **options: object) -> ProjectRun:
    forget_answers(cache)  # the run's answer would serve an unchanged project before the solution is asked
    return run_project([str(root)], Config(jobs=1, **options), cache_dir=str(cache))  # type: ignore[arg-type]


def test_a_warm_run_walks_nothing_and_reports_the_same(plain: Path, tmp_path: Path) -> None:
    cold = _run(plain, tmp_path / "cache")
    assert not cold.stats.solution_cached and cold.stats.walk_work > 0
    assert [found[:4] for found in _found(cold)] == [("losses.py", 6, 13, "AMP001")]
    assert [hop.name for hop in _found(cold)[0][4]] == ["nll(model, x)", "losses.nll"]
    warm = _run(plain, tmp_path / "cache")
    assert warm.stats.solution_cached and warm.stats.walk_work == 0 and warm.stats.waves == 0
    assert _found(warm) == _found(cold) and warm.entries == cold.entries and warm.notices == cold.notices


def test_an_edited_file_walks_again(plain: Path, tmp_path: Path) -> None:
    """The region is turned off in train.py: a solution kept from before would still enter `nll`."""
    assert _found(_run(plain, tmp_path / "cache"))
    train = plain / "train.py"
    train.write_text(TRAIN.replace('dtype=torch.float16)', 'dtype=torch.float16, enabled=False)'))
    edited = _run(plain, tmp_path / "cache")
    assert not edited.stats.solution_cached and _found(edited) == []
    assert _found(_run(plain, tmp_path / "cache")) == []  # and that is what is kept now


def test_a_new_file_walks_again(plain: Path, tmp_path: Path) -> None:
    assert len(_found(_run(plain, tmp_path / "cache"))) == 1
    (plain / "more.py").write_text(TRAIN.replace("def step", "def other_step"))
    again = _run(plain, tmp_path / "cache")
    assert not again.stats.solution_cached
    # `nll` is entered once, by the first region in file order: now more.py's (a kept solution: train.py's)
    assert [Path(found[4][0].path).name for found in _found(again)] == ["more.py"]


def test_another_configuration_walks_again(plain: Path, tmp_path: Path) -> None:
    first = _run(plain, tmp_path / "cache")
    unbounded = _run(plain, tmp_path / "cache", flow_budget=0)
    assert not unbounded.stats.solution_cached and _found(unbounded) == _found(first)
    assert _run(plain, tmp_path / "cache", flow_budget=0).stats.solution_cached
    assert _run(plain, tmp_path / "cache").stats.solution_cached  # the first is still there


def test_an_edited_config_file_walks_again(tmp_path: Path) -> None:
    """Lightning's precision is read from `configs/trainer.yaml`: a config file is part of the key too."""
    root = _project(tmp_path / "lit", {
        "model.py": LIGHTNING, "configs/trainer.yaml": "trainer:\n  precision: 16-mixed\n", "pyproject.toml": ""})
    first = _run(root, tmp_path / "cache")
    assert [(name, line, code) for name, line, _, code, _ in _found(first)] == [("model.py", 12, "AMP001")]
    (root / "configs" / "trainer.yaml").write_text("trainer:\n  precision: 32\n")
    changed = _run(root, tmp_path / "cache")
    assert not changed.stats.solution_cached and _found(changed) == []


def test_a_file_found_broken_on_the_way_is_still_reported(plain: Path, tmp_path: Path) -> None:
    """The walk parses `helpers.py` to follow the region's call: its error is part of the solution."""
    (plain / "helpers.py").write_text("def help(model, x)\n    return model(x)\n")
    train = plain / "train.py"
    train.write_text(TRAIN.replace("from losses import nll", "from helpers import help\nfrom losses import nll")
                     .replace("return nll(model, x)", "return nll(model, x) + help(model, x)"))
    cold = _run(plain, tmp_path / "cache")
    warm = _run(plain, tmp_path / "cache")
    assert warm.stats.solution_cached
    errors = [(Path(r.path).name, r.error.message) for run in (cold, warm) for r in run.results if r.error]
    assert len(errors) == 2 and errors[0] == errors[1] and errors[0][0] == "helpers.py"


def test_a_damaged_solution_is_a_miss(plain: Path, tmp_path: Path) -> None:
    cold = _run(plain, tmp_path / "cache")
    entries = list((tmp_path / "cache" / "solution").rglob("*.json"))
    assert len(entries) == 1
    document = json.loads(entries[0].read_text())
    document["value"]["p"][0] = {"t": ["not a dict of entries"]}
    entries[0].write_text(json.dumps(document))
    again = _run(plain, tmp_path / "cache")
    assert not again.stats.solution_cached and _found(again) == _found(cold)


def test_one_file_in_its_project_warm(plain: Path, tmp_path: Path) -> None:
    """`amplint check FILE` (a run that reports one file) reads the solution the whole run kept, and the other
    way round."""
    losses = str(plain / "losses.py")
    whole = _run(plain, tmp_path / "cache")
    one = run_project([str(plain)], Config(jobs=1), cache_dir=str(tmp_path / "cache"), report={losses})
    assert one.stats.solution_cached and _found(one) == _found(whole)
    alone = run_project([str(plain)], Config(jobs=1), cache_dir=str(tmp_path / "other"), report={losses})
    assert not alone.stats.solution_cached and _found(alone) == _found(whole)
    assert _run(plain, tmp_path / "other").stats.solution_cached
