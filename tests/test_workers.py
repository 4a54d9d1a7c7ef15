"""Workers kept for a run (`amplint.workers`): pins, the memory stateful jobs share, and what is left to the caller.

Nothing here times anything. Each test starts real worker processes.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

from amplint import parallel
from amplint.config import Config
from amplint.project.run import run_project
from amplint.workers import Workers

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
FORK = "fork" in multiprocessing.get_all_start_methods()


def _context() -> Any:
    return multiprocessing.get_context("fork" if FORK else None)


# --- work functions (module level: they are pickled by name) --------------------------------


def double(item: int) -> int:
    return 2 * item


def whose(item: int) -> Tuple[int, int]:
    """The worker's pid, and the item doubled."""
    return os.getpid(), 2 * item


def remember(item: int, memory: Optional[dict]) -> Tuple[int, List[int]]:
    """The worker's pid and every item this worker saw so far, this one included."""
    assert memory is not None
    seen = memory.setdefault("seen", [])
    seen.append(item)
    return os.getpid(), list(seen)


def dies_on_three(item: int) -> Tuple[int, int]:
    if item == 3:
        os._exit(3)
    return os.getpid(), item


def gives_a_lambda(item: int) -> Any:
    return (lambda: item) if item == 1 else item


_GATE = multiprocessing.get_context("fork").Event() if FORK else None  # forked workers share it


def waits_for_the_gate(item: int) -> int:
    assert _GATE is not None and _GATE.wait(30)
    return item


# --- the pool itself ------------------------------------------------------------------------


def test_results_are_keyed_by_index_and_come_from_the_workers() -> None:
    with Workers(2, _context()) as pool:
        assert pool.run(double, [5, 6, 7], weights=[1, 3, 2]) == {0: 10, 1: 12, 2: 14}
        ran = pool.run(whose, [5, 6, 7])
        assert {index: doubled for index, (_, doubled) in ran.items()} == {0: 10, 1: 12, 2: 14}
        assert {pid for pid, _ in ran.values()} <= set(pool.alive) and os.getpid() not in pool.alive
        assert len(pool.alive) == 2


def test_a_pinned_job_runs_on_its_worker_and_reads_the_memory_earlier_jobs_left_there() -> None:
    with Workers(2, _context()) as pool:
        first = pool.run(remember, [1, 2, 3, 4], stateful=True)
        pins = [first[index][0] for index in range(4)]
        second = pool.run(remember, [10, 20, 30, 40], pins=pins, stateful=True)
        for index, (item, pin) in enumerate(zip([1, 2, 3, 4], pins)):
            pid, seen = second[index]
            assert pid == pin
            assert item in seen and seen[-1] == (index + 1) * 10  # the earlier batch's item is still there


def test_a_dead_worker_loses_its_item_and_its_pins_and_the_other_goes_on() -> None:
    with Workers(2, _context()) as pool:
        survivor = pool.alive[0]
        victim = pool.alive[1]
        # The victim gets item 3 (and dies); item 4 is pinned to it; the rest go to the survivor.
        ran = pool.run(dies_on_three, [0, 3, 4, 5, 6], pins=[survivor, victim, victim, None, None])
        assert set(ran) == {0, 3, 4}
        assert all(pid == survivor for pid, _ in ran.values())
        assert pool.alive == [survivor]
        assert pool.run(double, [1, 2]) == {0: 2, 1: 4}


def test_an_item_or_a_result_that_cannot_be_pickled_is_left_to_the_caller() -> None:
    with Workers(1, _context()) as pool:
        assert pool.run(double, [1, lambda: 0, 3]) == {0: 2, 2: 6}
        assert pool.run(gives_a_lambda, [0, 1, 2]) == {0: 0, 2: 2}
        assert len(pool.alive) == 1  # neither ended the worker


def test_a_pin_naming_no_worker_is_left_to_the_caller() -> None:
    with Workers(1, _context()) as pool:
        assert pool.run(double, [1, 2], pins=[None, -1]) == {0: 2}


