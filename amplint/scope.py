"""Which project a named file belongs to, so that checking one file sees what the whole project sees.

pre-commit runs `amplint check model.py`, editors run `flake8 model.py`. The float16 region that reaches
`model.py` is usually in `train.py`, which was not named, and the project's own autocast spellings
(`self.amp_cm = autocast if amp else nullcontext`) may be defined in a base class elsewhere. So a named
file is checked in its *project*: the directories of `[tool.amplint] src` that hold it, else the nearest
directory above it with a `pyproject.toml`, `setup.cfg`, `setup.py` or `.git`. The project walk
(`amplint.project.run`) indexes that project, through its disk cache, and computes findings for the named
files only: their findings are exactly those of a whole-project run of the root.

What is not a named file keeps its old meaning: a directory is its own project, and so is a file with no
project above it (no `src` entry holds it, no marker is above it): it is checked with the other paths
given, as before, rather than with whatever directory it happens to sit in (`/tmp`, a home directory).
A named file under a named directory is checked with that directory.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Dict, FrozenSet, List, NamedTuple, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.files import walks_into
from amplint.model import Checked, FileError, FileResult, Finding, Notice
from amplint.project.modules import marked_directory

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.run import ProjectRun
    from amplint.project.spellings import Spelling
    from amplint.project.summary import EntryContext
    from amplint.project.textfindings import TextFindings


def marked_root(path: str) -> Optional[str]:
    """The nearest directory at or above `path`'s own holding a project marker; None when there is none."""
    return marked_directory(os.path.dirname(os.path.abspath(path)))


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _within(path: str, directory: str) -> Optional[str]:
    """`path` (absolute) relative to `directory` when the directory holds it, as spelled or once links are
    resolved (a `src` entry spelled through a link, a file named by its real path); None when it does not."""
    for inner, outer in ((path, directory), (os.path.realpath(path), os.path.realpath(directory))):
        if _under(inner, outer):
            return os.path.relpath(inner, outer)
    return None


def project_dirs(path: str, config: Config) -> Optional[Tuple[str, ...]]:
    """The absolute directories forming `path`'s project: every `src` entry when one holds it, else the
    marked root; None when neither applies."""
    full = os.path.abspath(path)
    if any(_within(full, directory) is not None for directory in config.src):
        return tuple(config.src)
    root = marked_root(full)
    return None if root is None else (root,)


@dataclass(frozen=True)
class Scope:
    """One project walk: the paths it indexes, and the files whose results it reports.

    `report` holds the reported files as the walk spells them (None: every file, as a plain run);
    `given` maps those spellings back to the user's where they differ, so output names files as given.
    """

    index: Tuple[str, ...]
    report: Optional[FrozenSet[str]] = None
    given: Tuple[Tuple[str, str], ...] = ()

    def shown(self, path: str) -> str:
        """`path` as the user named it."""
        return dict(self.given).get(path, path)

    def renamed(self, result: FileResult) -> FileResult:
        """A result of the walk under the name the user gave its file."""
        shown = self.shown(result.path)
        if shown == result.path:
            return result
        error = None if result.error is None else FileError(shown, result.error.message)
        return FileResult(shown, [rename(finding, shown) for finding in result.findings], error)


def rename(finding: Finding, path: str) -> Finding:
    return finding if finding.path == path else replace(finding, path=path)


def _spell(directory: str, relative: bool) -> str:
    """A directory spelled as the walk will spell its files: relative to the working directory when the
    user's file was, so that `check model.py` keys the cache like `check .` run from the root."""
    if not relative:
        return directory
    try:
        return os.path.relpath(directory)
    except ValueError:  # another drive (Windows)
        return directory


