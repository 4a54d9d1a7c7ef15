"""Ctrl-C at safe points only: a SIGINT during a guarded block is held until the block ends.

`--fix` must never stop half-way through replacing a file, and a process
pool must not be half-started (a worker forked before it ignores SIGINT
would print a traceback of its own). Inside `deferred_interrupt()` the
signal is only recorded; the block can ask whether one came (to stop before
the next file), and when it ends the previous handler gets the signal, which
for Python's default handler raises `KeyboardInterrupt` there.

SIGTERM (what `kill`, `timeout` and CI runners send) is treated as Ctrl-C once the command line calls
`terminate_as_interrupt()`: without it a SIGTERM during `--fix` ended the process at once and left its
temporary file behind. The exit status then says which signal it was (`exit_status`: 130 or 143).
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List


_terminated: List[int] = []  # SIGTERM arrived (the exit status is then 143, not 130)


def _on_terminate(signum: int, frame: Any) -> None:
    """SIGTERM as Ctrl-C: `KeyboardInterrupt` where the main thread is, remembered for the exit status."""
    _terminated.append(signum)
    raise KeyboardInterrupt


def terminate_as_interrupt() -> None:
    """From now on SIGTERM raises `KeyboardInterrupt` in this process, as SIGINT does (the CLI's choice,
    never a library's: it changes the process's handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        signal.signal(signal.SIGTERM, _on_terminate)
    except (ValueError, OSError, AttributeError):  # no signals here, or no SIGTERM
        pass


def exit_status() -> int:
    """The exit status of an interrupted run: 128 + the signal's number, as a shell reports it."""
    return 128 + (signal.SIGTERM if _terminated else signal.SIGINT)


def _held() -> List[int]:
    """The signals a guarded block holds: SIGINT, and SIGTERM when it is treated as an interrupt."""
    held = [signal.SIGINT]
    if signal.getsignal(signal.SIGTERM) is _on_terminate:
        held.append(signal.SIGTERM)
    return held


@contextmanager
def deferred_interrupt() -> Iterator[Callable[[], bool]]:
    """Hold SIGINT (and SIGTERM, when it is an interrupt) inside the block; yields a function telling whether
    one arrived."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False  # only the main thread receives signals
        return
    received: List[int] = []

    def record(signum: int, frame: Any) -> None:
        received.append(signum)

    previous: Dict[int, Any] = {}
    try:
        for signum in _held():
            previous[signum] = signal.signal(signum, record)
    except (ValueError, OSError):  # no signals here (an embedded interpreter)
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        yield lambda: False
        return
    try:
        yield lambda: bool(received)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if received and callable(previous[received[0]]):
        previous[received[0]](received[0], None)  # the default handler raises KeyboardInterrupt
