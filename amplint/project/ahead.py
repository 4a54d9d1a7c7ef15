"""Run the walk in waves, parsing the summaries each wave needs in a process pool.

The walk asks for one file's summary at a time, and each new one is a LibCST
parse (issue 12: after the region files, the cold project pass was serial).
Which files it will ask for depends on what the summaries it already has
say, so they cannot all be listed up front without a second analysis.
Instead the walk itself finds them: a *speculative pass* runs the seeds and
the walk with `Loader.speculate` on, where a summary that would need a parse
answers None and is noted. The noted files (the walk's next frontier) are
parsed together in the pool (`Loader.parse_ahead`), and the pass runs again
with them known, until a pass wants nothing. A noted file also goes at once to
a worker that is idle (`Workers.start`), so the workers need not wait for the
pass to end; the wave's batch takes that result instead of sending the file again.

A speculative pass that wanted nothing got true answers to every request
(from memory, the cache, or the files parsed ahead), so its result is the
walk's result and is used as it is. When a frontier is too small for a pool
to pay, or after MAX_WAVES passes, one ordinary pass finishes the walk and
parses what is still missing in this process. So does a pass that took longer
than the pool would save on its frontier (`Loader.pool_saving`, from the rate
of the last batch): on transformers each pass is a minute of value flow, and
five waves made a `-j 2` run slower than `-j 1` (123 s against 88 s). Either
way every summary the walk uses is the one a serial run builds, and a file
parsed ahead but never asked for leaves no trace: the output is the same with
any `--jobs`.

A pass that has missed a summary does not follow a guess past it: a receiver
whose class may be in the file it missed is not searched for by name, and a
subclass search stops where it ran into a hole (`Resolver._deferred`).
Following them read files that a pass with that file never asks for (on the
real-code corpus, 3 summaries, one a LibCST parse; on the derived copy, 20).

Each pass (`make_pass`) keeps only the resolver's sure answers, those no
None of speculation went into (`amplint.project.memo`): the others may be
wrong once more is known. On a warm cache the first pass wants nothing, so
the walk runs once, as without this module.
"""
from __future__ import annotations

import time
from typing import Callable, TypeVar

from amplint.project.loader import Loader

T = TypeVar("T")

# Passes before the rest is left to an ordinary pass. Each costs a walk over what is known (no parse),
# and the frontiers shrink fast: on the real-code corpus 4 waves parse all but a few files.
MAX_WAVES = 8
# A pass shorter than this never ends the waves early, whatever the pool saves: it costs little, and the
# estimate of the saving is too rough to weigh against it.
MIN_STOP_SECONDS = 1.0


def walk_in_waves(loader: Loader, make_pass: Callable[[], T]) -> T:
    """`make_pass()`, with the summaries it needs parsed ahead in a pool, wave by wave, when a pool may pay.

    `make_pass` runs the seeds and the walk with a new resolver over `loader`
    and returns the entries; it may run several times, and only the result of
    a pass that got true answers throughout is returned.
    """
    if not loader.may_pool():
        return make_pass()
    try:
        for _ in range(MAX_WAVES):
            loader.speculate(True)
            started = time.perf_counter()
            try:
                result = make_pass()
            finally:
                wanted = loader.speculate(False)
            loader.stats.waves += 1
            if not wanted:
                return result
            spent = time.perf_counter() - started
            saving = loader.pool_saving(wanted) if spent >= MIN_STOP_SECONDS else None
            if saving is not None and saving < spent:
                loader.stats.waves_stopped = True  # another pass costs more than the pool saves
                loader.parse_ahead(wanted)  # but the last pass here wants these too: the pool parses them
                break
            if not loader.parse_ahead(wanted):
                break
        return make_pass()
    finally:
        loader.end_ahead()
