"""What the language server knows, without any LSP types: findings and fixed texts for open documents.

An editor's buffer is not the file on disk. The project walk (`amplint.project`)
reads the files on disk, so it runs when a file is saved, and gives each file the
functions entered from float16 regions elsewhere and the project's own autocast
spellings; the open buffer is then analysed with those, exactly as `amplint check FILE`
analyses a file in its project (`amplint.scope` finds the project, for both).
A finding whose region sits in another file thus shows in the file that holds the
computation. Results are cached by the buffer's text, so an unchanged buffer is
not analysed twice.
"""
from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Dict, List, NamedTuple, Optional, Tuple, Union

from amplint.config import Config
from amplint.model import FileError, Finding, Notice

if TYPE_CHECKING:  # pragma: no cover
    from amplint.fix.apply import FixRun, TextFix
    from amplint.project.spellings import Spelling
    from amplint.project.summary import EntryContext

CAST, DISABLE = "cast", "disable-autocast"


@dataclass
class Counters:
    """How much work was done: the tests check that the cache serves unchanged buffers."""

    analyses: int = 0
    project_runs: int = 0


@dataclass(frozen=True)
class Report:
    """One buffer's findings, or the error that stopped its analysis."""

    findings: Tuple[Finding, ...] = ()
    error: Optional[FileError] = None
    notices: Tuple[Notice, ...] = ()  # what the buffer's project walk said of itself (a work bound reached)


@dataclass
class _Project:
    """The entries and the own autocast spellings of one project, from the last walk over its files on disk."""

    entries: Dict[str, Tuple["EntryContext", ...]] = field(default_factory=dict)
    spellings: Tuple["Spelling", ...] = ()
    notices: Tuple[Notice, ...] = ()
    generation: int = 0
    stale: bool = True

    def given(self, path: str, config: Config) -> "_Given":
        from amplint.project.spellings import with_spellings

        return _Given(self.entries.get(path, ()), with_spellings(config, self.spellings), self.generation, self.notices)


class _Given(NamedTuple):
    """What a buffer is analysed with from its project's last walk."""

    entries: Tuple["EntryContext", ...]
    config: Config
    generation: int
    notices: Tuple[Notice, ...]


