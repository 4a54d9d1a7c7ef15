"""The process pool (`amplint.parallel`), its use by check/--fix, and the progress bar (`amplint.progress`).

Nothing here times anything: the pool must give exactly the results of `-j 1`,
in input order, and survive workers that raise or die.
"""
from __future__ import annotations

import io
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Tuple

import pytest

from amplint import parallel, progress
from amplint.config import Config
from amplint.deep import TOO_DEEP
from amplint.engine import check_paths
from amplint.fix.apply import fix_paths
from amplint.project.run import run_project
from conftest import default_sigint, forget_answers

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def pools(monkeypatch: pytest.MonkeyPatch) -> List[Tuple[str, int, int]]:
    """Records (work function, items, workers) of every pool started."""
    started: List[Tuple[str, int, int]] = []
    real = parallel._pooled

    def spy(func, items, workers, *args):  # type: ignore[no-untyped-def]
        started.append((func.__name__, len(items), workers))
        return real(func, items, workers, *args)

    monkeypatch.setattr(parallel, "_pooled", spy)
    return started


# --- work functions (module level: a pool pickles them by name) -----------------------------


def square(item: int) -> int:
    time.sleep(0.02 * (item % 3))  # completion order differs from input order
    return item * item


def fails_in_workers(item: Tuple[int, int]) -> int:
    parent, value = item
    if os.getpid() != parent:
        raise RuntimeError("only in a worker")
    return value + 1


def dies_in_workers(item: Tuple[int, int]) -> int:
    parent, value = item
    if os.getpid() != parent and value == 3:
        os._exit(3)  # a dead worker: the pool is broken for every item still pending
    return value * 10


def always_fails(item: int) -> int:
    raise ValueError(f"bad item {item}")


# --- the pool decision ----------------------------------------------------------------------


def test_no_pool_for_jobs_1_a_handful_of_files_or_little_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(parallel.FORCE_ENV, raising=False)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 4)
    assert parallel.pool_size(100, jobs=1) == 0
    assert parallel.pool_size(0) == 0
    assert parallel.pool_size(1, size=10_000_000) == 0  # one file: nothing to spread
    assert parallel.pool_size(3, size=parallel.MIN_BYTES - 1) == 0  # small files: start-up would not pay
    assert parallel.pool_size(3, size=parallel.MIN_BYTES) == 3  # never more workers than files
    assert parallel.pool_size(50, size=10**6) == 4  # auto: one per usable CPU
    assert parallel.pool_size(50, jobs=0, size=10**6) == 4
    assert parallel.pool_size(50, jobs=3, size=10**6) == 3
    monkeypatch.setattr(parallel, "usable_cpus", lambda: 1)
    assert parallel.pool_size(50, size=10**6) == 0  # one CPU: a pool cannot help
    assert parallel.pool_size(50, jobs=2, size=10**6) == 2  # unless asked for


def test_forcing_the_pool_never_overrides_jobs_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(parallel.FORCE_ENV, "1")
    assert parallel.pool_size(1, jobs=2, size=1) == 2
    assert parallel.pool_size(5, jobs=1) == 0


def test_usable_cpus_respects_the_affinity_mask() -> None:
    if hasattr(os, "sched_getaffinity") and not hasattr(os, "process_cpu_count"):
        assert parallel.usable_cpus() == len(os.sched_getaffinity(0))
    assert 1 <= parallel.usable_cpus() <= (os.cpu_count() or 1)


def test_small_batches_run_in_this_process(monkeypatch: pytest.MonkeyPatch, pools: list) -> None:
    monkeypatch.delenv(parallel.FORCE_ENV, raising=False)
    assert parallel.run_map(square, [1, 2, 3], weights=[10, 10, 10]) == [1, 4, 9]
    assert parallel.run_map(square, [1, 2, 3], jobs=1) == [1, 4, 9]
    assert pools == []


# --- results: the same, in input order, whatever fails ---------------------------------------


def test_pool_results_are_the_in_process_results_in_input_order(forced: None, pools: list) -> None:
    items = list(range(12))
    weights = [item % 5 for item in items]  # handed out largest first, returned in input order
    assert parallel.run_map(square, items, jobs=2, weights=weights) == [square(i) for i in items]
    assert pools == [("square", 12, 2)]


