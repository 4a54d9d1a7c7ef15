"""The values a head gives (probabilities, scales, log-probabilities) and the density shapes built on them.

Typed on purpose: a log only ever reads a probability or a positive scale, a
division only divides by one, `exp` only reads the head's bounded outputs, so
the float32 reference stays finite on every realistic input and a non-finite
float16 value is float16's doing. Within that, every choice is random: which op
makes a probability, whether a floor guards it and how, which intermediate
values are named, and (in the `inner` and `leaf` cast modes) which ones are cast.

Each family is a shape density code is written in (an entropy, a written-out
binary cross-entropy, a Gaussian NLL or KL, a Poisson or Gamma likelihood with
`lgamma`, ...); `tree` composes the typed values at random for what no
template foresees. `FAMILIES` maps each name to its builder and its weight.
"""
from __future__ import annotations

import math
from typing import Callable, Dict, Tuple

from . import ops
from .code import Expr, Writer, binary, literal

# --- typed values ------------------------------------------------------------------------------


def probs(w: Writer) -> Expr:
    """Probabilities of shape (rows, D): a softmax, a sigmoid, a normalisation, or a complement."""
    kind = w.pick(("softmax", "softmax", "sigmoid", "normalized", "complement"))
    if kind == "softmax":
        z = w.maybe_cast(w.leaf("logits"))
        if w.chance(0.15):
            z = ops.divide(w, z, literal(w.pick((0.5, 2.0))))
        p = ops.softmax(w, z)
    elif kind == "sigmoid":
        p = ops.sigmoid(w, w.maybe_cast(w.leaf(w.pick(("loc", "logits")))))
    elif kind == "normalized":
        e = w.must_bind(w.maybe_cast(ops.exp(w, w.leaf("logits"))), w.pick(("e", "unnorm", "weights")))
        p = ops.divide(w, e, ops.total(w, e, keepdim=True))
    else:
        p = binary(literal(1), "-", ops.sigmoid(w, w.leaf(w.pick(("loc", "logits")))))
    return w.bind(w.maybe_cast(p), w.pick(("p", "probs", "prob")))


def log_probs(w: Writer) -> Expr:
    """Log-probabilities: a log of probabilities (floored or not), a fused op, or a written-out log-softmax."""
    kind = w.pick(("log", "log", "log", "fused", "logsigmoid", "minus_lse", "written_lse"))
    if kind == "log":
        p = probs(w)
        r = ops.log(w, w.maybe_cast(w.floor(p) if w.chance(0.6) else p))
    elif kind == "fused":
        r = ops.log_softmax(w, w.maybe_cast(w.leaf("logits")))
    elif kind == "logsigmoid":
        r = ops.logsigmoid(w, w.maybe_cast(w.leaf(w.pick(("loc", "logits")))))
    else:
        z = w.maybe_cast(w.leaf("logits"))
        norm = (ops.logsumexp(w, z) if kind == "minus_lse"
                else ops.log(w, w.maybe_cast(ops.total(w, ops.exp(w, z), keepdim=True))))
        r = binary(z, "-", w.maybe_cast(w.bind(norm, w.pick(("log_z", "lse", "norm")))))
    return w.bind(w.maybe_cast(r), w.pick(("logp", "log_probs", "log_p")))


def positive(w: Writer, role: str) -> Expr:
    """A positive parameter from a head block: exp, exp(0.5 *), softplus (+ eps), a clamped exp, a sigmoid."""
    z = w.maybe_cast(w.leaf(role))
    kind = w.pick(("exp", "exp", "half_exp", "softplus", "softplus_eps", "clamped_exp", "sigmoid"))
    if kind == "exp":
        v = ops.exp(w, z)
    elif kind == "half_exp":
        v = ops.exp(w, ops.times(0.5, z))
    elif kind == "softplus":
        v = ops.softplus(w, z)
    elif kind == "softplus_eps":
        v = binary(ops.softplus(w, z), "+", w.eps())
        w.features.ops.add("+eps")
    elif kind == "clamped_exp":
        v = w.floor(ops.exp(w, z))
    else:
        v = ops.sigmoid(w, z)
    return w.maybe_cast(v)


