"""Turn one file's analysis (project mode) into its plain `FileSummary`.

This is a projection of the file's facts (`amplint.facts.FileFacts`, as
`analysis.ModuleAnalysis` carries them), not a second analysis: the sites,
calls and regions are the ones the collector found, so single-file and
project results cannot drift apart.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from amplint.facts.frameworks import ACCELERATOR
from amplint.project.summary import (
    CallSummary, ClassSummary, FileSummary, FunctionSummary, RegionRef, import_pairs, methods_by_class,
)

# The class names and the top-level packages of Accelerate's `Accelerator`: a file that names it spells both.
_ACCELERATOR_WORDS = (frozenset(q.rsplit(".", 1)[-1] for q in ACCELERATOR),
                      frozenset(q.split(".", 1)[0] for q in ACCELERATOR))

if TYPE_CHECKING:  # pragma: no cover
    import ast

    from amplint.analysis import ModuleAnalysis
    from amplint.config import Config
    from amplint.cpython_trees import CPythonTrees
    from amplint.facts.astcalls import AstFacts
    from amplint.facts.frameworks import FrameworkCall
    from amplint.facts.model import CallRecord, RegionEntry, Scope
    from amplint.facts.entry import ReturnedDist
    from amplint.names import ImportTable
    from amplint.project.probreturns import FunctionReturns, ReturnedCall


def _region(entry: "Optional[RegionEntry]") -> Optional[RegionRef]:
    return None if entry is None else RegionRef(entry.info, entry.label)


def _call(call: "CallRecord") -> CallSummary:
    return CallSummary(
        line=call.line,
        column=call.column,
        callee=call.callee,
        text=call.text,
        region=_region(call.state),
        protected=call.protected,
        receiver=call.receiver,
        root_local=call.root_local,
        density=call.density,
        dist_args=call.dist_args,
        given=call.given,
        accel=call.accel,
        opaque=call.opaque,
    )


def _function(scope: "Scope", imports: "ImportTable",
              returns: Dict[str, Tuple["ReturnedDist", ...]], told: "FunctionReturns") -> FunctionSummary:
    from amplint.facts.densitycalls import loses_range
    from amplint.facts.signatures import distribution_params, parameter_names  # the parser is loaded

    exposed = sum(1 for site in scope.sites if site.state is None and site.uncast)
    return _function_summary(scope, returns.get(scope.key, ()), distribution_params(scope.node, imports),
                             parameter_names(scope.node), loses_range(scope.node, imports),
                             (len(scope.sites), exposed), scope.key in told.producers, told.calls.get(scope.key, ()))


def _function_summary(scope: "Scope", returns: Tuple["ReturnedDist", ...], dist_params: Tuple[str, ...],
                      params: Tuple[str, ...], losing: bool, sites: Tuple[int, int],
                      returns_prob: bool, returned_calls: Tuple["ReturnedCall", ...] = ()) -> FunctionSummary:
    """`sites`: how many sites the function holds, and how many of them are exposed (no region of their own,
    some input not cast to float32)."""
    count, exposed = sites
    return FunctionSummary(
        key=scope.key,
        display=scope.display,
        class_name=scope.class_name,
        parent=None if scope.parent is None else scope.parent.key,
        nested=tuple(sorted(scope.nested.items())),
        exposed=exposed,
        calls=tuple(_call(c) for c in scope.calls if c.callee),
        sites=count,
        dist_params=dist_params,
        returns=returns,
        params=params,
        loses_range=losing,
        returns_prob=returns_prob,
        returned_calls=returned_calls,
        accels=tuple(scope.accel_reads),
    )


def summarize(analysis: "ModuleAnalysis", text: str, trees: "Optional[CPythonTrees]" = None) -> FileSummary:
    """The file's summary; `analysis` must come from `analyze_module(..., AnalysisOptions(project=True))` of
    `text` (`SourceAnalysis.parsed_text`). `trees`: the run's CPython trees, where the tree and its index the
    value flow reads too are kept."""
    from amplint.cpython_trees import parse
    from amplint.project.flowtrees import INDEX, index_tree
    from amplint.project.probreturns import FunctionReturns, function_returns

    returns = analysis.facts.returns.summaries() if analysis.facts.returns is not None else {}
    parsed = parse(text, trees)
    told = FunctionReturns(frozenset(), {})  # what this Python cannot read, or too deep: no claim
    if not isinstance(parsed, str):
        tree = parsed[0]
        try:
            indexed = index_tree(tree) if trees is None else trees.derived(text, INDEX, lambda: index_tree(tree))
            told = function_returns(indexed, text, analysis.imports)
        except (ValueError, RecursionError):
            pass
    functions: Dict[str, FunctionSummary] = {
        key: _function(scope, analysis.imports, returns, told) for key, scope in analysis.scopes.items()}
    return _file_summary(analysis.imports, functions, analysis.scopes, analysis.class_bases, analysis.class_attrs,
                         analysis.facts.class_items, tuple(analysis.framework_calls))


def summarize_ast(facts: "AstFacts", imports: "ImportTable", told: "Optional[FunctionReturns]" = None) -> FileSummary:
    """The summary of a file read from CPython's tree (`facts.astcalls`): no distribution, and no site but the
    project's density calls and hand-written math. `told`: `probreturns.function_returns`."""
    producers, calls = (told.producers, told.calls) if told is not None else (frozenset(), {})
    functions = {key: _function_summary(scope, (), facts.dist_params.get(key, ()), facts.params.get(key, ()),
                                        key in facts.losing, facts.sites.get(key, (0, 0)), key in producers,
                                        calls.get(key, ()))
                 for key, scope in facts.scopes.items()}
    return _file_summary(imports, functions, facts.scopes, facts.class_bases, facts.class_attrs, facts.class_items,
                         tuple(facts.framework_calls))