def scopes(paths: Sequence[str], config: Config) -> List[Scope]:
    """The walks that check `paths`: one per project of the named files, and one (a plain run, as
    before) for the directories, the files under them, the files with no project and the missing paths.
    With `project-root = false` (`--no-project-root`) the paths given are the project, as before."""
    if not config.project_root:
        return [Scope(tuple(paths))]
    directories = [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    plain: List[str] = []
    projects: Dict[Tuple[str, ...], List[str]] = {}
    seen = set()
    for path in paths:
        full = os.path.abspath(path)
        if not os.path.isfile(path) or any(_under(full, d) for d in directories):
            plain.append(path)
            continue
        if full in seen:
            continue
        seen.add(full)
        dirs = project_dirs(path, config)
        if dirs is None:
            plain.append(path)
        else:
            projects.setdefault(dirs, []).append(path)
    out = [_project_scope(dirs, files, config) for dirs, files in projects.items()]
    if plain:
        out.append(Scope(tuple(plain)))
    return out


def _project_scope(dirs: Tuple[str, ...], files: Sequence[str], config: Config) -> Scope:
    relative = not os.path.isabs(files[0])
    index = [_spell(directory, relative) for directory in dirs]
    report, given = set(), []
    for path in files:
        full = os.path.abspath(path)
        inside = {d: _within(full, d) for d in dirs}
        home = max((d for d in dirs if inside[d] is not None), key=len)
        spelled = os.path.normpath(os.path.join(index[dirs.index(home)], inside[home]))
        if not walks_into(index[dirs.index(home)], spelled, config.exclude, config.respect_gitignore):
            spelled = os.path.normpath(path)  # a named file the walk skips (`build/`, no suffix, git-ignored)
            index.append(spelled)
        report.add(spelled)
        if spelled != os.path.normpath(path):
            given.append((spelled, os.path.normpath(path)))
    return Scope(tuple(index), frozenset(report), tuple(given))


def run_scopes(paths: Sequence[str], config: Config, findings: bool = True) -> "List[Tuple[Scope, ProjectRun]]":
    """Each scope's project run; `findings=False` computes no findings (for front ends that analyse the
    files themselves and need only the walk's entries and spellings)."""
    from amplint.project.run import run_project

    runs = []
    for scope in scopes(paths, config):
        report = scope.report if findings else frozenset()
        runs.append((scope, run_project(list(scope.index), config, report=report)))
    return runs


def check_in_projects(paths: Sequence[str], config: Config) -> Checked:
    """`engine.check` with every named file checked in its project (sorted by path, as given), and what each
    project's run said of itself."""
    runs = run_scopes(paths, config)
    results = [scope.renamed(result) for scope, run in runs for result in run.results]
    return Checked(sorted(results, key=lambda result: result.path), tuple(n for _, run in runs for n in run.notices))


class Given(NamedTuple):
    """What a front end that analyses a file's text itself needs from the file's project walk."""

    entries: Tuple["EntryContext", ...] = ()  # the functions of the file entered from regions elsewhere
    spellings: Tuple["Spelling", ...] = ()  # the project's own autocast spellings
    texts: Optional["TextFindings"] = None  # the walk's cache, for the text's findings (`engine.analyze_in_project`)


@dataclass(frozen=True)
class Context:
    """Per file, what the project walks give a front end that analyses the file's text itself (the flake8
    plugin): the functions entered from regions elsewhere, its project's own autocast spellings, and the
    walk's cache."""

    runs: Tuple[Tuple[Scope, Dict[str, Tuple["EntryContext", ...]], Given], ...] = ()
    notices: Tuple[Notice, ...] = ()  # what the walks said of themselves (a work bound reached)

    @classmethod
    def build(cls, paths: Sequence[str], config: Config) -> "Context":
        runs, notices = [], []
        for scope, run in run_scopes(paths, config, findings=False):
            entries = {os.path.abspath(path): found for path, found in run.entries.items()}
            runs.append((scope, entries, Given((), run.spellings, run.texts)))
            notices.extend(run.notices)
        return cls(tuple(runs), tuple(notices))

    def of(self, path: str) -> Given:
        """What `path` is given: from the walk that reports it, else from the plain walk."""
        full = os.path.abspath(path)
        plain = None
        for scope, entries, given in self.runs:
            if scope.report is None:
                plain = (entries, given)
            elif any(os.path.abspath(p) == full for p in scope.report):
                return given._replace(entries=entries.get(full, ()))
        if plain is None:
            return Given()
        return plain[1]._replace(entries=plain[0].get(full, ()))
