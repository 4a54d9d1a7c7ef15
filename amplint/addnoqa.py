"""Add `# noqa: CODE` comments for findings (`amplint check --add-noqa`, the editor's quick fix).

A comment is put where `engine.finish` will look for it: on a physical line of
the finding's logical line (`noqa.noqa_texts`). The first line at or after the
finding's line whose end is a token boundary (not inside a string, not a
backslash continuation) takes it. An existing `# noqa: X` there gets the code
appended; a code already listed is not added twice, so running it again changes
nothing.
"""
from __future__ import annotations

import io
import re
import tokenize
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Tuple

from amplint.noqa import NOQA

if TYPE_CHECKING:  # pragma: no cover
    from amplint.model import FileError, Finding


def _line_ends(text: str) -> Tuple[Dict[int, int], Dict[int, tokenize.TokenInfo], Dict[int, int]]:
    """Per line: the column where a comment may start (NL/NEWLINE tokens), its comment token, its logical end.

    Raises tokenize.TokenError / SyntaxError on text that does not tokenize.
    """
    ends: Dict[int, int] = {}
    comments: Dict[int, tokenize.TokenInfo] = {}
    logical_end: Dict[int, int] = {}
    first = None
    for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
        if token.type in (tokenize.ENDMARKER, tokenize.DEDENT, tokenize.INDENT):
            continue
        if first is None:
            first = token.start[0]
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token
        if token.type in (tokenize.NL, tokenize.NEWLINE):
            ends[token.start[0]] = token.start[1]
            for number in range(first, token.end[0] + 1):
                logical_end[number] = token.end[0]
            first = None
    return ends, comments, logical_end


def _target_line(line: int, ends: Dict[int, int], logical_end: Dict[int, int]) -> Optional[int]:
    last = logical_end.get(line, line)
    for number in range(line, last + 1):
        if number in ends:
            return number
    return None


def _with_codes(physical: str, column: int, comment: Optional[tokenize.TokenInfo], codes: Sequence[str]) -> str:
    """`physical` (without its line ending) with each of `codes` in a noqa comment."""
    if comment is not None:
        match = NOQA.search(comment.string)
        if match is not None:
            listed_text = match.group("codes")
            if listed_text is None:  # a bare `# noqa` covers every code already
                return physical
            listed = [c for c in re.split(r"[,\s]+", listed_text.upper()) if c]
            extra = [code for code in codes if code not in listed]
            if not extra:
                return physical
            at = comment.start[1] + match.end("codes")
            return physical[:at] + "".join(f",{code}" for code in extra) + physical[at:]
        return physical.rstrip() + f"  # noqa: {','.join(codes)}"
    head = physical[:column].rstrip()
    if not head:  # nothing on the line to attach a comment to
        return physical
    return head + f"  # noqa: {','.join(codes)}" + physical[column:].lstrip(" \t")


def add_noqa(text: str, targets: Sequence[Tuple[int, str]]) -> str:
    """`text` with a noqa comment for each (line, code); unchanged when it does not tokenize."""
    try:
        ends, comments, logical_end = _line_ends(text)
    except (tokenize.TokenError, SyntaxError):
        return text
    lines: List[str] = io.StringIO(text, newline="").readlines()
    wanted: Dict[int, List[str]] = {}
    for line, code in sorted(set(targets)):
        number = _target_line(line, ends, logical_end)
        if number is not None and number <= len(lines) and code not in wanted.get(number, []):
            wanted.setdefault(number, []).append(code)
    for number, codes in wanted.items():
        raw = lines[number - 1]
        body = raw.rstrip("\r\n")
        lines[number - 1] = _with_codes(body, ends[number], comments.get(number), codes) + raw[len(body):]
    return "".join(lines)


def add_noqa_to_files(findings: Sequence["Finding"]) -> Tuple[int, int, List["FileError"]]:
    """Write a noqa comment for every finding (masked-text positions for notebooks).

    Returns (findings given a comment, files written, errors). A file is written
    (atomically, in its own encoding) only when its text changed.
    """
    from amplint.files import read_source
    from amplint.fix.write import atomic_write, encode
    from amplint.model import FileError

    by_path: Dict[str, List[Tuple[int, str]]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append((finding.line, finding.code))
    added = written = 0
    errors: List[FileError] = []
    for path, targets in sorted(by_path.items()):
        source = read_source(path)
        if isinstance(source, FileError):
            errors.append(source)
            continue
        text = add_noqa(source.text, targets)
        if text == source.text:
            continue
        data = encode(path, text, source.encoding)
        error = data if isinstance(data, FileError) else atomic_write(path, data)
        if error is not None:
            errors.append(error)
            continue
        added += len(targets)
        written += 1
    return added, written, errors
