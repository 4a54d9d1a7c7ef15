"""A project run's answer, kept with what the run looked at: a run over an unchanged project reads nothing.

The solution cache (`project.solution`) spares the walk, but its key is every file's content, so a warm run
still discovers the files, reads each one for its digest, loads the passes' entries and builds the module
index: about a second on a 4,637-file project, for `amplint check FILE` from pre-commit or an editor. The answer
of a run (each reported file's findings, the contexts, the spellings, the notices) is a function of amplint's
code, the configuration, the paths, and what the run read and listed on disk. So it is kept with the stamp of
each path the run looked at (`amplint.witness`: the folders discovery listed, the files, the ignore and git
files, the config files and the `__init__.py` files asked about), under a key of the rest:

- amplint's code fingerprint, every setting but `-j`, the paths given, the files to report, the project tops and the
  working folder (results name paths as discovered, relative to it);
- the environment git's configuration is found by (`GIT_CONFIG_*`, `XDG_CONFIG_HOME`, `HOME`).

A run whose key is found and whose every path still shows the same stamp gives the kept answer. Anything else
is a miss: the run goes on as before, and keeps its answer for the next. A stamp that moved while a run was
reading can only cause a miss, since each path is noted before it is read.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import AbstractSet, Dict, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.facts.entry import WalkContext
from amplint.model import DistributionBase, FileResult, Notice
from amplint.project.cache import DiskCache, digest
from amplint.project.spellings import Spelling
from amplint.witness import Look, unchanged

ANSWER = "answer"
# What git's configuration files, hence the global excludes file, are found by (`amplint.gitconfig`).
GIT_ENVIRONMENT = ("GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_GLOBAL", "XDG_CONFIG_HOME", "HOME")


@dataclass(frozen=True)
class Answer:
    """A run's answer and what it looked at (`Witness.seen`)."""

    seen: Dict[Tuple[str, str], Look]
    results: Tuple[FileResult, ...]
    entries: Dict[str, Tuple[WalkContext, ...]]
    spellings: Tuple["Spelling | DistributionBase", ...]
    notices: Tuple[Notice, ...]


@dataclass(frozen=True)
class AnswerStore:
    """The cache's answer for one run's key; `cache` with no folder reads and writes nothing."""

    cache: DiskCache
    key: str

    def answer(self) -> Optional[Answer]:
        """The kept answer, if every path it looked at is unchanged."""
        if self.cache.directory is None:
            return None
        found = self.cache.get(ANSWER, self.key)
        return found if isinstance(found, Answer) and unchanged(found.seen) else None

    def keep(self, answer: Answer) -> None:
        self.cache.put(ANSWER, self.key, answer)


def answer_key(fingerprint: str, config: Config, paths: Sequence[str], report: Optional[AbstractSet[str]],
               tops: Sequence[str]) -> str:
    """The key of a run's answer: everything it depends on but what it reads from disk."""
    wanted = None if report is None else tuple(sorted(report))
    environment = tuple(os.environ.get(name) for name in GIT_ENVIRONMENT)
    # Every setting, also those repr() leaves out because they decide which files are walked (all but -j).
    settings = tuple((each.name, getattr(config, each.name)) for each in fields(config) if each.name != "jobs")
    return digest(fingerprint, ANSWER, settings, os.getcwd(), tuple(paths), wanted, tuple(tops), environment)
