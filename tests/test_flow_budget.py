"""The value flow's work bound (`project.budget`): a pass that reaches it is cut between two steps of fixed
order, the same way every run, and every front end says so.

The project is a chain: the region hands the model down 60 functions, one file each, and the last builds a
Normal from what the model returns. Following the model's class back up the chain costs a few units per function,
so a bound of one unit per file (500 in all: a project under `MIN_FILES` counts as that many) stops the walk
in the last function, and the finding there is missing; two units per file find it.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from amplint.config import Config
from amplint.configfile import ConfigError, parse_table
from amplint.project.budget import MIN_FILES, FlowBudget
from amplint.project.memo import Doubts, Memo
from amplint.project.run import run_project

STEPS = 60
MODELS = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(8, 8)
        self.sigma = nn.Linear(8, 8)

    def forward(self, x):
        return self.mu(x), torch.sigmoid(self.sigma(x)) * 1e-3
'''
TRAIN = '''import torch
from models import Net
from step0 import step0


def train():
    model = Net()
    x = torch.randn(4, 8)
    with torch.autocast("cpu", dtype=torch.float16):
        return step0(model, x)
'''
STEP = '''from step{after} import step{after}


def step{number}(model, x):
    return step{after}(model, x)
'''
LAST = '''import torch


def step{number}(model, x):
    mu, sigma = model(x)
    return torch.distributions.Normal(mu, sigma).log_prob(x).mean()
'''
CUT = ("warning: project analysis stopped at its work bound (flow-budget = 1 unit per file checked, 500 in all) "
       "after entering 60 functions reached from float16 regions; 1 more was not entered, and findings in it or "
       "in what it calls may be missing; raise flow-budget (0: no bound) to follow them")
FOUND = "step60.py:6:12: AMP001"


@pytest.fixture
def chain(tmp_path: Path) -> Path:
    root = tmp_path / "chain"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "chain"\n')
    (root / "models.py").write_text(MODELS)
    (root / "train.py").write_text(TRAIN)
    for number in range(STEPS):
        (root / f"step{number}.py").write_text(STEP.format(number=number, after=number + 1))
    (root / f"step{STEPS}.py").write_text(LAST.format(number=STEPS))
    return root


def amplint(root: Path, *args: str, seed: str = "0") -> subprocess.CompletedProcess:
    env = dict(os.environ, AMPLINT_NO_CACHE="1", PYTHONHASHSEED=seed)
    return subprocess.run([sys.executable, "-m", "amplint", "check", ".", *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_walk_stops_at_its_bound_and_says_so(chain: Path) -> None:
    cut = amplint(chain, "--flow-budget", "1")
    assert cut.stderr == f".: {CUT}\n"
    assert cut.stdout == "Found 0 findings.\n" and cut.returncode == 0  # a notice is no finding and no error
    found = amplint(chain, "--flow-budget", "2")
    assert found.stderr == "" and found.returncode == 1
    assert found.stdout.startswith(FOUND)
    assert amplint(chain).stdout.startswith(FOUND)  # the default bound is far above this project's need
    assert amplint(chain, "--flow-budget", "0").stdout.startswith(FOUND)  # 0: no bound


def test_a_cut_run_gives_the_same_output_whatever_the_hash_seed(chain: Path) -> None:
    runs = [amplint(chain, "--flow-budget", "1", "--format", "json", seed=seed) for seed in ("0", "1", "2", "3")]
    assert {(run.stdout, run.stderr) for run in runs} == {("[]\n", f".: {CUT}\n")}


def test_a_pass_after_another_is_cut_as_a_serial_run_cuts_it(chain: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a pool, the walk runs in speculative passes (`project.ahead`), each keeping the sure answers of the
    one before: charged only for what it computed, the last pass would spend less than a serial run and go
    further. An answer read from memory is charged what computing it cost, with the answers it read, once per
    pass. Two passes are forced here, as a pool gives them on a larger project: the first speculative (it keeps
    what each answer cost), the last not."""
    from amplint.project import run as project_run

    monkeypatch.chdir(chain)
    config = Config(flow_budget=1, jobs=1)
    serial = run_project(["."], config, use_cache=False)

    def two_passes(loader, make_pass):  # a speculative pass, the summaries it lacked, then the last pass
        loader.speculate(True)
        make_pass()
        wanted = loader.speculate(False)
        assert wanted  # it lacked some, so only its sure answers are kept
        for path in wanted:
            loader.summary(path)
        return make_pass()

    monkeypatch.setattr(project_run, "walk_in_waves", two_passes)
    twice = run_project(["."], config, use_cache=False)
    assert [str(n) for n in serial.notices] == [str(n) for n in twice.notices] == [f".: {CUT}"]
    assert serial.entries == twice.entries
    assert [(r.path, r.findings) for r in serial.results] == [(r.path, r.findings) for r in twice.results]
    assert serial.stats.walk_work == twice.stats.walk_work


def test_a_warm_run_says_where_the_cold_one_stopped(chain: Path, tmp_path: Path) -> None:
    """The cut is part of the cached solution (`project.solution`): a run that walks nothing still says it."""
    config = Config(flow_budget=1, jobs=1)
    cold = run_project([str(chain)], config, cache_dir=str(tmp_path / "cache"))
    warm = run_project([str(chain)], config, cache_dir=str(tmp_path / "cache"))
    assert warm.stats.solution_cached and warm.stats.walk_work == 0
    assert [n.message for n in warm.notices] == [n.message for n in cold.notices] == [CUT.split(": ", 1)[1]]
    assert warm.entries == cold.entries


