"""Swap two names in one step (Linux `renameat2(RENAME_EXCHANGE)`), so a replace can be taken back.

`os.replace` cannot fail "because the target changed": whatever the target held when it runs is gone. An
editor that saved `model.py` after `--fix` checked it, and before the rename, lost its edit. With an
exchange the old file is not gone: it sits under the temporary name, where `--fix` reads it once more,
and swaps the names back when it is not the file it checked. Where the call is missing (other systems,
old C libraries, file systems without it) `exchange` answers False and the caller renames as before.
"""
from __future__ import annotations

import errno
import os
import sys
from functools import lru_cache
from typing import Any, Optional

AT_FDCWD = -100
RENAME_EXCHANGE = 2
UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP}


@lru_cache(maxsize=None)
def _renameat2() -> Optional[Any]:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # glibc before 2.28, musl without it
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    function.restype = ctypes.c_int
    return function


def exchange(first: str, second: str) -> bool:
    """Swap the files named `first` and `second` atomically; False (nothing done) where that is not offered.

    Raises OSError for a real failure (a name missing, no permission).
    """
    function = _renameat2()
    if function is None:
        return False
    import ctypes

    if function(AT_FDCWD, os.fsencode(first), AT_FDCWD, os.fsencode(second), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), second)
