"""`# noqa` and `# noqa: AMP001` on the reported (logical) line, matched as flake8 does."""
from __future__ import annotations

import io
import re
import tokenize
from functools import lru_cache
from types import MappingProxyType
from typing import Dict, Mapping, Optional, Sequence

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@lru_cache(maxsize=2)
def noqa_texts(text: str) -> Mapping[int, str]:
    """Line number -> the text to search for a noqa comment, as flake8 does it.

    flake8 looks for `# noqa` on every physical line of the *logical* line
    that holds the reported line: `x = f(\\n    a)  # noqa` covers line 1
    too. Lines missing from the map (or a file that does not tokenize) fall
    back to the physical line. Only called when the text mentions noqa.
    The last two answers are kept, read only: a file with findings asks twice, for its findings and for
    the fixes a noqa forbids (`fix.fixability.NoqaGuard`), and tokenizing costs ~4 ms a file.
    """
    lines = io.StringIO(text, newline=None).readlines()
    mapping: Dict[int, str] = {}
    first, last = len(lines) + 2, -1
    try:
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type in (tokenize.ENDMARKER, tokenize.DEDENT):
                continue
            first, last = min(first, token.start[0]), max(last, token.end[0])
            if token.type in (tokenize.NL, tokenize.NEWLINE):
                joined = "".join(lines[first - 1:last])
                mapping.update(dict.fromkeys(range(first, last + 1), joined))
                first, last = len(lines) + 2, -1
    except (tokenize.TokenError, SyntaxError):
        return MappingProxyType({})
    return MappingProxyType(mapping)


def suppressed(code: str, line_text: str) -> bool:
    """True when `line_text` carries a noqa comment that covers `code`."""
    match = NOQA.search(line_text)
    if match is None:
        return False
    codes: Optional[str] = match.group("codes")
    if codes is None:
        return True
    listed: Sequence[str] = [c for c in re.split(r"[,\s]+", codes.upper()) if c]
    return any(code.startswith(c) for c in listed)
