"""Cold project mode against ruff, with -j 1 / -j 2, and on all vs half of a corpus (issue 12's goals).

Short on purpose (a few minutes on 2 busy cores). For each corpus given, four
cases run once per repetition, in a rotated order so that a burst of
background load hits them alike: `amplint check -j 1` and `-j 2` on all of
it, `-j 1` on half of it (every other file copied out: a project of distinct
files), and `ruff check --select ALL --no-cache` on all of it. The table has
the median of wall and of CPU (user+system of the process tree) and the
1-minute load average when each run started. Every amplint run has
`AMPLINT_NO_CACHE=1` (cold).

On a shared machine the `-j 2` wall-clock speed-up cannot be measured fairly:
another process on one of the two cores takes it away. So each corpus also
gets a *schedule model*, which no other process can take a core from: one in-process
`-j 1` run times each file's analysis (CPU s), one `-j 2` run records which
files each pool batch held, and each batch is then laid out on two workers as
the pool hands work out (largest file first, to whichever worker is free).
Modelled `-j 2` wall = the parent's own CPU in the `-j 2` run + the sum of
the batches' makespans; modelled `-j 1` wall = the `-j 1` run's CPU. It
leaves out process start-up (the same both ways), fork and pickling costs, so
it is an upper bound of what two idle cores give. Load still moves it: the
two runs are timed one after the other, and a busy machine slows one more than
the other (1.58 under a load of 1.5, against 1.40 three times on a quieter
machine, benchmarks/RESULTS.md).

Neither says how much a second core can give on this machine at all: two
vCPUs may share one physical core, and a neighbour may take one. So each
corpus also times two `-j 1` runs started together (`pair`). Two independent
runs need no coordination, so `2 × wall(-j 1) / wall(pair)` is what two
workers could gain here at best. It tells a shortfall of the `-j 2` speed-up
that is the machine's from one that is amplint's.

`--ref DIR` runs the amplint package found in DIR (a `git archive` export
with `rules/` copied to `amplint/rules/`) instead of the installed one, for
before/after ratios. `--write FILE` puts the tables in FILE's
`project-speed` section.

    python benchmarks/project_speed.py /work/shared/corpus/repos benchmarks/.work/corpus --reps 3
    python benchmarks/project_speed.py benchmarks/.work/corpus --reps 1 --ref /tmp/old
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
RUFF = HERE / ".work" / "toolenv" / "bin" / "ruff"

Run = Tuple[float, float, int, float]  # wall s, CPU s, exit code, 1-minute load at the start


def python_files(root: Path) -> List[str]:
    return sorted(str(p) for p in root.rglob("*.py") if ".amplint_cache" not in p.parts)


def copy_half(root: Path, files: Sequence[str], out: Path) -> List[str]:
    """Every other file of `root`, copied to `out` with its relative path (a project of distinct files)."""
    import shutil

    if out.exists():
        shutil.rmtree(out)
    kept = []
    for path in files[::2]:
        target = out / Path(path).relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        kept.append(str(target))
    return kept


def load1() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def timed(command: Sequence[str], env: Dict[str, str], limit: float, copies: int = 1) -> Run:
    """(wall s, CPU s of the children, exit code, load) of one run, output discarded; exit -9 past `limit` s.

    `copies` > 1 starts that many copies of the command together: the wall time is until the last one
    ends, the CPU time is per copy (the mean), and the exit code is the worst.
    The run starts in a neutral directory: `python -m` puts its working directory first on `sys.path`,
    so from the repository's root it would import the working tree's `amplint` whatever `--ref` says.
    """
    load = load1()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    processes = [subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  cwd=tempfile.gettempdir()) for _ in range(copies)]
    codes = []
    for process in processes:
        try:
            codes.append(process.wait(timeout=max(0.0, limit - (time.perf_counter() - start))))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            codes.append(-9)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)) / copies
    return wall, cpu, -9 if -9 in codes else max(codes), load


BYTECODE = Path(tempfile.gettempdir()) / "amplint-bench-bytecode"
# Imports every amplint module (rules included) once, so that the timed runs find their bytecode.
_COMPILE = """
import contextlib, importlib, pkgutil, amplint
try:
    from amplint.cstimport import import_libcst
