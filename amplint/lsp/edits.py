"""Turn a whole rewritten text into the one line-range replacement an editor applies."""
from __future__ import annotations

import io
from dataclasses import dataclass
from typing import List


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


def apply_line_edit(old: str, edit: LineEdit) -> str:
    """What an editor does with `edit` (used by the tests and nothing else)."""
    lines = _lines(old)
    return "".join(lines[:edit.start]) + edit.text + "".join(lines[edit.end:])