def scale(w: Writer) -> Expr:
    return w.bind(positive(w, "scale"), w.pick(("sigma", "std", "scale")))


def variance(w: Writer) -> Expr:
    kind = w.pick(("square", "exp", "softplus"))
    if kind == "square":
        v = ops.square(w, scale(w))
    elif kind == "exp":
        v = ops.exp(w, w.maybe_cast(w.leaf("scale")))
    else:
        v = binary(ops.softplus(w, w.maybe_cast(w.leaf("scale"))), "+", w.eps())
        w.features.ops.add("+eps")
    return w.bind(w.maybe_cast(v), "var")


def deviation(w: Writer) -> Expr:
    """`y - mu` (or `mu - y`): float32 targets against the head's location."""
    mu = w.maybe_cast(w.leaf("loc"))
    return binary(Expr("y"), "-", mu) if w.chance(0.7) else binary(mu, "-", Expr("y"))


# --- families ----------------------------------------------------------------------------------


def log_prob(w: Writer) -> Expr:
    lp = log_probs(w)
    form = w.pick(("as_is", "cross_entropy", "mean"))
    if form == "cross_entropy":
        return ops.negate(ops.total(w, binary(Expr("t"), "*", lp)))
    return ops.negate(ops.average(w, lp)) if form == "mean" else lp


def entropy(w: Writer) -> Expr:
    if w.chance(0.2):  # the fused spelling: softmax times log_softmax of the same logits
        z = w.maybe_cast(w.leaf("logits"))
        term = binary(ops.softmax(w, z), "*", ops.log_softmax(w, z))
    else:
        p = w.must_bind(probs(w), "p")
        term = binary(p, "*", ops.log(w, w.maybe_cast(w.floor(p) if w.chance(0.65) else p)))
    return ops.negate(ops.total(w, w.maybe_cast(term)))


def bce(w: Writer) -> Expr:
    """`-(t * log(p) + (1 - t) * log(1 - p))` with p a sigmoid, each log floored or not."""
    p = w.must_bind(w.maybe_cast(ops.sigmoid(w, w.maybe_cast(w.leaf(w.pick(("loc", "logits")))))), "p")
    floored = w.chance(0.7)
    q = binary(literal(1), "-", p)
    pos = ops.log(w, w.floor(p) if floored else p)
    neg = ops.log(w, w.floor(q) if floored else q)
    t = Expr("t")
    term = binary(binary(t, "*", pos), "+", binary(binary(literal(1), "-", t), "*", neg))
    return ops.reduce(w, ops.negate(term), share=0.4)


def log_softmax(w: Writer) -> Expr:
    """A written-out or `logsumexp` log-softmax, as is or in a cross-entropy."""
    z = w.maybe_cast(w.leaf("logits"))
    if w.chance(0.6):
        norm = ops.log(w, w.maybe_cast(ops.total(w, w.maybe_cast(ops.exp(w, z)), keepdim=True)))
    else:
        norm = ops.logsumexp(w, z)
    ls = w.bind(binary(z, "-", norm), w.pick(("log_probs", "logp", "ls")))
    return ops.negate(ops.total(w, binary(Expr("t"), "*", ls))) if w.chance(0.5) else ls


