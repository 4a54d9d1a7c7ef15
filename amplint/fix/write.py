"""Put rewritten text back on disk as the original was: encoding, BOM, newlines, mode, owner, links.

Writes are atomic: a temporary file in the same directory (same file system)
is filled, flushed, given the original mode and owner, and renamed over the
target, so a crash leaves either the old file or the new one, never half of
each. A file with other hard links is rewritten in place instead (a rename
would split it from its links), with a copy of the old bytes kept in the
temporary file until the new ones are on disk.

Before anything is replaced, the file must still hold the bytes that were
analysed (`expected`, their SHA-256): an edit saved while `--fix` ran, or a
second `--fix` run that got there first, is never overwritten. The check and
the replacement hold an advisory lock (`flock`) on the file where the system
has one, so two runs cannot both pass the check. The temporary file
(`.name.py.XXXX.amplint`) is removed on every way out, Ctrl-C included.
"""
from __future__ import annotations

import os
import stat
import tempfile
from contextlib import contextmanager
from typing import BinaryIO, Iterator, Optional, Sequence, Union

from amplint.files import content_digest
from amplint.model import FileError

CHANGED_MESSAGE = (
    "changed on disk while amplint was fixing it (saved in an editor, or fixed by another run?); "
    "not fixed, file left as it is now"
)
OUTSIDE_MESSAGE = "is a symbolic link to a file outside the checked tree; not rewritten"


def encode(path: str, text: str, encoding: str) -> Union[bytes, FileError]:
    """Text back to bytes with the encoding it was read with ("utf-8-sig" restores the BOM)."""
    if path.endswith(".ipynb"):  # the fixed cells go back into the notebook's JSON
        from amplint.notebook import notebook_bytes

        return notebook_bytes(path, text)
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        return FileError(path, f"cannot encode the fixed text as {encoding}: {exc}; file left unchanged")


def inside_tree(path: str, roots: Sequence[str]) -> bool:
    """Does `path`, links resolved, stay under one of `roots` (a named file's tree is its folder)?"""
    target = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root if os.path.isdir(root) else os.path.dirname(os.path.abspath(root)))
        if target == top or target.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


@contextmanager
def _locked(target: str) -> Iterator[Optional[int]]:
    """The target's current file, open and exclusively locked (None where there is no flock)."""
    try:
        import fcntl
    except ImportError:  # Windows: the hash check alone
        yield None
        return
    for _ in range(100):
        fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_ino == os.stat(target).st_ino:  # not replaced while we waited
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    else:  # pragma: no cover - replaced 100 times in a row
        raise OSError("the file keeps being replaced")
    try:
        yield fd
    finally:
        os.close(fd)  # closing releases the lock


def _read_all(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def atomic_write(
    path: str, data: bytes, expected: Optional[str] = None, roots: Optional[Sequence[str]] = None
) -> Optional[FileError]:
    """Replace the file at `path` with `data` if it still holds the bytes hashed as `expected`.

    A symbolic link is written through to its target only when the target stays under `roots`.
    """
    if roots is not None and not inside_tree(path, roots):
        return FileError(path, OUTSIDE_MESSAGE)
    target = os.path.realpath(path)
    try:
        info = os.stat(target)
        mode = stat.S_IMODE(info.st_mode)
        # A rename replaces a read-only file as easily as any other (and root may write anything):
        # honour the file's own permissions, as an editor would.
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
            return FileError(path, "cannot write: the file is read-only; file left unchanged")
        with _locked(target) as fd:
            current = _read_all(fd) if fd is not None else _read_path(target)
            if expected is not None and content_digest(current) != expected:
                return FileError(path, CHANGED_MESSAGE)
            info = os.fstat(fd) if fd is not None else os.stat(target)
            if info.st_nlink > 1:
                return _write_in_place(path, target, data, current)
            return _replace(path, target, data, mode, info)
    except OSError as exc:
        return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")


def _read_path(target: str) -> bytes:
    with open(target, "rb") as handle:
        return handle.read()


def _temporary(target: str) -> tuple:
    directory = os.path.dirname(target) or "."
    return tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".amplint", dir=directory)


def _replace(path: str, target: str, data: bytes, mode: int, info: os.stat_result) -> Optional[FileError]:
    handle, temp = _temporary(target)
    try:
        with os.fdopen(handle, "wb") as out:
            _synced(out, data)
        os.chmod(temp, mode)
        _keep_owner(temp, info)
        os.replace(temp, target)
    except BaseException as exc:
        _remove(temp)
        if isinstance(exc, OSError):
            return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
        raise
    return None


def _write_in_place(path: str, target: str, data: bytes, old: bytes) -> Optional[FileError]:
    """Overwrite the file's own inode, so its other hard links see the fix; the old bytes wait in a
    temporary copy until the new ones are synced, and go back if the write fails."""
    handle, backup = _temporary(target)
    try:
        with os.fdopen(handle, "wb") as copy:
            _synced(copy, old)
    except BaseException as exc:
        _remove(backup)
        if isinstance(exc, OSError):
            return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
        raise
    try:
        _overwrite(target, data)
    except BaseException as exc:
        try:
            _overwrite(target, old)
        except BaseException:  # the old bytes stay in the temporary copy, named in the message
            return FileError(path, f"cannot write, nor restore: {exc}; the original is in {backup}")
        _remove(backup)
        if isinstance(exc, OSError):
            return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
        raise
    _remove(backup)
    return None


def _overwrite(target: str, data: bytes) -> None:
    with open(target, "r+b") as out:
        _synced(out, data, truncate=True)


def _synced(out: BinaryIO, data: bytes, truncate: bool = False) -> None:
    """Write `data` and wait until it is on disk: a rename or a restore may rely on it right after."""
    out.write(data)
    if truncate:
        out.truncate()
    out.flush()
    os.fsync(out.fileno())


def _keep_owner(temp: str, info: os.stat_result) -> None:
    """Give the new file the old one's owner and group, where this user may (root may; others keep theirs)."""
    chown = getattr(os, "chown", None)
    if chown is None:
        return
    current = os.stat(temp)
    if (current.st_uid, current.st_gid) == (info.st_uid, info.st_gid):
        return
    try:
        chown(temp, info.st_uid, info.st_gid)
    except OSError:
        try:
            chown(temp, -1, info.st_gid)  # a member of the file's group may keep at least the group
        except OSError:
            pass


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
