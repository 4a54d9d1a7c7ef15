"""What `amplint trace` costs a training step: the same step timed with and without the recorder.

    .venv/bin/python benchmarks/trace_overhead.py [--steps 200] [--reps 5]

Runs `trace_project/train_step.py` alternately as `python train_step.py` and as `amplint trace
-- python train_step.py`, `--reps` times each, and prints the median step time
of each and their ratio (median over the pairs' own ratios, so a drift of the
host's speed between runs cancels). Start-up is outside the timed steps.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.join(HERE, "trace_project")  # its own folder: benchmarks/profile.py would shadow a module
STEP = os.path.join(PROJECT, "train_step.py")


def _median_step(command: List[str], out: str) -> float:
    subprocess.run(command, check=True, cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(out) as handle:
        return float(json.load(handle)["median_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    plain_times, traced_times, ratios = [], [], []
    with tempfile.TemporaryDirectory() as work:
        out, trace = os.path.join(work, "step.json"), os.path.join(work, "trace.json")
        for _ in range(args.reps):
            plain = _median_step([sys.executable, STEP, out, str(args.steps)], out)
            traced = _median_step([sys.executable, "-m", "amplint", "trace", "-o", trace, "--project", PROJECT, "--",
                                   sys.executable, STEP, out, str(args.steps)], out)
            plain_times.append(plain)
            traced_times.append(traced)
            ratios.append(traced / plain)
        with open(trace) as handle:
            records = json.load(handle)
    print(f"| step | median step time | |\n|---|---|---|")
    print(f"| plain | {statistics.median(plain_times) * 1e3:.2f} ms | |")
    print(f"| under `amplint trace` | {statistics.median(traced_times) * 1e3:.2f} ms | "
          f"{statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)}) |")
    print(f"\n{args.reps} alternated pairs of {args.steps} timed steps each; the trace held {len(records)} records:")
    for record in records:
        print(f"- {record['path']}:{record['line']}: {record['trace']['computation']}, "
              f"{record['trace']['calls']} calls, float16 {record['trace']['float16']}")


if __name__ == "__main__":
    main()
