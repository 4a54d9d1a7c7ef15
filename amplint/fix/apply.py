"""Fix sources and files: text in, rewritten text, counts and diffs out.

Nothing here prints; problems come back as `FileError` values. The order is
always analyse → plan → rewrite → verify (LibCST parse and `compile`) →
re-check → write, and a file is written only when its text changed.
"""
from __future__ import annotations

import difflib
import io
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple, Union

from amplint.config import Config
from amplint.engine import SourceAnalysis, analyze_source
from amplint.files import SourceFile, discover_checked, read_source
from amplint.model import FileError, Finding, Notice

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from amplint.facts.entry import Constructor
    from amplint.fix.plan import FixPlan, Skipped
    from amplint.project.run import ProjectRun

# LibCST and the planner load only when a file has a finding: `--fix` on a clean
# tree then costs what `check` costs (issue 8; `import libcst` alone is ~0.2 s).


@dataclass(frozen=True)
class TextFix:
    """One source before and after the fix, with what is left to report."""

    path: str
    original: str
    fixed: str
    findings_before: int
    remaining: Tuple[Finding, ...]
    skipped: Tuple[Skipped, ...] = ()

    @classmethod
    def unchanged(cls, path: str, text: str) -> "TextFix":
        """A source with nothing reported, so nothing to fix."""
        return cls(path, text, text, 0, (), ())

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    @property
    def fixed_count(self) -> int:
        """Findings that are gone after the rewrite (counted, not assumed)."""
        return max(0, self.findings_before - len(self.remaining))


@dataclass(frozen=True)
class FileFix:
    """A file's outcome: its fix (None when it failed), whether it was written, and any error."""

    path: str
    fix: Optional[TextFix] = None
    written: bool = False
    error: Optional[FileError] = None


@dataclass
class FixRun:
    files: List[FileFix] = field(default_factory=list)
    notices: List[Notice] = field(default_factory=list)  # what the project walks said of themselves

    @property
    def fixes(self) -> List[TextFix]:
        return [f.fix for f in self.files if f.fix is not None]

    @property
    def errors(self) -> List[FileError]:
        return [f.error for f in self.files if f.error is not None]

    @property
    def fixed_count(self) -> int:
        return sum(fix.fixed_count for fix in self.fixes)

    @property
    def remaining(self) -> List[Finding]:
        return sorted((f for fix in self.fixes for f in fix.remaining), key=Finding.sort_key)

    @property
    def changed(self) -> List[TextFix]:
        return [fix for fix in self.fixes if fix.changed]


def rewrite(source: SourceAnalysis, plan: FixPlan, strategy: str) -> cst.Module:
    """The analysed module with the plan applied (fix A, or fix C when wraps are planned)."""
    from amplint.fix.cast import apply_casts
    from amplint.fix.disable import apply_disable
    from amplint.fix.plan import DISABLE

    assert source.module is not None and source.analysis is not None
    table = source.analysis.imports
    if strategy == DISABLE and plan.wraps:
        return apply_disable(source.module, plan.casts, plan.wraps, table)
    return apply_casts(source.module, plan.casts, table)


