"""Project mode: follow calls made in float16 regions across the files checked.

`check_project` is what `amplint check` runs by default (`--no-project` turns
it off). `project_entries` gives, per file, the functions entered from regions
elsewhere, for `pipeline.analyze_source(..., entries=...)`: that is how `--fix`
gets the `Diagnosis` of a site reached through a chain. The walk sits on the
per-file pipeline (`amplint.pipeline`) and never imports the engine above it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Sequence, Tuple

from amplint.config import Config

if TYPE_CHECKING:  # pragma: no cover
    from amplint.model import Checked
    from amplint.project.summary import EntryContext


def check_project(paths: Sequence[str], config: Config = Config()) -> "Checked":
    """Every file under `paths`, sorted, with project-mode findings (errors as results, like `engine.check`),
    and what the run says of itself (its work bound reached)."""
    from amplint.model import Checked
    from amplint.project.run import run_project

    run = run_project(paths, config)
    return Checked(run.results, run.notices)


def project_entries(paths: Sequence[str], config: Config = Config()) -> "Dict[str, Tuple[EntryContext, ...]]":
    """Functions of each file entered from float16 regions (for `analyze_source(entries=...)`)."""
    from amplint.project.run import run_project

    return run_project(paths, config).entries
