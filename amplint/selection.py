"""Which codes a path reports, from select/ignore/per-file-ignores."""
from __future__ import annotations

import fnmatch
from pathlib import PurePath
from typing import Sequence

from amplint.config import Config


def _matches(code: str, prefixes: Sequence[str]) -> bool:
    return any(code.startswith(prefix) for prefix in prefixes)


def path_matches(path: str, pattern: str) -> bool:
    """A glob matched against the whole path or any trailing part of it."""
    posix = PurePath(path).as_posix()
    if fnmatch.fnmatch(posix, pattern) or fnmatch.fnmatch(posix, f"*/{pattern}"):
        return True
    return any(fnmatch.fnmatch(part, pattern) for part in PurePath(path).parts)


def code_enabled(code: str, path: str, config: Config) -> bool:
    if not _matches(code, config.select) or _matches(code, config.ignore):
        return False
    return not any(path_matches(path, glob) and _matches(code, codes) for glob, codes in config.per_file_ignores)
