"""Per-file results on disk in `.amplint_cache/`, keyed by content and amplint's own code.

Keys are SHA-256 digests of the file's bytes plus a fingerprint of amplint
itself (its version and the size/mtime of its modules, so an edited checkout
never reads stale summaries) and the options the value depends on. Values are
JSON with a schema version (`cachecodec`): reading an entry never runs code,
whoever wrote it. Writes go to a temporary file in the same
directory and are renamed into place (`os.replace` is atomic), so concurrent
runs never see a half-written entry; a missing, corrupt or unreadable entry is
a miss, and a cache that cannot be written is silently skipped: the cache can
only make a run faster, never change its result. A cache directory that is a
symbolic link (or holds one on the way to an entry) is not used at all: a
link planted in a checkout must not make amplint write somewhere else.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from amplint import __version__
from amplint.files import content_digest, replace_file

CACHE_DIR = ".amplint_cache"
SUFFIX = ".json"
MAX_ENTRY_BYTES = 64 * 1024 * 1024  # a larger entry is not ours: a miss, never read
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
    """A directory of JSON values; `directory=None` is a cache that never hits."""

    def __init__(self, directory: Optional[str]) -> None:
        self.directory = directory
        self.hits = 0
        self.misses = 0
        self._codec: Any = None

    def _path(self, kind: str, key: str) -> str:
        assert self.directory is not None
        return os.path.join(self.directory, kind, key[:2], key + SUFFIX)

    def _codec_once(self) -> Any:
        if self._codec is None:
            from amplint.project.cachecodec import Codec

            self._codec = Codec()
        return self._codec

    def _linked(self, kind: str, key: str) -> bool:
        """Is the cache directory, or a folder between it and the entry, a symbolic link?"""
        assert self.directory is not None
        folder = self.directory
        for part in ("", kind, key[:2]):
            folder = os.path.join(folder, part) if part else folder
            if os.path.islink(folder):
                return True
        return False

    def get(self, kind: str, key: str) -> Optional[object]:
        if self.directory is None:
            return None
        try:
            if self._linked(kind, key):
                raise OSError("symbolic link in the cache path")
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
            fd = os.open(self._path(kind, key), flags)
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(MAX_ENTRY_BYTES + 1)
            if len(data) > MAX_ENTRY_BYTES:
                raise ValueError("entry too large")
            value = self._codec_once().loads(kind, data.decode("utf-8"))
        except Exception:  # missing, truncated by a crash, from another schema, not ours: a miss
            self.misses += 1
            return None
        self.hits += 1
        return value

    def contains(self, kind: str, key: str) -> bool:
        """Is there an entry (not read: a corrupt one is still a miss for `get`)? Counts nothing."""
        return self.directory is not None and not self._linked(kind, key) and os.path.isfile(self._path(kind, key))

    def put(self, kind: str, key: str, value: object) -> None:
        if self.directory is None:
            return
        target = self._path(kind, key)
        try:
            # `dump` builds new lists and dicts, so they hold no cycle (one in `value` is a RecursionError there).
            text = json.dumps(self._codec_once().dump(kind, value), separators=(",", ":"), check_circular=False)
        except (ValueError, TypeError, RecursionError):  # not cache data (CodecError is a ValueError)
            return
        try:
            if self._linked(kind, key):
                return
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if self._linked(kind, key):
                return
            self._tag()
            replace_file(target, text.encode("utf-8"), ".tmp-", SUFFIX)
        except OSError:
            return  # read-only checkout, full disk: run without the cache

    def _tag(self) -> None:
        assert self.directory is not None
        for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", "*\n")):
            path = os.path.join(self.directory, name)
            if not os.path.lexists(path):
                try:
                    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
                    with os.fdopen(fd, "w", encoding="utf-8") as handle:
                        handle.write(text)
                except OSError:
                    pass


Known = Dict[str, Tuple[str, Any]]  # path -> (content digest, what a pass read of that content)


@dataclass(frozen=True)
class PassCache:
    """The disk cache as the passes that read every file use it (the spellings, the text pass).

    A run on one file of a project, or a second run, reads every file of the project again, and without the
    cache the two passes parse each file that mentions `autocast` or a probability method with CPython at
    every run. What they read of a file depends only on its text, amplint's code and a few options, but it
    is small and there is one per file: an entry each would cost a file written per file on a first run.
    So each pass keeps one entry per project (`scope`: the project tops): every file's absolute path (the
    command line, flake8 and the language server spell them differently), content digest and value, read
    whole before the pass and written whole after it, when something changed.
    """

    cache: DiskCache
    fingerprint: str
    scope: Tuple[str, ...]

    @property
    def on(self) -> bool:
        return self.cache.directory is not None

    def load(self, kind: str, *options: object) -> Optional[Known]:
        """The pass's entry: per absolute path, the content it was read from and what was read (None: no
        cache)."""
        if not self.on:
            return None
        found = self.cache.get(kind, self._key(kind, options))
        if not isinstance(found, dict):
            return {}
        return {path: entry for path, entry in found.items() if isinstance(path, str) and isinstance(entry, tuple)
                and len(entry) == 2 and isinstance(entry[0], str)}

    def save(self, kind: str, read: Known, loaded: Optional[Known], *options: object) -> None:
        """Write what this run `read`, with the `loaded` paths it did not read that are still there (a run
        given some files of a project), unless that is what was loaded."""
        if loaded is None:
            return
        fresh = {os.path.abspath(path): entry for path, entry in read.items()}
        kept = {path: entry for path, entry in loaded.items() if path not in fresh and os.path.isfile(path)}
        entries = {**kept, **fresh}
        if entries != loaded:
            self.cache.put(kind, self._key(kind, options), entries)

    def _key(self, kind: str, options: Tuple[object, ...]) -> str:
        return digest(self.fingerprint, kind, options, self.scope)


# A file a pass finds in its entry costs a read and a digest of its bytes, about a tenth of reading it
# (benchmarks/RESULTS.md, twenty-fifth session), and in the text pass only a `stat` when the spellings pass read
# it in the same process: a pass over files its entry holds does not pay for a pool.
KNOWN_SHARE = 10


def pass_work(files: Sequence[str], known: Optional[Known]) -> int:
    """How many files' worth of work a pass over `files` is, those its entry holds counted at 1/KNOWN_SHARE."""
    if not known:
        return len(files)
    held = sum(1 for path in files if os.path.abspath(path) in known)
    return len(files) - held + held // KNOWN_SHARE


def shares(known: Optional[Known]) -> Callable[[List[str]], Optional[Known]]:
    """Each chunk's share of what a pass's entry holds (`parallel.map_chunks`' `each`), by the run's paths."""
    if known is None:
        return lambda chunk: None
    return lambda chunk: {path: entry for path, entry in ((p, known.get(os.path.abspath(p))) for p in chunk)
                          if entry is not None}


def recall(known: Optional[Known], path: str, data: bytes,
           valid: Callable[[Any], bool]) -> Tuple[Optional[str], Optional[Any]]:
    """(the digest of the bytes `data`, what the entry holds for that content of `path` when it is `valid`, else
    None); (None, None) with no cache."""
    if known is None:
        return None, None
    content = content_digest(data)
    return content, held(known, path, content, valid)


def held(known: "Known", path: str, content: str, valid: Callable[[Any], bool]) -> Optional[Any]:
    """What the entry holds for the content `content` (a digest) of `path` when it is `valid`, else None."""
    entry = known.get(path)
    return entry[1] if entry is not None and entry[0] == content and valid(entry[1]) else None
