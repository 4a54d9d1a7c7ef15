"""The second, syntax-aware prefilter: does the code (not its comments or strings) hold both halves of a finding?

The text prefilter (`engine.may_have_findings`) looks for words anywhere, so
`cross_entropy(...)` next to an `autocast` in a docstring passes it. Parsing
such a file with LibCST is then the whole cost of the run (benchmarks/README.md,
"Profile"). CPython's tree, which the engine builds anyway to screen syntax,
answers the question for a few milliseconds: a finding needs

- a region: a name or attribute spelled `autocast` (or a configured autocast
  name's last part), or such a name imported, and
- a site: a call of a method `log_prob`, `cdf`, `icdf` or `entropy`, or of a
  function that is, or resolves through the imports to, `kl_divergence`.

It is a superset of what `analysis._Collector` recognises, so it only ever
spares a parse that could not report anything. Single-file mode only: in
project mode a site may be reached from a region in another file.
"""
from __future__ import annotations

import ast
from typing import AbstractSet, Iterable, Tuple

from amplint.astwalk import walk
from amplint.densitynames import is_density_name
from amplint.names import ImportTable, ast_dotted, ast_last_name

REGION_WORDS = ("autocast",)
# The text prefilter's words for a computation ("cdf" also covers "icdf"; "log" covers hand-written math:
# `torch.log`, `.log()`, `math.log(2 * math.pi)`; "e-" a literal such as `1e-10`; "exp" a density in
# log-parameter form, `s + d ** 2 * torch.exp(-s)`; "pow", "**" and "/" a density kernel with no log,
# `(1 + z ** 2) ** -2`, `1 / (1 + z ** 2)`).
PROBABILITY_WORDS = ("log_prob", "entropy", "cdf", "kl_divergence", "log", "e-", "kl", "likelihood", "nll", "lgamma",
                     "gammaln", "exp", "pow", "**", "/")
# A log-gamma: the normaliser of Gamma, Beta, Dirichlet and Poisson densities written out (`lgamma(alpha)`).
LGAMMA_FUNCTIONS = frozenset({"torch.lgamma", "torch.special.gammaln"})
LGAMMA_METHODS = frozenset({"lgamma"})
# Logs whose call may be hand-written probability math (`x.log()` takes no argument; logging calls do).
LOG_NAMES = frozenset({"torch.log", "torch.log2", "torch.log10", "math.log", "numpy.log"}) | LGAMMA_FUNCTIONS
LOG_METHODS = frozenset({"log", "log2", "log10"})
FLOAT16_SUBNORMAL = 2.0 ** -24  # a positive literal below it is 0 in float16
# Methods whose call is a probability site (`analysis._Collector._site` reads the same set).
SITE_METHODS = frozenset({"log_prob", "cdf", "icdf", "entropy"})
KL_NAMES = frozenset(
    {"torch.distributions.kl_divergence", "torch.distributions.kl.kl_divergence", "pyro.distributions.kl_divergence"}
)


def mentions_probability(text: str) -> bool:
    """Does `text` hold a word of a computation (`PROBABILITY_WORDS`), in code or not? The text prefilter's half."""
    return any(word in text for word in PROBABILITY_WORDS)


def region_words(extend_autocast: Iterable[str] = ()) -> Tuple[str, ...]:
    """How a region is spelled: `autocast`, and the last part of each configured autocast name."""
    return REGION_WORDS + tuple(name.rsplit(".", 1)[-1] for name in extend_autocast)


def may_have_findings(tree: ast.Module, imports: ImportTable, extend_autocast: Iterable[str] = ()) -> bool:
    """Are there both an autocast spelling and a probability call in the code of `tree`?"""
    words = frozenset(region_words(extend_autocast))
    region = site = False
    for node in walk(tree):
        if not region and _spells(node, words):
            region = True
        elif not site and counts_as_site(node, imports):
            site = True
        if region and site:
            return True
    return False


def counts_as_site(node: ast.AST, imports: ImportTable) -> bool:
    """The site half for one node: a probability call or a log, a floor float16 cannot hold (`1e-10`), or what
    may be a density kernel (`kernel_candidate`)."""
    if isinstance(node, ast.Call):
        return _counts_call(node, imports) or kernel_candidate(node)
    if isinstance(node, ast.BinOp):
        return kernel_candidate(node) or quadratic_candidate(node)
    return isinstance(node, ast.Constant) and isinstance(node.value, float) and 0 < node.value < FLOAT16_SUBNORMAL


