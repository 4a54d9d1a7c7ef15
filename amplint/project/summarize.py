"""Turn one file's analysis (project mode) into its plain `FileSummary`.

This is a projection of the file's facts (`amplint.facts.FileFacts`, as
`analysis.ModuleAnalysis` carries them), not a second analysis: the sites,
calls and regions are the ones the collector found, so single-file and
project results cannot drift apart.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, Optional, Tuple

from amplint.project.summary import (
    CallSummary, ClassSummary, FileSummary, FunctionSummary, RegionRef, import_pairs, methods_by_class,
)

if TYPE_CHECKING:  # pragma: no cover
    from amplint.analysis import ModuleAnalysis
    from amplint.facts.model import CallRecord, RegionEntry, Scope
    from amplint.facts.entry import ReturnedDist
    from amplint.names import ImportTable


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
    )


def _function(scope: "Scope", imports: "ImportTable",
              returns: Dict[str, Tuple["ReturnedDist", ...]]) -> FunctionSummary:
    from amplint.facts.densitycalls import is_density
    from amplint.facts.signatures import distribution_params, parameter_names  # the parser is loaded

    exposed = sum(1 for site in scope.sites if site.state is None and site.uncast)
    return FunctionSummary(
        key=scope.key,
        display=scope.display,
        class_name=scope.class_name,
        parent=None if scope.parent is None else scope.parent.key,
        nested=tuple(sorted(scope.nested.items())),
        exposed=exposed,
        calls=tuple(_call(c) for c in scope.calls if c.callee),
        sites=len(scope.sites),
        dist_params=distribution_params(scope.node, imports),
        returns=returns.get(scope.key, ()),
        params=parameter_names(scope.node),
        density=is_density(scope.node, imports),
    )


def summarize(analysis: "ModuleAnalysis") -> FileSummary:
    """The file's summary; `analysis` must come from `analyze_module(..., AnalysisOptions(project=True))`."""
    returns = analysis.facts.returns.summaries() if analysis.facts.returns is not None else {}
    functions: Dict[str, FunctionSummary] = {
        key: _function(scope, analysis.imports, returns) for key, scope in analysis.scopes.items()}
    methods = methods_by_class((scope.key, scope.class_name) for scope in analysis.scopes.values())
    classes = {
        name: ClassSummary(
            name=name,
            bases=tuple(bases),
            methods=tuple(methods.get(name, ())),
            attrs=tuple(
                (attr, text, exact) for attr, (text, exact) in sorted(analysis.class_attrs.get(name, {}).items())
            ) + tuple(  # a container's elements: `heads[]`, once per class it holds
                (f"{attr}[]", text, True) for attr, texts in sorted(analysis.facts.class_items.get(name, {}).items())
                for text in texts),
        )
        for name, bases in analysis.class_bases.items()
    }
    module_scope = analysis.scopes["<module>"]
    instances: Tuple[Tuple[str, str, bool], ...] = tuple(
        (name, text, exact) for name, (text, exact) in sorted(module_scope.instances.items())
    )
    return FileSummary(
        imports=import_pairs(analysis.imports.bindings),
        star_modules=tuple(analysis.imports.star_modules),
        functions=functions,
        classes=classes,
        instances=instances,
        framework_calls=tuple(analysis.framework_calls),
    )
