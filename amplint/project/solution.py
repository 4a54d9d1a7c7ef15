"""The project's solution on disk: a run over a project that has not changed does not walk it again.

The walk and the join over call sites (`returnflow.dist_arguments`) read the whole project: every file's text
(the text pass's indexes), summaries, CPython's trees, and the config files under the project tops. Their
result is a function of those, of amplint's code and of the configuration, so it is kept under a key made of
all of them:
- each discovered file's path and content digest (the text pass computed them), and the files that could
  not be read;
- each config file's path and stamp (`configfiles`: Lightning's `precision:`, Hydra's `_target_:`);
- the configuration, with the project's spellings and distribution classes;
- the display root and the working folder, because chains show paths relative to them.

Any change is a miss, and the run walks again. The cache can make a run faster; it never changes a result.

What each file is analysed with (its contexts: the returns of the calls it makes, the arguments it is given)
is still computed at each run, for the files the run reports only, with a new resolver: those questions are
about one file. So `amplint check FILE` in an unchanged project walks nothing. On transformers a warm one-file
run had taken 327 s, nearly all of it the walk.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.facts.entry import DistArgument, EntryContext
from amplint.files import file_stamp
from amplint.model import FileError
from amplint.project.budget import Cut
from amplint.project.cache import DiskCache, digest

SOLUTION = "solution"


@dataclass(frozen=True)
class Solution:
    """What the walk and the join over call sites found, per file path as discovered."""

    entries: Dict[str, Tuple[EntryContext, ...]]  # functions entered from float16 regions
    arguments: Dict[str, Tuple[DistArgument, ...]]  # parameters given distributions
    errors: Dict[str, FileError]  # files the solving found unreadable or not Python (each is reported)
    # The files parsed up front (`Loader.region_files`): deciding it asks every file's imports
    region_files: Tuple[str, ...]
    cut: Optional[Cut] = None  # where the work bound stopped the walk
    stack_cut: bool = False  # a question of the solving was cut where Python's stack ran short (`budget.STACK_CUT`)


@dataclass(frozen=True)
class SolutionStore:
    """The cache's entries for one project state; `key` None: nothing is read or written."""

    cache: DiskCache
    key: Optional[str]

    def solution(self) -> Optional[Solution]:
        found = self.cache.get(SOLUTION, self.key) if self.key is not None else None
        return found if isinstance(found, Solution) else None

    def keep_solution(self, solution: Solution) -> None:
        if self.key is not None:
            self.cache.put(SOLUTION, self.key, solution)


def project_state(
    fingerprint: str, config: Config, files: Sequence[str], contents: Dict[str, str], unread: Dict[str, str],
    tops: Sequence[str], root: str, settings_files: Callable[[], Sequence[str]],
) -> Optional[str]:
    """The key of everything the solution depends on, or None when a file's content digest is not known.

    `contents`: each readable file's content digest; `unread`: the message of each file that could not be read;
    `settings_files`: the config files under the tops (`configfiles.config_files`, walked once a run).
    """
    files_state = []
    for path in files:
        if path in contents and contents[path]:
            files_state.append((path, contents[path]))
        elif path in unread:
            files_state.append((path, "unread", unread[path]))
        else:
            return None
    settings = tuple((path, file_stamp(path)) for path in settings_files())
    return digest(fingerprint, SOLUTION, repr(config), os.getcwd(), root, tuple(tops), tuple(files_state), settings)