except ImportError:  # an amplint from before the table of LibCST's dataclass code
    pass
else:
    import_libcst()  # writes the table, which the first timed run would otherwise write
try:
    from amplint.cstimport import own_classes_compiled_once
except ImportError:  # an amplint from before the table of its own dataclass code
    own_classes_compiled_once = contextlib.nullcontext
with own_classes_compiled_once():  # and the table of amplint's own
    for found in pkgutil.walk_packages(amplint.__path__, "amplint."):
        if found.name.endswith("__main__"):  # runs the command line when imported
            continue
        try:
            importlib.import_module(found.name)
        except Exception:  # an optional front end's dependency: that module is not run by `check`
            pass
"""


def amplint_env(ref: Optional[str]) -> Dict[str, str]:
    """A cold run's environment; `ref` first on `PYTHONPATH` (no empty entry: that would mean the directory).

    Cold means no amplint cache, not no bytecode: pip compiles an installed amplint, so a run here reads
    bytecode too (kept under BYTECODE, mirrored by path, out of the source trees), even where the
    environment says `PYTHONDONTWRITEBYTECODE` (this machine's does), and the compiled dataclass code of
    LibCST and of amplint that `amplint.cstimport` keeps in the user's cache directory. Call `compile_bytecode` before
    timing. Without it every run compiled about 90 modules: 2% of a `-j 1` run's instructions on the
    real-code corpus, and again in each pool worker for the modules it imports after the fork.
    """
    env = dict(os.environ, AMPLINT_NO_CACHE="1", PYTHONPYCACHEPREFIX=str(BYTECODE))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if ref:
        env["PYTHONPATH"] = os.pathsep.join(path for path in (ref, env.get("PYTHONPATH")) if path)
    return env


def compile_bytecode(env: Dict[str, str]) -> None:
    """Write the bytecode of the amplint that `env` runs (`amplint_env`), as `pip install` does."""
    subprocess.run([sys.executable, "-c", _COMPILE], env=env, cwd=tempfile.gettempdir(), check=True,
                   stdout=subprocess.DEVNULL)


# --- the schedule model (runs in a child process: `--model-of ROOT`) ----------------------------------


def _item_key(name: str, item: object) -> object:
    """What identifies a unit of pool work across the two runs: a file (and whether it had entries), or a chunk.

    A chunk's key names its job: the text pass and the spellings pass cut the same file list into the same
    chunks, and with the paths alone each took the other's cost (the model counted 13.5 CPU s of pool work
    in an 11.1 s run).
    """
    if name == "_parse_job":
        path, _, entries = item[:3]  # type: ignore[index]
        return path, bool(entries)
    if name in ("_scan_job", "_spellings_job") and isinstance(item, tuple):  # (paths, ...)
        return name, tuple(item[0])
    return name, (tuple(item) if isinstance(item, list) else repr(item))


def _shares_trees(item: object) -> bool:
    """Does a unit of work carry the run's CPython trees (`amplint.cpython_trees`, absent in older amplints)?"""
    try:
        from amplint.cpython_trees import CPythonTrees
    except ImportError:
        return False
    return isinstance(item, tuple) and any(isinstance(part, CPythonTrees) for part in item)