def _under(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class Workspace:
    """Findings and fixes for documents given by (absolute path, current text). Thread safe."""

    def __init__(self, root: Optional[str] = None, cache_limit: int = 256) -> None:
        self.root = os.path.abspath(root) if root else None
        self.counters = Counters()
        self._lock = threading.RLock()
        self._projects: Dict[Tuple[str, ...], _Project] = {}
        self._configs: Dict[str, Config] = {}
        self._reports: Dict[Tuple[str, str, int], Report] = {}
        self._runs: Dict[Tuple[str, str, str, int], "FixRun"] = {}  # `fixed_across`'s project fix runs
        self._cache_limit = cache_limit

    # --- configuration and project context ----------------------------------
    def config(self, path: str) -> Union[Config, FileError]:
        """The `[tool.amplint]` settings that apply to `path` (the nearest config file)."""
        directory = os.path.dirname(path)
        with self._lock:
            if directory in self._configs:
                return self._configs[directory]
        from amplint.configfile import ConfigError, resolve_config

        loaded = resolve_config([path], None)
        if isinstance(loaded, ConfigError):
            return FileError(path, f"configuration: {loaded}")
        with self._lock:
            self._configs[directory] = loaded.config
        return loaded.config

    def top(self, path: str, config: Config = Config()) -> Tuple[str, ...]:
        """The directories whose files are walked as one project for `path`: the editor's workspace root
        when it holds the file, else the project `amplint check FILE` walks (`amplint.scope`: the `src`
        directories, else the nearest marker), else the file's directory."""
        if self.root and _under(path, self.root):
            return (self.root,)
        from amplint.scope import project_dirs

        return project_dirs(path, config) or (os.path.dirname(os.path.abspath(path)),)

    def saved(self, path: Optional[str] = None) -> None:
        """Files on disk changed: the next analysis walks the project again (and rereads config files)."""
        with self._lock:
            self._configs.clear()
            self._reports.clear()  # a config file may have changed what is reported
            self._runs.clear()  # and files on disk, which a fix across files edits
            for top, project in self._projects.items():
                if path is None or any(_under(path, directory) for directory in top):
                    project.stale = True

    def _context(self, path: str, config: Config) -> "_Given":
        """The file's entries, `config` with its project's own autocast spellings, the walk's generation and
        what the walk said of itself.

        The walk computes no findings (`run_project(report=...)` empty): the open buffer is analysed here.
        """
        if not config.project:
            return _Given((), config, 0, ())
        top = self.top(path, config)
        with self._lock:
            project = self._projects.setdefault(top, _Project())
            if not project.stale:
                return project.given(path, config)
        from amplint.project.run import run_project

        run = run_project(list(top), config, report=frozenset())
        with self._lock:
            self.counters.project_runs += 1
            project.entries = {os.path.abspath(p): e for p, e in run.entries.items()}
            project.spellings = run.spellings
            project.notices = run.notices
            project.generation += 1
            project.stale = False
            return project.given(path, config)

    # --- analysis ------------------------------------------------------------
    def check(self, path: str, text: str) -> Report:
        """The findings `amplint check` would report for `path` if it held `text` (cached by text)."""
        path = os.path.abspath(path)
        config = self.config(path)
        if isinstance(config, FileError):
            return Report(error=config)
        entries, config, generation, notices = self._context(path, config)
        key = (path, _key(text), generation)
        with self._lock:
            if key in self._reports:
                return self._reports[key]
        from amplint.engine import analyze_source

        outcome = analyze_source(text, path, config, entries=entries, project=config.project)
        report = Report(error=outcome) if isinstance(outcome, FileError) else \
            Report(tuple(outcome.findings), notices=notices)
        with self._lock:
            self.counters.analyses += 1
            if len(self._reports) >= self._cache_limit:
                self._reports.pop(next(iter(self._reports)))
            self._reports[key] = report
        return report

    def fixed(self, path: str, text: str, strategy: str, finding: Optional[Finding] = None) -> Optional[str]:
        """`text` with `finding` (or every fixable finding) fixed by `strategy`; None when nothing changes."""
        outcome = self._fixed_text(path, text, strategy, finding)
        if outcome is None or not outcome.changed:
            return None
        return outcome.fixed

    def _fixed_text(self, path: str, text: str, strategy: str, finding: Optional[Finding]) -> "Optional[TextFix]":
        from amplint.fix.apply import fix_text

        path = os.path.abspath(path)
        config = self.config(path)
        if isinstance(config, FileError):
            return None
        entries, config, _, _ = self._context(path, config)

        def same(other: Finding) -> bool:
            return finding is None or _same(other, finding)

        outcome = fix_text(
            text, path, replace(config, strategy=strategy), only=same, entries=entries, project=config.project
        )
        return None if isinstance(outcome, FileError) else outcome

    def fixed_across(self, path: str, text: str, strategy: str, finding: Optional[Finding] = None
                     ) -> Tuple[Optional[str], Dict[str, Tuple[str, str]]]:
        """`fixed`, and the other files the fix edits: {path: (text on disk, fixed text)}.

        A finding whose distribution is built in another file is fixed there too (`amplint.fix.remote`), as
        `amplint check --fix FILE` fixes it: one edit of several documents. That needs the project's files
        as they are on disk, so it is offered when the buffer is saved; the buffer's own fix is tried first,
        and the project's only when a finding it calls fixable is left by it.
        """
        path = os.path.abspath(path)
        outcome = self._fixed_text(path, text, strategy, finding)
        own = outcome.fixed if outcome is not None and outcome.changed else None
        if outcome is None or not any(f.fixable and (finding is None or _same(f, finding)) for f in outcome.remaining):
            return own, {}
        config = self.config(path)
        from amplint.files import read_source

        disk = read_source(path)
        if isinstance(config, FileError) or not config.project or isinstance(disk, FileError) or disk.text != text:
            return own, {}
        generation = self._context(path, config).generation
        key = (path, _key(text), strategy, generation)  # code actions are asked for often: one run per state
        with self._lock:
            run = self._runs.get(key)
        if run is None:
            from amplint.fix.apply import fix_paths

            run = fix_paths([path], replace(config, strategy=strategy), write=False, in_project=True)
            with self._lock:
                if len(self._runs) >= 8:
                    self._runs.pop(next(iter(self._runs)))
                self._runs[key] = run
        if finding is not None and any(os.path.abspath(f.path) == path and _same(f, finding) for f in run.remaining):
            return own, {}
        changes = {os.path.abspath(fix.path): (fix.original, fix.fixed) for fix in run.changed}
        mine = changes.pop(path, None)
        if not changes:
            return own, {}
        return (mine[1] if mine else text), changes

    def with_noqa(self, text: str, findings: List[Finding]) -> Optional[str]:
        """`text` with `# noqa: CODE` for each finding; None when nothing changes."""
        from amplint.addnoqa import add_noqa

        out = add_noqa(text, [(finding.line, finding.code) for finding in findings])
        return None if out == text else out


def _same(one: Finding, other: Finding) -> bool:
    """The same finding, by where it is and what it says (a fix moves nothing before it)."""
    return (one.line, one.column, one.code) == (other.line, other.column, other.code)