def _file_summary(
    imports: "ImportTable", functions: Dict[str, FunctionSummary], scopes: Dict[str, "Scope"],
    class_bases: Dict[str, List[str]], class_attrs: Dict[str, Dict[str, Tuple[str, bool]]],
    class_items: Dict[str, Dict[str, Tuple[str, ...]]], framework_calls: Tuple["FrameworkCall", ...],
) -> FileSummary:
    methods = methods_by_class((scope.key, scope.class_name) for scope in scopes.values())
    classes = {
        name: ClassSummary(
            name=name,
            bases=tuple(bases),
            methods=tuple(methods.get(name, ())),
            attrs=tuple(
                (attr, text, exact) for attr, (text, exact) in sorted(class_attrs.get(name, {}).items())
            ) + tuple(  # a container's elements: `heads[]`, once per class it holds
                (f"{attr}[]", text, True) for attr, texts in sorted(class_items.get(name, {}).items())
                for text in texts),
        )
        for name, bases in class_bases.items()
    }
    instances: Tuple[Tuple[str, str, bool], ...] = tuple(
        (name, text, exact) for name, (text, exact) in sorted(scopes["<module>"].instances.items())
    )
    return FileSummary(
        imports=import_pairs(imports.bindings),
        star_modules=tuple(imports.star_modules),
        functions=functions,
        classes=classes,
        instances=instances,
        framework_calls=framework_calls,
    )


def summary_from_ast(text: str, config: "Config") -> Optional[FileSummary]:
    """The summary read from CPython's tree when the file holds no site it cannot read, and no distribution; else
    None.

    None also when CPython refuses the file: the LibCST path reports that as it always did.
    """
    return read_summary(text, config)[0]


def read_summary(
    text: str, config: "Config", trees: "Optional[CPythonTrees]" = None
) -> "Tuple[Optional[FileSummary], Optional[Tuple[ast.Module, ImportTable]]]":
    """(the summary, None) when CPython's tree says all; else (None, CPython's tree and import table when they
    were read), so that the LibCST path does not parse the file with CPython again. `trees`: the run's memo."""
    from amplint.cpython_trees import parse
    from amplint.facts.astcalls import ast_facts
    from amplint.facts.astscreen import DISTRIBUTIONS, may_name_distributions
    from amplint.project.flowtrees import INDEX, index_tree
    from amplint.project.probreturns import function_returns

    if _names_what_only_libcst_reads(text, config):
        return None, None
    parsed = parse(text, trees)  # the value flow may read the tree, and its index, next
    if isinstance(parsed, str):  # the LibCST path reports CPython's refusal, as it always did
        return None, None
    tree, imports = parsed
    if DISTRIBUTIONS in text and may_name_distributions(tree, imports):
        return None, parsed
    facts = ast_facts(tree, text, imports, frozenset(config.extend_autocast), config.autocast_aliases)
    if facts is None:
        return None, parsed
    indexed = index_tree(tree) if trees is None else trees.derived(text, INDEX, lambda: index_tree(tree))
    return summarize_ast(facts, imports, function_returns(indexed, text, imports)), None


def _names_what_only_libcst_reads(text: str, config: "Config") -> bool:
    """Does the text name a configured distribution class (as `pipeline.analysis_options` reads them), or
    Accelerate's `Accelerator` (rule A's regions and prepared models)?

    Rule A's names resolve to `accelerate.Accelerator` only through this file's own imports, so a file
    that never spells `accelerate` cannot construct one (Lightning's own `Accelerator` class is no region).
    `distributions` itself counts only in the code (`astscreen.may_name_distributions`): it is in license
    headers ("Redistributions of source code") and docstrings.
    """
    if all(any(word in text for word in words) for words in _ACCELERATOR_WORDS):
        return True
    return config.names_a_distribution(text)
