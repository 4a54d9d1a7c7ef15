"""Site recognizers: which nodes are probability computations, and what their inputs are.

A recognizer looks at one node of one node type (a `cst.Call` for the
distribution sites below) and returns a `Site` or None. The collector tries
the recognizers registered for a node's type in order and keeps the first
site; a call that is a site is not also recorded as a call into a helper.

To add a kind of site (a hand-written density, inline log-density math, a
tiny epsilon), write a function `(node, ctx) -> Optional[Site]`, wrap it in a
`SiteRecognizer` with its node type and a `kind` name, and add it to
`RECOGNIZERS`. The context (`SiteContext`, the collector itself) gives the
current scope and region, dtype provenance (`is_wide`, `make_site` fills
`uncast` and `tainted`), distribution bindings and the import table. Rules
then tell sites apart by `site.kind`. A node type other than `cst.Call` gets
a collector hook automatically (`collector.collector_class`), except the
types the collector visits itself (scopes, `with`, statements, assignments).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, List, Optional, Protocol, Sequence, Tuple, Type

import libcst as cst

from amplint import dtypes
from amplint.facts import densitycalls, mathsites
from amplint.facts.discrete import value_inputs
from amplint.facts.mathenv import unrebound_parameters
from amplint.facts.model import DistRef, Scope, Site
from amplint.facts.signatures import distribution_params
from amplint.names import dotted_name
from amplint.screen import SITE_METHODS

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import AnalysisOptions
    from amplint.facts.mathenv import Statements
    from amplint.facts.probmath import Env
    from amplint.names import ImportTable


class SiteContext(Protocol):
    """What a recognizer may read from the collector at the node it is given."""

    module: cst.Module
    imports: "ImportTable"
    options: "AnalysisOptions"
    scope: Scope
    bodies: "Statements"  # function bodies' and classes' bindings, read once per tree

    def dist_ref(self, node: cst.BaseExpression) -> Optional[DistRef]:
        """A distribution constructor call, or a local name bound to one."""

    def dist_refs(self, node: cst.BaseExpression) -> List[DistRef]:
        """Every constructor that may reach `node` (one per `if` branch that binds a name to one)."""

    def is_wide(self, node: cst.BaseExpression) -> bool:
        """The expression is float32 or wider here."""

    def make_site(self, node: cst.CSTNode, method: str, dists: List[DistRef], values: List[cst.BaseExpression],
                  inputs: List[cst.BaseExpression], kind: str, at: Optional[cst.CSTNode] = None) -> Site:
        """A site at `node` in the current scope and region; `uncast`/`tainted` computed from `inputs`."""

    def math_env(self) -> "Env":
        """The current function's bindings, for the hand-written-math recognizers (`amplint.facts.probmath`)."""

    def inside_site(self, node: cst.CSTNode) -> bool:
        """`node` lies inside the site recorded last (an enclosing expression already made a site)."""


VALUE_METHODS = frozenset({"log_prob", "cdf", "icdf"})
DISTRIBUTION = "distribution"  # the kind of the sites below: a torch/pyro distribution's method or KL


@dataclass(frozen=True)
class SiteRecognizer:
    node_type: Type[cst.CSTNode]
    kind: str
    recognize: Callable[[cst.CSTNode, "SiteContext"], Optional[Site]]


def _site(node: cst.CSTNode, ctx: "SiteContext", method: str, dists: List[DistRef],
          values: List[cst.BaseExpression], typed: Sequence[cst.BaseExpression] = ()) -> Site:
    # An index, label or integer count needs no cast (`facts/discrete.py`): it is no input.
    inputs = [i for d in dists for i in d.all_inputs()] + list(typed) + value_inputs(
        method, dists, values, ctx.scope, ctx.imports)
    return ctx.make_site(node, method, dists, values, inputs, DISTRIBUTION)


def typed_receiver(receiver: cst.BaseExpression, ctx: "SiteContext") -> bool:
    """A parameter annotated as a distribution (`dist: Distribution`): what the caller built, float16 or not."""
    return isinstance(receiver, cst.Name) and receiver.value in distribution_params(ctx.scope.node, ctx.imports)


def parameter_inputs(function: Optional[cst.CSTNode], uncast: List[cst.BaseExpression], env: "Env"
                     ) -> List[cst.BaseExpression]:
    """The uncast inputs that are parameters of `function` never assigned in its body (`Site.data`)."""
    if not uncast:
        return []
    kept = unrebound_parameters(function, env)
    return [i for i in uncast if isinstance(i, cst.Name) and i.value in kept]