def test_with_steal_an_idle_worker_takes_the_smallest_item_pinned_to_the_busiest() -> None:
    with Workers(2, _context()) as pool:
        owner, idle = pool.alive
        weights = [5, 1, 4, 2, 3]
        strict = pool.run(whose, [0, 1, 2, 3, 4], weights=weights, pins=[owner] * 5)
        assert {pid for pid, _ in strict.values()} == {owner}  # a pin is a rule without `steal`
        shared = pool.run(whose, [0, 1, 2, 3, 4], weights=weights, pins=[owner] * 5, steal=True)
        assert {index: doubled for index, (_, doubled) in shared.items()} == {i: 2 * i for i in range(5)}
        # The owner starts on its largest item; the idle worker takes the smallest one at once.
        assert shared[0][0] == owner and shared[1][0] == idle


def test_with_steal_an_item_pinned_to_no_worker_runs_in_the_pool() -> None:
    with Workers(1, _context()) as pool:
        assert pool.run(double, [1, 2], pins=[None, -1], steal=True) == {0: 2, 1: 4}


# --- jobs started ahead of their batch ------------------------------------------------------


def test_a_job_started_ahead_runs_once_and_the_batch_that_asks_for_it_takes_its_result() -> None:
    with Workers(2, _context()) as pool:
        owner = pool.alive[0]
        assert pool.start(remember, 7, stateful=True, pin=owner)
        # 8 is pinned behind 7: the owner's memory shows 7 once, so the batch did not send it again.
        assert pool.run(remember, [7, 8], pins=[None, owner], stateful=True) == {0: (owner, [7]), 1: (owner, [7, 8])}


def test_a_job_started_ahead_that_came_back_before_its_batch_answers_it_at_once() -> None:
    with Workers(2, _context()) as pool:
        owner = pool.alive[0]
        assert pool.start(remember, 7, stateful=True, pin=owner)
        pool.collect()
        assert all(worker.job is None for worker in pool._workers.values())
        assert pool.run(remember, [7], stateful=True) == {0: (owner, [7])}
        assert pool.run(remember, [9], pins=[owner], stateful=True) == {0: (owner, [7, 9])}


def test_a_started_job_no_batch_asked_for_is_forgotten_by_settle() -> None:
    with Workers(2, _context()) as pool:
        owner, other = pool.alive
        assert pool.start(remember, 7, stateful=True, pin=owner)
        assert pool.run(remember, [8], pins=[other], stateful=True) == {0: (other, [8])}
        pool.settle()
        assert pool.run(remember, [7], pins=[owner], stateful=True) == {0: (owner, [7, 7])}  # run again


def test_a_started_job_of_another_function_or_item_answers_nothing_else() -> None:
    with Workers(1, _context()) as pool:
        assert pool.start(double, 3)
        assert pool.run(whose, [3])[0][1] == 6 and pool.run(double, [4]) == {0: 8}
        assert pool.run(double, [3]) == {0: 6}  # still there for a batch of its own function and item


@pytest.mark.skipif(not FORK, reason="the gate is shared through fork")
def test_a_job_starts_ahead_only_on_an_idle_worker() -> None:
    assert _GATE is not None
    _GATE.clear()
    with Workers(1, _context()) as pool:
        assert pool.start(waits_for_the_gate, 1)
        assert not pool.start(waits_for_the_gate, 2)  # the only worker waits at the gate
        _GATE.set()
        assert pool.run(waits_for_the_gate, [2, 1]) == {0: 2, 1: 1}


def test_a_started_job_whose_worker_dies_is_left_to_the_caller() -> None:
    with Workers(2, _context()) as pool:
        survivor, victim = pool.alive
        assert pool.start(dies_on_three, 3, pin=victim)
        ran = pool.run(dies_on_three, [3, 5])
        assert ran == {1: (survivor, 5)} and pool.alive == [survivor]


def test_close_ends_the_workers_and_so_does_dropping_the_pool() -> None:
    pool = Workers(2, _context())
    processes = [worker.process for worker in pool._workers.values()]
    pool.close()
    assert pool.alive == [] and not any(process.is_alive() for process in processes)
    pool = Workers(1, _context())
    processes = [worker.process for worker in pool._workers.values()]
    del pool
    gc.collect()
    assert not any(process.is_alive() for process in processes)


def test_a_stateful_job_run_here_gets_no_memory(forced: None) -> None:
    with pytest.raises(AssertionError):  # `remember` insists on a memory: run here, it has None
        parallel.run_map(remember, [1], jobs=1, stateful=True)


# --- the loader's pool: a findings job reads the tree its worker kept


