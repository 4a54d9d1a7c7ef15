"""Identifiers as Python reads them: NFKC-normalised, so `ｌｏｇ_prob` is `log_prob` (PEP 3131).

Python normalises every identifier with NFKC when it reads a file: `torch.ａｕｔｏｃａｓｔ(...)` opens the
region `torch.autocast(...)` opens, and `d.ｌｏｇ_prob(x)` calls `log_prob`. CPython's `ast` gives the
normalised names; LibCST's `Name.value` and the text prefilters see the characters as written, so neither
was reported (issue #54, N12). Rather than normalise at each of the many places that read a name, the
analysis reads a copy of the file whose identifiers are normalised (`analysis_text`). Comments and string
literals stay as written, so `# noqa` and literals mean what they meant. Findings are given the file's own
columns back (`Respelled.finding`), and `--fix` puts the file's spellings back into what it rewrites
(`amplint.respell`).

An ASCII text, nearly every file, is its own copy after one `str.isascii`. So is a text whose non-ASCII
characters cannot change an identifier (CJK comments, `…` in a docstring): only a text with an identifier
character that NFKC changes is tokenized. A text the tokenizer refuses is read as written.
"""
from __future__ import annotations

import io
import keyword
import re
import tokenize
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from amplint.model import Finding

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_Word = Tuple[int, int, int]  # an identifier as tokenized: (line, start column, end column)


@dataclass(frozen=True)
class Respelling:
    """One identifier that Python reads as another string: where it is in the copy, and both spellings."""

    line: int  # 1-based
    column: int  # 0-based, in characters of the copy's line
    written: str  # as in the file
    read: str  # as Python reads it: NFKC


@dataclass(frozen=True)
class Respelled:
    """A text whose identifiers are not all as Python reads them, and the copy the analysis reads instead."""

    original: str
    text: str  # the copy: each identifier in `spellings` normalised, nothing else changed
    spellings: Tuple[Respelling, ...]  # in source order

    @property
    def moves_columns(self) -> bool:
        """Does some identifier change length (`ﬁ` is `fi`), so that the copy's columns are not the file's?"""
        return any(len(each.written) != len(each.read) for each in self.spellings)

    def column(self, line: int, column: int) -> int:
        """The file's 1-based column for the copy's 1-based `column` on `line` (inside an identifier: its start)."""
        at, shift = column - 1, 0
        for each in self.spellings:
            if each.line < line:
                continue
            if each.line > line or at < each.column:
                break
            if at < each.column + len(each.read):
                return each.column + shift + 1
            shift += len(each.written) - len(each.read)
        return at + shift + 1

    def finding(self, finding: Finding) -> Finding:
        """`finding`, found in the copy, with the file's columns."""
        if not self.moves_columns:
            return finding
        return replace(finding, column=self.column(finding.line, finding.column),
                       end_column=self.column(finding.end_line, finding.end_column))


def analysis_text(text: str) -> str:
    """The text the analysis reads for `text`: its identifiers as Python reads them (`text` itself, mostly)."""
    found = respelled(text)
    return text if found is None else found.text


def screen_text(text: str) -> str:
    """`text` for a test of words anywhere in it: all of it NFKC-normalised when it is not ASCII.

    Cheaper than `analysis_text` (no tokens), and a superset: a word the copy holds, this holds too.
    """
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def respelled(text: str) -> Optional[Respelled]:
    """The copy of `text` with its identifiers normalised; None when none changes (or it cannot be tokenized)."""
    if not _may_change(text):
        return None
    lines = io.StringIO(text, newline="").readlines()
    try:
        words = list(_words(tokenize.generate_tokens(iter(lines).__next__)))
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
    spellings = tuple(_respellings(lines, words))
    if not spellings:
        return None
    return Respelled(text, _copy(lines, spellings), spellings)


def _may_change(text: str) -> bool:
    """Can NFKC change an identifier of `text`? A run of identifier characters that is not normalised."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return False
    for match in _NON_ASCII.finditer(text):
        start, end = match.span()
        # The character before the run counts: `e` and a combining accent compose.
        if not unicodedata.is_normalized("NFKC", text[max(0, start - 1):end]) and _changes_piece(text, start, end):
            return True
    return False


def _changes_piece(text: str, start: int, end: int) -> bool:
    """Does NFKC change a piece of identifier characters of the non-ASCII run `text[start:end]`? (`，` and
    `…` in a comment are not normalised either, and are no identifier's.)"""
    piece = start
    for index in range(start, end + 1):
        if index < end and _continues(text[index]):
            continue
        lead = piece - 1 if piece == start and start > 0 else piece  # the ASCII character before the run
        if index > piece and not unicodedata.is_normalized("NFKC", text[lead:index]):
            return True
        piece = index + 1
    return False


@lru_cache(maxsize=4096)
def _continues(char: str) -> bool:
    """Can `char` be part of an identifier (after its first character)?"""
    return ("a" + char).isidentifier()


def _words(tokens: Iterable[tokenize.TokenInfo]) -> Iterator[_Word]:
    """The identifiers: NAME tokens, joined with the ERRORTOKENs of identifier characters that the pure-Python
    tokenizer (before 3.12) splits a name at (`a·b`, a combining accent)."""
    word: Optional[_Word] = None
    for token in tokens:
        if token.type == tokenize.NAME or (token.type == tokenize.ERRORTOKEN and token.string.strip()
                                           and all(_continues(char) for char in token.string)):
            line, start = token.start
            if word is not None and word[0] == line and word[2] == start:
                word = (line, word[1], token.end[1])
                continue
            if word is not None:
                yield word
            word = (line, start, token.end[1])
        elif word is not None:
            yield word
            word = None
    if word is not None:
        yield word


def _respellings(lines: Sequence[str], words: Iterable[_Word]) -> Iterator[Respelling]:
    """The words NFKC changes into another identifier (not a keyword: CPython reads `ｉｆ` as a name, LibCST
    would read `if` as the keyword), with their columns in the copy."""
    shifted_line, shift = 0, 0
    for line, start, end in words:
        written = lines[line - 1][start:end]
        if written.isascii():
            continue
        read = unicodedata.normalize("NFKC", written)
        if read == written or not read.isidentifier() or keyword.iskeyword(read):
            continue
        if line != shifted_line:
            shifted_line, shift = line, 0
        yield Respelling(line, start + shift, written, read)
        shift += len(read) - len(written)


def _copy(lines: Sequence[str], spellings: Sequence[Respelling]) -> str:
    """The lines with each respelling's identifier replaced by what Python reads."""
    out: List[str] = list(lines)
    for each in spellings:  # left to right: a column in the copy counts the earlier respellings of its line
        text = out[each.line - 1]
        out[each.line - 1] = text[:each.column] + each.read + text[each.column + len(each.written):]
    return "".join(out)
