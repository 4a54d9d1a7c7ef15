"""Map per-file work over a process pool when it pays, and in this process otherwise.

Two kinds of work are spread: parsing and analysing (LibCST's parse and
amplint's walk, about 270 KB of source a second on the benchmark machine:
0.1-0.8 s for each large file the prefilters keep) and project
mode's text pass over every file (~50 MB/s, in chunks). The callers decide
what needs the work and hand only that here; a parse pool starts when at least
MIN_ITEMS files worth MIN_BYTES of source together need a parse, and there are
two usable CPUs (or an explicit `--jobs N`, N >= 2). `--jobs 1` never starts
one.

Start method: `fork` on Linux when this process runs a single thread (the
CLI's case), else the platform's default (`spawn` on macOS and Windows) or,
on Linux with threads running, `forkserver`: forking a threaded process may
deadlock, and Python 3.12+ warns about it. With fork, the modules the work
needs (`preload`: LibCST and the analysis) are imported here first, once,
and the children start warm. Measured on an idle 2-core Linux box, Python
3.11, 2 workers, two tasks that import LibCST:

- fork, parent already warm: 0.03 s;
- fork with the preload: 0.3-0.36 s, nearly all of it importing LibCST
  here, which the in-process path pays as well (without the preload each
  child imports it: 0.6-1.1 s wall, 0.5-0.7 s CPU);
- forkserver (server preloads): 0.75 s; spawn: 1.7 s wall, 1 s of CPU in
  the children.

(Those runs compiled the bytecode as they went. With it compiled, importing
LibCST and the analysis takes about 0.2 s wherever it runs.) A project run's
pool (`RunPool`) preloads only the readers of CPython's trees, which the parent
and every worker import: most of its work reads those trees, and a worker
imports LibCST when a file of its own needs it.

Results come back in input order, whatever the order of completion, so the
output is the same as with `--jobs 1`. An item whose worker raised, or that
was lost with a dead worker, is run again here (`amplint.workers`): the
result, or the exception, is then exactly the in-process one; a system that
cannot start a pool at all runs everything here. Work functions return errors
as values (`FileError`), never raise them on purpose. Ctrl-C stops the workers
(they ignore SIGINT themselves) and re-raises `KeyboardInterrupt` here.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from amplint.cpython_trees import CPythonTrees
    from amplint.workers import Workers

T = TypeVar("T")
R = TypeVar("R")

MIN_ITEMS = 2  # fewer files to parse: parse them here
FILE_CHUNK = 64  # files per unit of work of a pass over every file of a project (`map_chunks`)
MIN_BYTES = 32_000  # less source than this to parse (~0.1 s): a pool's start-up and transfers would not pay
# Tests set this to "1" to start a pool for any batch (never with --jobs 1).
FORCE_ENV = "AMPLINT_FORCE_POOL"
PRELOAD = ("libcst", "amplint.analysis", "amplint.engine")


def forced() -> bool:
    """Does the environment force a pool for any batch (`FORCE_ENV`)?"""
    return os.environ.get(FORCE_ENV, "") not in ("", "0")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    counter = getattr(os, "process_cpu_count", None)  # Python 3.13+: affinity and PYTHON_CPU_COUNT
    if counter is not None:
        return max(1, counter() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def pool_size(count: int, jobs: Optional[int] = None, size: Optional[int] = None, min_size: int = MIN_BYTES) -> int:
    """Workers to use for `count` items of `size` together (bytes to parse); 0 means no pool.

    `jobs`: None or 0 for one worker per usable CPU, 1 for no pool, N for N workers.
    A pool needs `size` >= `min_size`; `size` None: judged by the count alone.
    """
    if jobs == 1 or count < 1:
        return 0
    workers = min(jobs if jobs and jobs > 1 else usable_cpus(), count)
    if forced():
        return max(workers, 2) if jobs and jobs > 1 else workers
    if workers < 2 or count < MIN_ITEMS or (size is not None and size < min_size):
        return 0
    return workers


def _context() -> Any:
    import multiprocessing  # here: a run with no pool (`-j 1`, a few files) never imports it

    methods = multiprocessing.get_all_start_methods()
    if sys.platform.startswith("linux") and "fork" in methods:
        if threading.active_count() == 1:
            return multiprocessing.get_context("fork")
        if "forkserver" in methods:
            return multiprocessing.get_context("forkserver")
    return multiprocessing.get_context()


def run_map(
    func: Callable[[T], R],
    items: Sequence[T],
    *,
    jobs: Optional[int] = None,
    weights: Optional[Sequence[int]] = None,
    label: str = "parsing",
    preload: Sequence[str] = PRELOAD,
    context: Any = None,
    units: Optional[Sequence[int]] = None,
    size: Optional[int] = None,
    min_size: int = MIN_BYTES,
    pool: "Optional[Workers]" = None,
    pins: Optional[Sequence[Optional[int]]] = None,
    stateful: bool = False,
    steal: bool = False,
) -> List[R]:
    """`[func(item) for item in items]`, in a process pool when `pool_size` says it pays.

    `func` must be a module-level function and the items and results picklable.
    `weights` (source sizes) decide whether a pool pays (their sum against
    `min_size`, unless `size` is given) and the order work is handed out
    (largest first, so one big file does not start last). `units`: files per
    item, for the progress bar (default 1). `context`: a multiprocessing
    context to use instead of the default choice. `pool`: workers kept for
    the run (`start_workers`), used for every batch sent with it (the caller
    has judged that it pays) instead of starting some; `pins` (the pid of a
    worker, or None, per item), `stateful` and `steal` are `Workers.run`'s. An
    item run here with `stateful` is called `func(item, None)`.
    """
    from amplint import progress

    items = list(items)
    steps = list(units) if units is not None else [1] * len(items)
    report = progress.current()
    report.phase(label, sum(steps))
    if size is None and weights is not None:
        size = sum(weights)
    workers = len(pool.alive) if pool is not None else pool_size(len(items), jobs, size, min_size)
    if workers < 1:
        return [_here(func, item, report, step, stateful) for item, step in zip(items, steps)]
    done: Dict[int, R] = {}
    try:
        _pooled(func, items, workers, weights, preload, context, done, report, steps, pool, pins, stateful, steal)
    except KeyboardInterrupt:
        raise
    except Exception:  # no pool on this system (no semaphores, fork refused...): the rest runs here
        pass
    return [
        done[index] if index in done else _here(func, item, report, steps[index], stateful)
        for index, item in enumerate(items)
    ]


def _here(func: Callable[..., R], item: T, report: Any, step: int = 1, stateful: bool = False) -> R:
    result = func(item, None) if stateful else func(item)
    report.advance(step)
    return result


def _pooled(
    func: Callable[[T], R],
    items: List[T],
    workers: int,
    weights: Optional[Sequence[int]],
    preload: Sequence[str],
    context: Any,
    done: Dict[int, R],
    report: Any,
    steps: Sequence[int],
    pool: "Optional[Workers]" = None,
    pins: Optional[Sequence[Optional[int]]] = None,
    stateful: bool = False,
    steal: bool = False,
) -> None:
    """Fill `done` with the results the pool delivered: `pool`, else `workers` started for these items.

    Items it failed on are left out.
    """
    from amplint.workers import Workers

    def arrived(index: int, result: R) -> None:
        done[index] = result
        report.advance(steps[index])

    _flush()
    if pool is not None:
        pool.run(func, items, weights=weights, pins=pins, stateful=stateful, done=arrived, steal=steal)
        return
    with Workers(workers, context or _context(), preload) as own:
        own.run(func, items, weights=weights, pins=pins, stateful=stateful, done=arrived, steal=steal)


def start_workers(jobs: Optional[int], preload: Sequence[str] = ()) -> "Optional[Workers]":
    """Workers for a whole run (`--jobs`, else one per usable CPU), forked with `preload` imported; None when
    no pool can start here."""
    from amplint.workers import Workers

    count = pool_size(sys.maxsize, jobs)
    if count < 1:
        return None
    _flush()
    try:
        return Workers(count, _context(), preload)
    except KeyboardInterrupt:
        raise
    except Exception:  # no pool on this system (no semaphores, fork refused...): the work runs here
        return None


def map_chunks(
    func: Callable[..., R], files: Sequence[str], trees: "CPythonTrees", extra: Tuple[Any, ...] = (),
    *, pool: "Optional[RunPool]", jobs: Optional[int], min_files: int, label: str = "reading",
    each: Optional[Callable[[List[str]], Any]] = None, work: Optional[int] = None,
) -> List[R]:
    """`func((chunk, trees, *extra), memory)` for each chunk of FILE_CHUNK `files`, in order: a pass over them.

    `each(chunk)`, when given, is one more element of each chunk's job: what that chunk alone needs.
    `work`: how many files' worth of work the pass is, when that is not one a file (`cache.pass_work`).

    Every pass cuts the same list the same way, so chunk k holds the same files in each. From `min_files`
    files, and when `jobs` allows, the chunks go to the run's workers (`pool`), chunk k pinned to
    `pool.pin(k)` and stolen when the other worker runs dry; each worker gets an equal share of `trees`'
    budget for the memo it keeps (`cpython_trees.worker_trees`). Otherwise they run here with `trees`, or
    on a pool of their own when no run pool is given.
    """
    chunks = [list(files[start:start + FILE_CHUNK]) for start in range(0, len(files), FILE_CHUNK)]
    size = len(files) if work is None else work
    workers = None
    if pool is not None and pool_size(len(chunks), jobs, size, min_files) >= 1:
        workers = pool.workers()
    sent = trees if workers is None else trees.share(len(workers.alive))
    pins = None if workers is None or pool is None else [pool.pin(k) for k in range(len(chunks))]
    jobs_of = [(chunk, sent, *extra) + ((each(chunk),) if each is not None else ()) for chunk in chunks]
    return run_map(func, jobs_of, jobs=jobs, label=label,
                   units=[len(chunk) for chunk in chunks], size=size, min_size=min_files, preload=(),
                   pool=workers, pins=pins, stateful=True, steal=True)


class RunPool:
    """The workers of one project run, started by its first batch that pays and kept from batch to batch.

    Every pass shares them. The two passes over every file (the spellings, the
    text pass) pin the k-th chunk of files to one worker (`pin(k)`), which keeps
    the CPython trees it parsed (`cpython_trees.worker_trees`): the text pass
    reads the trees its spellings pass kept, and a summary sent to the worker
    that keeps its file's tree (`Loader.prepare_summaries`) the text pass's.
    They are forked with `preload` imported (a project run's: the readers of
    CPython's trees, `reading.SUMMARY_READERS`) but without LibCST, and a
    worker imports it when a file it parses needs it, so a project whose
    summaries all come from CPython's trees never imports it, here or there.
    Importing LibCST here before forking instead was measured
    (benchmarks/RESULTS.md, sixteenth session): on the real-code corpus it
    saves one import (0.9 G of 20.2 G instructions, about 0.1 s of wall time),
    but every run that never needs LibCST pays it with both workers waiting:
    0.17 s more on 4,633 files of training code, 0.23 s (25%) on Python's
    standard library.
    """

    def __init__(self, jobs: Optional[int], preload: Sequence[str] = ()) -> None:
        self.jobs = jobs
        self._preload = preload  # what every worker will import, and this process too: imported once, here
        self._workers: "Optional[Workers]" = None
        self._order: List[int] = []  # the pids as started: `pin` stays put if one dies

    def workers(self) -> "Optional[Workers]":
        """The run's workers; None when no pool can start here."""
        if self._workers is None:
            self._workers = start_workers(self.jobs, self._preload)
            self._order = [] if self._workers is None else list(self._workers.alive)
        return self._workers

    def started(self) -> "Optional[Workers]":
        """The run's workers if they have started (this starts none)."""
        return self._workers

    def alive(self) -> List[int]:
        """The pids of the workers up (none before the start)."""
        return [] if self._workers is None else self._workers.alive

    def pin(self, chunk: int) -> Optional[int]:
        """The worker that gets the `chunk`-th chunk of files (None before the workers start)."""
        return self._order[chunk % len(self._order)] if self._order else None

    def close(self) -> None:
        if self._workers is not None:
            self._workers.close()
            self._workers = None
            self._order = []


def _flush() -> None:
    """A forked child flushes the buffers it inherited when it exits: empty them first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass


def exit_now(code: int) -> None:
    """End the process with `code` at once, after flushing stdout and stderr.

    After Ctrl-C the pool's threads (feeder, manager) may still hold pipes to
    workers that are gone; the interpreter's normal exit joins them, which
    can hang or print `OSError: [Errno 9]` tracebacks. Every file is whole by
    then (writes finish or are not started, temporary files are removed), so
    nothing is left for a normal exit to do.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(code)
