"""Ctrl-C at safe points only: a SIGINT during a guarded block is held until the block ends.

`--fix` must never stop half-way through replacing a file, and a process
pool must not be half-started (a worker forked before it ignores SIGINT
would print a traceback of its own). Inside `deferred_interrupt()` the
signal is only recorded; the block can ask whether one came (to stop before
the next file), and when it ends the previous handler gets the signal, which
for Python's default handler raises `KeyboardInterrupt` there.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List


@contextmanager
def deferred_interrupt() -> Iterator[Callable[[], bool]]:
    """Hold SIGINT inside the block; yields a function telling whether one arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False  # only the main thread receives signals
        return
    received: List[int] = []

    def record(signum: int, frame: Any) -> None:
        received.append(signum)

    try:
        previous = signal.signal(signal.SIGINT, record)
    except (ValueError, OSError):  # no signals here (an embedded interpreter)
        yield lambda: False
        return
    try:
        yield lambda: bool(received)
    finally:
        signal.signal(signal.SIGINT, previous)
    if received and callable(previous):
        previous(signal.SIGINT, None)  # the default handler raises KeyboardInterrupt
