"""Check sources, files and paths: the engine every front end calls.

The per-file work (screens, parse, facts, rules, findings) is `amplint.pipeline`;
project mode (calls followed across files) is `amplint.project`. The engine
picks one, fans files out to a process pool when it pays, and keeps results in
path order. Its names are the front ends' API: `analyze_source`, `finish`,
`will_parse` and `SourceAnalysis` are re-exported from the pipeline.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterator, List, Optional, Sequence, Tuple, Union

from amplint.config import Config
from amplint.files import discover_checked, read_source
from amplint.model import Checked, FileError, FileResult, Finding
from amplint import pipeline
from amplint.pipeline import (  # noqa: F401 - the front ends' names
    SourceAnalysis, _parse_and_analyze, finish, fix_strategies, may_have_findings, to_finding, will_parse,
)

if TYPE_CHECKING:  # pragma: no cover
    from amplint.files import SourceFile
    from amplint.facts.entry import EntryContext
    from amplint.project.textfindings import TextFindings


def analyze_source(
    text: str,
    path: str,
    config: Config = Config(),
    *,
    noqa: bool = True,
    entries: Sequence["EntryContext"] = (),
    project: bool = False,
) -> Union[SourceAnalysis, FileError]:
    """`pipeline.analyze_source`, parsing through this module's `_parse_and_analyze` (looked up per call)."""
    return pipeline.analyze_source(text, path, config, noqa=noqa, entries=entries, project=project,
                                   parse=_parse_and_analyze)


def analyze_in_project(
    text: str, path: str, config: Config, entries: Sequence["EntryContext"], *, noqa: bool = True,
    texts: "Optional[TextFindings]" = None,
) -> Union[Tuple[Finding, ...], FileError]:
    """The findings of `analyze_source(text, path, config, entries=entries, project=True)`, from `texts` (the
    cache of the project run that gave `entries`) when it holds them.

    For a front end that analyses a saved file's text itself (the flake8 plugin): on a warm run it then
    parses nothing with LibCST, as `amplint check FILE` parses nothing.
    """
    key = texts.key(text, path, config, entries, noqa) if texts is not None else None
    kept = texts.get(key) if texts is not None else None
    if kept is not None:
        return kept
    outcome = analyze_source(text, path, config, noqa=noqa, entries=entries, project=True)
    if isinstance(outcome, FileError):
        return outcome
    if texts is not None:
        texts.put(key, outcome.findings)
    return tuple(outcome.findings)


def check_source(text: str, path: str, config: Config = Config()) -> FileResult:
    outcome = analyze_source(text, path, config)
    if isinstance(outcome, FileError):
        return FileResult(path, error=outcome)
    return FileResult(path, findings=outcome.findings)


def check_file(path: str, config: Config = Config()) -> FileResult:
    source = read_source(path)
    if isinstance(source, FileError):
        return FileResult(path, error=source)
    return check_source(source.text, path, config)


def check_paths(paths: Sequence[str], config: Config = Config(), *, in_project: bool = False) -> List[FileResult]:
    """Every file under `paths`, in sorted order; missing paths become error results (`check`'s results)."""
    return check(paths, config, in_project=in_project).results


def check(paths: Sequence[str], config: Config = Config(), *, in_project: bool = False) -> Checked:
    """Every file under `paths`, in sorted order, and what the run says of itself (its work bound reached).

    With `config.project` (the default) calls are followed across the files
    checked (`amplint.project`); `project=False` checks each file on its own.
    `in_project` (what `amplint check` does) checks each named file in its project, with the findings a
    run over the whole project gives that file (`amplint.scope`); otherwise the paths form the project.
    """
    if config.project and in_project:
        from amplint.scope import check_in_projects

        return check_in_projects(paths, config)
    if config.project:
        from amplint.project import check_project

        return check_project(paths, config)
    from amplint import parallel

    files, errors = discover_checked(paths, config)
    results: List[Optional[FileResult]] = [FileResult(error.path, error=error) for error in errors]
    parse: List[Tuple[str, str, Config]] = []  # files the prefilters keep: parsed below, in a pool if it pays
    slots: List[int] = []
    for path, source, parsed in read_and_screen(files, config):
        if isinstance(source, FileError):
            results.append(FileResult(path, error=source))
        elif parsed:
            slots.append(len(results))
            results.append(None)
            parse.append((source.text, path, config))
        else:  # `check_source` would stop at the same prefilters: nothing to report
            results.append(FileResult(path))
    weights = [len(text) for text, _, _ in parse]
    for slot, result in zip(slots, parallel.run_map(_check_job, parse, jobs=config.jobs, weights=weights)):
        results[slot] = result
    return Checked([result for result in results if result is not None])


def read_and_screen(
    files: Sequence[str], config: Config
) -> Iterator[Tuple[str, Union["SourceFile", FileError], bool]]:
    """Each file read, and whether single-file mode parses it (`will_parse`), as "reading" progress.

    `check_paths` and `--fix` both split files this way, so that only those worth a
    LibCST parse go to `amplint.parallel`.
    """
    from amplint import progress

    report = progress.current()
    report.phase("reading", len(files))
    for path in files:
        source = read_source(path)
        yield path, source, not isinstance(source, FileError) and will_parse(source.text, config)
        report.advance()


def _check_job(job: Tuple[str, str, Config]) -> FileResult:
    """`check_source` on one (text, path, config): the unit of work `check_paths` hands to a process pool."""
    return check_source(*job)
