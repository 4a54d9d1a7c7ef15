"""What a run looked at on disk, so that a later run can tell, with a `stat` of each, that all of it is unchanged.

A project run's answer is a function of amplint's code, the configuration and what it read: the folders it
listed, the files it read, the ignore and git files that decided what to list, and the files and folders whose
existence it asked about. The discovery, the git ignore rules, the config files' walk and the module index
note each of them here *before* they read it, so a change made while the run reads can only make the next run
look again, never hide. A file or folder is noted by its stamp (size, modification and change times, inode: a
write moves the change time, whatever it does to the others); a path only tested for existence (`.git`, a
project marker, `__init__.py`) by its kind, so that git's own writes inside `.git` do not count as a change.

A file system stamps times at a coarse grain (a clock tick on Linux, a second or two on some), so a path
written in the same grain as it was noted could be written again with the same stamp: such a note is *racy*
(git's "racily clean" entries), and a run that made one keeps no answer.
"""
from __future__ import annotations

import os
import stat
import time
from typing import Dict, Optional, Tuple, Union

Look = Union[Tuple[int, ...], str, None]  # a stamp, a kind ("dir", "file", "other", "none") or None (absent)
STAMP, KIND = "stamp", "kind"
RACY_NS = 1_000_000_000  # a path changed this recently when noted may change again unseen: wider than any grain


class Witness:
    """The paths one run looked at, each with what it saw then (`look`). Noting a path twice keeps the first."""

    def __init__(self) -> None:
        self.seen: Dict[Tuple[str, str], Look] = {}
        self.racy = False  # some path was changed within RACY_NS of being noted

    def stamp(self, path: str) -> None:
        """`path` is about to be read or listed: its contents count."""
        key = (STAMP, path)
        if key not in self.seen:
            found = self.seen[key] = look(STAMP, path)
            if isinstance(found, tuple) and max(found[2], found[3]) >= time.time_ns() - RACY_NS:
                self.racy = True

    def kind(self, path: str) -> None:
        """`path` is asked whether it exists (and is a folder or a file): only that counts."""
        key = (KIND, path)
        if key not in self.seen:
            self.seen[key] = look(KIND, path)


def look(how: str, path: str) -> Look:
    """What `path` shows now: its stamp (`how` STAMP; None when it is missing), or its kind (KIND)."""
    try:
        found = os.stat(path)
    except (OSError, ValueError):
        return None if how == STAMP else "none"
    if how == KIND:
        return "dir" if stat.S_ISDIR(found.st_mode) else "file" if stat.S_ISREG(found.st_mode) else "other"
    return (stat.S_IFMT(found.st_mode), *stamp_of(found))


def stamp_of(found: os.stat_result) -> Tuple[int, int, int, int]:
    """What changes whenever a file's bytes do: its size, modification and change times (ns) and inode (a file
    replaced by a rename is another inode). `files.file_stamp` reads a regular file's stamp with it too."""
    return found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino


def unchanged(seen: Dict[Tuple[str, str], Look]) -> bool:
    """Does every path still show what a run saw (`Witness.seen`)?"""
    return all(look(how, path) == then for (how, path), then in seen.items())


def noted(witness: Optional[Witness], path: str) -> None:
    """`witness.stamp(path)`, when there is a witness."""
    if witness is not None:
        witness.stamp(path)