def kernel_candidate(node: ast.AST) -> bool:
    """May `node` be a Student-t's or a Cauchy's density kernel (`facts.kernels`), by its syntax alone: a power
    whose exponent is not a non-negative number, a number divided by something holding a sum, a call named `pow`
    whose last argument is not one? (A Gaussian's kernel needs an `exp`, a call counted as such.)"""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Pow):
            return not _non_negative_number(node.right)
        return isinstance(node.op, ast.Div) and _number(node.left) and any(
            isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Add) for inner in walk(node.right))
    if isinstance(node, ast.Call) and ast_last_name(node.func) == "pow" and node.args:
        return not _non_negative_number(node.args[-1])
    return False


def quadratic_candidate(node: ast.BinOp) -> bool:
    """May `node` be a Gaussian's quadratic form with no log written (`facts.sumshape.is_quadratic_form`), by its
    syntax alone: a division by something that may be a square (a product, a power, a call: `z * z / (2 * sigma *
    sigma)`, `d ** 2 / torch.square(s)`), or a quotient squared (`((y - mu) / s) ** 2`)? The half the recognizer
    also asks for may be written outside `node`, so it is not asked here."""
    if isinstance(node.op, ast.Div):
        return any(isinstance(inner, ast.Call) or isinstance(inner, ast.BinOp) and isinstance(
            inner.op, (ast.Mult, ast.Pow)) for inner in walk(node.right))
    return isinstance(node.op, ast.Pow) and isinstance(node.left, ast.BinOp) and isinstance(
        node.left.op, ast.Div) and isinstance(node.right, ast.Constant) and node.right.value == 2


def _number(node: ast.AST) -> bool:
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _non_negative_number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value >= 0


def _counts_call(node: ast.Call, imports: ImportTable) -> bool:
    """`_is_site(node.func) or is_log_call(node) or is_exp_call(node)`, with the callee's dotted name read once."""
    func = node.func
    if _density_named(func) or _distribution_method(func) or _log_method(node) or _exp_method(node):
        return True
    dotted = ast_dotted(func)
    return dotted is not None and (_names_kl(dotted, imports) or _names_log(dotted, imports)
                                   or _names_exp(dotted, imports))


def is_exp_call(node: ast.Call, imports: ImportTable) -> bool:
    """`x.exp()` or `torch.exp(x)`: part of a density in log-parameter form, maybe (`facts.logparams`)."""
    if _exp_method(node):
        return True
    dotted = ast_dotted(node.func)
    return dotted is not None and _names_exp(dotted, imports)


def _exp_method(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and func.attr == "exp" and not node.args and not node.keywords


def is_probability_call(node: ast.Call, imports: ImportTable) -> bool:
    """A call the screen counts for its name, not as a log: `log_prob`, `entropy`, `kl_divergence`, a density."""
    return _is_site(node.func, imports)


def is_distribution_call(node: ast.Call, imports: ImportTable) -> bool:
    """`d.log_prob(x)`, `d.entropy()`, `kl_divergence(p, q)`: what the screen counts other than a density or a log."""
    return _is_distribution_site(node.func, imports)


def _spells(node: ast.AST, words: AbstractSet[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in words
    if isinstance(node, ast.Attribute):
        return node.attr in words
    if isinstance(node, ast.alias):
        return node.name.rsplit(".", 1)[-1] in words
    return False


def is_log_call(node: ast.Call, imports: ImportTable) -> bool:
    """`x.log()` with no argument, or a call of a tensor or math log: hand-written probability math may follow."""
    if _log_method(node):
        return True
    dotted = ast_dotted(node.func)
    return dotted is not None and _names_log(dotted, imports)


def _is_site(func: ast.expr, imports: ImportTable) -> bool:
    return _density_named(func) or _is_distribution_site(func, imports)


def _is_distribution_site(func: ast.expr, imports: ImportTable) -> bool:
    if _distribution_method(func):
        return True
    dotted = ast_dotted(func)
    return dotted is not None and _names_kl(dotted, imports)


# The tests above, each by the call's shape or by the callee's dotted name as the imports resolve it.
def _density_named(func: ast.expr) -> bool:
    """A call named like a project density (`amplint.facts.densitycalls`)."""
    name = ast_last_name(func)
    return name is not None and is_density_name(name)


def _distribution_method(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and (func.attr in SITE_METHODS or func.attr == "kl_divergence")


def _log_method(node: ast.Call) -> bool:
    func = node.func
    return isinstance(func, ast.Attribute) and (func.attr in LOG_METHODS or func.attr in LGAMMA_METHODS) and \
        not node.args and not node.keywords


def _names_kl(dotted: str, imports: ImportTable) -> bool:
    return dotted.rsplit(".", 1)[-1] == "kl_divergence" or not imports.qualnames_of(dotted).isdisjoint(KL_NAMES)


def _names_exp(dotted: str, imports: ImportTable) -> bool:
    return "torch.exp" in imports.qualnames_of(dotted)


def _names_log(dotted: str, imports: ImportTable) -> bool:
    return not imports.qualnames_of(dotted).isdisjoint(LOG_NAMES)
