"""Keep `amplint verify` from importing the analysed project's code.

`verify` imports torch and the distribution classes it rebuilds (`pyro.distributions.Normal`).
With `python -m amplint`, the current directory is first on `sys.path`: a
project with a `pyro/` (or `torch/`) folder of its own would have that code
run by the import. Before verify imports anything, the current directory
and the analysed paths (and the folders of analysed files) leave `sys.path`,
so only installed packages can be imported. Site-packages folders inside the
project (`.venv/...`) are other entries and stay.
"""
from __future__ import annotations

import os
import sys
from typing import List, Sequence, Set


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path or os.curdir))


def project_entries(paths: Sequence[str]) -> Set[str]:
    """The `sys.path` entries (real paths) through which the analysed code could be imported."""
    entries = {_real(os.curdir)}
    for path in paths:
        entries.add(_real(path))
        if not os.path.isdir(path):
            entries.add(_real(os.path.dirname(path)))
    return entries


def strip_project_paths(paths: Sequence[str], search: List[str] = sys.path) -> List[str]:
    """Remove from `search` (in place) every entry that is the current directory or an analysed path.

    Returns the removed entries. `""` (the current directory) always goes.
    """
    banned = project_entries(paths)
    removed = [entry for entry in search if entry in ("", os.curdir) or _real(entry) in banned]
    search[:] = [entry for entry in search if entry not in removed]
    return removed
