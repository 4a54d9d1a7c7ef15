"""One file through the pipeline: text screen, CPython screen, LibCST parse, facts and rules, findings.

Every front end goes through `analyze_source` (via `amplint.engine`, or the
project walk for files it parses): the CLI, `--fix`, the flake8 plugin and the
verifier see the same findings because they share this code. LibCST is
imported only for files that pass the screens. What a finding says, and which
fixes apply, its rule decides (`amplint.rules.rule_for`): nothing here tests a
rule's code.
"""
from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Tuple, Union

from amplint import identifiers
from amplint.config import Config
from amplint.files import source_lines
from amplint.model import FileError, Finding, Hop
from amplint.noqa import noqa_texts, suppressed
from amplint.risk import with_risk
from amplint.screen import mentions_probability, region_words
from amplint.selection import code_enabled
from amplint.source_analysis import SourceAnalysis

if TYPE_CHECKING:  # pragma: no cover
    import ast

    from amplint.cpython_trees import CPythonTrees
    from amplint.analysis import AnalysisOptions, ModuleAnalysis
    from amplint.names import ImportTable
    from amplint.facts.entry import EntryContext
    from amplint.rulebase import Diagnosis, Rule

__all__ = ["SourceAnalysis", "analyze_source", "finish", "fix_strategies", "may_have_findings", "to_finding",
           "will_parse"]


def may_have_findings(text: str, config: Config) -> bool:
    """Cheap text test for one file on its own: a finding needs a region and a computation.

    Region: an autocast spelling. Computation: a method or function name of
    PROBABILITY_WORDS ("cdf" also covers "icdf"). In the measured corpus this
    leaves 5 of 4,637 files; `screen.may_have_findings` then reads CPython's
    tree of those, so words in comments, strings or names such as
    `cross_entropy` cost no LibCST parse.
    """
    text = identifiers.screen_text(text)  # `torch.ａｕｔｏｃａｓｔ` is `torch.autocast`
    regions = region_words(config.extend_autocast)
    return any(word in text for word in regions) and mentions_probability(text)


def will_parse(text: str, config: Config, trees: "Optional[CPythonTrees]" = None) -> bool:
    """Would single-file mode parse `text` with LibCST (or report that it cannot)?

    The text prefilter, then the syntax-aware screen on CPython's tree
    (`screen.may_have_findings`). Front ends decide with it which files are
    worth a process pool, and project mode which files have findings of their own.
    `trees`: the project run's CPython trees, which its later readers of the file share.
    """
    return _screened(text, config, alone=True, trees=trees) is not None


def _screened(
    text: str, config: Config, alone: bool, trees: "Optional[CPythonTrees]" = None, keep: bool = True
) -> "Union[None, str, Tuple[ast.Module, ImportTable]]":
    """None when single-file mode would not parse `text`; else CPython's refusal, or its tree and import table.

    A text the prefilter passes over is still given to CPython's parser, tree discarded: every file that cannot
    be parsed is reported, whatever it holds (ruff's and flake8's E999), not only those that name a computation.

    `alone`: the file is analysed on its own (no entries, not project mode), so both
    prefilters apply; otherwise only CPython's verdict and the import table are wanted.
    `keep`: a later reader may want CPython's tree from `trees` (`CPythonTrees.parse`).
    """
    from amplint.cpython_trees import parse

    if alone and not may_have_findings(text, config):
        # Nothing to analyse, but a file CPython refuses is reported all the same. A project run keeps the tree:
        # its shapes and value flow read most of the files that name no computation (models, layers, helpers).
        from amplint.deep import TOO_DEEP, syntax_error

        if trees is None:
            return syntax_error(text)
        refused = parse(text, trees, keep)
        return refused if isinstance(refused, str) and refused != TOO_DEEP else None
    from amplint import screen

    parsed = parse(text, trees, keep)  # CPython's verdict first: it also keeps LibCST off what crashes it
    if isinstance(parsed, str):
        return parsed
    tree, imports = parsed
    if alone and not screen.may_have_findings(tree, imports, config.extend_autocast):
        return None  # the words were in comments, strings or other names: no parse
    return parsed


