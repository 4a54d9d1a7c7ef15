"""A source text's lines, and CPython's columns (UTF-8 bytes) as the characters LibCST counts.

Both readers of CPython's positions need it: the project summary read from
CPython's tree (`facts.astsource`) and the positions of the LibCST nodes the
analysis reports on (`amplint.positions`).
"""
from __future__ import annotations

import re
import sys
from itertools import accumulate
from typing import List, Optional

LINE_END = re.compile(r"\r\n|\r|\n")  # where CPython and LibCST both end a line
_DECORATOR_PREFIX = re.compile(r"[ \t]*@[ \t]*")
# Before 3.11 CPython could place an f-string's inner expressions wrongly (multi-line and concatenated
# f-strings): a call inside one sends the file to LibCST there. 3.11 matches LibCST on every case of the tests.
FSTRING_POSITIONS = sys.version_info >= (3, 11)
# LibCST leaves a form feed in an indent out of its columns; CPython counts it.
FORM_FEED = "\f"


class TextLines:
    """The text a tree was parsed from, with its line starts found on first use."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()
        self._starts: Optional[List[int]] = None

    def line_starts(self) -> List[int]:
        if self._starts is None:
            self._starts = _line_starts(self.text)
        return self._starts

    def line(self, lineno: int) -> str:
        """Line `lineno` (from 1), with its line break."""
        starts = self.line_starts()
        end = starts[lineno] if lineno < len(starts) else len(self.text)
        return self.text[starts[lineno - 1]:end]

    def column(self, lineno: int, col_offset: int) -> int:
        """LibCST's column (characters) of CPython's `col_offset` (UTF-8 bytes) on line `lineno`."""
        if self.ascii:
            return col_offset
        return len(self.line(lineno).encode("utf-8")[:col_offset].decode("utf-8", "replace"))

    def decorator_at(self, lineno: int, col_offset: int) -> Optional[int]:
        """The column of the `@` of a decorator whose expression CPython starts at (`lineno`, `col_offset`), where
        LibCST starts the decorator; None unless only blanks stand around the `@` (`@\\` continued, say)."""
        prefix = _DECORATOR_PREFIX.fullmatch(self.line(lineno)[:self.column(lineno, col_offset)])
        return None if prefix is None else prefix.group().index("@")  # blanks before it: bytes and characters agree

    def offset(self, lineno: int, col_offset: int) -> int:
        """The index in the text of CPython's (`lineno`, `col_offset`)."""
        return self.line_starts()[lineno - 1] + self.column(lineno, col_offset)


def _line_starts(text: str) -> List[int]:
    """Where each line begins. Without a carriage return, from the lengths of the lines `split` cuts: a third
    of the time of one match per line, on every file of the real-code corpus."""
    if "\r" in text:
        return [0] + [match.end() for match in LINE_END.finditer(text)]
    return list(accumulate([len(line) + 1 for line in text.split("\n")[:-1]], initial=0))
