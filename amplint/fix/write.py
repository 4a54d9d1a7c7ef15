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

Editors take no `flock`, so the check is made again once the temporary file is on disk, immediately
before the rename (the file's stamp, then its digest), and on Linux the rename is an exchange
(`fix/exchange.py`): the file that was replaced is read once more under the temporary name and put back
when it is not the one that was checked. What remains is a program that holds the file open and writes
into it after the exchange: that write goes to the old file (docs/security.md).
"""
from __future__ import annotations

import errno
import os
import stat
import tempfile
from contextlib import contextmanager
from typing import BinaryIO, Iterator, Optional, Sequence, Union

from amplint.files import content_digest
from amplint.fix.exchange import exchange
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
                return _write_in_place(path, target, data, current, info)
            return _replace(path, target, data, mode, info, content_digest(current))
    except OSError as exc:
        return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")


def _read_path(target: str) -> bytes:
    with open(target, "rb") as handle:
        return handle.read()


def _temporary(target: str) -> tuple:
    directory = os.path.dirname(target) or "."
    return tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".amplint", dir=directory)


def _changed(name: str, checked: os.stat_result, digest: str) -> bool:
    """Is the file at `name` no longer the one checked (another file, other stamps, other bytes)?"""
    now = os.stat(name)
    stamp = (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns)
    if stamp != (checked.st_dev, checked.st_ino, checked.st_size, checked.st_mtime_ns):
        return True
    return content_digest(_read_path(name)) != digest


def _replace(
    path: str, target: str, data: bytes, mode: int, info: os.stat_result, digest: str
) -> Optional[FileError]:
    """Write `data` beside `target`, check the target once more, and swap it in (or rename, where there is
    no exchange). On Linux the new text is written into an unnamed file (`O_TMPFILE`) and gets a name only
    for the instant of the exchange, so even SIGKILL, which no handler sees, almost never leaves one."""
    unnamed, temp = None, None
    keep = False  # the temporary name holds someone else's edit: never removed
    try:
        unnamed = _unnamed(target, data, mode, info)
        if unnamed is None:
            temp = _named(target, data, mode, info)
        if _changed(target, info, digest):  # saved while the new text was being written
            return FileError(path, CHANGED_MESSAGE)
        if unnamed is not None:
            temp = _link(unnamed, target)
        assert temp is not None
        if not exchange(temp, target):
            os.replace(temp, target)
            return None
        if _changed(temp, info, digest):  # saved between the check and the exchange: put it back
            keep = True
            exchange(temp, target)
            keep = False
            return FileError(path, CHANGED_MESSAGE)
        return None
    except OSError as exc:
        if keep:
            return FileError(path, f"{CHANGED_MESSAGE}; cannot put the edit back ({exc}): it is in {temp}")
        return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
    finally:
        if unnamed is not None:
            os.close(unnamed)
        if temp is not None and not keep:
            _remove(temp)


def _unnamed(target: str, data: bytes, mode: int, info: os.stat_result) -> Optional[int]:
    """An open unnamed file in `target`'s folder holding `data`, synced, with the target's mode and owner;
    None where the system or file system has no `O_TMPFILE`."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):  # `_link` names it through /proc
        return None
    try:
        fd = os.open(os.path.dirname(target) or ".", flag | os.O_WRONLY, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise
    try:
        with os.fdopen(os.dup(fd), "wb") as out:
            _synced(out, data)
        os.fchmod(fd, mode)
        _keep_owner(fd, info)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _link(fd: int, target: str) -> str:
    """Give the unnamed file `fd` a temporary name beside `target` (`.name.XXXXXXXX.amplint`)."""
    directory, base = os.path.split(target)
    folder = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        for _ in range(100):
            name = f".{base}.{os.urandom(4).hex()}.amplint"
            try:  # a folder's fd makes Python call linkat(AT_SYMLINK_FOLLOW): plain link() gives EXDEV here
                os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=folder, follow_symlinks=True)
                return os.path.join(directory, name)
            except FileExistsError:
                continue
    finally:
        os.close(folder)
    raise FileExistsError(errno.EEXIST, "no free temporary name", target)  # pragma: no cover


def _named(target: str, data: bytes, mode: int, info: os.stat_result) -> str:
    """A named temporary file beside `target` holding `data`, synced, with the target's mode and owner."""
    handle, temp = _temporary(target)
    try:
        with os.fdopen(handle, "wb") as out:
            _synced(out, data)
        os.chmod(temp, mode)
        _keep_owner(temp, info)
    except BaseException:
        _remove(temp)
        raise
    return temp


def _write_in_place(path: str, target: str, data: bytes, old: bytes, info: os.stat_result) -> Optional[FileError]:
    """Overwrite the file's own inode, so its other hard links see the fix; the old bytes wait in a
    temporary copy until the new ones are synced, and go back if the write fails."""
    handle, backup = _temporary(target)
    try:
        with os.fdopen(handle, "wb") as copy:
            _synced(copy, old)
        changed = _changed(target, info, content_digest(old))  # saved while the copy was being written
    except BaseException as exc:
        _remove(backup)
        if isinstance(exc, OSError):
            return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
        raise
    if changed:
        _remove(backup)
        return FileError(path, CHANGED_MESSAGE)
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


def _keep_owner(temp: Union[str, int], info: os.stat_result) -> None:
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