def verify(text: str, path: str, original: Optional[str] = None) -> Optional[FileError]:
    """The rewritten text must parse with LibCST and compile with CPython.

    When the `original` did not compile either (LibCST and `ast` accept more
    than the compiler: `return` outside a function, `await` outside async),
    the fix is not to blame: it passes if it fails the same way, and is
    otherwise refused with a message that says the file was broken before.
    """
    import libcst as cst

    try:
        cst.parse_module(text)
    except (cst.ParserSyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return FileError(path, f"the fix produced code that does not parse or compile ({exc}); file left unchanged")
    after = _compile_error(text, path)
    if after is None:
        return None
    before = _compile_error(original, path) if original is not None else None
    if before is None:
        return FileError(path, f"the fix produced code that does not parse or compile ({after}); file left unchanged")
    if before == after:
        return None
    return FileError(path, f"the file does not compile before the fix either ({before}); file left unchanged")


def _compile_error(text: str, path: str) -> Optional[str]:
    import warnings

    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like are not ours to report
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        message = getattr(exc, "msg", None) or str(exc)
        return f"{type(exc).__name__}: {message}"
    return None


MIXED_INDENT_ERROR = (
    "LibCST cannot parse this file's mix of tabs and spaces in indentation (Python can): it was checked "
    "with tabs expanded, but is not rewritten; file left unchanged"
)
ROUND_TRIP_ERROR = (
    "LibCST does not reproduce this file byte for byte (a form feed inside an indent, or a bare CR "
    "ending the last line?), so a fix could change code it has no finding for; file left unchanged"
)


def _plan_and_rewrite(
    source: SourceAnalysis, strategy: str, only: Optional[Callable[[Finding], bool]], extra: FrozenSet[str]
) -> Tuple[FixPlan, Optional[str], bool]:
    """The plan (with the casts at constructors other files' findings read), the rewritten text (None when
    the plan is empty), and whether LibCST round-trips the file."""
    from amplint.fix.plan import plan_fixes

    plan = plan_fixes(source, strategy, only, extra)
    if source.analysis is not None and source.analysis.facts.requested:  # for other files' findings
        from amplint.fix.remote import constructor_casts

        for target in constructor_casts(source, extra)[0]:
            plan.casts.setdefault(id(target.node), target)
    if plan.empty:
        return plan, None, True
    assert source.module is not None
    if source.module.code != source.parsed_text:  # e.g. `    \fy = 2` comes back unindented, out of its block
        return plan, None, False
    fixed = rewrite(source, plan, strategy).code
    if source.identifiers is not None:  # the module is the copy's: the file's spellings go back in
        from amplint.respell import written_back

        fixed = written_back(source.identifiers, fixed)
    return plan, fixed, True


def fix_text(
    text: str,
    path: str,
    config: Config = Config(),
    only: Optional[Callable[[Finding], bool]] = None,
    **analyze_options: Any,
) -> Union[TextFix, FileError]:
    """Fix every fixable finding in `text` (or those `only` accepts) with `config.strategy`; no file access.

    `analyze_options` go to `engine.analyze_source` for both the analysis and the re-check (for example
    the project pass's `entries` for this file), so `--fix` sees the findings `check` reports.
    """
    source = analyze_source(text, path, config, **analyze_options)
    if isinstance(source, FileError):
        return source
    before = len(source.pairs)
    requested = source.analysis is not None and bool(source.analysis.facts.requested)  # for other files' findings
    if not source.pairs and not requested:  # nothing to plan: no LibCST import, no plan
        return TextFix.unchanged(path, text)
    from amplint.fix.bounds import grows_too_large, too_large_to_rewrite

    too_large = too_large_to_rewrite(text, config)  # the fixer's time and memory grow with the file
    if too_large is not None:
        return _left_alone(path, text, source.findings, too_large)
    # The distribution classes the analysis read: the configured ones and the file's own subclasses of them.
    extra = source.analysis.facts.distributions if source.analysis is not None else frozenset(
        config.extend_distributions)
    try:
        plan, fixed, exact = _plan_and_rewrite(source, config.strategy, only, extra)
    except RecursionError:  # deep but valid code: LibCST transforms recurse ~3 frames per tree level
        from amplint.deep import call_deep

        try:
            plan, fixed, exact = call_deep(_plan_and_rewrite, source, config.strategy, only, extra)
        except RecursionError:
            return FileError(path, "too deeply nested for amplint to rewrite; file left unchanged")
    if not exact:
        from amplint.tabs import retabbed

        mixed = retabbed(source.parsed_text, form_feeds=False)  # tabs alone: a form feed gets the round-trip message
        if mixed is not None and source.module is not None and source.module.code == mixed.text:
            return FileError(path, MIXED_INDENT_ERROR)
        return FileError(path, ROUND_TRIP_ERROR)
    if fixed is None:
        return TextFix(path, text, text, before, tuple(source.findings), tuple(plan.skipped))
    grown = grows_too_large(fixed, config)  # never write what the next run would refuse to read
    if grown is not None:
        return _left_alone(path, text, source.findings, grown)
    error = verify(fixed, path, text)
    if error is not None:
        return error
    after = analyze_source(fixed, path, config, **analyze_options)
    if isinstance(after, FileError):  # verify() parsed it, so this is not expected
        return FileError(path, f"the fixed text could not be re-checked: {after.message}; file left unchanged")
    return TextFix(path, text, fixed, before, tuple(after.findings), tuple(plan.skipped))


def _left_alone(path: str, text: str, findings: Sequence[Finding], reason: str) -> TextFix:
    """`text` unchanged, its findings remaining, the fixable ones reported as not fixed for `reason`."""
    from amplint.fix.plan import Skipped

    skipped = tuple(Skipped(finding, f"in {path}, {reason}") for finding in findings if finding.fixable)
    return TextFix(path, text, text, len(findings), tuple(findings), skipped)


def fix_file(path: str, config: Config = Config(), write: bool = True, **analyze_options: Any) -> FileFix:
    """Fix one file; it is written (atomically) only when `write` and its text changed."""
    source = read_source(path)
    if isinstance(source, FileError):
        return FileFix(path, error=source)
    return _finish_fix(source, fix_text(source.text, path, config, **analyze_options), write, [path])


def _finish_fix(
    source: SourceFile, outcome: Union[TextFix, FileError], write: bool, roots: Sequence[str]
) -> FileFix:
    """`fix_file` after the fix: write the file when `write` and its text changed, and only if it still
    holds what was read, and stays under `roots` (the paths given) when it is a symbolic link."""
    from amplint.fix.write import atomic_write, encode

    path = source.path
    if isinstance(outcome, FileError):
        return FileFix(path, error=outcome)
    if not write or not outcome.changed:
        return FileFix(path, outcome)
    data = encode(path, outcome.fixed, source.encoding)
    if isinstance(data, FileError):
        return FileFix(path, error=data)
    error = atomic_write(path, data, source.digest or None, roots)
    if error is not None:
        return FileFix(path, error=error)
    return FileFix(path, outcome, written=True)


def fix_finding(finding: Finding, config: Config = Config()) -> Union[TextFix, FileError]:
    """The file of `finding` with only that finding fixed, not written (what a SARIF fix shows)."""
    source = read_source(finding.path)
    if isinstance(source, FileError):
        return source

    def same(other: Finding) -> bool:
        return (other.line, other.column, other.code) == (finding.line, finding.column, finding.code)

    return fix_text(source.text, finding.path, config, only=same)


def fix_paths(paths: Sequence[str], config: Config = Config(), write: bool = True, *,
              in_project: bool = False) -> FixRun:
    """Every file under `paths`, in sorted order; missing paths become errors.

    In project mode (`config.project`, the default of `amplint check`) the files and findings are those
    `check` reports, and each file is analysed with the entries the project walk found for it, so a
    helper reached from a region in another file is fixed like one reached from its own file.
    `in_project` walks each named file's project (`amplint.scope`, as `check_paths` does); only the
    files under `paths` are ever written.
    """
    if config.project:
        return _fix_project(paths, config, write, in_project)
    from amplint.engine import read_and_screen

    files, errors = discover_checked(paths, config)
    run = FixRun([FileFix(error.path, error=error) for error in errors])
    slots: List[int] = []
    sources: List[SourceFile] = []
    for path, source, parsed in read_and_screen(files, config):
        if isinstance(source, FileError):
            run.files.append(FileFix(path, error=source))
        elif parsed:  # parsed below, in a process pool when it pays
            slots.append(len(run.files))
            run.files.append(FileFix(path))
            sources.append(source)
        else:  # `fix_text` would stop at the same prefilters: nothing to fix
            run.files.append(FileFix(path, TextFix.unchanged(path, source.text)))
    for slot, fix in zip(slots, _fix_sources(sources, config, write, [{} for _ in sources], paths)):
        run.files[slot] = fix
    return run


def _fix_sources(
    sources: Sequence[SourceFile], config: Config, write: bool, options: Sequence[dict], roots: Sequence[str]
) -> List[FileFix]:
    """`fix_file` for each source (with its `analyze_source` options): the analyses and rewrites in a
    process pool when it pays, the writes here."""
    from amplint import parallel

    jobs = [(source.text, source.path, config, option) for source, option in zip(sources, options)]
    outcomes = parallel.run_map(
        _fix_job, jobs, jobs=config.jobs, weights=[len(source.text) for source in sources], label="fixing",
        preload=parallel.PRELOAD + ("amplint.fix.plan", "amplint.fix.cast", "amplint.fix.disable"),
    )
    from amplint.interrupts import deferred_interrupt

    finished: List[FileFix] = []
    # Ctrl-C: the file being replaced is finished, no other is started (KeyboardInterrupt after the block).
    with deferred_interrupt() as interrupted:
        for source, outcome in zip(sources, outcomes):
            if interrupted():
                break
            finished.append(_finish_fix(source, outcome, write, roots))
    return finished


def _fix_job(job: Tuple[str, str, Config, dict]) -> Union[TextFix, FileError]:
    """`fix_text` on one (text, path, config, analyze options): the unit of work of the process pool."""
    text, path, config, options = job
    return fix_text(text, path, config, **options)


def _fix_project(paths: Sequence[str], config: Config, write: bool, in_project: bool) -> FixRun:
    from amplint.project.run import run_project
    from amplint.scope import Scope, run_scopes

    if in_project:
        runs = run_scopes(paths, config)
    else:
        runs = [(Scope(tuple(paths)), run_project(paths, config))]
    run = FixRun()
    for scope, project in runs:
        start = len(run.files)
        run.notices.extend(project.notices)
        _fix_results(run, project, config, write, paths, scope.index)
        run.files[start:] = [_renamed(fix, scope.shown(fix.path)) for fix in run.files[start:]]
    if len(runs) > 1:
        run.files.sort(key=lambda fix: fix.path)
    return run


def _fix_results(run: FixRun, project: "ProjectRun", config: Config, write: bool, roots: Sequence[str],
                 index: Sequence[str] = ()) -> None:
    """Fix the files of one project run that have findings, with the entries and spellings of its walk, and
    the files that build distributions those findings read (`amplint.fix.remote`).

    `index`: the paths the walk indexed. A file under them that the run does not report (`--fix losses.py`,
    whose distribution `routine.py` builds) is fixed too, for the constructors only: `check losses.py` calls
    that finding fixable, so `--fix losses.py` fixes it, as `--fix .` does; that file's own findings stay."""
    from amplint.project.spellings import with_spellings

    config = with_spellings(config, project.spellings)  # the project's own autocast spellings, as the check saw
    start = len(run.files)
    slots: List[int] = []
    sources: Dict[str, SourceFile] = {}
    for result in project.results:
        if result.error is not None:
            run.files.append(FileFix(result.path, error=result.error))
            continue
        if result.findings:  # fixed below, in a process pool when it pays
            source = read_source(result.path)
            if isinstance(source, FileError):
                run.files.append(FileFix(result.path, error=source))
                continue
            slots.append(len(run.files))
            sources[result.path] = source
        run.files.append(FileFix(result.path))  # nothing reported, nothing to fix
    if not sources:  # nothing reported: no LibCST import, no plan
        return
    places = {fix.path: i for i, fix in enumerate(run.files[start:], start) if fix.error is None}
    requests = _constructor_requests(sources, project.entries, config,
                                     lambda path: path in places or _indexed(path, index))
    unnamed: Set[str] = set()  # files of the project the run does not report: they cast constructors only
    for path in sorted(set(requests) - set(sources)):  # a file that only builds what another file's finding reads
        source = read_source(path)
        if not isinstance(source, FileError):
            if path not in places:
                unnamed.add(path)
                places[path] = len(run.files)
                run.files.append(FileFix(path))
            slots.append(places[path])
            sources[path] = source
    from amplint.fix.remote import as_cast

    cast = {c for wanted in requests.values() for c in wanted}
    checked = {path: tuple(project.entries.get(path, ())) for path in sources}
    marked = {path: as_cast(checked[path], cast) for path in sources}
    options = [{"entries": marked[path] + tuple(requests.get(path, ())), "project": True,
                **({"only": _no_finding} if path in unnamed else {})} for path in sources]
    outcomes = _fix_sources(list(sources.values()), config, False, options, roots)  # nothing written yet
    finished: List[FileFix] = []
    for fix in outcomes:
        if fix.fix is not None and fix.path in unnamed:  # its own findings are not this run's to report
            fix = replace(fix, fix=replace(fix.fix, findings_before=0, remaining=(), skipped=()))
        elif fix.fix is not None and marked[fix.path] != checked[fix.path]:
            before = _reported_count(sources[fix.path], checked[fix.path], config)
            fix = replace(fix, fix=replace(fix.fix, findings_before=before))
        finished.append(fix)
    if write:
        reported = {result.path: tuple(result.findings) for result in project.results}
        linked = {path for path in sources if path in requests or marked[path] != checked[path]}
        finished = _write_fixes(finished, sources, roots, reported, linked)
    for slot, fix in zip(slots, finished):
        run.files[slot] = fix


def _write_fixes(fixes: Sequence[FileFix], sources: Mapping[str, SourceFile], roots: Sequence[str],
                 reported: Mapping[str, Tuple[Finding, ...]], linked: Set[str]) -> List[FileFix]:
    """Write the changed files of a project run; a fix that spans files (`linked`) to all of its files or none.

    Before, a read-only `train.py` left `model.py` rewritten, half of a two-file fix, and its finding vanished
    from the count ("Fixed 0 findings, 0 remaining"). Now the linked files are checked before any is written:
    when one cannot be, none is, and their findings stay, printed and counted. A file whose write fails keeps
    its findings too (`reported`: what the check found in it).
    """
    from amplint.interrupts import deferred_interrupt

    blocked = {fix.path: error for fix in fixes if fix.path in linked and fix.fix is not None and fix.fix.changed
               for error in [_unwritable(fix.path)] if error is not None}
    reason = f"not fixed: the fix spans files and {', '.join(sorted(blocked))} cannot be written"
    finished: List[FileFix] = []
    # Ctrl-C: the file being replaced is finished, no other is started (KeyboardInterrupt after the block).
    with deferred_interrupt() as interrupted:
        for fix in fixes:
            if interrupted():
                break
            if fix.fix is None or not fix.fix.changed:
                finished.append(fix)
            elif blocked and fix.path in linked:
                finished.append(_held(fix.fix, reported.get(fix.path, ()), blocked.get(fix.path), reason))
            else:
                written = _finish_fix(sources[fix.path], fix.fix, True, roots)
                if written.error is not None:
                    written = _held(fix.fix, reported.get(fix.path, ()), written.error, None)
                finished.append(written)
    return finished


def _unwritable(path: str) -> Optional[FileError]:
    """Why `fix.write.atomic_write` would refuse `path` for its permissions (read-only, as an editor honours
    them), checked before a fix that spans files writes any of them; None when it may be written."""
    import os
    import stat

    target = os.path.realpath(path)
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError as exc:
        return FileError(path, f"cannot write: {exc.strerror or exc}; file left unchanged")
    if not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        return FileError(path, "cannot write: the file is read-only; file left unchanged")
    return None


def _held(text: TextFix, findings: Tuple[Finding, ...], error: Optional[FileError], reason: Optional[str]) -> FileFix:
    """A fix not written: the file as it is, with the findings the check reported there still to report."""
    from amplint.fix.plan import Skipped

    skipped = tuple(Skipped(finding, reason) for finding in findings if finding.fixable) if reason else ()
    kept = replace(text, fixed=text.original, findings_before=len(findings), remaining=findings, skipped=skipped)
    return FileFix(text.path, kept, error=error)


def _project_analysis(source: SourceFile, entries: Sequence[object], config: Config
                      ) -> Union[SourceAnalysis, FileError]:
    """`source` analysed as the project pass analyses it, with `entries` as its contexts."""
    return analyze_source(source.text, source.path, config, entries=tuple(entries), project=True)


def _reported_count(source: SourceFile, entries: Sequence[object], config: Config) -> int:
    """The findings `check` reports on the text the fix read, for a file whose fix counted some of them as
    already cast (a cast in another file removes them). Counted on that text, not taken from the check:
    another process may have fixed the file in between. The entries are still the check's: when a concurrent
    run casts the other file first, both runs may count the finding it fixes."""
    analysis = _project_analysis(source, entries, config)
    return 0 if isinstance(analysis, FileError) else len(analysis.pairs)


def _no_finding(finding: Finding) -> bool:
    """`fix_text`'s `only` for a file fixed for other files' findings: none of its own (a function, to pickle)."""
    return False


def _indexed(path: str, index: Sequence[str]) -> bool:
    """Is `path` a file under one of the paths a project walk indexed?"""
    import os

    full = os.path.abspath(path)
    return os.path.isfile(full) and any(
        full == top or full.startswith(top.rstrip(os.sep) + os.sep) for top in map(os.path.abspath, index))


def _constructor_requests(sources: Dict[str, SourceFile], entries: Mapping[str, Sequence[object]], config: Config,
                          fixable: Callable[[str], bool]) -> Dict[str, List["Constructor"]]:
    """Steps 1 and 2 of `amplint.fix.remote`: per file, the constructors it casts for other files' findings."""
    from amplint.fix.remote import by_file, granted, hands_over, requests_of

    def analyse(path: str, asked: Sequence["Constructor"] = ()) -> Union[SourceAnalysis, FileError]:
        source = sources.get(path) or read_source(path)
        if isinstance(source, FileError):
            return source
        return _project_analysis(source, tuple(entries.get(path, ())) + tuple(asked), config)

    wanted: List[Tuple["Constructor", ...]] = []  # per finding, every constructor it needs cast
    for path in sources:
        if hands_over(entries.get(path, ())):
            source = analyse(path)
            wanted.extend(requests_of(source, config.strategy) if isinstance(source, SourceAnalysis) else ())
    requests = {path: found for path, found in by_file(c for group in wanted for c in group).items()
                if fixable(path)}
    allowed = granted(requests, analyse, frozenset(config.extend_distributions))
    cast = {c for group in wanted if set(group) <= allowed for c in group}  # a finding's casts: all or none
    return by_file(sorted(cast, key=lambda c: (c.file, c.line, c.ctor)))


def _renamed(fix: FileFix, path: str) -> FileFix:
    """A file's fix under the name the user gave it (the walk may spell it from the project's root)."""
    if fix.path == path:
        return fix
    from amplint.scope import rename

    text = fix.fix
    if text is not None:
        text = replace(text, path=path, remaining=tuple(rename(f, path) for f in text.remaining),
                       skipped=tuple(replace(s, finding=rename(s.finding, path)) for s in text.skipped))
    error = None if fix.error is None else FileError(path, fix.error.message)
    return FileFix(path, text, fix.written, error)


def unified_diff(fix: TextFix) -> str:
    """A unified diff of one fix (empty when nothing changed), applicable with `patch -p0`."""
    if not fix.changed:
        return ""
    original, fixed = fix.original, fix.fixed
    if fix.path.endswith(".ipynb"):  # a patch of the notebook's JSON, not of the Python text amplint read
        from amplint.notebook import json_texts

        original, fixed = json_texts(fix.path, fix.fixed) or (original, fixed)
    lines = difflib.unified_diff(_lines(original), _lines(fixed), fix.path, fix.path)
    out: List[str] = []
    for line in lines:
        out.append(line)
        if not line.endswith(("\n", "\r")):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _lines(text: str) -> List[str]:
    """Split at \n, \r\n and \r only, keeping them (str.splitlines also splits at form feeds)."""
    return io.StringIO(text, newline="").readlines()
