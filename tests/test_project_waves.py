"""The cold project pass in a pool: the walk in waves (`amplint.project.ahead`) and the spellings change nothing.

Nothing here times anything. A run with a pool must give exactly what `-j 1`
gives; a file parsed ahead and never asked for must leave no trace (no
error reported, no parse counted); a speculative pass must record nothing
(what it wants may start in an idle worker, and counts when asked for).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Tuple

import pytest
from conftest import chain_names, write_package

from amplint import parallel
from amplint.config import Config
from amplint.files import discover
from amplint.project.cache import DiskCache
from amplint.project.loader import Loader
from amplint.project.modules import ModuleIndex
from amplint.project.reading import SUMMARY_READERS
from amplint.project.run import run_project
from amplint.project.summarize import summary_from_ast

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def _loader(root: Path, jobs: int) -> Loader:
    files, _ = discover([str(root)])
    loader = Loader(files, Config(jobs=jobs), DiskCache(None), ModuleIndex.build(files, [str(root)]), "f")
    loader.scan()
    return loader


def _as_data(results: list) -> list:
    return [(r.path, [f.to_json() for f in r.findings], r.error) for r in results]


def test_a_run_in_waves_equals_jobs_1(forced: None) -> None:
    alone = run_project([str(FIXTURES / "project")], Config(jobs=1), use_cache=False)
    assert alone.stats.waves == 0 and alone.stats.ahead == []
    pooled = run_project([str(FIXTURES / "project")], Config(jobs=2), use_cache=False)
    assert pooled.stats.waves >= 2  # one pass wanted summaries, a later one got them all
    assert pooled.stats.ahead and set(pooled.stats.ahead) <= set(pooled.stats.parsed) | set(pooled.stats.from_ast)
    assert set(pooled.stats.parsed) == set(alone.stats.parsed)
    assert set(pooled.stats.from_ast) == set(alone.stats.from_ast)
    assert pooled.entries == alone.entries
    assert _as_data(pooled.results) == _as_data(alone.results)


def test_a_pass_sends_what_it_wants_to_idle_workers_and_no_summary_goes_twice(
        forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from amplint.workers import Workers

    sent: List[str] = []  # the summary jobs this process handed to a worker, ahead or in a wave
    send = Workers._send

    def recording(self: Workers, pid: int, message: Tuple[Any, Any, bool], index: int) -> None:
        func, item, _ = message
        if func.__name__ == "_parse_job" and item[3]:
            sent.append(item[0])
        send(self, pid, message, index)

    monkeypatch.setattr(Workers, "_send", recording)
    alone = run_project([str(FIXTURES / "project")], Config(jobs=1), use_cache=False)
    pooled = run_project([str(FIXTURES / "project")], Config(jobs=2), use_cache=False)
    assert pooled.stats.started and set(pooled.stats.started) <= set(pooled.stats.ahead)
    assert len(sent) == len(set(sent)) and set(pooled.stats.ahead) <= set(sent)
    assert pooled.entries == alone.entries and _as_data(pooled.results) == _as_data(alone.results)


def test_a_speculative_pass_records_nothing_and_notes_what_it_wanted(forced: None) -> None:
    root = FIXTURES / "project"
    serial = _loader(root, 1)
    loader = _loader(root, 2)
    path = next(p for p in loader.files if p not in loader.region_files() and p in loader.info
                and summary_from_ast(Path(p).read_text(), Config()) is None)  # one LibCST must read
    loader.speculate(True)
    assert loader.summary(path) is None and loader.summary(path) is None
    assert loader.speculate(False) == [path]
    assert loader.stats.parsed == [] and loader.errors == {}
    assert loader.parse_ahead([path])
    assert loader.stats.parsed == []  # counted when asked for, not when parsed ahead
    assert loader.summary(path) == serial.summary(path)
    assert loader.stats.parsed == [path]


def test_a_file_parsed_ahead_and_never_asked_for_leaves_no_trace(forced: None, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "check" / "seed_minimal.py", tmp_path / "good.py")
    (tmp_path / "bad.py").write_text("def f(:\n    pass\n")
    loader = _loader(tmp_path, 2)
    bad = str(tmp_path / "bad.py")
    assert loader.parse_ahead([bad])
    loader.end_ahead()
    assert loader.errors == {} and loader.stats.parsed == []
    assert loader.stats.ahead == [bad] and loader.stats.ahead_unused == [bad]
    loader.speculate(True)
    assert loader.summary(bad) is None  # forgotten: a speculative pass would want it again
    assert loader.speculate(False) == [bad]


def test_the_project_spellings_read_in_a_pool_are_the_same(forced: None) -> None:
    from amplint.project.spellings import project_spellings

    files, _ = discover([str(FIXTURES)])
    alone = project_spellings(files, 1)
    assert len(alone.spellings) > 3 and alone.classes  # the fixtures define classes: their lines are kept
    assert project_spellings(files, 2) == alone


_TOPS = {  # the receiver of `quantize`: an attribute of `self`, and a local name bound to an instance
    "attribute": '''import torch
from torch import nn

from pkg.coder import Coder


class Top(nn.Module):
    def __init__(self):
        super().__init__()
        self.coder = Coder()

    def forward(self, x):
        with torch.autocast("cuda"):
            return self.coder.quantize(x)
''',
    "local": '''import torch

from pkg.coder import Coder


def run(x):
    coder = Coder()
    with torch.autocast("cuda"):
        return coder.quantize(x)
''',
}
_CALLS = {"attribute": "self.coder.quantize(x)", "local": "coder.quantize(x)"}
_DENSITY = '''from torch.distributions import {0}


class {1}:
    def quantize(self, x):
        return {0}(x, 1.0).log_prob(x)
'''


@pytest.mark.parametrize("receiver", sorted(_TOPS))
def test_a_speculative_pass_does_not_search_by_name_for_a_receiver_in_a_file_it_missed(
        forced: None, tmp_path: Path, receiver: str) -> None:
    """The receiver's class is in a file the first pass has not read: it is not known to be unknown.

    Searching `quantize` by name then would read `other.py`, which the walk never asks for once
    `coder.py` is known. The first pass wants `coder.py` alone; the second has it and resolves the call.
    """
    package = write_package(tmp_path, {"top.py": _TOPS[receiver], "coder.py": _DENSITY.format("Normal", "Coder"),
                                       "other.py": _DENSITY.format("Laplace", "Other")})
    alone = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    pooled = run_project([str(tmp_path)], Config(jobs=2), use_cache=False)
    coder, other = str(package / "coder.py"), str(package / "other.py")
    assert [(c.function, tuple(chain_names(c.chain)), c.region_file) for c in alone.entries[coder]] == [
        ("Coder.quantize", (_CALLS[receiver], "Coder.quantize"), str(package / "top.py"))]
    assert other not in alone.stats.parsed + alone.stats.from_ast
    assert pooled.stats.ahead == [coder] and pooled.stats.ahead_unused == []
    assert pooled.stats.waves == 2
    assert pooled.entries == alone.entries and _as_data(pooled.results) == _as_data(alone.results)
    assert [(f.path, f.line, f.code) for r in pooled.results for f in r.findings] == [(coder, 6, "AMP001")]


def test_the_subclass_search_has_no_cap_and_every_pass_agrees(forced: None, tmp_path: Path) -> None:
    """Thirty-two subclasses in `many.py` come first in file order; `Deep`, a subclass of `Lone` in `deep.py`,
    overrides `score`, and is still found: the search is bounded by the project's classes, not by a count.

    The first pass reads `one.py` (for `helper`) and misses `base.py`; the next ones read `Base`'s subclass lines
    and the files they name. A pass that missed a file stops its search there (`Resolver._deferred`), and the last
    pass, which has everything, gives the serial walk's answer.
    """
    package = write_package(tmp_path, {
        "base.py": "from torch import nn\nfrom torch.distributions import Normal\n\n\nclass Base(nn.Module):\n"
                   "    def score(self, x):\n        return Normal(x, 1.0).log_prob(x)\n",
        "many.py": "from pkg.base import Base\n" + "".join(
            f"\n\nclass Many{n}(Base):\n    pass\n" for n in range(32)),
        "one.py": "from pkg.base import Base\n\n\ndef helper(x):\n    return x\n\n\nclass Lone(Base):\n    pass\n",
        "deep.py": "from torch.distributions import Normal\n\nfrom pkg.one import Lone\n\n\nclass Deep(Lone):\n"
                   "    def score(self, x):\n        return Normal(x, 2.0).log_prob(x)\n",
        "top.py": "import torch\n\nfrom pkg.base import Base\nfrom pkg.one import helper\n\n\n"
                  "def run(model: Base, x):\n    with torch.autocast('cuda'):\n        return model.score(helper(x))\n",
    })
    alone = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    pooled = run_project([str(tmp_path)], Config(jobs=2), use_cache=False)
    assert pooled.stats.ahead_unused == []
    assert pooled.entries == alone.entries and _as_data(pooled.results) == _as_data(alone.results)
    assert sorted((f.path, f.line, f.code) for r in pooled.results for f in r.findings) == [
        (str(package / "base.py"), 7, "AMP001"), (str(package / "deep.py"), 8, "AMP001")]


def test_the_workers_start_with_what_reading_a_summary_imports(tmp_path: Path) -> None:
    """A project run's pool is forked with `SUMMARY_READERS` imported: the parent imports them for its own
    summaries anyway, and each worker imported them again (issue 12, nineteenth session). Checked in a fresh
    interpreter, where nothing has imported them before the run."""
    script = (
        "import json, os, sys\n"
        "from amplint import workers\n"
        "from amplint.config import Config\n"
        "from amplint.project.reading import SUMMARY_READERS\n"
        "from amplint.project.run import run_project\n"
        "serve = workers._serve\n"
        "def started(conn):\n"
        "    found = [name for name in SUMMARY_READERS if name in sys.modules]\n"
        "    with open(os.path.join(sys.argv[1], str(os.getpid())), 'w') as out:\n"
        "        json.dump(found, out)\n"
        "    serve(conn)\n"
        "workers._serve = started\n"
        "before = [name for name in SUMMARY_READERS if name in sys.modules]\n"
        "run = run_project([sys.argv[2]], Config(jobs=2), use_cache=False)\n"
        "print(json.dumps([before, sum(len(r.findings) for r in run.results)]))\n"
    )
    env = dict(os.environ, **{parallel.FORCE_ENV: "1"})
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path), str(FIXTURES / "project")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    before, findings = json.loads(done.stdout)
    alone = run_project([str(FIXTURES / "project")], Config(jobs=1), use_cache=False)
    assert before == [] and findings == sum(len(r.findings) for r in alone.results) > 0
    started = [json.loads(path.read_text()) for path in sorted(tmp_path.iterdir())]
    assert len(started) == 2 and all(found == list(SUMMARY_READERS) for found in started)
