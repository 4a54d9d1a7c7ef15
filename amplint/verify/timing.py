"""Median wall-clock seconds per call of a few callables, timed in turns after a warm-up.

Why in turns: within each repetition the versions (original, fix A, fix C)
run one after the other, so a machine that slows down for a while (another
process, a clock change) slows all of them alike and their ratio stays about
the fix, not about when each ran. Why medians: one run the OS preempted is an
outlier a mean would carry. Why a warm-up: the first call of a computation
pays for allocations and, on CUDA, kernel loading that later calls do not.
Why several calls per run: a rebuilt computation takes about a millisecond on
CPU, as long as a scheduler's hiccup; a run of `calls` back-to-back calls lasts
at least MIN_RUN_SECONDS, so one hiccup is a small part of it (timeit's
`autorange` does the same).

Torch-free: the caller passes the steps and how to wait for the device.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

Step = Callable[[], None]
WARMUPS = 1
MIN_RUN_SECONDS = 0.01
MAX_CALLS = 1000


@dataclass(frozen=True)
class Medians:
    """Each step's median seconds per call (None: it raised), and how many calls made one timed run."""

    seconds: Dict[str, Optional[float]]
    calls: int


def median_seconds(steps: Dict[str, Step], runs: int, synchronize: Callable[[], None],
                   warmups: int = WARMUPS) -> Medians:
    """Each step's median time per call over `runs` timed runs; a step that raises is not timed again."""
    live = dict(steps)
    warm: Dict[str, List[float]] = {name: [] for name in steps}
    for _ in range(max(1, warmups)):
        _run_each(live, 1, warm, synchronize)
    fastest = min((min(times) for name, times in warm.items() if name in live and times), default=0.0)
    calls = max(1, min(MAX_CALLS, math.ceil(MIN_RUN_SECONDS / fastest))) if fastest > 0 else MAX_CALLS
    samples: Dict[str, List[float]] = {name: [] for name in live}
    for _ in range(runs):
        _run_each(live, calls, samples, synchronize)
    medians = {name: statistics.median(samples[name]) if name in live and samples[name] else None
               for name in steps}
    return Medians(medians, calls)


def _run_each(live: Dict[str, Step], calls: int, samples: Dict[str, List[float]],
              synchronize: Callable[[], None]) -> None:
    """One run of every live step (`calls` calls), its seconds per call into `samples`; one that raises leaves."""
    for name, step in list(live.items()):
        synchronize()  # the device's queue is empty: the clock starts with this step's work
        start = time.perf_counter()
        try:
            for _ in range(calls):
                step()
            synchronize()
        except Exception:  # a version that raises has no time; its failure is reported by its run
            del live[name]
            continue
        samples[name].append((time.perf_counter() - start) / calls)
