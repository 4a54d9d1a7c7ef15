"""The benchmark scripts run the amplint they name (`--ref`), not the one in the directory they start from.

`python -m amplint` puts its working directory first on `sys.path`, so a
comparison started from the repository's root imported the working tree's
package for the `--ref` case too, and compared a tree with itself.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from conftest import ROOT

_PATH = list(sys.path)
sys.path.insert(0, str(ROOT / "benchmarks"))
import instructions  # noqa: E402
import project_speed  # noqa: E402

sys.path[:] = _PATH  # benchmarks/profile.py must not hide the standard library's `profile` from later imports


def _fake_amplint(tmp_path: Path) -> Path:
    package = tmp_path / "ref" / "amplint"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text("print('the ref')\n")
    return package.parent


def test_project_speed_runs_the_ref_from_the_repository_root(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    probe = [sys.executable, "-c", "import amplint, sys; sys.exit(42 if 'ref' in amplint.__file__ else 0)"]
    assert project_speed.timed(probe, project_speed.amplint_env(str(_fake_amplint(tmp_path))), 60)[2] == 42
    assert project_speed.timed(probe, project_speed.amplint_env(None), 60)[2] == 0  # the installed one


def test_project_speed_starts_the_copies_of_a_pair_together(tmp_path: Path) -> None:
    """Each copy waits for a sign of the other: copies run one after the other would time out and exit 1."""
    probe = [sys.executable, "-c", (
        "import os, sys, time, pathlib\n"
        f"d = pathlib.Path({str(tmp_path)!r})\n"
        "(d / str(os.getpid())).touch()\n"
        "end = time.time() + 20\n"
        "while len(list(d.iterdir())) < 2 and time.time() < end: time.sleep(0.01)\n"
        "sys.exit(0 if len(list(d.iterdir())) == 2 else 1)\n")]
    wall, cpu, code, _ = project_speed.timed(probe, dict(os.environ), 60, copies=2)
    assert code == 0 and len(list(tmp_path.iterdir())) == 2
    assert 0 < cpu < wall  # per copy, and each mostly slept


def test_paired_ratio_takes_each_reps_own_ratio_before_the_median() -> None:
    """Each rep's ratio first (1.33, 2.14, 2.5: median 2.14), not the ratio of the medians (2.5 / 1.4 = 1.79)."""
    runs = {
        "j1": [(2.0, 2.0, 1, 0.0), (3.0, 3.2, 1, 0.0), (2.5, 2.4, 1, 0.0)],
        "j2": [(1.5, 2.5, 1, 0.0), (1.4, 4.0, 1, 0.0), (1.0, 3.0, 1, 0.0)],
    }
    assert project_speed.paired_ratio(runs, "j1", "j2", 0) == pytest.approx(3.0 / 1.4)
    assert project_speed.paired_ratio(runs, "j1", "j2", 1) == pytest.approx(0.8)  # of 0.8, 0.8, 0.8
    assert project_speed.paired_ratio(runs, "j1", "ruff", 1) is None  # no ruff in this run
    assert project_speed._per_rep(None) == ""
    assert project_speed._per_rep(2.144) == "; median of each rep's own ratio 2.14"


def test_instruction_counts_run_the_ref_from_the_repository_root(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    ref = _fake_amplint(tmp_path)
    runs = instructions.cases("fixtures/check", [str(ref)], None)
    assert [label for label, _, _ in runs] == ["amplint (working tree)", f"amplint ({ref})"]
    assert runs[0][1][-1] == str(ROOT / "fixtures" / "check")  # absolute: the runs start elsewhere
    # A shell stands in for valgrind: it drops the three valgrind options and runs the command (in the scratch dir).
    shell = ("sh", "-c", 'shift 3; exec "$@"', "sh")
    count, stdout, error = instructions.counted(runs[1][1], runs[1][2], counter=shell)
    assert (count, stdout, error) == (None, b"the ref\n", "no output")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_instruction_counts_are_counts_and_the_table_compares_outputs() -> None:
    env = dict(os.environ)
    small = instructions.counted([sys.executable, "-c", "print(1)"], env)
    large = instructions.counted([sys.executable, "-c", "print(sum(range(3_000_000)) and 1)"], env)
    assert small[0] and large[0] and large[0] > small[0] + 50_000_000  # ~30 instructions an addition at least
    text = instructions.table("x", ["a", "b"], [small, large])
    assert "| a | " in text and "| b | " in text and "| yes |" in text  # same output: `1`


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_counting_every_process_adds_each_forked_workers_own_work_once() -> None:
    """A child's loop counts only with `processes`, and a loop run before the fork counts once, not once more
    for the child (cachegrind's count for a forked child starts from its parent's)."""
    env = dict(os.environ)
    fork = "import os\npid = os.fork()\nif pid == 0:\n    {child}\n    os._exit(0)\nos.waitpid(pid, 0)\nprint(1)\n"
    in_child = [sys.executable, "-c", fork.format(child="sum(range(3_000_000))")]
    before = [sys.executable, "-c", "sum(range(3_000_000))\n" + fork.format(child="pass")]
    parent_only, every = instructions.counted(in_child, env), instructions.counted(in_child, env, processes=True)
    assert parent_only[0] and every[0] and every[0] > parent_only[0] + 50_000_000
    assert parent_only[1] == every[1] == b"1\n"
    once, alone = instructions.counted(before, env, processes=True), instructions.counted(before, env)
    assert once[0] and alone[0] and abs(once[0] - alone[0]) < 25_000_000  # the loop is not counted twice


def test_the_schedule_model_times_shared_trees_as_a_worker_would_get_them(monkeypatch) -> None:
    """A unit carrying the run's CPython trees is timed again from a pickled copy, whose memo is empty, and
    that second run is not counted in the -j 1 total."""
    from amplint.config import Config
    from amplint.cpython_trees import CPythonTrees

    assert project_speed._shares_trees((["a.py"], Config(), CPythonTrees()))
    assert not project_speed._shares_trees(("a.py", Config(), (), True, 100)) and not project_speed._shares_trees([])
    monkeypatch.setenv("AMPLINT_NO_CACHE", "1")
    found = project_speed._model(str(ROOT / "fixtures" / "reach"))
    assert found["j1"] > 0 and found["parent"] > 0 and found["j2"] == found["parent"] + found["spans"]
