"""The project's own distribution classes, found before any file is summarized.

Real code subclasses distributions (`class SquashedNormal(TransformedDistribution)`,
`class TruncatedNormal(pyd.Normal)`) in one file and builds them in another. A
summary that cannot tell `SquashedNormal(loc, scale)` is a distribution loses
what a head returns, and the site that reads it becomes opaque (risk unknown,
never fixable, and reported even when the arguments are cast). So, before the
summaries, every such class is found: the first pass keeps each file's `class`
lines (`spellings.class_lines`, text only); the files whose bases name a
distribution class, or a class found so far, are parsed; a class whose base the
file's imports qualify as a distribution (or as a class found so far, in this
file or another) is one, until no more are found. Each is then a configured
distribution (`extend-distributions`) under every name an importer may give it:
its module's dotted names, and the relative spellings of them.
"""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import Dict, FrozenSet, Iterator, Tuple

from amplint.cpython_trees import CPythonTrees
from amplint.facts.distclasses import derived_classes
from amplint.files import read_source
from amplint.identifiers import analysis_text
from amplint.model import DistributionBase, FileError
from amplint.names import ImportTable
from amplint.project.modules import ModuleIndex
from amplint.project.spellings import ClassLine

# torch.distributions' classes a project derives from (the measured table's, and the abstract bases), by last name.
BASE_NAMES = frozenset({
    "Distribution", "ExponentialFamily", "TransformedDistribution", "Independent", "MixtureSameFamily",
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Exponential", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric", "Gumbel", "HalfCauchy",
    "HalfNormal", "InverseGamma", "Kumaraswamy", "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal",
    "LowRankMultivariateNormal", "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal",
    "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "StudentT", "Uniform", "VonMises", "Weibull", "Wishart",
})
RELATIVE_DOTS = 3  # `from ...dists import X`: the relative spellings kept, per tail of a module's name


def project_distributions(classes: Dict[str, Tuple[ClassLine, ...]], index: ModuleIndex, parsed: CPythonTrees,
                          extra: FrozenSet[str]) -> Tuple[DistributionBase, ...]:
    """Every name an importer may give a project class derived from a distribution, with its library base
    (sorted by name)."""
    wanted = set(BASE_NAMES) | {name.rstrip(".").rsplit(".", 1)[-1] for name in extra}
    found: Dict[str, Dict[str, DistributionBase]] = {}  # path -> class key -> what it derives
    names: Dict[str, DistributionBase] = {}  # each spelling of each class found
    tables: Dict[str, object] = {}
    grew = True
    while grew:  # a class derived from one found in this round is found in the next
        grew = False
        for path, lines in classes.items():
            if not any(base in wanted for line in lines for base in line.bases):
                continue
            local = found.setdefault(path, {})
            for each in _derived(path, tables, parsed, extra | frozenset(names), local, names):
                if each.name not in local:
                    local[each.name] = each
                    names.update((name, replace(each, name=name)) for name in _spellings(index, path, each.name))
                    wanted.add(each.name.rsplit(".", 1)[-1])
                    grew = True
    return tuple(names[name] for name in sorted(names))


def _derived(path: str, tables: Dict[str, object], parsed: CPythonTrees, known: FrozenSet[str],
             local: Dict[str, DistributionBase], project: Dict[str, DistributionBase]) -> Iterator[DistributionBase]:
    """`facts.distclasses.derived_classes` of the file at `path`, parsed once per run."""
    if path not in tables:
        tables[path] = _parse(path, parsed)
    read = tables[path]
    if read is not None:
        yield from derived_classes(*read, known, local, project)  # type: ignore[misc]


def _parse(path: str, parsed: CPythonTrees) -> "Tuple[ast.Module, ImportTable] | None":
    source = read_source(path)
    if isinstance(source, FileError):
        return None
    tree = parsed.parse(analysis_text(source.text))
    return None if isinstance(tree, str) else tree


def _spellings(index: ModuleIndex, path: str, key: str) -> Iterator[str]:
    """`pkg.dists.SquashedNormal`, and `.dists.SquashedNormal`, `..pkg.dists.SquashedNormal`, ... as relative
    imports spell it."""
    for module in index.names_of.get(path, ()):
        yield f"{module.name}.{key}"
        parts = module.name.split(".")
        for start in range(len(parts)):
            tail = ".".join(parts[start:])
            yield from ("." * dots + f"{tail}.{key}" for dots in range(1, RELATIVE_DOTS + 1))
