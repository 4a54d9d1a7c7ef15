"""Instructions executed by a cold `amplint check -j 1`, counted by valgrind: a before/after that load cannot move.

On the shared 2-core machine the CPU seconds of one command moved by up to
1.5x from run to run (RESULTS.md), more than most changes this measures. The
number of instructions a run executes does not depend on what else runs, so
the runs here go side by side, one per core, and still count exactly.
Each case runs under `valgrind --tool=cachegrind --cache-sim=no` (about 40x
slower than a plain run) with `PYTHONHASHSEED=0`, `AMPLINT_NO_CACHE=1` and
amplint's bytecode compiled beforehand (`project_speed.amplint_env`):
the working tree's amplint, each `--ref` (a source tree put first on
`PYTHONPATH`: an export with `rules/` in `amplint/rules/`, as for
`project_speed.py`, runs its own rules; a plain worktree, the installed
ones), and `ruff check --select ALL --no-cache`
for scale. Every amplint output is compared byte for byte with the working
tree's.

`--jobs N` (N >= 2) counts `amplint check -j N` in all its processes: under
`valgrind --tool=callgrind --dump-before=fork` the counters are dumped and
zeroed in a process just before it forks, so each worker counts its own work
only (cachegrind's count for a forked worker starts from its parent's at the
fork), and the sum over the processes is the run's whole work. Its ratio to
the `-j 1` count is what a pool adds, which bounds the `-j N` speed-up whatever
the load (benchmarks/RESULTS.md, fifteenth session).

Instructions are not CPU seconds: CPython retires fewer instructions per cycle
than ruff's native code, so ruff's share of the CPU time is smaller than its
share of the instructions. Issue 12's goal is in CPU seconds
(`project_speed.py`); this script measures what a change saves. Under valgrind
OpenSSL hashes in software (no SHA instructions): 0.6 G of a real-code run's
17 G are the digests of the texts read, which take milliseconds on the CPU.

    python benchmarks/instructions.py /work/shared/corpus/repos --ref /work/wt-base
    python benchmarks/instructions.py /work/shared/corpus/repos --jobs 2
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from project_speed import RUFF, amplint_env, compile_bytecode

_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_TOTALS = re.compile(r"^totals:\s+(\d+)", re.MULTILINE)  # a callgrind dump's count

Case = Tuple[str, List[str], Dict[str, str]]  # label, command, environment
Count = Tuple[Optional[int], bytes, str]  # instructions (None: failed), stdout, why it failed ("" if it did not)


def counted(command: Sequence[str], env: Dict[str, str], counter: Sequence[str] = ("valgrind",),
            processes: bool = False) -> Count:
    """(instructions, stdout, error) of `command` run under cachegrind (`counter`: the valgrind to run).

    `processes`: the sum over `command` and the processes it forks, each counting only its own work (callgrind,
    its counters dumped and zeroed before each fork).
    """
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out"
        if processes:
            tool = ["--tool=callgrind", "--dump-before=fork", f"--callgrind-out-file={out}.%p"]
        else:
            tool = ["--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}"]
        done = subprocess.run([*counter, *tool, *command], env=env, capture_output=True,
                              cwd=scratch)  # not the repository: see `cases`
        dumps = sorted(Path(scratch).glob("out.*")) if processes else []
        totals = [int(m.group(1)) for dump in dumps for m in _TOTALS.finditer(dump.read_text(errors="replace"))]
    stderr = done.stderr.decode("utf-8", "replace")
    found = _REFS.findall(stderr)
    if not found or (processes and not totals):
        last = stderr.strip().splitlines()[-1:]
        return None, done.stdout, last[0] if last else "no output"
    return (sum(totals) if processes else int(found[-1].replace(",", ""))), done.stdout, ""


def cases(root: str, refs: Sequence[str], ruff: Optional[Path], jobs: int = 1) -> List[Case]:
    """What to count. Each runs in a scratch directory, since `python -m` puts its working directory first
    on `sys.path`: from the repository's root a `--ref` would still import the working tree's `amplint`."""
    root = str(Path(root).resolve())
    amplint = [sys.executable, "-m", "amplint", "check", "-j", str(jobs), "--format", "json", root]
    found: List[Case] = [("amplint (working tree)", amplint, dict(amplint_env(None), PYTHONHASHSEED="0"))]
    for ref in refs:
        found.append((f"amplint ({ref})", amplint, dict(amplint_env(ref), PYTHONHASHSEED="0")))
    if ruff is not None:
        command = [str(ruff), "check", "--select", "ALL", "--no-cache", "--quiet", root]
        found.append(("`ruff check --select ALL --no-cache`", command, dict(os.environ)))
    return found


def table(root: str, labels: Sequence[str], counts: Sequence[Count], jobs: int = 1) -> str:
    tree = counts[0][0]
    every = ", every process" if jobs > 1 else ""
    lines = [f"**{root}** (cold `amplint check -j {jobs} --format json`{every}, `PYTHONHASHSEED=0`)", "",
             "| case | instructions | ÷ working tree | JSON output as the working tree's |", "|---|---:|---:|---|"]
    for index, (label, (count, stdout, error)) in enumerate(zip(labels, counts)):
        if count is None:
            lines.append(f"| {label} | failed: {error} | | |")
            continue
        ratio = f"{count / tree:.3f}" if tree else ""
        same = "" if label.startswith("`ruff") else ("yes" if stdout == counts[0][1] else "**no**")
        lines.append(f"| {label} | {count:,} | {ratio} | {same if index else '(itself)'} |")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("roots", nargs="+", help="directories to check")
    parser.add_argument("--ref", action="append", default=[], help="another amplint to count (a source tree)")
    parser.add_argument("--no-ruff", action="store_true", help="leave ruff out")
    parser.add_argument("--jobs", type=int, default=1, help="amplint's -j; from 2, every process is counted")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions.py: valgrind is not installed (it counts the instructions)", file=sys.stderr)
        return 2
    ruff = None if args.no_ruff or not RUFF.exists() else RUFF
    for root in args.roots:
        runs = cases(root, args.ref, ruff, args.jobs)
        for label, _, env in runs:
            if label.startswith("amplint"):
                compile_bytecode(env)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            counts = list(pool.map(lambda case: counted(case[1], case[2], processes=args.jobs > 1), runs))
        print(table(root, [label for label, _, _ in runs], counts, args.jobs), end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
