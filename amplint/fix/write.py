"""Put rewritten text back on disk as the original was: encoding, BOM, newlines, mode.

Writes are atomic: a temporary file in the same directory (same file system)
is filled, flushed, given the original mode and renamed over the target, so
a crash leaves either the old file or the new one, never half of each.
"""
from __future__ import annotations

import os
import stat
import tempfile
from typing import Optional, Union

from amplint.model import FileError


def encode(path: str, text: str, encoding: str) -> Union[bytes, FileError]:
    """Text back to bytes with the encoding it was read with ("utf-8-sig" restores the BOM)."""
    if path.endswith(".ipynb"):  # the fixed cells go back into the notebook's JSON
        from amplint.notebook import notebook_bytes

        return notebook_bytes(path, text)
    try:
        return text.encode(encoding)
    except (UnicodeEncodeError, LookupError) as exc:
        return FileError(path, f"cannot encode the fixed text as {encoding}: {exc}; file left unchanged")


def atomic_write(path: str, data: bytes) -> Optional[FileError]:
    """Replace the file at `path` (following a symlink to its target) with `data`."""
    target = os.path.realpath(path)
    directory = os.path.dirname(target) or "."
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
        # A rename replaces a read-only file as easily as any other (and root may write anything):
        # honour the file's own permissions, as an editor would.
        if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
            return FileError(path, "cannot write: the file is read-only; file left unchanged")
        handle, temp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".amplint", dir=directory)
    except OSError as exc:
        return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
    return None
