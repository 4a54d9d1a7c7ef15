"""Find the files to check and read them; problems come back as values."""
from __future__ import annotations

import hashlib
import io
import os
import stat
import tempfile
import tokenize
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from amplint.config import Config
from amplint.gitignore import GitIgnore
from amplint.model import FileError
from amplint.selection import path_matches
from amplint.witness import Witness, noted, stamp_of

SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
        "node_modules", "site-packages", ".mypy_cache", ".pytest_cache", ".amplint_cache", ".eggs",
    }
)
NO_FILES = "no Python files found"  # a directory with nothing to check: the CLI warns (exit 0)
SOURCE_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks: read as Python by amplint.notebook


@dataclass(frozen=True)
class SourceFile:
    """Decoded text plus what a writer needs to put the bytes back as they were."""

    path: str
    text: str
    encoding: str  # as detected: "utf-8-sig" means the file had a BOM
    digest: str = ""  # SHA-256 of the bytes read: `--fix` replaces the file only if it still holds them


def _skip_dir(name: str, full: str, exclude: Sequence[str], ignore: Optional[GitIgnore],
              witness: Optional[Witness] = None) -> bool:
    """Is the folder `full` (named `name`) left out of a walk? `_walk` and `walks_into` both ask here.

    `witness`: a folder left out for its `pyvenv.cfg` is noted by that file (one entered is noted by its stamp,
    which a new `pyvenv.cfg` moves)."""
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        return True
    if os.path.exists(os.path.join(full, "pyvenv.cfg")):
        noted(witness, os.path.join(full, "pyvenv.cfg"))
        return True
    if any(path_matches(full, pattern) for pattern in exclude):
        return True
    return ignore is not None and ignore.ignored(full, is_dir=True)


def _walks_file(name: str, full: str, ignore: Optional[GitIgnore], suffixes: Tuple[str, ...] = SOURCE_SUFFIXES) -> bool:
    """Is the file `full` (named `name`), in a folder the walk entered, listed? `_walk` and `walks_into` ask."""
    return name.endswith(suffixes) and not (ignore is not None and ignore.ignored(full, is_dir=False))


def _ignore(respect_gitignore: bool, witness: Optional[Witness] = None) -> Optional[GitIgnore]:
    """The git ignore rules of one walk (each `.gitignore` read once), None when they are not respected."""
    return GitIgnore(witness) if respect_gitignore else None


DEFAULT_MAX_BYTES = 2_000_000


def too_large(path: str, size: int, limit: int) -> FileError:
    return FileError(
        path, f"skipped: too large ({size / 1e6:.1f} MB, over the {limit / 1e6:.1f} MB max-file-size)"
    )


def discover(
    paths: Sequence[str], exclude: Sequence[str] = (), max_bytes: int = DEFAULT_MAX_BYTES,
    prefer: Sequence[str] = (), respect_gitignore: bool = True, witness: Optional[Witness] = None,
) -> Tuple[List[str], List[FileError]]:
    """Source files under `paths`, sorted; a named file is always checked, even if excluded by suffix or
    ignored by git. `witness` notes the folders listed and the ignore files read (`amplint.witness`).

    Under a named directory, what git ignores is skipped (`respect_gitignore`, as ruff's `respect-gitignore`:
    `amplint.gitignore`), though the named directory itself is walked even if git ignores it.

    Folders that cannot be listed and files over `max_bytes` (0: no limit) come back as errors, one each,
    and the rest is still checked: a run never stops at them, nor skips them silently. One file under two
    names (a symbolic or hard link) is listed once (`one_name_each`), else it was reported twice and its
    second `--fix` failed as "changed on disk".
    """
    found: List[str] = []
    errors: List[FileError] = []
    ignore = _ignore(respect_gitignore, witness)
    for root in paths:
        noted(witness, root)
        if os.path.isfile(root):
            found.append(os.path.normpath(root))
        elif os.path.isdir(root):
            before, failed = len(found), len(errors)
            found.extend(_walk(root, exclude, errors, ignore, witness=witness))
            if len(found) == before and len(errors) == failed:
                errors.append(FileError(root, NO_FILES))
        elif os.path.islink(root) and not os.path.exists(root):
            errors.append(FileError(root, "broken symbolic link (or a symlink loop)"))
        elif os.path.lexists(root):
            errors.append(FileError(root, "not a regular file or directory"))
        else:
            errors.append(FileError(root, "no such file or directory"))
    unique = one_name_each(sorted(set(found)), [p for p in paths if os.path.isfile(p)] + list(prefer))
    kept = []
    for path in unique:
        noted(witness, path)  # before any reader: its size decides too
        if any(path_matches(path, pat) for pat in exclude):
            continue
        size = _size(path)
        if max_bytes and size > max_bytes:
            errors.append(too_large(path, size, max_bytes))
        else:
            kept.append(path)
    return kept, errors


