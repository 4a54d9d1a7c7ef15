"""A one-line progress bar on stderr, for long runs on a terminal.

`amplint check` attaches one only when stderr is a terminal, the output
format is `text` and TERM is not `dumb`: never with `--format json`, `sarif`
or `github`, never when stderr is piped or redirected. It stays invisible for
the first DELAY seconds (a quick run never shows it), redraws at most every
INTERVAL seconds, and is erased before the report prints. The code doing the
work reports phases and steps to `current()`, which does nothing unless the
CLI attached a bar; the workers of a process pool `detach` theirs.
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator, Optional, TextIO, Union

DELAY = 0.5  # seconds before the bar first appears
DELAY_ENV = "AMPLINT_PROGRESS_DELAY"  # tests set 0 to see the bar on a quick run
INTERVAL = 0.1  # seconds between redraws
ERASE = "\r\x1b[K"


class Silent:
    """The reporter when no bar is attached: every call does nothing."""

    def phase(self, label: str, total: int) -> None:
        pass

    def advance(self, count: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


class Bar(Silent):
    """`amplint: parsing 3/8 files [#######.............]`, redrawn in place on `stream`."""

    def __init__(self, stream: TextIO, delay: float = DELAY, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.delay = delay
        self.clock = clock
        self.started = clock()
        self.label = ""
        self.total = 0
        self.count = 0
        self.drawn = False
        self.last = 0.0

    def phase(self, label: str, total: int) -> None:
        self.label, self.total, self.count = label, total, 0
        self._draw(force=True)

    def advance(self, count: int = 1) -> None:
        self.count += count
        self.total = max(self.total, self.count)  # e.g. files the project walk parses beyond the batch
        self._draw(force=self.count == self.total)

    def close(self) -> None:
        """Erase the bar (if it was ever drawn); the cursor is left at the start of an empty line."""
        if self.drawn:
            self._write(ERASE)
            self.drawn = False

    def _draw(self, force: bool) -> None:
        now = self.clock()
        if self.total <= 0 or now - self.started < self.delay:
            return
        if self.drawn and not force and now - self.last < INTERVAL:
            return
        self.last = now
        self._write(ERASE + render(self.label, self.count, self.total, self._width()))
        self.drawn = True

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (AttributeError, OSError, ValueError):
            columns = 0
        return columns if columns > 0 else 80  # a terminal that never set its size says 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away: no bar, the run goes on
            pass


def render(label: str, count: int, total: int, width: int = 80) -> str:
    """The bar's text, shorter than `width` so that it never wraps (a wrapped line cannot be erased)."""
    count = min(count, total)
    head = f"amplint: {label} {count}/{total} files "
    room = width - 1 - len(head) - 2
    if room >= 10:
        filled = room * count // total if total else 0
        return head + "[" + "#" * filled + "." * (room - filled) + "]"
    return head[: max(0, width - 1)]


# The reporter of the running command: ambient like `decimal`'s context, so the engine's loops need no
# extra parameter, and scoped by `attached` (a context variable, not a module global one rebinds).
_CURRENT: ContextVar[Silent] = ContextVar("amplint_progress", default=Silent())


def current() -> Silent:
    """Where the work reports its progress (a `Silent` one unless the CLI attached a bar)."""
    return _CURRENT.get()


def detach() -> None:
    """Stop reporting here (a pool worker inherits the parent's bar when forked)."""
    _CURRENT.set(Silent())


def wanted(output_format: str, stream: Optional[TextIO] = None) -> bool:
    """Should `amplint check` show a bar: text output and a real terminal on stderr?"""
    stream = stream if stream is not None else sys.stderr
    if output_format != "text" or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


def _delay() -> float:
    try:
        return max(0.0, float(os.environ.get(DELAY_ENV, DELAY)))
    except ValueError:
        return DELAY


@contextmanager
def attached(enabled: bool, stream: Optional[TextIO] = None) -> Iterator[Union[Silent, Bar]]:
    """Report to a bar on `stream` (stderr) inside the block when `enabled`; it is erased on the way out."""
    if not enabled:
        yield _CURRENT.get()
        return
    bar = Bar(stream if stream is not None else sys.stderr, _delay())
    token = _CURRENT.set(bar)
    try:
        yield bar
    finally:
        bar.close()
        _CURRENT.reset(token)