def test_fix_says_it_too_and_fixes_what_the_cut_run_found(chain: Path) -> None:
    fixed = amplint(chain, "--flow-budget", "1", "--fix")
    assert fixed.stderr.splitlines()[0] == f".: {CUT}"
    assert (chain / f"step{STEPS}.py").read_text() == LAST.format(number=STEPS)  # nothing found: unchanged
    fixed = amplint(chain, "--fix")
    assert fixed.stderr == "" and "Normal(mu.float(), sigma.float()).log_prob(x.float())" in (
        chain / f"step{STEPS}.py").read_text()


def test_sarif_and_github_carry_the_notice(chain: Path) -> None:
    sarif = json.loads(amplint(chain, "--flow-budget", "1", "--format", "sarif").stdout)
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation["toolExecutionNotifications"] == [{
        "level": "warning", "message": {"text": CUT.removeprefix("warning: ")},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": ".", "uriBaseId": "%SRCROOT%"}}}],
    }]
    github = amplint(chain, "--flow-budget", "1", "--format", "github")
    assert github.stdout == f"::warning title=amplint::.: {CUT.removeprefix('warning: ')}\n"


def test_the_bound_is_read_from_the_configuration(chain: Path) -> None:
    with (chain / "pyproject.toml").open("a") as handle:
        handle.write("\n[tool.amplint]\nflow-budget = 1\n")
    assert amplint(chain).stderr == f".: {CUT}\n"
    assert amplint(chain, "--flow-budget", "2").stderr == ""  # the command line wins
    assert isinstance(parse_table({"flow-budget": -1}, "pyproject.toml"), ConfigError)
    assert isinstance(parse_table({"flow-budget": "many"}, "pyproject.toml"), ConfigError)
    bad = amplint(chain, "--flow-budget", "x")
    assert bad.returncode == 2 and "expected a non-negative number of work units, got 'x'" in bad.stderr


def test_verify_says_it_too(chain: Path) -> None:
    pytest.importorskip("torch")
    (chain / "amplint.toml").write_text("flow-budget = 1\n")
    env = dict(os.environ, AMPLINT_NO_CACHE="1")
    out = subprocess.run([sys.executable, "-m", "amplint", "verify", "."], cwd=chain, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.stderr.splitlines()[0] == f".: {CUT}"
    assert "verified 0 computation(s)" in out.stdout + out.stderr


def test_flake8_prints_the_notice_once_whatever_its_workers(chain: Path) -> None:
    (chain / "amplint.toml").write_text("flow-budget = 1\n")
    env = dict(os.environ, AMPLINT_NO_CACHE="1")
    out = subprocess.run([sys.executable, "-m", "flake8", "--select", "AMP", "-j", "2", "."], cwd=chain, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.stdout == "" and out.stderr == f"amplint: .: {CUT}\n"
    (chain / "amplint.toml").write_text("flow-budget = 2\n")
    out = subprocess.run([sys.executable, "-m", "flake8", "--select", "AMP", "."], cwd=chain, env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.stderr == "" and out.stdout.startswith("./step60.py:6:12: AMP001")


def test_the_language_server_shows_the_notice_once(chain: Path) -> None:
    pytest.importorskip("pygls")
    from lsprotocol import types

    from test_lsp import TIMEOUT, Session

    (chain / "amplint.toml").write_text("flow-budget = 1\n")
    shown: List[types.ShowMessageParams] = []
    published: Dict[str, int] = {}

    async def scenario() -> None:
        session = Session()

        @session.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            shown.append(params)

        await session.start(chain)
        try:
            for name in (f"step{STEPS}.py", "train.py"):
                uri = session.open(chain / name)
                assert await session.diagnostics(uri) == []  # cut: the last step's finding is missing
                published[name] = 1
        finally:
            await session.stop()

    asyncio.run(asyncio.wait_for(scenario(), 4 * TIMEOUT))
    assert published == {f"step{STEPS}.py": 1, "train.py": 1}
    assert [(m.type, m.message) for m in shown] == [(types.MessageType.Warning, f"amplint: {chain}: {CUT}")]


def test_the_budget_counts_only_inside_a_pass_and_small_projects_count_as_min_files() -> None:
    budget = FlowBudget(3, 10)
    assert budget.limit == 3 * MIN_FILES and FlowBudget(3, 1000).limit == 3000 and FlowBudget(0, 10).limit is None
    budget.charge(10_000)  # before a pass: seeds of nothing, contexts after the walk
    assert budget.spent == 0 and not budget.exhausted
    budget.start()
    budget.charge(1500)
    assert not budget.reached
    budget.charge()
    assert budget.reached and budget.exhausted
    budget.stop()
    assert budget.reached and not budget.exhausted  # after the pass, questions run to their answers
    budget.start()
    assert budget.spent == 0 and not budget.reached and budget.cut is None


def test_a_wide_answer_costs_its_elements_when_computed_and_when_read_in_a_later_pass() -> None:
    """An answer is held for the run, so its width is work: 77,157 methods in one answer filled memory on
    24,000 files long before a bound that counted each answer as one unit was reached."""
    budget = FlowBudget(1, 1)
    doubts = Doubts(lambda: 0, budget)
    memo: Memo = doubts.memo()
    outer: Memo = doubts.memo()
    budget.start()
    assert outer.get("join", lambda: memo.get("wide", lambda: frozenset(range(50))) | {"x"}) == {*range(50), "x"}
    assert budget.spent == (1 + 50) + (1 + 51)
    assert memo.get("point", lambda: ("a", 1)) == ("a", 1) and budget.spent == 103 + 1 + 2
    budget.start()  # a later pass: reading the join pays for it and for the wide answer it read, once
    outer.get("join", lambda: frozenset())
    memo.get("wide", lambda: frozenset())
    assert budget.spent == 103