@pytest.mark.parametrize("method", sorted({"spawn", "fork"} & set(multiprocessing.get_all_start_methods())))
def test_every_start_method_gives_the_same_results(forced: None, method: str) -> None:
    context = multiprocessing.get_context(method)
    assert parallel.run_map(square, list(range(5)), jobs=2, context=context) == [0, 1, 4, 9, 16]


def test_an_item_whose_worker_raised_is_run_again_here(forced: None) -> None:
    items = [(os.getpid(), value) for value in range(6)]
    assert parallel.run_map(fails_in_workers, items, jobs=2) == [1, 2, 3, 4, 5, 6]


def test_a_dead_worker_loses_no_result(forced: None) -> None:
    items = [(os.getpid(), value) for value in range(8)]
    assert parallel.run_map(dies_in_workers, items, jobs=2) == [value * 10 for value in range(8)]


def test_an_exception_here_too_is_raised_as_with_jobs_1(forced: None) -> None:
    with pytest.raises(ValueError, match="bad item 0"):
        parallel.run_map(always_fails, [0, 1], jobs=1)
    with pytest.raises(ValueError, match="bad item 0"):
        parallel.run_map(always_fails, [0, 1], jobs=2)


class NoPipes:
    """A multiprocessing context of a system where no worker can start."""

    def get_start_method(self) -> str:
        return "spawn"

    def Pipe(self) -> None:  # noqa: N802 (the context's own name)
        raise OSError("no semaphores here")


