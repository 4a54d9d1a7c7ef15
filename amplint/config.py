"""Resolved settings shared by the CLI, the flake8 plugin and the verifier."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import FrozenSet, Optional, Tuple

from amplint.model import DistributionBase

STRATEGIES = ("cast", "disable-autocast")


@dataclass(frozen=True)
class Config:
    """Every knob amplint has, with the defaults a user gets with no config file."""

    select: Tuple[str, ...] = ("AMP",)
    ignore: Tuple[str, ...] = ()
    exclude: Tuple[str, ...] = ()
    per_file_ignores: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    strategy: str = "cast"
    extend_autocast: Tuple[str, ...] = ()
    extend_distributions: Tuple[str, ...] = ()
    # Autocast spellings the project defines (`self.amp_cm = autocast if amp else nullcontext`, a decorator
    # that enters autocast): (name, the autocast it stands for). Filled by project mode, not by users.
    # (name, the autocast it wraps), and for a helper that opens its own region the `regions.RegionSpec` it opens
    autocast_aliases: Tuple[Tuple[object, ...], ...] = field(default=(), metadata={"derived": True})
    # The project's own distribution classes (`extend_distributions` holds their names) and their library bases.
    # Filled by project mode, not by users.
    distribution_bases: Tuple[DistributionBase, ...] = field(default=(), metadata={"derived": True})
    project: bool = True
    # Directories that form the project a single named file is checked in (`amplint.scope`): absolute,
    # resolved from `[tool.amplint] src` against the config file's directory. Empty: find the project
    # root from markers (pyproject.toml, setup.cfg, setup.py, .git) above the file.
    src: Tuple[str, ...] = ()
    # Index a named file's project (`src` or its marker root); False: the paths given are the project.
    # Left out of repr(): it decides which files are walked, never a file's findings for given entries.
    project_root: bool = field(default=True, repr=False)
    # Skip what git ignores under the directories walked (`.gitignore`, `.git/info/exclude`), as ruff does; a file
    # named explicitly is checked anyway. Left out of repr(), as `project_root`: it decides which files are walked.
    respect_gitignore: bool = field(default=True, repr=False)
    # Calls followed from a region, at most (None: every function the walk can reach, each entered once).
    max_depth: Optional[int] = None
    # Units of value-flow work one pass of the walk may spend per file checked (`project.budget`); 0: no bound.
    flow_budget: int = 200
    # Files larger than this many bytes are skipped with one line (a 5 MB file took 72 s and 3.5 GB); 0: no limit.
    max_file_size: int = 2_000_000
    # Worker processes for parsing: 0 one per usable CPU when it pays, 1 never a pool (`amplint.parallel`).
    # Left out of repr(): the project cache keys findings by repr(config), and -j must not change them.
    jobs: int = field(default=0, repr=False)

    @cached_property
    def distribution_pattern(self) -> Optional["re.Pattern[str]"]:
        """The configured distribution classes' last names as words (`Normal` in `Normal(...)` or `D.Normal`, not
        in `Normalize`), for the text tests; None when none is configured. A configured package (`pkg.`) names
        no class: every text may use one. Project mode configures each of its classes under every module name
        it may be imported by (on 24,246 files, 3,248 names and 107 words), and looking for every name in every
        file cost more than the walk it screens for; as substrings, `Normal`, `Unit` and `Delta` sent files
        that only named `Normalize`, `UnitTest` or `DeltaTime` to the slower LibCST reading."""
        words = sorted({name.rsplit(".", 1)[-1] for name in self.extend_distributions}, key=lambda w: (-len(w), w))
        if not words:
            return None
        return re.compile("" if "" in words else r"\b(?:%s)\b" % "|".join(map(re.escape, words)))

    def names_a_distribution(self, text: str) -> bool:
        """Does `text` name one of the configured distribution classes (`distribution_pattern`)?"""
        pattern = self.distribution_pattern
        return pattern is not None and pattern.search(text) is not None

    @cached_property
    def distribution_names(self) -> FrozenSet[str]:
        return frozenset(self.extend_distributions)