def analyze_source(
    text: str,
    path: str,
    config: Config = Config(),
    *,
    noqa: bool = True,
    entries: Sequence["EntryContext"] = (),
    project: bool = False,
    parse: "Optional[Callable[..., Union[SourceAnalysis, FileError]]]" = None,
    imports: "Optional[ImportTable]" = None,
    trees: "Optional[CPythonTrees]" = None,
    tree: "Optional[ast.Module]" = None,
) -> Union[SourceAnalysis, FileError]:
    """Parse once, analyze, keep the findings `config` selects.

    `noqa=False` keeps findings on `# noqa` lines: the flake8 plugin passes it
    so that flake8's own noqa handling (and `--disable-noqa`) decides.
    `entries` (from `amplint.project.project_entries`) are functions of this
    file entered from float16 regions in other places: their sites are reported
    with the chain, and `--fix` gets their `Diagnosis` like any other.
    `project=True` analyzes in project mode (framework regions, call records)
    and skips the text prefilter: the project pass chose the file.
    `parse` stands in for `_parse_and_analyze` (the engine passes its own name for it).
    `imports`: the file's import table, when the caller has read CPython's tree of it (project mode's
    `summarize.read_summary`): CPython accepted the file, and it is not read again.
    `trees`: the project run's CPython trees, when `imports` is not at hand.
    `tree`: CPython's tree of `text`, when the caller has it with `imports`: the positions are read from it.
    `imports` and `tree` are of `identifiers.analysis_text(text)`, which is `text` unless an identifier is not
    as Python reads it; then that copy is analysed, and the findings are given the columns of `text`.
    """
    respelled = identifiers.respelled(text)
    if respelled is not None:  # an identifier Python reads as another (`ｌｏｇ_prob`): the copy is analysed
        outcome = analyze_source(respelled.text, path, config, noqa=noqa, entries=entries, project=project,
                                 parse=parse, imports=imports, trees=trees, tree=tree)
        return outcome if isinstance(outcome, FileError) else outcome.as_written(respelled)
    parse = parse or _parse_and_analyze
    alone = not entries and not project
    if imports is None or alone:
        screened = _screened(text, config, alone=alone, trees=trees, keep=False)  # LibCST's parse comes next
        if screened is None:
            return SourceAnalysis(path, text)
        if isinstance(screened, str):
            return FileError(path, screened)
        tree, imports = screened
    from amplint.deep import call_deep

    try:
        return parse(text, path, config, noqa, entries, project, imports, tree)
    except RecursionError:  # deep but valid code: LibCST recurses ~3 frames per tree level
        pass
    try:
        return call_deep(parse, text, path, config, noqa, entries, project, imports, tree)
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
    tree: "Optional[ast.Module]" = None,
) -> Union[SourceAnalysis, FileError]:
    """LibCST's parse of `text`, then its analysis; `tree`, CPython's tree of `text`, gives the positions."""
    from amplint.cstimport import import_libcst

    import_libcst()  # the first parse of a process imports it
    import libcst as cst

    from amplint.analysis import analyze_module
    from amplint.cstparse import parse_module
    from amplint.positions import SourceTree

    try:
        module = parse_module(text)
    except cst.ParserSyntaxError as exc:  # CPython accepted it (`python_parse`), LibCST does not
        retried = _analyze_retabbed(text, path, config, noqa, entries, project, imports)
        if retried is not None:  # tabs and spaces mixed as CPython allows: analysed with tabs expanded
            return retried
        return FileError(path, f"syntax error at line {exc.raw_line}, column {exc.raw_column + 1}: {exc.message}")
    analysis = analyze_module(module, analysis_options(config, project or bool(entries), text), entries, imports,
                              source=None if tree is None else SourceTree(tree, text))
    return finish(text, path, analysis, config, noqa=noqa)


def _analyze_retabbed(
    text: str, path: str, config: Config, noqa: bool, entries: Sequence["EntryContext"], project: bool,
    imports: "ImportTable",
) -> "SourceAnalysis | None":
    """`_parse_and_analyze` on the tab-expanded copy (`amplint.tabs`), findings mapped back; None if that fails too."""
    import libcst as cst

    from amplint.analysis import analyze_module
    from amplint.cstparse import parse_module
    from amplint.tabs import retabbed

    retab = retabbed(text)
    if retab is None:
        return None
    try:
        module = parse_module(retab.text)
    except cst.ParserSyntaxError:
        return None
    analysis = analyze_module(module, analysis_options(config, project or bool(entries), text), entries, imports)
    result = finish(retab.text, path, analysis, config, noqa=noqa)
    result.text = text  # the module no longer reproduces it: `--fix` leaves the file alone
    result.retabbed = True
    # So no finding is called fixable: `--fix` would refuse the file (`fix.apply.MIXED_INDENT_ERROR`).
    result.pairs = [(diagnosis, replace(retab.restore(finding), fixable=False))
                    for diagnosis, finding in result.pairs]
    return result


def analysis_options(config: Config, project: bool, text: Optional[str] = None) -> "AnalysisOptions":
    """The parts of `config` the fact layer reads, and what the text says about the file (when given)."""
    from amplint.analysis import AnalysisOptions

    builds = text is None or "distributions" in text or config.names_a_distribution(text)
    return AnalysisOptions(frozenset(config.extend_autocast), config.distribution_names, project,
                           config.autocast_aliases, builds_distributions=builds,
                           distribution_bases=config.distribution_bases)


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
    """Which strategies can fix this diagnosis without guessing: its rule says."""
    return _rule(diagnosis.code).fix_strategies(diagnosis)


def _rule(code: str) -> "Rule":
    from amplint.rules import rule_for

    rule = rule_for(code)
    assert rule is not None, f"no rule is registered for {code}"
    return rule


def to_finding(diagnosis: "Diagnosis", path: str, analysis: "ModuleAnalysis", config: Config) -> Finding:
    from amplint.facts.built import built_hops
    from amplint.facts.sitespec import site_spec

    position = diagnosis.site.position
    rule = _rule(diagnosis.code)
    strategies = rule.fix_strategies(diagnosis)
    return Finding(
        path=path,
        line=position.start.line,
        column=position.start.column + 1,
        end_line=position.end.line,
        end_column=position.end.column + 1,
        code=diagnosis.code,
        message=rule.message(diagnosis, analysis.module.code_for_node),
        fixable=config.strategy in strategies,
        fix_strategies=strategies,
        region=diagnosis.region.info,
        chain=placed(diagnosis.chain + built_hops(diagnosis.site, analysis.module, analysis.facts.positions), path),
        site=site_spec(diagnosis.site, analysis.module, analysis.imports, analysis.facts.distribution_bases),
        region_path=diagnosis.origin_file or None,
    )


def placed(chain: Tuple[Hop, ...], path: str) -> Tuple[Hop, ...]:
    """The chain with the hops of the analysed file (the facts know no path) in `path`, as JSON, SARIF and the
    language server locate them; messages still show those as `line:column` of the finding's own file."""
    return tuple(hop if hop.path else replace(hop, path=path) for hop in chain)