def wide_result(node: cst.BaseExpression, ctx: "SiteContext") -> bool:
    """`d.cdf(x)` of a visible distribution whose inputs are all float32: the result is float32 too. So is
    `to_probs(x.float())`, a project helper computing probabilities from what it is given (`probreturns`), and
    a read the project proved float32 on every path (`x`, `self.mu`, `d.dist`: `entry.Float32Reads`)."""
    if ctx.options.float32_reads and isinstance(node, (cst.Name, cst.Attribute)):
        return _proved_float32(node, ctx)
    func = node.func if isinstance(node, cst.Call) else None
    if func is not None and ctx.options.producers and ctx.math_env().calls_producer(node):
        assert isinstance(node, cst.Call)
        tensors = [a.value for a in node.args if not dtypes.is_number(a.value)]
        return bool(tensors) and all(ctx.is_wide(t) for t in tensors)
    if not (isinstance(func, cst.Attribute) and func.attr.value in SITE_METHODS):
        return False
    assert isinstance(node, cst.Call)
    ref = ctx.dist_ref(func.value)
    if ref is None or ref.has_star or any(a.star for a in node.args):
        return False
    inputs = ref.all_inputs() + [a.value for a in node.args if not dtypes.is_number(a.value)]
    return all(ctx.is_wide(i) for i in inputs)


def _proved_float32(node: cst.BaseExpression, ctx: "SiteContext") -> bool:
    text = dotted_name(node)
    key = ctx.scope.key
    return text is not None and any(text in each.reads for each in ctx.options.float32_reads if each.function == key)


def distribution_method(node: cst.CSTNode, ctx: "SiteContext") -> Optional[Site]:
    """`d.log_prob(v)`, `d.cdf(v)`, `d.icdf(v)`, `d.entropy()`, the distribution visible or not.

    A receiver whose constructor the file does not show (returned by a helper, kept on an object, handed
    in) is reported alike for every method, its risk unknown: `log_prob` alone used to be, so the same
    distribution's `entropy()` went unreported. A receiver known not to be a distribution is dropped
    later (`facts.build`, `amplint.receivers`)."""
    assert isinstance(node, cst.Call)
    func = node.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in SITE_METHODS):
        return None
    method = func.attr.value
    receivers = ctx.dist_refs(func.value)  # a name assigned in two `if` branches has two constructors
    # Not visible: the receiver is the input (what its constructor was given is not known here).
    typed = [func.value] if not receivers else []
    values = [a.value for a in node.args if not a.star] if method in VALUE_METHODS else []
    return _site(node, ctx, method, receivers, values, typed)


def kl_divergence(node: cst.CSTNode, ctx: "SiteContext") -> Optional[Site]:
    """`kl_divergence(p, q)` of torch's: its arguments are distributions, visible or not (risk unknown then)."""
    assert isinstance(node, cst.Call)
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in SITE_METHODS:
        return None  # a method site's name, whatever its receiver
    if not ctx.imports.matches(func, dtypes.KL_NAMES):
        return None
    dists = [d for d in (ctx.dist_ref(a.value) for a in node.args[:2]) if d is not None]
    typed = [a.value for a in node.args[:2] if ctx.dist_ref(a.value) is None and typed_receiver(a.value, ctx)]
    if not dists and not typed:  # neither is visible: the arguments themselves are the inputs to cast
        typed = [a.value for a in node.args[:2] if not a.star]
    return _site(node, ctx, "kl_divergence", dists, [], typed)


# Tried in this order for each node of their type; the first site wins.
RECOGNIZERS: Tuple[SiteRecognizer, ...] = (
    SiteRecognizer(cst.Call, DISTRIBUTION, distribution_method),
    SiteRecognizer(cst.Call, DISTRIBUTION, kl_divergence),
    SiteRecognizer(cst.Call, densitycalls.DENSITY, densitycalls.density_call),
    SiteRecognizer(cst.Call, mathsites.INLINE, mathsites.inline_call),
    SiteRecognizer(cst.Call, mathsites.EPSILON, mathsites.floor_call),
    SiteRecognizer(cst.BinaryOperation, mathsites.INLINE, mathsites.inline_operation),
)
