"""Cold project mode against ruff, with -j 1 / -j 2, and on all vs half of a corpus (issue 12's goals).

Short on purpose (a few minutes on 2 busy cores): one file set at a time, a few
repetitions, the median of wall and of CPU (user+system of the process tree).
Every amplint run has `AMPLINT_NO_CACHE=1` (cold). `--ref DIR` runs the amplint
package found in DIR (a `git archive` export with `rules/` copied to
`amplint/rules/`) instead of the installed one, for before/after ratios.

    python benchmarks/project_speed.py /work/shared/corpus/repos --reps 3
    python benchmarks/project_speed.py benchmarks/.work/corpus --reps 1 --ref /tmp/old
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
RUFF = HERE / ".work" / "toolenv" / "bin" / "ruff"


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


def timed(command: Sequence[str], env: Dict[str, str], limit: float) -> Tuple[float, float, int]:
    """(wall s, CPU s of the children, exit code) of one run, output discarded; exit -9 past `limit` s."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        code = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=limit).returncode
    except subprocess.TimeoutExpired:
        code = -9
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, code


def amplint_env(ref: Optional[str]) -> Dict[str, str]:
    env = dict(os.environ, AMPLINT_NO_CACHE="1")
    if ref:
        env["PYTHONPATH"] = ref + os.pathsep + env.get("PYTHONPATH", "")
    return env


def measure(label: str, command: Sequence[str], env: Dict[str, str], reps: int, limit: float = 120.0
            ) -> Tuple[str, float, float]:
    runs = [timed(command, env, limit) for _ in range(reps)]
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    shown = "killed after {:.0f} s".format(limit) if runs[0][2] == -9 else runs[0][2]
    print(f"| {label} | {reps} | {wall:.2f} | {cpu:.2f} | {shown} |", flush=True)
    return label, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--ref", help="directory whose `amplint` package to run (before/after)")
    parser.add_argument("--no-ruff", action="store_true")
    args = parser.parse_args()
    root = Path(args.root).resolve()
    files = python_files(root)
    half_root = HERE / ".work" / "half" / root.name
    half = copy_half(root, files, half_root)
    env = amplint_env(args.ref)
    amplint = [sys.executable, "-m", "amplint", "check"]
    print(f"{root}: {len(files)} files; half: {len(half)} (every other file); ref: {args.ref or 'installed'}")
    print("| case | runs | wall s (median) | CPU s (median) | exit |\n|---|---:|---:|---:|---:|")
    results = {}
    results["j1"] = measure("amplint check -j 1 (cold project mode), all", amplint + ["-j", "1", str(root)], env,
                            args.reps)
    results["j2"] = measure("amplint check -j 2 (cold project mode), all", amplint + ["-j", "2", str(root)], env,
                            args.reps)
    results["half"] = measure("amplint check -j 1 (cold project mode), half", amplint + ["-j", "1", str(half_root)], env,
                              args.reps)
    if RUFF.exists() and not args.no_ruff:
        measure("ruff check --select ALL --no-cache, all", [str(RUFF), "check", "--select", "ALL", "--no-cache",
                                                           "--exit-zero", str(root)], dict(os.environ), args.reps)
    j1, j2, half_run = results["j1"], results["j2"], results["half"]
    print(f"\n-j 1 / -j 2 wall: {j1[1] / j2[1]:.2f}; all / half CPU: {j1[2] / half_run[2]:.2f}, "
          f"wall: {j1[1] / half_run[1]:.2f}")


if __name__ == "__main__":
    main()
