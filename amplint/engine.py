"""Run the analysis on sources and paths and turn diagnoses into findings.

Every front end goes through `analyze_source`: the CLI, `--fix`, the flake8
plugin and the verifier see the same findings because they share this code.
LibCST is imported only for files that pass the text prefilter.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, List, Optional, Sequence, Tuple, Union

from amplint.config import Config
from amplint.files import discover, read_source, source_lines
from amplint.model import FileError, FileResult, Finding, Precision
from amplint.noqa import noqa_texts, suppressed
from amplint.risk import with_risk
from amplint.screen import PROBABILITY_WORDS, region_words
from amplint.selection import code_enabled

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from amplint.analysis import Diagnosis, ModuleAnalysis
    from amplint.files import SourceFile
    from amplint.names import ImportTable
    from amplint.project.summary import EntryContext


def may_have_findings(text: str, config: Config) -> bool:
    """Cheap text test for one file on its own: a finding needs a region and a computation.

    Region: an autocast spelling. Computation: a method or function name of
    PROBABILITY_WORDS ("cdf" also covers "icdf"). In the measured corpus this
    leaves 5 of 4,637 files; `screen.may_have_findings` then reads CPython's
    tree of those, so words in comments, strings or names such as
    `cross_entropy` cost no LibCST parse.
    """
    regions = region_words(config.extend_autocast)
    return any(word in text for word in regions) and any(word in text for word in PROBABILITY_WORDS)


def will_parse(text: str, config: Config) -> bool:
    """Would single-file mode parse `text` with LibCST (or report that it cannot)?

    The text prefilter, then the syntax-aware screen on CPython's tree
    (`screen.may_have_findings`). Front ends decide with it which files are
    worth a process pool, and project mode which files have findings of their own.
    """
    return _screened(text, config, alone=True) is not None


def _screened(text: str, config: Config, alone: bool) -> "Union[None, str, ImportTable]":
    """None when single-file mode would not parse `text`; else CPython's refusal, or the import table.

    `alone`: the file is analysed on its own (no entries, not project mode), so both
    prefilters apply; otherwise only CPython's verdict and the import table are wanted.
    """
    if alone and not may_have_findings(text, config):
        return None
    from amplint import screen
    from amplint.deep import python_parse
    from amplint.names import import_table

    tree = python_parse(text)  # CPython's verdict first: it also keeps LibCST off what crashes it
    if isinstance(tree, str):
        return tree
    imports = import_table(tree)
    if alone and not screen.may_have_findings(tree, imports, config.extend_autocast):
        return None  # the words were in comments, strings or other names: no parse
    return imports


@dataclass
class SourceAnalysis:
    """One file's analysis: kept diagnoses paired with their findings, and the tree."""

    path: str
    text: str
    module: Optional["cst.Module"] = None
    analysis: Optional["ModuleAnalysis"] = None
    pairs: List[Tuple["Diagnosis", Finding]] = field(default_factory=list)

    @property
    def findings(self) -> List[Finding]:
        return [finding for _, finding in self.pairs]


def analyze_source(
    text: str,
    path: str,
    config: Config = Config(),
    *,
    noqa: bool = True,
    entries: Sequence["EntryContext"] = (),
    project: bool = False,
) -> Union[SourceAnalysis, FileError]:
    """Parse once, analyze, keep the findings `config` selects.

    `noqa=False` keeps findings on `# noqa` lines: the flake8 plugin passes it
    so that flake8's own noqa handling (and `--disable-noqa`) decides.
    `entries` (from `amplint.project.project_entries`) are functions of this
    file entered from float16 regions in other places: their sites are reported
    with the chain, and `--fix` gets their `Diagnosis` like any other.
    `project=True` analyzes in project mode (framework regions, call records)
    and skips the text prefilter: the project pass chose the file.
    """
    imports = _screened(text, config, alone=not entries and not project)
    if imports is None:
        return SourceAnalysis(path, text)
    if isinstance(imports, str):
        return FileError(path, imports)
    from amplint.deep import call_deep

    try:
        return _parse_and_analyze(text, path, config, noqa, entries, project, imports)
    except RecursionError:  # deep but valid code: LibCST recurses ~3 frames per tree level
        pass
    try:
        return call_deep(_parse_and_analyze, text, path, config, noqa, entries, project, imports)
    except RecursionError:
        return FileError(path, "too deeply nested for amplint to analyse")