def _model(root: str) -> Dict[str, float]:
    """Each unit of pool work's CPU at -j 1, the pool batches of -j 2, and the modelled walls (see the docstring)."""
    import dataclasses

    from amplint import parallel
    from amplint.config import Config
    from amplint.project import loader
    from amplint.project.run import run_project

    try:  # the collector's settings `amplint check` runs a command with
        from amplint.collection import batch_collection
    except ImportError:  # an amplint from before them
        from contextlib import nullcontext as batch_collection

    cost: Dict[object, float] = {}
    reader = "analyze_file" if hasattr(loader, "analyze_file") else "_analyze"  # its name before `project.reading`
    analyze = getattr(loader, reader)
    # A -j 1 run shares CPython's trees between its passes (`amplint.cpython_trees`); a pool worker has only
    # those its own earlier jobs kept (`parallel.RunPool`), which the model does not follow. So a unit that
    # shared some is run again as a worker with none would run it, for its cost (an upper bound), and that
    # second run's time is taken out of the -j 1 total.
    extra = [0.0]

    def timed_analyze(path, config, entries, *shared):  # type: ignore[no-untyped-def]
        start = time.process_time()
        outcome = analyze(path, config, entries, *shared)
        took = time.process_time() - start
        if shared and shared[0] is not None:
            start = time.process_time()
            analyze(path, config, entries)
            took = time.process_time() - start
            extra[0] += took
        cost[(path, bool(entries))] = took
        return outcome

    def timed_map(func, items, **kwargs):  # type: ignore[no-untyped-def]  # -j 1: every item here, timed
        def call(item):  # type: ignore[no-untyped-def]
            return func(item, None) if kwargs.get("stateful") else func(item)

        results = []
        for item in items:
            start = time.process_time()
            results.append(call(item))
            took = time.process_time() - start
            if _shares_trees(item):
                start = time.process_time()
                call(pickle.loads(pickle.dumps(item)))  # the item as a worker receives it
                took = time.process_time() - start
                extra[0] += took
            cost[_item_key(func.__name__, item)] = took
        return results

    batches: List[Tuple[str, list, Optional[Sequence[int]], Sequence[Optional[int]]]] = []
    run_map = parallel.run_map

    def recorded(func, items, **kwargs):  # type: ignore[no-untyped-def]
        items = list(items)
        if parallel.pool_size(len(items), kwargs.get("jobs"), kwargs.get("size") if kwargs.get("size") is not None
                              else sum(kwargs.get("weights") or ()) or None,
                              kwargs.get("min_size", parallel.MIN_BYTES)) >= 1:
            batches.append((func.__name__, items, kwargs.get("weights"), kwargs.get("pins") or [None] * len(items)))
        return run_map(func, items, **kwargs)

    setattr(loader, reader, timed_analyze)
    parallel.run_map = timed_map
    with batch_collection():
        start = time.process_time()
        run_project([root], dataclasses.replace(Config(), jobs=1))
        serial = time.process_time() - start - extra[0]
        setattr(loader, reader, analyze)  # the -j 2 parent's own parses are timed as they run
        parallel.run_map = recorded
        start = time.process_time()
        run_project([root], dataclasses.replace(Config(), jobs=2))
        parent = time.process_time() - start
    spans = 0.0
    work = 0.0
    for name, items, weights, pins in batches:
        order = sorted(range(len(items)), key=lambda i: -(weights[i] if weights else 0))
        loads = [0.0, 0.0]
        for index in order:
            key = _item_key(name, items[index])
            # A file re-parsed for its entries at -j 2 was not at -j 1 (its tree was kept): its summary parse's cost;
            # one pinned to the worker that kept its tree reads that tree, as -j 1 does.
            took = cost.get(key, cost.get((key[0], False), 0.0) if name == "_parse_job" and pins[index] is None
                            else 0.0)  # type: ignore[index]
            loads[loads.index(min(loads))] += took
            work += took
        spans += max(loads)
    return {"j1": serial, "parent": parent, "spans": spans, "work": work, "batches": len(batches),
            "j2": parent + spans}


def model(root: Path, env: Dict[str, str]) -> Optional[Dict[str, float]]:
    done = subprocess.run([sys.executable, __file__, "--model-of", str(root)], env=env, capture_output=True,
                          text=True, timeout=600)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"schedule model failed: {done.stderr[-800:]}", file=sys.stderr)
        return None


