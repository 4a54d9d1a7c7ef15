"""Run the analysis on sources and paths and turn diagnoses into findings.

Every front end goes through `analyze_source`: the CLI, `--fix`, the flake8
plugin and the verifier see the same findings because they share this code.
LibCST is imported only for files that pass the text prefilter.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, List, Optional, Sequence, Tuple, Union

from amplint.config import Config
from amplint.files import discover, read_source
from amplint.model import FileError, FileResult, Finding, Precision
from amplint.noqa import suppressed
from amplint.selection import code_enabled

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from amplint.analysis import Diagnosis, ModuleAnalysis

PREFILTER_WORDS = ("autocast",)


def may_have_findings(text: str, config: Config) -> bool:
    """Cheap text test: no autocast spelling means no region, so no finding."""
    words = PREFILTER_WORDS + tuple(name.rsplit(".", 1)[-1] for name in config.extend_autocast)
    return any(word in text for word in words)


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
    text: str, path: str, config: Config = Config(), *, noqa: bool = True
) -> Union[SourceAnalysis, FileError]:
    """Parse once, analyze, keep the findings `config` selects.

    `noqa=False` keeps findings on `# noqa` lines: the flake8 plugin passes it
    so that flake8's own noqa handling (and `--disable-noqa`) decides.
    """
    if not may_have_findings(text, config):
        return SourceAnalysis(path, text)
    import libcst as cst

    from amplint.analysis import AnalysisOptions, analyze_module

    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        return FileError(path, f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {exc.message}")
    except RecursionError:
        return FileError(path, "syntax error: nesting too deep to parse")
    options = AnalysisOptions(frozenset(config.extend_autocast), frozenset(config.extend_distributions))
    analysis = analyze_module(module, options)
    lines = text.splitlines()
    result = SourceAnalysis(path, text, module, analysis)
    for diagnosis in analysis.diagnoses:
        finding = to_finding(diagnosis, path, analysis, config)
        if not code_enabled(finding.code, path, config):
            continue
        line_text = lines[finding.line - 1] if finding.line <= len(lines) else ""
        if noqa and suppressed(finding.code, line_text):
            continue
        result.pairs.append((diagnosis, finding))
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
    via = f" (reached via {' → '.join(diagnosis.chain)})" if diagnosis.chain else ""
    return (
        f"`{site.label}` runs in the {kind} autocast region at line {diagnosis.region.line} with inputs not "
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
    """Every file under `paths`, in sorted order; missing paths become error results."""
    files, errors = discover(paths, config.exclude)
    results = [FileResult(error.path, error=error) for error in errors]
    results.extend(check_file(path, config) for path in files)
    return results

