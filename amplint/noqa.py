"""`# noqa` and `# noqa: AMP001` on the reported line, matched as flake8 does."""
from __future__ import annotations

import re
from typing import Optional, Sequence

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


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
