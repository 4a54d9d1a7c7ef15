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

Instructions are not CPU seconds: CPython retires fewer instructions per cycle
than ruff's native code, so ruff's share of the CPU time is smaller than its
share of the instructions. Issue 12's goal is in CPU seconds
(`project_speed.py`); this script measures what a change saves.

    python benchmarks/instructions.py /work/shared/corpus/repos --ref /work/wt-base
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

Case = Tuple[str, List[str], Dict[str, str]]  # label, command, environment
Count = Tuple[Optional[int], bytes, str]  # instructions (None: failed), stdout, why it failed ("" if it did not)


def counted(command: Sequence[str], env: Dict[str, str], counter: Sequence[str] = ("valgrind",)) -> Count:
    """(instructions, stdout, error) of `command` run under cachegrind (`counter`: the valgrind to run)."""
    with tempfile.TemporaryDirectory() as scratch:
        wrapped = [*counter, "--tool=cachegrind", "--cache-sim=no",
                   f"--cachegrind-out-file={Path(scratch) / 'out'}", *command]
        done = subprocess.run(wrapped, env=env, capture_output=True, cwd=scratch)  # not the repository: see `cases`
    stderr = done.stderr.decode("utf-8", "replace")
    found = _REFS.findall(stderr)
    if not found:
        last = stderr.strip().splitlines()[-1:]
        return None, done.stdout, last[0] if last else "no output"
    return int(found[-1].replace(",", "")), done.stdout, ""


def cases(root: str, refs: Sequence[str], ruff: Optional[Path]) -> List[Case]:
    """What to count. Each runs in a scratch directory, since `python -m` puts its working directory first
    on `sys.path`: from the repository's root a `--ref` would still import the working tree's `amplint`."""
    root = str(Path(root).resolve())
    amplint = [sys.executable, "-m", "amplint", "check", "-j", "1", "--format", "json", root]
    found: List[Case] = [("amplint (working tree)", amplint, dict(amplint_env(None), PYTHONHASHSEED="0"))]
    for ref in refs:
        found.append((f"amplint ({ref})", amplint, dict(amplint_env(ref), PYTHONHASHSEED="0")))
    if ruff is not None:
        command = [str(ruff), "check", "--select", "ALL", "--no-cache", "--quiet", root]
        found.append(("`ruff check --select ALL --no-cache`", command, dict(os.environ)))
    return found


def table(root: str, labels: Sequence[str], counts: Sequence[Count]) -> str:
    tree = counts[0][0]
    lines = [f"**{root}** (cold `amplint check -j 1 --format json`, `PYTHONHASHSEED=0`)", "",
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
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instructions.py: valgrind is not installed (it counts the instructions)", file=sys.stderr)
        return 2
    ruff = None if args.no_ruff or not RUFF.exists() else RUFF
    for root in args.roots:
        runs = cases(root, args.ref, ruff)
        for label, _, env in runs:
            if label.startswith("amplint"):
                compile_bytecode(env)
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            counts = list(pool.map(lambda case: counted(case[1], case[2]), runs))
        print(table(root, [label for label, _, _ in runs], counts), end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