def test_no_pool_on_this_system_means_in_process(forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_context", NoPipes)
    assert parallel.run_map(square, [3, 4], jobs=2) == [9, 16]
    assert parallel.start_workers(2) is None


def test_a_project_run_where_no_worker_can_start_is_the_jobs_1_run(
        forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    alone = run_project([str(FIXTURES / "project")], Config(jobs=1), use_cache=False)
    monkeypatch.setattr(parallel, "_context", NoPipes)
    # Every pass asks the run's pool for its workers, gets none, and runs here.
    pooled = run_project([str(FIXTURES / "project")], Config(jobs=2), use_cache=False)
    assert _as_data(pooled.results) == _as_data(alone.results) and pooled.entries == alone.entries
    assert sorted(pooled.stats.parsed) == sorted(alone.stats.parsed) and pooled.stats.ahead == []


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
def test_ctrl_c_stops_the_workers_and_the_run(tmp_path: Path) -> None:
    # As a terminal's Ctrl-C does: SIGINT to the whole process group, while workers are busy.
    script = (
        "import time; from amplint import parallel\n"
        "try:\n"
        "    parallel.run_map(time.sleep, [60, 60, 60], jobs=2)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
    )
    env = dict(os.environ, **{parallel.FORCE_ENV: "1"})
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True, preexec_fn=default_sigint,
    )
    time.sleep(2)  # the workers are sleeping in their first item
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert out == "interrupted\n", err
    assert "Traceback" not in err  # the workers ignore SIGINT: the parent stops them


def test_cli_reports_an_interrupt_with_exit_130(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from amplint import cli

    def interrupted(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt

    monkeypatch.setattr("amplint.engine.check", interrupted)  # what `amplint check` runs
    assert cli.main(["check", str(FIXTURES / "check")]) == 130
    assert capsys.readouterr().err == "amplint: interrupted\n"


# --- check and --fix with a pool: the same as -j 1 -------------------------------------------


def _as_data(results: list) -> list:
    return [(r.path, [f.to_json() for f in r.findings], r.error) for r in results]


@pytest.mark.parametrize("project", [False, True])
def test_check_paths_with_a_pool_equals_jobs_1(forced: None, pools: list, project: bool) -> None:
    paths = [str(FIXTURES / "check"), str(FIXTURES / "project")]
    alone = check_paths(paths, Config(project=project, jobs=1))
    assert pools == []
    pooled = check_paths(paths, Config(project=project, jobs=2))
    assert pools and all(workers == 2 for _, _, workers in pools)
    assert _as_data(pooled) == _as_data(alone)
    assert any(r.findings for r in alone)


def test_project_stats_count_the_parses_a_pool_made(forced: None) -> None:
    alone = run_project([str(FIXTURES / "project")], Config(jobs=1), use_cache=False)
    pooled = run_project([str(FIXTURES / "project")], Config(jobs=2), use_cache=False)
    # A file entered by the walk was parsed in a worker for its summary; its findings job goes to that
    # worker, which reads the tree it kept (`amplint.workers`): no second parse, as with -j 1.
    assert sorted(pooled.stats.parsed) == sorted(alone.stats.parsed)
    assert pooled.entries == alone.entries


def test_the_text_pass_in_a_pool_builds_the_same_indexes(forced: None, pools: list, tmp_path: Path) -> None:
    from amplint.files import discover
    from amplint.project.cache import DiskCache
    from amplint.parallel import FILE_CHUNK
    from amplint.project.loader import Loader
    from amplint.project.modules import ModuleIndex

    shutil.copytree(FIXTURES, tmp_path / "fixtures")
    (tmp_path / "fixtures" / "latin.py").write_bytes(b"x = '\xff'\n")  # not UTF-8: an error value
    files, _ = discover([str(tmp_path)])
    assert len(files) > 2 * FILE_CHUNK

    def scanned(jobs: int) -> tuple:
        loader = Loader(files, Config(jobs=jobs), DiskCache(None), ModuleIndex.build(files, [str(tmp_path)]), "f")
        loader.scan()
        return (loader.info, loader.errors, loader._subclass_index, loader._def_index, loader._attr_index,
                loader.region_files())

    alone = scanned(1)
    assert pools == []
    assert scanned(2) == alone and pools[0][0] == "_scan_job"
    assert list(alone[1]) == [str(tmp_path / "fixtures" / "latin.py")]


def test_the_text_pass_workers_send_the_shapes_of_what_they_parse(
        forced: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker of the text pass parses each file for CPython's verdict and drops the tree; it sends the file's
    shape instead, so this process shapes the files without parsing them, and the shapes are those of -j 1."""
    from amplint import cpython_trees
    from amplint.files import discover
    from amplint.project.cache import DiskCache
    from amplint.project.loader import Loader
    from amplint.project.modules import ModuleIndex
    from amplint.project import textpass

    files, _ = discover([str(FIXTURES / "reach")])
    monkeypatch.setattr(textpass, "SCAN_POOL_FILES", 0)  # the text pass in the pool, however few the files

    def shapes(jobs: int) -> dict:
        loader = Loader(files, Config(jobs=jobs), DiskCache(None), ModuleIndex.build(files, [str(FIXTURES)]), "f")
        loader.scan()
        here: List[str] = []  # a worker appends to its own copy: this list holds this process's parses
        parse = cpython_trees.python_parse
        monkeypatch.setattr(cpython_trees, "python_parse", lambda text: here.append(text) or parse(text))
        found = {path: loader.shape(path) for path in files}
        monkeypatch.setattr(cpython_trees, "python_parse", parse)
        return {"shapes": found, "parsed here": len(here)}

    alone, pooled = shapes(1), shapes(2)
    assert pooled["shapes"] == alone["shapes"] and len(pooled["shapes"]) == 12
    assert pooled["parsed here"] == 0 < sum(1 for shape in pooled["shapes"].values() if shape is not None)


def test_a_warm_cache_needs_no_parse_pool(forced: None, pools: list, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    cold = run_project([str(FIXTURES / "project")], Config(jobs=2), cache_dir=cache, use_cache=True)
    assert "_parse_job" in [name for name, _, _ in pools]
    pools.clear()
    forget_answers(cache)
    warm = run_project([str(FIXTURES / "project")], Config(jobs=2), cache_dir=cache, use_cache=True)
    # Every file is still read (the project's autocast spellings, then the text pass); nothing is parsed.
    assert [name for name, _, _ in pools] == ["_spellings_job", "_scan_job"]
    assert warm.stats.parsed == [] and _as_data(warm.results) == _as_data(cold.results)


def test_a_file_that_fails_to_parse_is_an_error_value_with_a_pool(forced: None, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "check" / "seed_minimal.py", tmp_path / "good.py")
    (tmp_path / "bad.py").write_text("with torch.autocast('cuda'):\n    d.log_prob(x\n")
    for project in (False, True):
        alone = check_paths([str(tmp_path)], Config(project=project, jobs=1))
        pooled = check_paths([str(tmp_path)], Config(project=project, jobs=2))
        assert _as_data(pooled) == _as_data(alone)
        assert [r.error is not None for r in pooled] == [True, False]


def _cli(args: List[str], **env: str) -> subprocess.CompletedProcess:
    full = dict(os.environ, AMPLINT_NO_CACHE="1", PYTHONWARNINGS="ignore", **env)
    return subprocess.run(
        [sys.executable, "-m", "amplint.cli", *args], cwd=ROOT, env=full, capture_output=True, text=True,
        timeout=300,
    )


@pytest.mark.parametrize("mode", [[], ["--no-project"]])
@pytest.mark.parametrize("output", ["json", "text"])
def test_cli_output_is_byte_identical_with_jobs_1_and_2(mode: List[str], output: str) -> None:
    runs = [
        _cli(["check", *mode, "-j", jobs, "--format", output, "fixtures/check", "fixtures/project"],
             **{parallel.FORCE_ENV: "1"})
        for jobs in ("1", "2")
    ]
    assert runs[0].returncode == runs[1].returncode == 1, runs[0].stderr
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].stderr == runs[1].stderr


@pytest.mark.parametrize("terms", [2_920, 20_000])
def test_a_deep_file_is_refused_alike_with_jobs_1_and_2(tmp_path: Path, terms: int) -> None:
    """CPython 3.11 refused a 2,920-term sum in a worker but not in the main process (its limit counts the
    frames on the stack); amplint's own limit decides now, in the same words (`deep.python_parse`)."""
    shutil.copy(FIXTURES / "check" / "seed_minimal.py", tmp_path / "good.py")
    (tmp_path / "deep.py").write_text("import torch  # log_prob\nwith torch.autocast('cuda'):\n    x = "
                                      + "+".join(["a"] * terms) + "\n")
    runs = [_cli(["check", "-j", jobs, str(tmp_path)], **{parallel.FORCE_ENV: "1"}) for jobs in ("1", "2")]
    assert runs[0].stderr == runs[1].stderr == f"{tmp_path / 'deep.py'}: error: {TOO_DEEP}\n"
    assert runs[0].stdout == runs[1].stdout and runs[0].returncode == runs[1].returncode == 1


@pytest.mark.parametrize("mode", [[], ["--no-project"]])
def test_fix_with_a_pool_writes_what_jobs_1_writes(tmp_path: Path, mode: List[str]) -> None:
    trees = []
    for jobs in ("1", "2"):
        tree = tmp_path / f"j{jobs}"
        shutil.copytree(FIXTURES / "check", tree / "check")
        shutil.copytree(FIXTURES / "project", tree / "project")
        diff = _cli(["check", *mode, "-j", jobs, "--diff", str(tree)], **{parallel.FORCE_ENV: "1"})
        fix = _cli(["check", *mode, "-j", jobs, "--fix", str(tree)], **{parallel.FORCE_ENV: "1"})
        trees.append((tree, diff, fix))
    (one, diff1, fix1), (two, diff2, fix2) = trees
    assert diff1.stdout and diff1.stdout.replace(str(one), "T") == diff2.stdout.replace(str(two), "T")
    assert fix1.stdout.replace(str(one), "T") == fix2.stdout.replace(str(two), "T")
    files = sorted(p.relative_to(one) for p in one.rglob("*.py"))
    assert files == sorted(p.relative_to(two) for p in two.rglob("*.py"))
    assert any((one / f).read_bytes() != (FIXTURES / f).read_bytes() for f in files)
    for name in files:
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


def test_fix_paths_with_a_pool_equals_jobs_1(forced: None, pools: list, tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "check", tmp_path / "check")
    for project in (False, True):
        alone = fix_paths([str(tmp_path)], Config(project=project, jobs=1), write=False)
        pooled = fix_paths([str(tmp_path)], Config(project=project, jobs=2), write=False)
        assert pooled.files == alone.files
    assert "_fix_job" in [name for name, _, _ in pools]


def test_cli_jobs_option_and_config_key(tmp_path: Path) -> None:
    from amplint import cli

    args = cli.build_parser().parse_args(["check", "-j", "3"])
    assert cli.config_from_args(args, Config(jobs=2)).jobs == 3
    assert cli.config_from_args(cli.build_parser().parse_args(["check", "--jobs", "auto"])).jobs == 0
    assert cli.config_from_args(cli.build_parser().parse_args(["check"]), Config(jobs=2)).jobs == 2
    assert cli.main(["check", "-j", "-1", str(FIXTURES / "check")]) == 2
    assert repr(Config(jobs=1)) == repr(Config(jobs=4))  # the project cache's keys ignore -j


# --- the progress bar ------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_bar_waits_for_the_delay_then_draws_and_erases() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = progress.Bar(stream, delay=0.5, clock=clock)
    bar.phase("parsing", 4)
    bar.advance()
    assert stream.getvalue() == ""  # a quick run never shows it
    clock.now += 1
    bar.advance()
    assert stream.getvalue() == progress.ERASE + progress.render("parsing", 2, 4)
    bar.advance()  # within the redraw interval: not drawn
    assert stream.getvalue().count("files") == 1
    bar.close()
    assert stream.getvalue().endswith(progress.ERASE)


def test_a_quick_run_writes_nothing_at_all() -> None:
    stream = io.StringIO()
    bar = progress.Bar(stream, delay=60)
    bar.phase("reading", 3)
    bar.advance(3)
    bar.close()
    assert stream.getvalue() == ""


def test_render_never_reaches_the_last_column() -> None:
    assert progress.render("parsing", 3, 8, 60).startswith("amplint: parsing 3/8 files [")
    for width in (5, 20, 40, 80, 200):
        assert len(progress.render("reading", 4636, 4637, width)) < width
    assert progress.render("parsing", 9, 8) == progress.render("parsing", 8, 8)


def test_bar_only_for_text_output_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("TERM", "xterm")
    assert progress.wanted("text", Tty())
    assert not progress.wanted("text", io.StringIO())
    for output in ("json", "sarif", "github"):
        assert not progress.wanted(output, Tty())
    monkeypatch.setenv("TERM", "dumb")
    assert not progress.wanted("text", Tty())


def test_workers_do_not_draw(forced: None) -> None:
    stream = io.StringIO()
    with progress.attached(True, stream):
        assert parallel.run_map(reporter_kind, [0, 1], jobs=2) == ["Silent", "Silent"]
        assert isinstance(progress.current(), progress.Bar)
    assert type(progress.current()) is progress.Silent


def reporter_kind(item: int) -> str:
    return type(progress.current()).__name__


def _on_a_terminal(args: List[str]) -> Tuple[subprocess.CompletedProcess, bytes]:
    """Run the CLI with stderr on a pseudo-terminal: (the process, what the terminal received)."""
    pty = pytest.importorskip("pty")  # POSIX only
    import select
    import tempfile

    master, slave = pty.openpty()
    env = dict(os.environ, TERM="xterm", AMPLINT_NO_CACHE="1", PYTHONWARNINGS="ignore",
               **{progress.DELAY_ENV: "0"})
    # stdout to a file, not a pipe: a report larger than a pipe's buffer would block the child
    # while this process waits on the terminal.
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "amplint.cli", *args], cwd=ROOT, env=env, stdout=out, stderr=slave,
        )
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        os.close(master)
        proc.wait(timeout=60)
        out.seek(0)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out.read(), None), seen


def test_progress_bar_on_a_terminal_is_erased_before_the_report() -> None:
    proc, terminal = _on_a_terminal(["check", "-j", "1", "fixtures/check", "fixtures/project"])
    assert proc.returncode == 1
    assert b"amplint: reading " in terminal and b"amplint: parsing " in terminal
    assert terminal.endswith(b"\r\x1b[K")  # erased: nothing of it stays on the screen
    piped = _cli(["check", "-j", "1", "fixtures/check", "fixtures/project"], **{progress.DELAY_ENV: "0"})
    assert proc.stdout.decode() == piped.stdout
    assert piped.stderr == ""  # stderr piped: no bar


@pytest.mark.parametrize("output", ["json", "sarif", "github"])
def test_no_progress_bar_for_machine_readable_output(output: str) -> None:
    paths = ["fixtures/check/seed_minimal.py", "fixtures/check/vae_training.py"]
    proc, terminal = _on_a_terminal(["check", "--format", output, *paths])
    assert terminal == b""
    piped = _cli(["check", "--format", output, *paths], **{progress.DELAY_ENV: "0"})
    assert proc.stdout.decode() == piped.stdout
    assert proc.returncode == piped.returncode == 1
