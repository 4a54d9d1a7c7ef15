"""Site recognizers for hand-written probability math on LibCST's tree: the collector's `Site`s.

Three kinds, each a `Site` the rules tell apart by `site.kind`:

- `INLINE` at a tensor log of probabilities, a written-out log-softmax
  (`x - log(exp(x).sum())`), a Gaussian log-density/KL spelled term by term
  , a log-gamma normaliser, a density in log-parameter form (`s` beside
  `exp(s)`), or a density kernel with no log (`facts.kernelshape`); `method` says
  which shape: "log-of-prob", "log-sum-exp", "gaussian", "lgamma",
  "log-parameter", "density-kernel";
- `EPSILON` at a floor under probabilities (`p + 1e-10`, `p.clamp(min=1e-12)`)
  whose literal float16 rounds to zero, positioned at the literal.

A site's inputs are the tensors the math reads, so casts protect it as they
protect a distribution's parameters.

Which math is a site is `facts.siteshape`'s, recognized once for both trees
(its doc lists where LibCST's sites and CPython's differ); this module makes
LibCST's `Site`s of it: their inputs, anchors and devices.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Protocol, Set

import libcst as cst

from amplint.facts import probmath, siteshape
from amplint.facts.cstreader import CstReader
from amplint.facts.devicemath import cast_too_late, on_device, statement_sources
from amplint.facts.kernelshape import is_kernel
from amplint.facts.mathenv import Env, unrebound_parameters
from amplint.facts.nodes import tainted_inputs
from amplint.facts.siteshape import EPSILON, INLINE, KERNEL, LOG_SCALE
from amplint.policies import CPU, CUDA

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import DistRef, Scope, Site


class SiteContext(Protocol):
    """The part of `amplint.facts.sites.SiteContext` these recognizers use."""

    claimed_sums: Set[int]  # id()s of the inner nodes of sums already judged whole (see `_gaussian_site`)
    scope: "Scope"  # the scope being read: its region decides the device's policy

    def math_env(self) -> Env: ...

    def is_wide(self, node: cst.BaseExpression) -> bool: ...

    def inside_site(self, node: cst.CSTNode) -> bool: ...

    def make_site(self, node: cst.CSTNode, method: str, dists: List["DistRef"], values: List[cst.BaseExpression],
                  inputs: List[cst.BaseExpression], kind: str, at: Optional[cst.CSTNode] = None) -> "Site": ...


def _inputs(inner: cst.BaseExpression, ctx: "SiteContext", floor: bool = False) -> List[cst.BaseExpression]:
    """The tensors the math reads; the value itself where it is float32 already (`torch.where(c, p.float(),
    1.0)`: its condition is no input of the log), unless the cast came after float16 lost its range (a floor
    added after the cast is kept whatever came before: `floor` leaves the value as it is)."""
    if not ctx.is_wide(inner):
        return list(probmath.leaves(inner, ctx.math_env()))
    return [inner] if floor else _in_time([inner], ctx)


def _in_time(inputs: List[cst.BaseExpression], ctx: "SiteContext") -> List[cst.BaseExpression]:
    """`inputs`, each float32 one cast too late replaced by the float16 tensors it lost range from
    (`torch.sigmoid(z).float()` under CPU autocast reads `z`: `amplint.facts.devicemath.cast_too_late`)."""
    entry = ctx.scope.effective()
    policy = entry.policy if entry is not None else None
    out: List[cst.BaseExpression] = []
    for node in inputs:
        late = cast_too_late(node, ctx.math_env(), policy, ctx.is_wide) if policy and ctx.is_wide(node) else []
        out += late or [node]
    return out


def _spared(site: Optional["Site"], expr: cst.BaseExpression, ctx: "SiteContext", floor: bool = False
            ) -> Optional["Site"]:
    """Mark how the site's region's device computes it: its policy may run every op that loses range in float32
    (CUDA runs `softmax`, `exp`, `pow` and `log` so: `Site.promoted`); otherwise float16 on the probe activations
    says whether it holds there (`Site.probed`; `amplint.facts.devicemath.on_device`). Either way it is reported,
    its inputs float16 with no cast; the message and its risk say what the device does. A site whose own inputs
    are float32 takes those its statement loses range on (`_statement_inputs`). `floor`: `expr` is what a floor
    is added to."""
    if site is None:
        return site
    env = ctx.math_env()
    if not site.float16_inputs() and not floor:  # a floor's finding is about the floor: float32 keeps it
        _statement_inputs(site, ctx)
    elif site.uncast:
        _supersede(site, ctx)
    if not site.uncast:
        return site
    if site.state is not None:
        device = on_device(expr, env, site.state.policy, ctx.is_wide, unrebound_parameters(ctx.scope.node, env),
                           floor, _statement_value(site))
        site.promoted = list(site.uncast) if device.spared else []
        site.probed = device.probed
    elif isinstance(ctx.scope.node, cst.FunctionDef):
        # Math a region elsewhere may reach: its parameters hold that region's values, none of them float32 data.
        whole = _statement_value(site)
        site.reached = tuple(on_device(expr, env, policy, ctx.is_wide, frozenset(), floor, whole)
                             for policy in (CPU, CUDA))
    return site


def _statement_inputs(site: "Site", ctx: "SiteContext") -> None:
    """A site whose own inputs are float32 (cast, or the caller's data: `Site.data`) still loses range when its
    statement does: `torch.lgamma(a.float()) / s.exp()` overflows at the `exp`. The site's uncast inputs become
    the float16 tensors the statement loses range from (`Site.through_statement`), once per statement. Only in
    a region of the site's own function: reached from elsewhere, a site is judged by its own inputs."""
    whole = _statement_value(site)
    if site.state is None or site.state.policy is None or whole is None:
        return
    if any(other.statement is site.statement and other.uncast for other in ctx.scope.sites):
        return  # the statement is reported at a site of its own already
    env = ctx.math_env()
    sources = statement_sources(whole, env, site.state.policy, ctx.is_wide,
                                unrebound_parameters(ctx.scope.node, env))
    if sources:
        site.uncast, site.data = sources, []
        site.tainted = tainted_inputs(ctx.scope.tainted, sources)
        site.through_statement = True


def _supersede(site: "Site", ctx: "SiteContext") -> None:
    """A site with float16 inputs of its own reports its statement: one made earlier in it that took the
    statement's inputs (`_statement_inputs`) reports nothing."""
    for other in ctx.scope.sites:
        if other.through_statement and other.statement is site.statement:
            other.uncast, other.tainted, other.through_statement = [], [], False


def _statement_value(site: "Site") -> Optional[cst.BaseExpression]:
    """The value the statement holding `site` computes: what is assigned, returned or evaluated (`on_device`
    judges the site alone where the walk cannot read it: several values, `return logp, torch.log(p)`)."""
    statement = site.statement
    small = statement.body[0] if statement is not None and len(statement.body) == 1 else None
    value = getattr(small, "value", None)
    return value if isinstance(value, cst.BaseExpression) else None


def _at_producers(site: Optional["Site"], env: Env) -> Optional["Site"]:
    """Where fix A casts each input of a log of probabilities: where the probabilities were made."""
    for node in site.uncast if site is not None else ():
        operand = probmath.producer_operand(node, env)
        if operand is not None:
            site.cast_at[id(node)] = operand
    return site


def _log_site(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """`torch.log(p)`, `p.log()`, `torch.log(p + eps)` of probabilities, or a log of a sum of exps
    (`siteshape.log_site`)."""
    assert isinstance(node, cst.Call)
    env = ctx.math_env()
    found = siteshape.log_site(node, CstReader(env), ctx.inside_site)
    if found is None:
        return None
    method, inner = found
    site = _spared(ctx.make_site(node, method, [], [], _inputs(inner, ctx), INLINE), node, ctx)
    return _at_producers(site, env) if method in ("log-of-prob", LOG_SCALE) else site


def _product_site(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """`p * log(p)`: an entropy term says `p` is a probability even when nothing else does."""
    assert isinstance(node, cst.BinaryOperation)
    env = ctx.math_env()
    found = siteshape.entropy_site(node, CstReader(env))
    if found is None:
        return None
    log, inner = found
    site = ctx.make_site(node, "log-of-prob", [], [], _inputs(inner, ctx), INLINE, at=log)
    return _at_producers(_spared(site, node, ctx), env)


def _gaussian_site(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """A sum with a squared tensor term (or a magnitude) and a log term: a Gaussian (or Laplace) log-density or
    KL written out; or a density in log-parameter form. The first of `siteshape.density_sums` that answers."""
    assert isinstance(node, cst.BinaryOperation)
    if id(node) in ctx.claimed_sums or ctx.inside_site(node):
        return None  # one site per written sum, not one per sub-sum
    tree = CstReader(ctx.math_env())
    ctx.claimed_sums.update(id(side) for side in siteshape.inner_sums(node, tree))
    for method, operands in siteshape.density_sums(node, tree):
        if operands is not None:
            site = ctx.make_site(node, method, [], [], _in_time(list(operands), ctx), INLINE,
                                 at=probmath.first_sum(node))
            return _spared(site, node, ctx)
    return None


def _floor_site(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """`p + 1e-10`, `p.clamp(min=1e-12)`, `torch.clamp(p, eps)` under probabilities: a floor float16 drops,
    reported at its literal."""
    env = ctx.math_env()
    found = siteshape.floor_site(node, CstReader(env))
    if found is None:
        return None
    inner, (bound, _) = found
    at = bound if isinstance(bound, cst.Float) else node
    site = _spared(ctx.make_site(node, "epsilon", [], [], _inputs(inner, ctx, floor=True), EPSILON, at=at), inner,
                   ctx, True)
    return _at_producers(site, env)


def _kernel_site(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """A Gaussian's, Student-t's or Cauchy's density written out with no log (`kernelshape`), reported at
    itself."""
    assert isinstance(node, (cst.Call, cst.BinaryOperation))
    if ctx.inside_site(node):
        return None  # a kernel inside a site already made (a density's sum) is a term of it
    env = ctx.math_env()
    if not is_kernel(node, CstReader(env)):
        return None
    operands = list(probmath.leaves(node, env))
    return _spared(ctx.make_site(node, KERNEL, [], [], _in_time(operands, ctx), INLINE, at=node), node, ctx)


def inline_call(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    return _log_site(node, ctx) or _kernel_site(node, ctx)


def floor_call(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    return _floor_site(node, ctx)


def inline_operation(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """A binary operation's site: a floor first (it sits inside a log), then an entropy term, then a Gaussian,
    then a density kernel."""
    return _floor_site(node, ctx) or _product_site(node, ctx) or _gaussian_site(node, ctx) or _kernel_site(node, ctx)