def test_a_pooled_project_run_parses_each_file_as_often_as_jobs_1(forced: None) -> None:
    alone = run_project([str(FIXTURES)], Config(jobs=1), use_cache=False)
    pooled = run_project([str(FIXTURES)], Config(jobs=2), use_cache=False)
    # Files entered by the walk were parsed in a worker for their summaries; their findings come from the
    # tree that worker kept, not from a second parse.
    assert sorted(pooled.stats.parsed) == sorted(alone.stats.parsed)
    assert pooled.stats.ahead
    assert [(r.path, [f.to_json() for f in r.findings], r.error) for r in pooled.results] == [
        (r.path, [f.to_json() for f in r.findings], r.error) for r in alone.results]


def test_a_findings_batch_too_small_to_pay_still_goes_to_the_workers_that_hold_the_trees(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # No forced pool: the region files pay for one, but the findings requests that follow the walk are too
    # few to pay for a parse. They cost their workers no parse, though: sent there, each reads the tree its
    # worker kept instead of being parsed again here.
    monkeypatch.delenv(parallel.FORCE_ENV, raising=False)
    alone = run_project([str(FIXTURES)], Config(jobs=1), use_cache=False)
    pooled = run_project([str(FIXTURES)], Config(jobs=2), use_cache=False)
    assert sorted(pooled.stats.parsed) == sorted(alone.stats.parsed)
    assert pooled.entries == alone.entries


# --- the run's pool: one set of workers for every pass, each keeping the CPython trees it parsed


def _parse_log(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Append the first line of every text CPython parses, here or in a worker forked later, to `log`."""
    from amplint import cpython_trees

    real = cpython_trees.python_parse

    def logged(text: str) -> Any:
        with open(log, "a") as out:
            out.write(text.splitlines()[0] + "\n")
        return real(text)

    monkeypatch.setattr(cpython_trees, "python_parse", logged)


@pytest.mark.parametrize("shared", [True, False])
def test_the_text_pass_on_the_run_pool_reads_the_trees_the_spellings_pass_parsed_there(
        forced: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, shared: bool) -> None:
    from amplint.cpython_trees import CPythonTrees
    from amplint.project.cache import DiskCache
    from amplint.project.loader import Loader
    from amplint.project.modules import ModuleIndex
    from amplint.project.spellings import project_spellings

    log = tmp_path / "parses.log"
    _parse_log(monkeypatch, log)
    project = tmp_path / "project"
    project.mkdir()
    count = parallel.FILE_CHUNK + 3  # two chunks, one a worker: when one worker is done, the other's chunk is in flight
    for index in range(count):
        (project / f"m{index:03d}.py").write_text(
            f"# {index}\nimport torch\nwith torch.autocast('cuda'):\n    loss = -d.log_prob(x)\n")
    files = sorted(str(path) for path in project.iterdir())
    pool = parallel.RunPool(2)
    try:
        trees = CPythonTrees()
        project_spellings(files, 2, trees, pool if shared else None)
        loader = Loader(files, Config(jobs=2), DiskCache(None), ModuleIndex.build(files, [str(project)]), "f",
                        trees, pool if shared else None)
        loader.scan()
        workers = pool.alive() if shared else []
    finally:
        pool.close()
    assert all(loader.info[path].single for path in files)  # the text pass wants each tree
    parsed = sorted(log.read_text().splitlines())
    once = sorted(f"# {index}" for index in range(count))
    # On one pool each file is parsed once, by its chunk's worker; a pool per pass parses each twice.
    assert parsed == (once if shared else sorted(once + once))
    assert len(workers) == (2 if shared else 0)


def test_the_run_pool_keeps_one_set_of_workers_for_every_batch() -> None:
    pool = parallel.RunPool(2)
    try:
        first = pool.workers()
        assert first is not None and len(first.alive) == 2
        pids = list(first.alive)
        assert pool.workers() is first and first.alive == pids  # later batches get the same, never a re-fork
    finally:
        pool.close()
    assert pool.alive() == [] and not first.alive


def _region_project(root: Path, count: int) -> List[str]:
    """Files the summaries read from CPython's trees: a region and a call, with no site; the comment (a word of
    hand-written math) makes each a file the walk may enter, so its summary is read up front."""
    root.mkdir()
    for index in range(count):
        (root / f"m{index:03d}.py").write_text(
            f"# {index}\nimport torch\n\n\ndef step(model, x):  # no torch.log here\n"
            "    with torch.autocast('cuda'):\n        return model(x)\n")
    return sorted(str(path) for path in root.iterdir())


def test_a_summary_job_reads_the_tree_the_text_pass_kept_in_its_workers_memory(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from amplint.cpython_trees import CPythonTrees
    from amplint.project.loader import CPYTHON, _parse_job
    from amplint.project.textpass import _scan_job

    log = tmp_path / "parses.log"
    _parse_log(monkeypatch, log)
    files = _region_project(tmp_path / "project", 3)
    memory: dict = {}  # one worker's, as `Workers` keeps it from job to job
    holder, scanned = _scan_job((files, CPythonTrees(), Config(), None), memory)
    assert holder == os.getpid() and [path for path, _ in scanned] == files
    jobs = [_parse_job((path, Config(), (), True, 10_000), memory) for path in files]
    assert [how for how, _, _ in jobs] == [CPYTHON] * 3
    # The text pass parsed each file once and kept the tree; the summary took it from the memory.
    assert log.read_text().splitlines() == ["# 0", "# 1", "# 2"]
    assert _scan_job((files, CPythonTrees(), Config(), None), None)[0] is None  # run here: no worker keeps them


def test_the_text_pass_on_the_run_pool_names_the_worker_that_keeps_each_tree(forced: None, tmp_path: Path) -> None:
    from amplint.cpython_trees import CPythonTrees
    from amplint.project.cache import DiskCache
    from amplint.project.loader import Loader
    from amplint.project.modules import ModuleIndex

    files = _region_project(tmp_path / "project", parallel.FILE_CHUNK + 3)
    modules = ModuleIndex.build(files, [str(tmp_path / "project")])
    alone = Loader(files, Config(jobs=1), DiskCache(None), modules, "f")
    alone.scan()
    pool = parallel.RunPool(2)
    try:
        pooled = Loader(files, Config(jobs=2), DiskCache(None), modules, "f", CPythonTrees(), pool)
        pooled.scan()
        pooled.prepare_summaries(pooled.region_files())
        pids = set(pool.alive())
    finally:
        pool.close()
    assert pooled.region_files() == alone.region_files() == files
    assert set(pooled._cpython_holders) == set(files) and set(pooled._cpython_holders.values()) <= pids
    assert alone._cpython_holders == {}
    assert [pooled.summary(path) for path in files] == [alone.summary(path) for path in files]


def test_a_pooled_run_whose_summaries_come_from_cpython_imports_libcst_in_no_process(tmp_path: Path) -> None:
    files = _region_project(tmp_path / "project", 40)
    script = (
        "import sys\n"
        "from amplint import parallel\n"
        "from amplint.config import Config\n"
        "from amplint.project.run import run_project\n"
        "def has_libcst(item):\n"
        "    return 'libcst' in sys.modules\n"
        "class Kept(parallel.RunPool):  # the run's pool, asked afterwards what its workers imported\n"
        "    def close(self):\n"
        "        workers = self.workers()\n"
        "        print(parallel.run_map(has_libcst, [0, 1], pool=workers, pins=list(workers.alive)))\n"
        "        super().close()\n"
        "import amplint.project.run as run\n"
        "run.RunPool = Kept\n"
        f"done = run_project([{str(tmp_path / 'project')!r}], Config(jobs=2), use_cache=False)\n"
        "print(len(done.stats.from_ast), len(done.stats.parsed), 'libcst' in sys.modules)\n"
    )
    env = dict(os.environ, AMPLINT_FORCE_POOL="1", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.stdout.splitlines() == ["[False, False]", f"{len(files)} 0 False"], done.stderr


def test_a_pooled_project_run_with_nothing_to_parse_never_imports_libcst(tmp_path: Path) -> None:
    for index in range(40):
        (tmp_path / f"m{index}.py").write_text(f"import os\n\n\ndef f(x):\n    return x + {index}\n")
    script = ("import sys; from amplint.config import Config; from amplint.project.run import run_project\n"
              f"run = run_project([{str(tmp_path)!r}], Config(jobs=2), use_cache=False)\n"
              "print(sum(len(r.findings) for r in run.results), 'libcst' in sys.modules)\n")
    env = dict(os.environ, AMPLINT_FORCE_POOL="1", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.stdout.split() == ["0", "False"], done.stderr