def discover_checked(
    paths: Sequence[str], config: Config, prefer: Sequence[str] = (), witness: Optional[Witness] = None,
) -> Tuple[List[str], List[FileError]]:
    """`discover` with the walk the configuration asks for (`exclude`, `max-file-size`, `respect-gitignore`):
    what every command that checks paths walks, so that an option reaches all of them."""
    return discover(paths, config.exclude, config.max_file_size, prefer, config.respect_gitignore, witness)


def one_name_each(paths: Sequence[str], prefer: Sequence[str] = ()) -> List[str]:
    """`paths` (sorted) with one name kept per file (device and inode): a name in `prefer` (named by the user),
    else one that is not a symbolic link, else the first."""
    preferred = {os.path.normpath(p) for p in prefer}
    best: Dict[object, Tuple[Tuple[bool, bool, str], str]] = {}
    for path in paths:
        try:
            info = os.stat(path)
            identity: object = (info.st_dev, info.st_ino)
        except OSError:
            identity = path  # unreadable: kept, and `read_source` reports it
        rank = (path not in preferred, os.path.islink(path), path)
        if identity not in best or rank < best[identity][0]:
            best[identity] = (rank, path)
    kept = {path for _, path in best.values()}
    return [path for path in paths if path in kept]


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0  # read_source reports it


def _walk(root: str, exclude: Sequence[str], errors: List[FileError], ignore: Optional[GitIgnore],
          suffixes: Tuple[str, ...] = SOURCE_SUFFIXES, skip: Callable[[str], bool] = lambda name: False,
          witness: Optional[Witness] = None) -> Iterator[str]:
    def unreadable(exc: OSError) -> None:
        errors.append(FileError(exc.filename or root, f"cannot read directory: {exc.strerror or exc}"))

    noted(witness, root)
    # followlinks=False: a symlink loop cannot make us walk forever.
    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames
                             if not skip(d) and not _skip_dir(d, os.path.join(dirpath, d), exclude, ignore, witness))
        for name in dirnames:  # os.walk lists each later: noted before it is
            noted(witness, os.path.join(dirpath, name))
        for name in sorted(filenames):
            if _walks_file(name, os.path.join(dirpath, name), ignore, suffixes):
                yield os.path.normpath(os.path.join(dirpath, name))


def walk_other(roots: Sequence[str], suffixes: Tuple[str, ...], config: Config,
               skip: Callable[[str], bool] = lambda name: False, witness: Optional[Witness] = None) -> Iterator[str]:
    """Files of other kinds (`suffixes`: the project's config files) under `roots`, sorted, walked as sources
    are: the configured `exclude`, and git's ignore rules when `respect-gitignore` is on, leave them out too;
    `skip` names more folders to leave. Folders that cannot be listed are passed over: these files only
    inform the analysis of the sources, whose own walk reports such folders."""
    ignore = _ignore(config.respect_gitignore, witness)
    for root in sorted(set(roots)):
        for path in _walk(root, config.exclude, [], ignore, suffixes, skip, witness):
            if not any(path_matches(path, pattern) for pattern in config.exclude):
                noted(witness, path)
                yield path


def walks_into(root: str, path: str, exclude: Sequence[str] = (), respect_gitignore: bool = True) -> bool:
    """Would `discover([root], exclude, respect_gitignore=...)` list `path`, a file under `root` (both spelled
    alike)?

    The same tests as `_walk` (`_skip_dir`, `_walks_file`), on `path`'s directories below `root` and on `path`:
    no directory listing (only the `.gitignore` files on the way are read), so asking costs nothing on a large
    tree. Exclusion of the file itself is `discover`'s, either way.
    """
    if not path.endswith(SOURCE_SUFFIXES):
        return False
    relative = os.path.relpath(os.path.dirname(path) or os.curdir, root)
    if relative.startswith(os.pardir):
        return False
    ignore = _ignore(respect_gitignore)
    current = root
    for name in ([] if relative == os.curdir else relative.split(os.sep)):
        current = os.path.join(current, name)
        if os.path.islink(current) or _skip_dir(name, current, exclude, ignore):
            return False  # os.walk(followlinks=False) does not enter a linked directory
    return _walks_file(os.path.basename(path), path, ignore)


