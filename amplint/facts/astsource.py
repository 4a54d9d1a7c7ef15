"""Positions and text of CPython's tree nodes as LibCST reports them.

Two differences matter to the project summary. CPython counts a column in
UTF-8 bytes, LibCST in characters. And CPython leaves the parentheses written
around an expression out of its extent, where LibCST keeps them on the node:
`(model(x))` is the code of the call to LibCST, `model(x)` to CPython. `code`
puts them back, from the source text alone: a `(` before the node and a `)`
after it are its own unless the `(` opens a call's arguments (a callee ends
right before it) or nothing closes it there (a tuple, a call's first argument).
Comments between are skipped: after the node, to their line's end; before
it, whole comment lines. Where a comment follows code on a line before the
node, it answers None and the caller lets LibCST read the file.
"""
from __future__ import annotations

import ast
import keyword
from typing import List, Optional, Tuple

from amplint.textlines import LINE_END as _LINE_END
from amplint.textlines import TextLines

_SPACE = " \t\f\r\n\\"


class SourceText(TextLines):
    """The text a tree was parsed from, with its line starts."""

    def _span(self, node: ast.expr) -> Tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno or node.lineno,
                                                                      node.end_col_offset or 0)

    def segment(self, node: ast.expr) -> str:
        """The node's text as CPython delimits it (no parentheses around it)."""
        start, end = self._span(node)
        return self.text[start:end]

    def code(self, node: ast.expr) -> Optional[str]:
        """The node's text with the parentheses LibCST keeps on it; None when a comment makes that unsure."""
        text = self.text
        start, end = self._span(node)
        opens: List[int] = []
        index = start - 1
        while True:
            found = self._back(index)
            if found is None:
                return None
            if found >= 0 and text[found] == "(":
                opens.append(found)
                index = found - 1
                continue
            break
        if not opens:
            return text[start:end]
        closes: List[int] = []
        index = end
        while len(closes) < len(opens):
            found = self._forward(index)
            if found is None:
                return None
            if found < len(text) and text[found] == ")":
                closes.append(found)
                index = found + 1
                continue
            break
        own = len(closes)
        if own == len(opens):
            callee = self._ends_callee(opens[-1] - 1)
            if callee is None:
                return None
            own -= callee  # `f((x))`: the outer pair is the call's
        return text[start:end] if own == 0 else text[opens[own - 1]:closes[own - 1] + 1]

    def _back(self, index: int) -> Optional[int]:
        """The last index at or before `index` that is not white space or a comment line; None past a line that
        ends in a comment after code (where the comment starts needs the line's strings: left to LibCST).

        A line whose text starts with `#` lies wholly between two tokens: the scan starts between tokens, and a
        string that spanned the line would end on it right before the next token, which no grammar allows
        without an operator between."""
        text = self.text
        while index >= 0 and text[index] in _SPACE:
            if text[index] in "\r\n":
                line_start = max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
                line = text[line_start:index]
                if "#" in line:
                    if not line.lstrip(" \t\f").startswith("#"):
                        return None
                    index = line_start  # the comment line is skipped: go on from the line break before it
            index -= 1
        return index

    def _forward(self, index: int) -> Optional[int]:
        """The first index at or after `index` that is not white space or a comment: between tokens a `#`
        starts a comment, which ends with its line."""
        text = self.text
        while index < len(text):
            if text[index] == "#":
                line_end = _LINE_END.search(text, index)
                if line_end is None:
                    return len(text)
                index = line_end.start()
            elif text[index] in _SPACE:
                index += 1
            else:
                break
        return index

    def _ends_callee(self, index: int) -> Optional[bool]:
        """Does an expression that can be called end at or before `index` (white space skipped)?"""
        found = self._back(index)
        if found is None:
            return None
        if found < 0:
            return False
        char = self.text[found]
        if char in ")]\"'":
            return True
        if not (char.isalnum() or char == "_"):
            return False
        start = found
        while start > 0 and (self.text[start - 1].isalnum() or self.text[start - 1] == "_"):
            start -= 1
        word = self.text[start:found + 1]
        return not keyword.iskeyword(word) or word in ("None", "True", "False")