# --- the measurement ---------------------------------------------------------------------------------


def measure_corpus(root: Path, reps: int, ref: Optional[str], with_ruff: bool) -> str:
    """The markdown block for one corpus: runs, medians, the goal ratios and the schedule model."""
    files = python_files(root)
    half_root = HERE / ".work" / "half" / root.name
    half = copy_half(root, files, half_root)
    env = amplint_env(ref)
    compile_bytecode(env)
    amplint = [sys.executable, "-m", "amplint", "check"]
    cases: Dict[str, Tuple[str, List[str], Dict[str, str], int]] = {
        "j1": ("`amplint check -j 1`, all (cold)", amplint + ["-j", "1", str(root)], env, 1),
        "j2": ("`amplint check -j 2`, all (cold)", amplint + ["-j", "2", str(root)], env, 1),
        "half": ("`amplint check -j 1`, half (cold)", amplint + ["-j", "1", str(half_root)], env, 1),
        "pair": ("two `amplint check -j 1`, all (cold), started together: CPU per copy", amplint
                 + ["-j", "1", str(root)], env, 2),
    }
    if RUFF.exists() and with_ruff:
        cases["ruff"] = ("`ruff check --select ALL --no-cache`, all",
                         [str(RUFF), "check", "--select", "ALL", "--no-cache", "--exit-zero", str(root)],
                         dict(os.environ), 1)
    keys = list(cases)
    runs: Dict[str, List[Run]] = {key: [] for key in keys}
    for rep in range(reps):
        for key in keys[rep % len(keys):] + keys[:rep % len(keys)]:
            runs[key].append(timed(cases[key][1], cases[key][2], 300.0, copies=cases[key][3]))
            print(f"  {root.name} {key} rep {rep + 1}: {runs[key][-1]}", file=sys.stderr, flush=True)
    wall = {key: statistics.median(r[0] for r in runs[key]) for key in keys}
    cpu = {key: statistics.median(r[1] for r in runs[key]) for key in keys}
    paired = {  # each rep's own ratio, then their median: runs seconds apart, so a drift of the host cancels
        "ruff_cpu": paired_ratio(runs, "j1", "ruff", 1), "ruff_wall": paired_ratio(runs, "j2", "ruff", 0),
        "half": paired_ratio(runs, "j1", "half", 1), "speedup": paired_ratio(runs, "j1", "j2", 0),
    }
    lines = [f"**{root}**: {len(files)} files; half: {len(half)} (every other file); amplint: "
             f"{ref or 'the working tree'}", "",
             "| case | runs | wall s (median) | CPU s (median) | load at start (min–max) | exit |",
             "|---|---:|---:|---:|---|---|"]
    for key in keys:
        loads = [r[3] for r in runs[key]]
        codes = ",".join(str(c) for c in sorted({r[2] for r in runs[key]}))
        lines.append(f"| {cases[key][0]} | {len(runs[key])} | {wall[key]:.2f} | {cpu[key]:.2f} "
                     f"| {min(loads):.1f}–{max(loads):.1f} | {codes} |")
    lines += ["", "| goal | measured | met |", "|---|---|---|"]
    if "ruff" in keys:
        lines.append(f"| cold `-j 1` ≤ ruff ALL (CPU) | {cpu['j1']:.2f} / {cpu['ruff']:.2f} = "
                     f"{cpu['j1'] / cpu['ruff']:.2f}{_per_rep(paired['ruff_cpu'])} "
                     f"| {_yes(cpu['j1'] <= cpu['ruff'])} |")
        lines.append(f"| cold `-j 2` ≤ ruff ALL (wall) | {wall['j2']:.2f} / {wall['ruff']:.2f} = "
                     f"{wall['j2'] / wall['ruff']:.2f}{_per_rep(paired['ruff_wall'])} "
                     f"| {_yes(wall['j2'] <= wall['ruff'])} |")
    lines.append(f"| all ≤ 2.2 × half (CPU, `-j 1`) | {cpu['j1']:.2f} / {cpu['half']:.2f} = "
                 f"{cpu['j1'] / cpu['half']:.2f}{_per_rep(paired['half'])} | {_yes(cpu['j1'] <= 2.2 * cpu['half'])} |")
    lines.append(f"| `-j 2` ≥ 1.5 × faster than `-j 1` (wall, measured under the load above) | "
                 f"{wall['j1']:.2f} / {wall['j2']:.2f} = {wall['j1'] / wall['j2']:.2f}{_per_rep(paired['speedup'])} "
                 f"| {_yes(wall['j1'] >= 1.5 * wall['j2'])} |")
    ceiling = 2 * wall["j1"] / wall["pair"]
    lines.append(f"| bound, not a goal: what two cores give two independent `-j 1` runs started together (each "
                 f"copy's CPU {cpu['pair'] / cpu['j1']:.2f} × a run alone) | 2 × {wall['j1']:.2f} / "
                 f"{wall['pair']:.2f} = {ceiling:.2f} | 1.5 possible here: {_yes(ceiling >= 1.5)} |")
    modelled = model(root, env)
    if modelled is not None:
        speedup = modelled["j1"] / modelled["j2"]
        lines.append(f"| `-j 2` ≥ 1.5 × faster than `-j 1` (schedule model, CPU in-process) | "
                     f"{modelled['j1']:.2f} / ({modelled['parent']:.2f} parent + {modelled['spans']:.2f} "
                     f"in {modelled['batches']:.0f} pool batches of {modelled['work']:.2f} CPU s) = "
                     f"{speedup:.2f} | {_yes(speedup >= 1.5)} |")
    return "\n".join(lines)