def source_lines(text: str) -> List[str]:
    """The lines of `text` as Python numbers them, without their line endings.

    Only \\r\\n, \\r and \\n end a line. `str.splitlines` also splits at form
    feeds (`^L` page breaks), \\x1c-\\x1e, \\x85, \\u2028 and \\u2029, which in
    Python source are ordinary characters: every later line would shift.
    """
    return [line.rstrip("\r\n") for line in io.StringIO(text, newline="").readlines()]


def content_digest(data: bytes) -> str:
    """SHA-256 of a file's bytes: `SourceFile.digest`, and what the project cache keys a file's entries by."""
    return hashlib.sha256(data).hexdigest()


def decode(path: str, data: bytes, digest: Optional[str] = None) -> Union[SourceFile, FileError]:
    """Decode with the file's own BOM/encoding cookie, as Python does. `digest`: `content_digest(data)`, when
    the caller has it already."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        return FileError(path, f"cannot decode: {exc}")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return FileError(path, f"cannot decode line {line} as {encoding}: {exc}")
    except LookupError as exc:
        return FileError(path, f"cannot decode as {encoding}: {exc}")
    return SourceFile(path, text, encoding, content_digest(data) if digest is None else digest)


def read_source(path: str) -> Union[SourceFile, FileError]:
    data = read_bytes(path)
    return data if isinstance(data, FileError) else source_from(path, data)


def read_bytes(path: str) -> Union[bytes, FileError]:
    """The file's bytes, as `read_source` reads them (a pass that may not need the text digests them first)."""
    read = read_stamped(path)
    return read if isinstance(read, FileError) else read[0]


Stamp = Tuple[int, int, int, int]  # a regular file's size, modification and change times (ns) and inode


def read_stamped(path: str) -> Union[Tuple[bytes, Stamp], FileError]:
    """`read_bytes`, with the stamp of the file it read (`file_stamp`), taken from the open file itself."""
    # O_NONBLOCK: opening a FIFO named like a source file must not wait for a writer forever.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return FileError(path, f"cannot read: {exc.strerror or exc}")
    try:
        with os.fdopen(fd, "rb") as handle:
            found = os.fstat(handle.fileno())
            if not stat.S_ISREG(found.st_mode):
                return FileError(path, "cannot read: not a regular file")
            return handle.read(), stamp_of(found)
    except OSError as exc:
        return FileError(path, f"cannot read: {exc.strerror or exc}")


def file_stamp(path: str) -> Optional[Stamp]:
    """What `os.stat` says of a regular file that changes whenever its bytes do; None if it is not one.

    A write moves the modification and change times (and usually the size); a file replaced by a rename is
    another inode. Two passes of one run compare stamps to learn that a file is as the first one read it.
    """
    try:
        found = os.stat(path)
    except OSError:
        return None
    return stamp_of(found) if stat.S_ISREG(found.st_mode) else None


def source_from(path: str, data: bytes, digest: Optional[str] = None) -> Union[SourceFile, FileError]:
    """The source `read_source` gives for the bytes `data` of `path` (`digest`: as `decode` takes it)."""
    if path.endswith(".ipynb"):  # a notebook's code cells, IPython syntax masked
        from amplint.notebook import python_text

        text = python_text(path, data)
        return text if isinstance(text, FileError) else SourceFile(path, text, "utf-8")
    return decode(path, data, digest)


def replace_file(target: str, data: bytes, prefix: str, suffix: str = "") -> None:
    """Put `data` at `target` at once: written to a temporary file beside it (mode 0600), then renamed over it,
    so a reader meanwhile sees the old file or the new one, never part of one. On any failure the temporary
    file is removed and the error raised (an `OSError`: the caller decides whether it matters)."""
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=prefix, suffix=suffix)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
