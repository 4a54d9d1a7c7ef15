"""How large a file `--fix` rewrites, and how large it may grow: the fixer's time and memory are bounded.

`max-file-size` bounds what `check` reads, but the fixer costs more than the check per byte: it plans,
rewrites, parses the new text again to prove it (LibCST and `compile`) and analyses it once more, about
65 s and 1.3 GB per MB of dense findings on a 2-core machine. A 1.95 MB file took 92 s and 4.3 GB, and
came out 2.3-2.9 MB, so the next `check` skipped it as too large and exited 2. So `--fix` rewrites files
up to a quarter of `max-file-size` (500 KB by default: about 30 s), and never writes a text over
`max-file-size` itself. Files beyond either bound keep their findings, each reported as not fixed and why.
"""
from __future__ import annotations

from typing import Optional

from amplint.config import Config

FIX_SHARE = 4  # `--fix` rewrites files up to max-file-size / FIX_SHARE


def size(text: str) -> int:
    """Bytes of `text` in UTF-8 (a file read in another encoding is at most as large)."""
    return len(text.encode("utf-8", "surrogatepass"))


def too_large_to_rewrite(text: str, config: Config) -> Optional[str]:
    """Why `--fix` leaves `text` alone for its size; None when it may rewrite it (no limit: `max-file-size = 0`)."""
    if not config.max_file_size:
        return None
    limit = config.max_file_size // FIX_SHARE
    length = size(text)
    if length <= limit:
        return None
    return (f"too large to rewrite ({length / 1e6:.2f} MB, over {limit / 1e6:.2f} MB, "
            f"a quarter of max-file-size)")


def grows_too_large(fixed: str, config: Config) -> Optional[str]:
    """Why the fixed text must not be written: the next run would skip it as over `max-file-size`."""
    if not config.max_file_size:
        return None
    length = size(fixed)
    if length <= config.max_file_size:
        return None
    return (f"not rewritten: the fixed file would be {length / 1e6:.2f} MB, over max-file-size "
            f"({config.max_file_size / 1e6:.2f} MB), which the next run would skip")
