"""Per-file results on disk in `.amplint_cache/`, keyed by content and amplint's own code.

Keys are SHA-256 digests of the file's bytes plus a fingerprint of amplint
itself (its version and the size/mtime of its modules, so an edited checkout
never reads stale summaries) and the options the value depends on. Values are
pickled plain dataclasses. Writes go to a temporary file in the same
directory and are renamed into place (`os.replace` is atomic), so concurrent
runs never see a half-written entry; a missing, corrupt or unreadable entry is
a miss, and a cache that cannot be written is silently skipped: the cache can
only make a run faster, never change its result.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
from typing import Iterator, List, Optional, Tuple

from amplint import __version__

CACHE_DIR = ".amplint_cache"
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# amplint cache: safe to delete\n"


def code_fingerprint() -> str:
    """amplint's version, Python's, and every amplint module's size and mtime."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256(f"{__version__}|{sys.version_info[:2]}".encode())
    for directory, dirnames, filenames in _code_directories(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                full = os.path.join(directory, name)
                try:
                    stat = os.stat(full)
                except OSError:
                    continue
                digest.update(f"{os.path.relpath(full, package)}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _code_directories(package: str) -> Iterator[Tuple[str, List[str], List[str]]]:
    """`os.walk` of the package, then of `rules/` when an editable install keeps it outside (rules detect)."""
    yield from os.walk(package)
    spec = importlib.util.find_spec("amplint.rules")
    rules = os.path.dirname(os.path.abspath(spec.origin)) if spec is not None and spec.origin else package
    if not rules.startswith(package + os.sep):
        yield from os.walk(rules)


def digest(*parts: object) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part if isinstance(part, bytes) else repr(part).encode())
        hasher.update(b"\0")
    return hasher.hexdigest()


class DiskCache:
    """A directory of pickled values; `directory=None` is a cache that never hits."""

    def __init__(self, directory: Optional[str]) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0

    def _path(self, kind: str, key: str) -> str:
        assert self.directory is not None
        return os.path.join(self.directory, kind, key[:2], key + ".pickle")

    def get(self, kind: str, key: str) -> Optional[object]:
        if self.directory is None:
            return None
        try:
            with open(self._path(kind, key), "rb") as handle:
                value = pickle.load(handle)
        except Exception:  # missing, truncated by a crash, from another Python: a miss
            self.misses += 1
            return None
        self.hits += 1
        return value

    def contains(self, kind: str, key: str) -> bool:
        """Is there an entry (not read: a corrupt one is still a miss for `get`)? Counts nothing."""
        return self.directory is not None and os.path.isfile(self._path(kind, key))

    def put(self, kind: str, key: str, value: object) -> None:
        if self.directory is None:
            return
        target = self._path(kind, key)
        try:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            self._tag()
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".tmp-", suffix=".pickle")
            try:
                with os.fdopen(handle, "wb") as out:
                    pickle.dump(value, out, protocol=pickle.HIGHEST_PROTOCOL)
                os.replace(temporary, target)
            except BaseException:
                _remove(temporary)
                raise
        except (OSError, pickle.PicklingError):
            return  # read-only checkout, full disk: run without the cache

    def _tag(self) -> None:
        assert self.directory is not None
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
            path = os.path.join(self.directory, name)
            if not os.path.exists(path):
                try:
                    with open(path, "x", encoding="utf-8") as handle:
                        handle.write(text)
                except OSError:
                    pass


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
