"""Turn a whole rewritten text into the one line-range replacement an editor applies."""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import List, Tuple


@dataclass(frozen=True)
class LineEdit:
    """Replace lines [start, end) (0-based, whole lines with their endings) by `text`."""

    start: int
    end: int
    text: str


def _lines(text: str) -> List[str]:
    return io.StringIO(text, newline="").readlines()


def line_edit(old: str, new: str) -> LineEdit:
    """The smallest run of whole lines whose replacement turns `old` into `new`.

    Whole lines keep the edit independent of the client's column encoding
    (UTF-16 by default in LSP, code points in Python).
    """
    before, after = _lines(old), _lines(new)
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while (
        tail < min(len(before), len(after)) - head
        and before[len(before) - 1 - tail] == after[len(after) - 1 - tail]
    ):
        tail += 1
    return LineEdit(head, len(before) - tail, "".join(after[head:len(after) - tail]))


def edit_end(old: str, edit: LineEdit) -> Tuple[int, int]:
    """Where `edit` ends in `old`, as an LSP position (line, UTF-16 units): the start of line `edit.end`, or the
    end of a last line that has no line ending (no line after it to start)."""
    lines = _lines(old)
    if edit.end == len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        return len(lines) - 1, len(lines[-1].encode("utf-16-le")) // 2
    return edit.end, 0


def apply_line_edit(old: str, edit: LineEdit) -> str:
    """What an editor does with `edit` (used by the tests and nothing else)."""
    lines = _lines(old)
    return "".join(lines[:edit.start]) + edit.text + "".join(lines[edit.end:])