def _parse_and_analyze(
    text: str,
    path: str,
    config: Config,
    noqa: bool,
    entries: Sequence["EntryContext"],
    project: bool,
    imports: "ImportTable",
) -> Union[SourceAnalysis, FileError]:
    import libcst as cst

    from amplint.analysis import AnalysisOptions, analyze_module

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:  # CPython accepted it (`python_parse`), LibCST does not
        return FileError(path, f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {exc.message}")
    options = AnalysisOptions(
        frozenset(config.extend_autocast), frozenset(config.extend_distributions), project or bool(entries)
    )
    analysis = analyze_module(module, options, entries, imports)
    return finish(text, path, analysis, config, noqa=noqa)


def finish(text: str, path: str, analysis: "ModuleAnalysis", config: Config, *, noqa: bool = True) -> SourceAnalysis:
    """Findings of an analyzed module that `config` selects and noqa does not suppress, sorted."""
    module = analysis.module
    lines = source_lines(text)  # not str.splitlines: a form feed does not end a line
    # flake8's noqa scope: the physical lines of a backslash-continued line count together.
    logical = noqa_texts(text) if noqa and analysis.diagnoses and "noqa" in text.lower() else {}
    result = SourceAnalysis(path, text, module, analysis)
    for diagnosis in analysis.diagnoses:
        finding = with_risk(to_finding(diagnosis, path, analysis, config))  # amplint.risk: measured per device
        if not code_enabled(finding.code, path, config):
            continue
        line_text = logical.get(finding.line) or (lines[finding.line - 1] if finding.line <= len(lines) else "")
        if noqa and suppressed(finding.code, line_text):
            continue
        result.pairs.append((diagnosis, finding))
    if result.pairs:
        from amplint.fix.fixability import refine_pairs

        # `fixable` must agree with `--fix`: no edits on noqa lines, no half-fixed statements under fix C.
        result.pairs = refine_pairs(result, config.strategy)
    result.pairs.sort(key=lambda pair: pair[1].sort_key())
    return result


def fix_strategies(diagnosis: "Diagnosis") -> Tuple[str, ...]:
    """Which strategies can fix this diagnosis without guessing."""
    site = diagnosis.site
    if not site.constructor_visible or not site.uncast:
        return ()
    if diagnosis.code == "AMP002":
        return ("cast", "disable-autocast")
    region = diagnosis.region.spec
    device_known = region.device is not None or (bool(region.device_code) and not diagnosis.chain)
    if site.statement is not None and device_known:
        from amplint.fix.safety import wrap_blocker

        # A `with` around a yield/await, or around a lambda that runs later, would not mean the same.
        if wrap_blocker(site.statement, site.call) is None:
            return ("cast", "disable-autocast")
    return ("cast",)


def _short(code: str, limit: int = 40) -> str:
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _listing(nodes: Sequence["cst.BaseExpression"], module: "cst.Module") -> str:
    text = ", ".join(f"`{_short(module.code_for_node(node))}`" for node in nodes[:4])
    return text + (f" and {len(nodes) - 4} more" if len(nodes) > 4 else "")


def _message(diagnosis: "Diagnosis", module: "cst.Module") -> str:
    site = diagnosis.site
    if diagnosis.code == "AMP002":
        inputs = _listing([node for node, _ in site.tainted], module)
        made = min(line for _, line in site.tainted)
        return (
            f"`{site.label}` runs with autocast disabled (line {diagnosis.region.line}), but its inputs "
            f"{inputs} were made in the float16 region at line {made} and are not cast to float32"
        )
    inputs = _listing(site.uncast, module)
    precision = diagnosis.region.spec.precision
    kind = "float16" if precision is Precision.FLOAT16 else "possibly-float16"
    if diagnosis.origin:  # entered from a region the project walk found (usually in another file)
        return (
            f"`{site.label}` runs under {kind} autocast with inputs not cast to float32: {inputs}; reached from "
            f"{diagnosis.region.label} at {diagnosis.origin}:{diagnosis.region.line} via {' → '.join(diagnosis.chain)}"
        )
    via = f" (reached via {' → '.join(diagnosis.chain)})" if diagnosis.chain else ""
    return (
        f"`{site.label}` runs in the {kind} {diagnosis.region.label} at line {diagnosis.region.line} with inputs not "
        f"cast to float32: {inputs}{via}"
    )


def to_finding(diagnosis: "Diagnosis", path: str, analysis: "ModuleAnalysis", config: Config) -> Finding:
    from amplint.analysis import site_spec

    position = diagnosis.site.position
    strategies = fix_strategies(diagnosis)
    return Finding(
        path=path,
        line=position.start.line,
        column=position.start.column + 1,
        end_line=position.end.line,
        end_column=position.end.column + 1,
        code=diagnosis.code,
        message=_message(diagnosis, analysis.module),
        fixable=config.strategy in strategies,
        fix_strategies=strategies,
        region=diagnosis.region.info,
        chain=diagnosis.chain,
        site=site_spec(diagnosis.site, analysis.module, analysis.imports),
        region_path=diagnosis.origin_file or None,
    )


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


def check_paths(paths: Sequence[str], config: Config = Config()) -> List[FileResult]:
    """Every file under `paths`, in sorted order; missing paths become error results.

    With `config.project` (the default) calls are followed across the files
    checked (`amplint.project`); `project=False` checks each file on its own.
    """
    if config.project:
        from amplint.project import check_project

        return check_project(paths, config)
    from amplint import parallel

    files, errors = discover(paths, config.exclude)
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
    return [result for result in results if result is not None]


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