def gaussian_nll(w: Writer) -> Expr:
    kind = w.pick(("sigma", "variance", "log_var", "two_pi"))
    if kind == "sigma":
        sigma = scale(w)
        nll = binary(ops.times(0.5, ops.square(w, ops.divide(w, deviation(w), sigma))), "+", ops.log(w, sigma))
        if w.chance(0.5):
            nll = binary(nll, "+", Expr("0.5 * math.log(2 * math.pi)", atom=False))
    elif kind == "variance":
        var = variance(w)
        inner = binary(ops.log(w, var), "+", ops.divide(w, ops.square(w, deviation(w)), var))
        nll = ops.times(0.5, inner)
    elif kind == "log_var":
        s = w.maybe_cast(w.leaf("scale"))
        inner = binary(s, "+", binary(ops.square(w, deviation(w)), "*", ops.exp(w, ops.negate(s))))
        nll = ops.times(0.5, inner)
    else:
        var = variance(w)
        first = ops.divide(w, ops.square(w, deviation(w)), ops.times(2, var))
        nll = binary(first, "+", ops.times(0.5, ops.log(w, binary(Expr("2 * math.pi", atom=False), "*", var))))
    return ops.reduce(w, w.bind(w.maybe_cast(nll), "nll", share=0.3))


def gaussian_kl(w: Writer) -> Expr:
    kind = w.pick(("vae", "sigma", "variance"))
    if kind == "vae":
        s = w.maybe_cast(w.leaf("scale"))
        mu = w.maybe_cast(w.leaf("loc"))
        inner = binary(binary(binary(literal(1), "+", s), "-", ops.square(w, mu)), "-", ops.exp(w, s))
        return ops.times(-0.5, ops.total(w, inner))
    mu = w.maybe_cast(w.leaf("loc"))
    if kind == "sigma":
        sigma = scale(w)
        spread = ops.divide(w, binary(ops.square(w, sigma), "+", ops.square(w, mu)), literal(2))
        inner = binary(binary(ops.negate(ops.log(w, sigma)), "+", spread), "-", literal(0.5))
        return ops.total(w, w.maybe_cast(inner))
    var = variance(w)
    inner = binary(binary(binary(var, "+", ops.square(w, mu)), "-", literal(1)), "-", ops.log(w, var))
    return ops.times(0.5, ops.total(w, w.maybe_cast(inner)))


def laplace_cauchy(w: Writer) -> Expr:
    b = scale(w)
    if w.chance(0.5):
        nll = binary(ops.divide(w, ops.absolute(w, deviation(w)), b), "+", ops.log(w, ops.times(2, b)))
    else:
        z2 = ops.square(w, ops.divide(w, deviation(w), b))
        nll = binary(ops.log(w, binary(Expr("math.pi", atom=False), "*", b)), "+",
                     ops.log(w, binary(literal(1), "+", z2)))
    return ops.reduce(w, w.maybe_cast(nll))


def poisson(w: Writer) -> Expr:
    """`rate - k * log(rate) + lgamma(k + 1)`, or the log-rate form `exp(mu) - k * mu`."""
    k = Expr("k")
    if w.chance(0.3):
        mu = w.maybe_cast(w.leaf("loc"))
        nll = binary(ops.exp(w, mu), "-", binary(k, "*", mu))
    else:
        rate = w.bind(positive(w, "loc"), "rate")
        log_rate = ops.log(w, w.floor(rate) if w.chance(0.4) else rate)
        nll = binary(rate, "-", binary(k, "*", log_rate))
    if w.chance(0.6):
        nll = binary(nll, "+", ops.lgamma(w, binary(k, "+", literal(1))))
    return ops.reduce(w, w.maybe_cast(nll))


