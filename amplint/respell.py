"""Put a file's own spellings of its identifiers back into a rewrite of the copy the analysis read.

`--fix` rewrites the LibCST module of the copy (`amplint.identifiers`), whose identifiers are normalised:
written out as it is, the fix would turn every `ｌｏｇ_prob` of the file into `log_prob`, lines it has no
finding for included. So the rewrite is set beside the copy: lines the fix left alone are the file's own
lines, and in the lines it changed each identifier the fix kept where it was is spelled as the file spells
it. What the fix wrote itself (a `.float()`, a name it copied into a new expression) stays ASCII, which
Python reads the same.
"""
from __future__ import annotations

import io
import re
from bisect import bisect_left
from collections import Counter
from difflib import SequenceMatcher
from typing import Dict, Hashable, List, Sequence, Tuple

from amplint.identifiers import Respelled

# The words of changed lines, aligned to put the spellings back: runs of word (or non-ASCII) characters.
_WORD = re.compile(r"(?:\w|[^\x00-\x7f])+")
_AtLine = Dict[int, Dict[int, Tuple[str, str]]]  # line -> column in the copy -> the identifier, read and written
Pair = Tuple[int, int]
_INDENT = " \t"
# A range with no item unique on both sides is matched by `difflib` up to this many pairs of items: its cost
# grows with their product, and seconds went into the lines of a large file.
_SMALL = 10_000


def written_back(respelled: Respelled, fixed: str) -> str:
    """`fixed`, a rewrite of `respelled.text`, with the file's spellings wherever the rewrite kept them.

    A line of the copy that the rewrite holds unchanged, but for its indentation (fix C wraps a statement in a
    block), becomes the file's own line with the rewrite's indentation. Any pairing of such lines is right,
    so the alignment (`matched`) need only be fast and good, not the best there is.
    """
    copy, original, rewritten = (_lines(text) for text in (respelled.text, respelled.original, fixed))
    at_line = _by_line(respelled)
    out: List[str] = []
    i = j = 0  # the first line of each not yet written
    pairs = matched([line.lstrip(_INDENT) for line in copy], [line.lstrip(_INDENT) for line in rewritten])
    for pi, pj in pairs + [(len(copy), len(rewritten))]:
        if pj > j:  # lines the fix wrote: its own, or the copy's lines `i:pi` rewritten
            changed = "".join(rewritten[j:pj])
            out.append(_chunk(copy[i:pi], i + 1, changed, at_line) if pi > i else changed)
        if pi < len(copy):
            line = rewritten[pj]
            out.append(line[:len(line) - len(line.lstrip(_INDENT))] + original[pi].lstrip(_INDENT))
        i, j = pi + 1, pj + 1
    return "".join(out)


def matched(old: Sequence[Hashable], new: Sequence[Hashable]) -> List[Pair]:
    """Pairs (i, j) with `old[i] == new[j]`, increasing in both: each range's common start and end, then
    the items found once on each side of it that keep their order (patience diff), and the ranges between
    those again. Near linear where `difflib.SequenceMatcher` is quadratic: a fix of every function of a large
    file leaves thousands of short matches, which it took seconds to find."""
    pairs: List[Pair] = []
    ranges = [(0, len(old), 0, len(new))]
    while ranges:
        alo, ahi, blo, bhi = ranges.pop()
        while alo < ahi and blo < bhi and old[alo] == new[blo]:
            pairs.append((alo, blo))
            alo, blo = alo + 1, blo + 1
        while alo < ahi and blo < bhi and old[ahi - 1] == new[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
            pairs.append((ahi, bhi))
        anchors = _anchors(old, new, alo, ahi, blo, bhi)
        if not anchors:  # nothing unique: a small range is matched in full, a large one left unmatched
            if (ahi - alo) * (bhi - blo) <= _SMALL:
                pairs.extend(_small(old, new, alo, ahi, blo, bhi))
            continue
        before = (alo, blo)
        for i, j in anchors:
            pairs.append((i, j))
            ranges.append((before[0], i, before[1], j))
            before = (i + 1, j + 1)
        ranges.append((before[0], ahi, before[1], bhi))
    return sorted(pairs)


def _small(old: Sequence[Hashable], new: Sequence[Hashable], alo: int, ahi: int, blo: int, bhi: int) -> List[Pair]:
    """The pairs `difflib` finds in a range small enough for it (`_SMALL`)."""
    blocks = SequenceMatcher(None, old[alo:ahi], new[blo:bhi], autojunk=False).get_matching_blocks()
    return [(alo + i + k, blo + j + k) for i, j, size in blocks for k in range(size)]


def _anchors(old: Sequence[Hashable], new: Sequence[Hashable], alo: int, ahi: int, blo: int, bhi: int) -> List[Pair]:
    """The items found once in `old[alo:ahi]` and once in `new[blo:bhi]`, the most that keep their order."""
    counts = Counter(old[alo:ahi])
    once: Dict[Hashable, int] = {}
    for j in range(blo, bhi):
        once[new[j]] = -1 if new[j] in once else j
    found = [(i, once[old[i]]) for i in range(alo, ahi) if counts[old[i]] == 1 and once.get(old[i], -1) >= 0]
    return _increasing(found)


def _increasing(pairs: Sequence[Pair]) -> List[Pair]:
    """The longest subsequence of `pairs` (increasing in i) that increases in j too (patience sorting)."""
    tails: List[int] = []  # the smallest last j of an increasing run of each length
    ends: List[int] = []  # the index in `pairs` of that run's last pair
    back = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        length = bisect_left(tails, j)
        back[index] = ends[length - 1] if length else -1
        if length == len(tails):
            tails.append(j)
            ends.append(index)
        else:
            tails[length], ends[length] = j, index
    run: List[Pair] = []
    index = ends[-1] if ends else -1
    while index >= 0:
        run.append(pairs[index])
        index = back[index]
    return run[::-1]


def _lines(text: str) -> List[str]:
    return io.StringIO(text, newline="").readlines()


def _by_line(respelled: Respelled) -> _AtLine:
    """Where each respelled identifier is in the copy."""
    found: _AtLine = {}
    for each in respelled.spellings:
        found.setdefault(each.line, {})[each.column] = (each.read, each.written)
    return found


def _chunk(copy: Sequence[str], first: int, rewritten: str, at_line: _AtLine) -> str:
    """The rewritten text of the copy's lines `copy` (the first is line `first`), with the respelled
    identifiers that the rewrite kept, word for word, written as in the file."""
    written: Dict[int, Tuple[str, str]] = {}  # offset in the joined copy lines -> the identifier, read and written
    offset = 0
    for number, line in enumerate(copy, first):
        for column, spelling in at_line.get(number, {}).items():
            written[offset + column] = spelling
        offset += len(line)
    if not written:
        return rewritten
    old, new = _words("".join(copy)), _words(rewritten)
    out: List[str] = []
    done = 0  # how much of `rewritten` is in `out`
    for i, j in matched([word for _, word in old], [word for _, word in new]):
        spelling = written.get(old[i][0])
        start, word = new[j]
        if spelling is not None and spelling[0] == word:
            out.extend((rewritten[done:start], spelling[1]))
            done = start + len(word)
    out.append(rewritten[done:])
    return "".join(out)


def _words(text: str) -> List[Tuple[int, str]]:
    """(offset, word) for each `_WORD` of `text`."""
    return [(match.start(), match.group()) for match in _WORD.finditer(text)]
