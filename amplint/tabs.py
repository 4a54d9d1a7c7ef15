"""Analyse code whose indentation mixes tabs and spaces in ways CPython accepts and LibCST does not.

CPython reads a tab as "to the next multiple of 8" and checks the result is
unambiguous; LibCST's tokenizer rejects some such files outright (`if x:` /
`<tab>if y:` / `<8 spaces><tab>z = 1`: "no matching outer block for dedent",
reported at line 1, column 1). Since CPython compiled the file, expanding
the tabs of each line's leading whitespace to 8 columns keeps its block
structure; the analysis runs on that copy and the findings' columns are
mapped back to the file's own. `--fix` never writes the copy: the parsed
module no longer reproduces the file byte for byte, which `--fix` refuses.

A form feed in the leading whitespace is the other such case: CPython's tokenizer resets the column to 0
there, so `<comment line>` / `\f    with ...:` is indented by four, while LibCST's tokenizer reported "no
matching outer block for dedent" and the valid file was called a syntax error. The copy drops each
line's leading whitespace up to its last form feed, which is what CPython counts.
"""
from __future__ import annotations

import dataclasses
import io
from typing import Dict, List, Optional

from amplint.model import Finding


@dataclasses.dataclass(frozen=True)
class Retabbed:
    text: str
    shifts: Dict[int, int]  # line -> columns the expanded indentation added
    widths: Dict[int, int]  # line -> length of the expanded indentation

    def restore(self, finding: Finding) -> Finding:
        """`finding` with columns of the original text (lines do not move), its chain's hops in the file
        included, where the message shows them too (`f (12:9)`)."""
        chain, message = [], finding.message
        for hop in finding.chain:
            if hop.path == finding.path and hop.column:
                moved = dataclasses.replace(hop, column=self._column(hop.line, hop.column))
                message = message.replace(f"({hop.place()})", f"({moved.place()})")
                hop = moved
            chain.append(hop)
        return dataclasses.replace(
            finding,
            column=self._column(finding.line, finding.column),
            end_column=self._column(finding.end_line, finding.end_column),
            chain=tuple(chain),
            message=message,
        )

    def _column(self, line: int, column: int) -> int:
        shift = self.shifts.get(line, 0)
        if not shift or column <= self.widths[line]:
            return column
        return column - shift


def retabbed(text: str, form_feeds: bool = True) -> Optional[Retabbed]:
    """`text` with tabs in leading whitespace expanded to 8 columns, and (`form_feeds`) that whitespace cut
    after its last form feed; None when there is nothing to change."""
    if "\t" not in text and not (form_feeds and "\f" in text):
        return None
    lines: List[str] = io.StringIO(text, newline="").readlines()
    shifts: Dict[int, int] = {}
    widths: Dict[int, int] = {}
    out: List[str] = []
    for number, line in enumerate(lines, 1):
        body = line.lstrip(" \t\f" if form_feeds else " \t")
        indent = line[: len(line) - len(body)]
        if "\t" in indent or "\f" in indent:
            expanded = indent.rsplit("\f", 1)[-1].expandtabs(8)  # CPython counts from the last form feed
            shifts[number] = len(expanded) - len(indent)
            widths[number] = len(expanded)
            line = expanded + body
        out.append(line)
    if not shifts:
        return None
    return Retabbed("".join(out), shifts, widths)