def lgamma_family(w: Writer) -> Expr:
    """A Gamma NLL, a Beta or a Dirichlet log-normaliser: `lgamma` of positive parameters."""
    kind = w.pick(("gamma", "beta", "dirichlet"))
    if kind == "dirichlet":
        alpha = w.must_bind(positive(w, "logits"), "alpha")
        return binary(ops.lgamma(w, ops.total(w, alpha)), "-", ops.total(w, ops.lgamma(w, alpha)))
    a = w.bind(positive(w, "loc"), w.pick(("a", "alpha", "concentration")))
    b = w.bind(positive(w, "scale"), w.pick(("b", "beta", "rate")))
    if kind == "beta":
        norm = binary(binary(ops.lgamma(w, a), "+", ops.lgamma(w, b)), "-", ops.lgamma(w, binary(a, "+", b)))
        return ops.reduce(w, w.maybe_cast(norm))
    v = Expr("(k + 1)", atom=True)
    nll = binary(binary(ops.lgamma(w, a), "-", binary(a, "*", ops.log(w, b))), "-",
                 binary(binary(binary(a, "-", literal(1)), "*", ops.log(w, v)), "-", binary(b, "*", v)))
    return ops.reduce(w, w.maybe_cast(nll))


def student(w: Writer) -> Expr:
    """Student-t: the log form with `log(1 + z**2 / nu)`, or the density with `pow`."""
    nu = w.pick((1.0, 3.0, 5.0))
    sigma = scale(w)
    z2 = ops.square(w, ops.divide(w, deviation(w), sigma))
    base = binary(literal(1), "+", ops.divide(w, z2, literal(nu)))
    if w.chance(0.5):
        out = binary(ops.times(-(nu + 1) / 2, ops.log(w, base)), "-", ops.log(w, sigma))
    else:
        out = ops.divide(w, ops.power(w, base, -(nu + 1) / 2), sigma)
    return ops.reduce(w, w.maybe_cast(out))


def tree(w: Writer, depth: int = 2, top: bool = False) -> Expr:
    """A random composition of typed values: log-probabilities, logs and `lgamma` of scales, the location,
    combined by +, -, products with scales, divisions by scales, squares, constants. The top is an op."""
    if depth == 0 or (w.chance(0.25) and not top):
        leaf = w.pick(("log_probs", "log_scale", "lgamma", "loc", "deviation"))
        if leaf == "log_probs":
            return log_probs(w)
        if leaf == "log_scale":
            return ops.log(w, scale(w))
        if leaf == "lgamma":
            return ops.lgamma(w, positive(w, w.pick(("loc", "scale"))))
        return w.maybe_cast(w.leaf("loc")) if leaf == "loc" else deviation(w)
    # A square or a division only near the leaves: nested, they would overflow the float32 reference too.
    # At the top, an op that combines (`-mu` or `2.0 * mu` alone is no density).
    kind = w.pick(("add", "sub", "mul") + (() if top else ("const", "neg")) + (("div", "square") if depth == 1 else ()))
    a = tree(w, depth - 1)
    if kind in ("add", "sub"):
        out = binary(a, "+" if kind == "add" else "-", tree(w, depth - 1))
    elif kind == "mul":
        out = binary(scale(w), "*", a)
    elif kind == "div":
        out = ops.divide(w, a, scale(w))
    elif kind == "square":
        out = ops.square(w, a)
    elif kind == "const":
        out = ops.times(w.pick((0.5, 2.0, -1.0)), a)
    else:
        out = ops.negate(a)
    return w.bind(w.maybe_cast(out), w.pick(("term", "h", "v")), share=0.3)


def random_tree(w: Writer) -> Expr:
    return ops.reduce(w, tree(w, w.pick((1, 2, 3)), top=True))


Family = Callable[[Writer], Expr]
FAMILIES: Dict[str, Tuple[Family, int]] = {
    "log-prob": (log_prob, 12),
    "entropy": (entropy, 10),
    "bce": (bce, 8),
    "log-softmax": (log_softmax, 8),
    "gaussian-nll": (gaussian_nll, 12),
    "gaussian-kl": (gaussian_kl, 8),
    "laplace-cauchy": (laplace_cauchy, 5),
    "poisson": (poisson, 6),
    "lgamma": (lgamma_family, 7),
    "student": (student, 4),
    "random": (random_tree, 20),
}
assert math.isclose(sum(weight for _, weight in FAMILIES.values()), 100)