def paired_ratio(runs: Dict[str, List[Run]], top: str, bottom: str, column: int) -> Optional[float]:
    """The median over reps of `top`'s time ÷ `bottom`'s in the same rep (`column` 0: wall, 1: CPU).

    The host's speed drifts from minute to minute (the same loop took 1.8–3.0 s of CPU within one minute here,
    RESULTS.md, twenty-sixth session), and a ratio of two medians can pair a fast minute with a slow one.
    The cases of one rep run back to back, so each rep's own ratio sees one host speed. None if a case is
    missing.
    """
    if top not in runs or bottom not in runs:
        return None
    ratios = [a[column] / b[column] for a, b in zip(runs[top], runs[bottom]) if b[column] > 0]
    return statistics.median(ratios) if ratios else None


def _per_rep(ratio: Optional[float]) -> str:
    return "" if ratio is None else f"; median of each rep's own ratio {ratio:.2f}"


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="*")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ref", help="directory whose `amplint` package to run (before/after)")
    parser.add_argument("--no-ruff", action="store_true")
    parser.add_argument("--write", type=Path, help="put the tables in this file's `project-speed` section")
    parser.add_argument("--model-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.model_of:
        os.environ["AMPLINT_NO_CACHE"] = "1"  # both runs cold, and no cache written into the corpus
        print(json.dumps(_model(args.model_of)))
        return
    from common import machine_lines, replace_section

    blocks = ["## Issue 12: cold project mode (`benchmarks/project_speed.py`)", "", *machine_lines(), ""]
    for root in args.roots:
        blocks += [measure_corpus(Path(root).resolve(), args.reps, args.ref, not args.no_ruff), ""]
    blocks.append(f"Load average at the end: {load1():.2f}. Reproduce: `.venv/bin/python "
                  f"benchmarks/project_speed.py {' '.join(args.roots)} --reps {args.reps}`.")
    text = "\n".join(blocks)
    print(text)
    if args.write:
        replace_section(args.write, "project-speed", text)


if __name__ == "__main__":
    main()
