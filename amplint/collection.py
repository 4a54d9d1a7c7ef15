"""Python's cyclic garbage collector, tuned for one command's run.

A cold project run allocates millions of tree nodes and keeps many of them
(held trees, summaries) until the end. With CPython's default thresholds
(700, 10, 10) every 700 allocations start a collection, and every 70,000 a
pass over all the objects held so far: on the real-code corpus that was
1.2 of 10.4 CPU s, in 2,364 collections (16 of them full) that freed almost
nothing, because LibCST and `ast` trees hold no cycles and reference
counting frees them. mypy raises the same thresholds for the same reason.
Collections still run, only less often, so a cycle is still freed.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator, Tuple

# A young generation of 1,000,000 objects: a run's trees and facts hold no cycles (`tests/test_no_cycles.py`),
# so reference counting frees what a file leaves behind, and a young collection walks only objects still in use.
# At 200,000 a cold `-j 1` run on the real-code corpus made two collections, 0.24 s of CPU, that freed 3,806
# objects; at 1,000,000 it makes none, with the same peak memory (benchmarks/RESULTS.md, seventeenth session).
BATCH_THRESHOLDS: Tuple[int, int, int] = (1_000_000, 20, 20)


@contextmanager
def batch_collection(thresholds: Tuple[int, int, int] = BATCH_THRESHOLDS, ending: bool = False) -> Iterator[None]:
    """Run the block with `thresholds`, then restore the caller's (an in-process caller keeps its own).

    `ending`: the process exits right after the block (the command line). Whatever the run built is then
    freed by the exit itself, so it is frozen (`gc.freeze`) instead of collected. Otherwise two collections
    walk all of it for nothing: one as soon as the default thresholds come back, and one when the
    interpreter shuts down. On the real-code corpus those two cost about a fifth of a cold run's CPU
    (benchmarks/RESULTS.md), while they free only what the exit frees anyway.
    """
    old = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        if ending:
            gc.freeze()
        gc.set_threshold(*old)
