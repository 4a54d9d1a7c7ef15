"""AMP003: hand-written log-density math runs under float16 autocast without a float32 cast."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Tuple

from amplint.facts.densitycalls import DENSITY
from amplint.facts.siteshape import INLINE, KERNEL, LGAMMA, LOG_PARAMETER, LOG_SCALE
from amplint.model import Precision
from amplint.rulebase import (
    CAST, Code, Diagnosis, Invalid, Project, Rule, listing, reached_via, region_phrase, spared_on,
    uncast_under_float16,
)

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import Site
    from amplint.facts.reach import Reach

SHAPES = {
    "log-of-prob": "a log of probabilities",
    "log-sum-exp": "a log-softmax written out (log of a sum of exps)",
    "gaussian": "a Gaussian log-density written out",
    "laplace": "a Laplace log-density written out",
    LGAMMA: "a log-gamma normaliser (`lgamma`) written out",
    LOG_PARAMETER: "a log-density in log-parameter form (a tensor beside its `exp` or its log) written out",
    LOG_SCALE: "a log of a scale made from an activation (its `exp` or `softplus`)",
    KERNEL: "a density written out with no log (a Gaussian's, Student-t's or Cauchy's kernel)",
}
# Shapes whose inputs are tensors by construction (what a softmax, a normalisation or a log reads), so
# `.float()` on each is safe. A written-out Gaussian may mix in Python numbers: it is left to the user.
CASTABLE = frozenset({"log-of-prob", LOG_SCALE})
UNFIXABLE = (
    "not fixable: the terms of hand-written math may be Python numbers, which have no `.float()`; cast the "
    "tensors it reads to float32 by hand"
)
UNFIXABLE_CALL = (
    "not fixable: the arguments of the project's own density may not all be tensors; cast its tensor "
    "arguments (or the constructor's) to float32 by hand, or compute in float32 inside the density"
)
UNFIXABLE_STATEMENT = (
    "not fixable: float16 loses range outside the probability math, in the statement's other terms; cast the "
    "tensors listed to float32 where they are made (the codemod cannot tell that each is a tensor)"
)
KINDS = (INLINE, DENSITY)


def in_float16_region(site: "Site") -> bool:
    """Hand-written math or a project density's call under its own enabled float16 region, reading a tensor not cast.

    Math that reads nothing but the function's own parameters (`lgamma(k + 1)`, `(y - mu.float()) ** 2`
    with `y` a parameter) computes in their dtype, which is the caller's: the region here makes none of them
    float16, and as often as not they are float32 data (`Site.data`). Entered from a float16 region instead
    (`reached_from_float16`), they are that region's values."""
    if site.kind == INLINE and site.uncast and not site.float16_inputs():
        return False
    return any(uncast_under_float16(site, kind) for kind in KINDS)


def reached_from_float16(site: "Site", reach: "Reach") -> bool:
    """The same, uncast, in a function entered from a float16 region (a call chain or the walk)."""
    return site.kind in KINDS and bool(site.uncast)


def _shape(site: "Site") -> str:
    if site.kind == DENSITY:
        return f"the project's density `{site.method}(...)`"
    return SHAPES.get(site.method, "hand-written probability math")


def _float16_inputs(site: "Site") -> List[object]:
    """The inputs the message lists: in the site's own region, not the function's parameters it never rebinds
    (`Site.data`: the caller's targets and counts, float32 there by the same rule that lets a site reading only
    them go unreported), unless nothing else is left."""
    if site.state is None:
        return list(site.uncast)
    return site.float16_inputs() or list(site.uncast)


def message(diagnosis: Diagnosis, code: Code) -> str:
    site = diagnosis.site
    shape = _shape(site)
    inputs = listing(_float16_inputs(site), code)
    kind = "float16" if diagnosis.region.spec.precision is Precision.FLOAT16 else "possibly-float16"
    if diagnosis.origin:
        return f"{shape} runs under {kind} autocast on tensors not cast to float32: {inputs}; reached from " + (
            region_phrase(diagnosis))
    where = f"the {kind} {diagnosis.region.label} at line {diagnosis.region.line}"
    if site.through_statement:
        return (f"{shape} reads float32 inputs, but the statement holding it runs in {where} and loses range on "
                f"tensors not cast to float32: {inputs}{reached_via(diagnosis)}{spared_on(diagnosis)}")
    return (f"{shape} runs in {where} on tensors not cast to float32: {inputs}{reached_via(diagnosis)}"
            f"{spared_on(diagnosis)}")


def fix_strategies(diagnosis: Diagnosis) -> Tuple[str, ...]:
    """Fix A casts what a log of probabilities reads; the other shapes are left to the user (`UNFIXABLE`)."""
    site = diagnosis.site
    castable = site.kind == INLINE and site.method in CASTABLE and not site.through_statement
    return (CAST,) if castable and site.uncast else ()


def why_unfixable(diagnosis: Diagnosis) -> str:
    if diagnosis.site.through_statement:
        return UNFIXABLE_STATEMENT
    return UNFIXABLE_CALL if diagnosis.site.kind == DENSITY else UNFIXABLE


RULE = Rule(
    code="AMP003",
    name="float16-handwritten-density",
    summary="Hand-written log-density math (a log of probabilities, a written-out log-softmax or Gaussian "
    "log-likelihood/KL, a log-gamma normaliser, a density in log-parameter form, a density kernel with no log) runs "
    "in a float16 autocast "
    "region on tensors that are not cast to float32.",
    what_it_does=(
        "Finds probability math written by hand, in the region or in a function reached from it (same file "
        "or, in project mode, another one): `torch.log(p)`/`p.log()` where `p` is a softmax or sigmoid "
        "output, a normalisation `x / x.sum(...)`, a mean or clamp of one, or a parameter named like a "
        "probability (`probs`, `likelihoods`); an entropy term `p * log(p)`; a log of a sum of exps "
        "(`logits - torch.log(torch.exp(logits).sum(1))`); a sum holding a squared tensor beside a log "
        "term (`log(2*pi)`, `torch.log(sigma)`), which is how Gaussian negative log-likelihoods and KL "
        "divergences are written out; a sum holding a tensor's magnitude beside a log term (`torch.abs(y - mu) / b + "
        "torch.log(2 * b)`), a Laplace negative log-likelihood; half a square over a squared scale beside another "
        "tensor term with no log written (`torch.sum(z * z, -1) / (2 * sigma * sigma) - log_det`, a flow's NLL); a "
        "log of a difference of two probabilities (`torch.log(torch.sigmoid(a) - torch.sigmoid(b))`, a CDF "
        "difference); a log-gamma normaliser (`torch.lgamma(alpha)`: Gamma, Beta, Dirichlet, Poisson); and a "
        "density in log-parameter form, a sum where a tensor is one term and, in another, the exponent of an "
        "`exp` or the argument of a log (`s + (y - mu) ** 2 * torch.exp(-s)`, `1 + logvar - mu ** 2 - logvar.exp()`, "
        "`eta.exp() - k * eta`, `rate - k * torch.log(rate)`, also with the same call "
        "written in both terms and a floor under the log: `F.softplus(eta) - k * torch.log(F.softplus(eta) + eps)`"
        "); and a log of a scale made from an activation (`torch.log(std)` of `std = F.softplus(s)` or "
        "`torch.exp(0.5 * s)`: a log-normaliser, a Gaussian's entropy) that is no term of such a sum; and a density "
        "written out with no log: a Student-t's kernel (`(1 + z ** 2 / nu) ** (-(nu + 1) / 2)`), a Cauchy's (`1 / "
        "(math.pi * s * (1 + z ** 2))`), a Gaussian's `exp` of a negated square beside a normaliser (`/ sigma`, "
        "a square root, pi; an `exp(-d ** 2)` alone is as often a similarity, and `k / k.sum()` a blur). In its own "
        "region, math that reads only the function's parameters (`lgamma(k + 1)` of counts, `y` beside a cast "
        "`mu`) is not flagged: the region makes none of them float16. Local names are followed to what was "
        "assigned to them. Inputs cast to float32, bfloat16 regions and disabled regions are not flagged. Fused "
        "primitives (`F.log_softmax`, `F.cross_entropy`, `torch.logsumexp`) are not sites. It also reports calls of "
        "the project's own densities (`posterior.kl()`, `self._likelihood(x)`, `normal_kl(...)`): a function or "
        "method whose name says density (`kl`, `nll`, `log_prob`, `log_p`, `likelihood`, `log_likelihood`, "
        "`logpdf`, `log_density`, `log_posterior`, `log_prior`, `cdf`, `entropy`) and whose body uses an op "
        "float16 can push out of range (`log`, `sigmoid`, `erf`/`erfc`, `lgamma`, `pow`, `**`), or that is "
        "imported from the project or inherited from another file. Its inputs are the call's tensor "
        "arguments, plus the constructor's when the receiver was built in the same function "
        "(`posterior = DiagonalGaussian(z)`). In project mode, when the body holds sites of its own, those "
        "report instead of the call, so one hazard gives one finding, at the math. A finding is about inputs: "
        "float16 ones with no cast are reported on every device. Its risk is about the device: each op on the "
        "way to the value runs in the dtype the region's policy gives it (CUDA autocast runs `softmax`, `exp`, "
        "`log`, `pow`, `sum`, `logsumexp`, `softplus` in float32; CPU autocast none of them), and where no op "
        "that loses range in float16 (`exp`, `pow`, `log`, `sigmoid`, `lgamma`, a product or quotient of "
        "tensors, ...) runs in float16 there, the risk is `low` and the message says so (`--min-risk high` "
        "leaves such findings out): `torch.log(F.softmax(x, 1))` holds under CUDA autocast and fails under "
        "CPU autocast, with autocast off, or once the code moves. Where some op does run in float16, the value "
        "of the site's statement is computed on probe activations up to ±20 (every value the analysis cannot "
        "compute, such as a head's output; float16 emulated in pure Python, amplint/facts/probes.py): no value "
        "non-finite and none off by more than 1e-2 from float64 gives risk `low` (`0.5 * s` under `exp` stays "
        "below 22026), a loss gives `high` with the count, and an op it cannot read leaves it `unknown`. A "
        "parameter the region does not make (`y` in `y - mu`, the caller's data) counts as float32 there; in a "
        "function a region elsewhere enters, every parameter is taken as that region's activation, on the device of "
        "the region that reaches it. A cast "
        "written after float16 already lost range (`torch.sigmoid(z).float()`, and `torch.exp(s).float()` under "
        "CPU autocast) comes too late: the inputs are then the tensors that op read, and fix A casts them there. "
        "Math whose own inputs are cast is judged with the statement it is in, since that is what the loss gets: "
        "`torch.lgamma(a.float()) / s.exp()` overflows at the `exp`, so the finding names `s`, and it is not fixed "
        "(the cast belongs where `s` is made; the codemod cannot tell that every such input is a tensor)."
    ),
    why_bad=(
        "The math runs in float16 when its inputs are float16. float16's smallest subnormal is 6.0e-8: a "
        "probability below it is 0 and its log `-inf`; `exp` overflows above 11.1 (65504), so a written-out "
        "log-softmax gives `inf - inf = NaN`; a squared deviation above 256 overflows, and a squared scale "
        "below ~2.4e-4 underflows. The device matters: CPU float16 autocast promotes none of these ops; CUDA "
        "autocast runs `softmax`, `exp`, `log`, `pow` and `sum` in float32 but `sigmoid`, additions, divisions "
        "and clamps in their inputs' dtype. Measured on torch 2.13, 1,024 x 16 logits in [-30, 30] out of a "
        "Linear in the region (tests/test_handwritten_numeric.py, docs/measurements.md): "
        "`torch.log(F.softmax(logits, 1))` gives 10,661 `-inf` of 16,384 under CPU float16 autocast and 0 on "
        "CUDA (an H200, torch 2.11), where softmax runs in float32; `torch.log(torch.sigmoid(logits) + 1e-10)` "
        "gives 3,437 `-inf` on both. After the fix: 0."
    ),
    example="""
import torch
import torch.nn.functional as F

def entropy(head, x):
    with torch.autocast("cpu", dtype=torch.float16):
        probs = F.softmax(head(x), dim=1)
        return -(probs * torch.log(probs)).sum(1)
""",
    fix=(
        "`amplint check --fix` casts where the probabilities are made (fix A): `F.softmax(head(x).float(), "
        "dim=1)`, also when the log reads a local name bound to that softmax or sigmoid (a cast of `probs` "
        "in the log would come after float16 rounded some to 0, and `0 * log(0)` is NaN); else what the log "
        "reads, `torch.log(probs.float())`. Better still, use the fused, stable primitive "
        "(`F.log_softmax`, `torch.logsumexp`, `torch.special.entr`). A written-out log-softmax or Gaussian is "
        "not rewritten: cast the tensors it reads to float32 by hand, or use `torch.distributions`."
    ),
    valid=(
        # The Laplace NLL of the INVALID cases with the head's output cast: float32 throughout.
        """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    mu, raw = head(x).float().chunk(2, dim=-1)
    b = 1e-3 * torch.sigmoid(raw)
    nll = (torch.abs(y.float() - mu) / b + torch.log(2 * b)).sum(-1)
""",
        # Its own inputs cast, and the rest of the statement loses nothing in float16: an addition, a cast `exp`.
        """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    mu, s = head(x).chunk(2, dim=-1)
    term = torch.lgamma(mu.float().exp()) / s.float().exp() + s
""",
        # A ratio of squares with no half and no other term: a diffusion schedule's, not a quadratic form.
        """
import torch
with torch.autocast("cuda"):
    sigma_from, sigma_to = head(x).chunk(2, dim=-1)
    sigma_up = (sigma_to ** 2 * (sigma_from ** 2 - sigma_to ** 2) / sigma_from ** 2) ** 0.5
    sigma_down = (sigma_to ** 2 - sigma_up ** 2) ** 0.5
""",
        # The fused primitive.
        """
import torch
import torch.nn.functional as F
with torch.autocast("cuda"):
    logp = F.log_softmax(head(x), dim=1)
""",
        # Cast before the softmax.
        """
import torch
import torch.nn.functional as F
with torch.autocast("cuda"):
    probs = F.softmax(head(x).float(), dim=1)
    ent = -(probs * torch.log(probs)).sum(1)
""",
        # A cast before the sigmoid: the probabilities are made in float32.
        """
import torch
def bernoulli_nll(head, x):
    with torch.autocast("cuda", dtype=torch.float16):
        p = torch.sigmoid(head(x).float())
        return -torch.log(p)
""",
        # bfloat16 region.
        """
import torch
import torch.nn.functional as F
with torch.autocast("cuda", dtype=torch.bfloat16):
    logp = torch.log(F.softmax(head(x), dim=1))
""",
        # A log of something that is not a probability.
        """
import torch
with torch.autocast("cuda"):
    target = torch.log(boxes / stride)
""",
        # A helper named like a density, built from fused primitives: nothing in it leaves float16's range.
        """
import torch
import torch.nn.functional as F
def entropy_loss(logits):
    return -(F.softmax(logits, 1) * F.log_softmax(logits, 1)).sum(1)
with torch.autocast("cuda"):
    h = entropy_loss(head(x))
""",
        # Pure Python math.
        """
import math
import torch
with torch.autocast("cuda"):
    bits = math.log(n) / math.log(2)
""",
        # A log-gamma of the counts the caller gives, beside a cast rate: the region makes neither float16.
        """
import torch
def poisson_nll(head, x, k):
    with torch.autocast("cpu", dtype=torch.float16):
        eta = head(x).float()
        return eta.exp() - k * eta + torch.lgamma(k + 1)
""",
        # A Gaussian whose head output is cast: the target `y` is the caller's, and the region does not touch it.
        """
import math
import torch
def nll(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, log_std = head(x).float().chunk(2, dim=-1)
        return 0.5 * ((y - mu) / log_std.exp()) ** 2 + log_std + 0.5 * math.log(2 * math.pi)
""",
        # A Gaussian kernel with no normaliser is as often a similarity (an RBF kernel); one normalised by its
        # own sum weighs a grid (a blur): neither is a density.
        """
import torch
def similarity(head, x, c, bandwidth):
    with torch.autocast("cpu", dtype=torch.float16):
        d = head(x) - c
        return torch.exp(-(d ** 2).sum(-1) / (2 * bandwidth ** 2))
""",
        """
import torch
def blur(head, x, sigma):
    with torch.autocast("cpu", dtype=torch.float16):
        grid = head(x)
        pdf = torch.exp(-0.5 * (grid / sigma).pow(2))
        return pdf / pdf.sum()
""",
        # A Student-t kernel on a cast head: float32 throughout.
        """
import torch
import torch.nn.functional as F
def student_pdf(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        loc, s = head(x).float().chunk(2, dim=-1)
        scale = F.softplus(s)
        return (1 + ((y - loc) / scale) ** 2 / 3.0) ** -2.0 / scale
""",
        # A Gaussian's entropy whose scale is made from a cast activation: float32 throughout.
        """
import math
import torch
import torch.nn.functional as F
def entropy(head, x):
    with torch.autocast("cpu", dtype=torch.float16):
        std = F.softplus(head(x).float())
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(std)
""",
    ),
    invalid=(
        # A Gamma log-normaliser: `lgamma` of a float16 concentration (65504 at most, 3 digits).
        Invalid(
            """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    alpha = torch.exp(0.5 * head(x))
    log_norm = torch.lgamma(alpha).sum(-1)
""", 4, 16),
        # A Laplace NLL: `|y - mu| / b` beside `log(2 * b)`; a `1e-3 * sigmoid` scale rounds to 0 in float16
        # once `raw` < -10.4: `log(0)` is -inf.
        Invalid(
            """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    mu, raw = head(x).chunk(2, dim=-1)
    b = 1e-3 * torch.sigmoid(raw)
    nll = (torch.abs(y.float() - mu) / b + torch.log(2 * b)).sum(-1)
""", 5, 12),
        # A VAE's KL in log-variance form: no log to see, and `logvar.exp()` is inf above 11.1.
        Invalid(
            """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    mu, logvar = head(x).chunk(2, dim=-1)
    kl = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp(), dim=-1)
""", 4, 27),
        # A cast after the sigmoid comes too late: float16 already rounded its small values to 0, and the
        # log of 0 is -inf on every device. Reported at the log, with `head(x)` as its input.
        Invalid(
            """
import torch
def bernoulli_nll(head, x):
    with torch.autocast("cuda", dtype=torch.float16):
        p = torch.sigmoid(head(x)).float()
        return -torch.log(p)
""", 5, 17),
        # A Gaussian's entropy: the log of a `softplus` scale, which float16 rounds to 0 below -17.
        Invalid(
            """
import math
import torch
import torch.nn.functional as F
def entropy(head, x):
    with torch.autocast("cpu", dtype=torch.float16):
        std = F.softplus(head(x))
        return 0.5 + 0.5 * math.log(2 * math.pi) + torch.log(std)
""", 7, 52),
        # A rate Poisson NLL: the same `softplus` call as a term and under a floored log.
        Invalid(
            """
import torch
import torch.nn.functional as F
with torch.autocast("cpu", dtype=torch.float16):
    eta = head(x)
    nll = F.softplus(eta) - k * torch.log(F.softplus(eta) + 1e-10)
""", 5, 11),
        # A log-rate Poisson NLL: `exp(eta)` beside `k * eta`.
        Invalid(
            """
import torch
with torch.autocast("cpu", dtype=torch.float16):
    eta = head(x)
    nll = (eta.exp() - k * eta).sum(-1)
""", 4, 12),
        # A density helper: a Gaussian CDF with `erf`, whose result underflows to 0 in float16.
        Invalid(
            """
import torch
def normal_cdf(x):
    return 0.5 * (1.0 + torch.erf(x / 1.4142135623730951))
with torch.autocast("cuda"):
    p = normal_cdf(head(x))
""", 5, 9),
        Invalid(
            """
import torch
import torch.nn.functional as F
with torch.autocast("cpu", dtype=torch.float16):
    logp = torch.log(F.softmax(head(x), dim=1))
""", 4, 12),
        Invalid(
            """
import torch
def contrastive(logits):
    exp_logits = torch.exp(logits)
    return logits - torch.log(exp_logits.sum(1, keepdim=True))
with torch.autocast("cuda"):
    loss = contrastive(head(x))
""", 4, 21),
        Invalid(
            """
import math
import torch
with torch.autocast("cpu", dtype=torch.float16):
    mu = head(x)
    nll = 0.5 * ((y - mu) ** 2 + math.log(2 * math.pi))
""", 5, 18),
        # Densities written out with no log: a mixture density network's Gaussian, a Student-t's and a Cauchy's
        # kernel. The squared deviation overflows float16 above 256, so the density is 0 and its log -inf.
        Invalid(
            """
import math
import torch
ONE_OVER_SQRT_2PI = 1.0 / math.sqrt(2 * math.pi)
def mdn(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, s = head(x).chunk(2, dim=-1)
        sigma = s.exp()
        return ONE_OVER_SQRT_2PI * torch.exp(-0.5 * ((y - mu) / sigma) ** 2) / sigma
""", 8, 16),
        Invalid(
            """
import torch
import torch.nn.functional as F
def student_pdf(head, x, y, nu):
    with torch.autocast("cpu", dtype=torch.float16):
        loc, s = head(x).chunk(2, dim=-1)
        scale = F.softplus(s)
        return torch.pow(1 + ((y - loc) / scale) ** 2 / nu, -(nu + 1) / 2) / scale
""", 7, 16),
        Invalid(
            """
import math
import torch
def cauchy_pdf(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        loc, scale = head(x).chunk(2, dim=-1)
        return 1.0 / (math.pi * scale * (1 + ((y - loc) / scale) ** 2))
""", 6, 16),
        # Its own inputs cast, but the statement divides by `exp` of a float16 head: under CPU autocast it
        # overflows, and the quotient is 0 or NaN. Reported at the math, not fixable (the cast belongs to `s`).
        Invalid(
            """
import torch
def gamma_term(head, x):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, s = head(x).chunk(2, dim=-1)
        return torch.lgamma(mu.float().exp()) / s.exp()
""", 5, 16),
        # A flow's NLL: half a squared norm over a squared scale, minus a log-determinant, with no log written.
        Invalid(
            """
import torch
def flow_nll(flow, x):
    with torch.autocast("cpu", dtype=torch.float16):
        z, sigma, log_det = flow(x)
        return torch.sum(z * z, dim=-1) / (2 * sigma * sigma) - log_det
""", 5, 16),
        # The same form with the half and the square written otherwise, and nothing else in the file to see.
        Invalid(
            """
import torch
def flow_nll(flow, x):
    with torch.autocast("cpu", dtype=torch.float16):
        z, s, log_det = flow(x)
        return 0.5 * z * z / (s * s) - log_det
""", 5, 16),
        # A discretized logistic's likelihood: the log of a difference of two CDFs (the bin's mass).
        Invalid(
            """
import torch
def bin_nll(head, x):
    with torch.autocast("cpu", dtype=torch.float16):
        a, b = head(x).chunk(2, dim=-1)
        return -torch.log(torch.clamp(torch.sigmoid(a) - torch.sigmoid(b), min=1e-5))
""", 5, 17),
    ),
    projects=(
        # Helpers named like densities, imported: the body decides, not the name. A KL-annealing schedule on
        # step counts, a weighted sum of terms already computed, a fused `log_softmax`: VALID.
        Project((("train.py", """\
import torch
from losses import kl_balance, kl_fused, kl_weight
def step(model, x, target, it):
    with torch.autocast("cuda"):
        mu, log_std, logits = model(x)
        return kl_weight(it) * kl_balance([mu.sum(), log_std.sum()], [0.5, 0.5]) + kl_fused(logits, target)
"""), ("losses.py", """\
import torch
def kl_weight(step, warmup=1000):
    return max(0.0, min(1.0, step / warmup))
def kl_balance(terms, weights):
    return sum(t * w for t, w in zip(terms, weights))
def kl_fused(logits, target):
    return torch.nn.functional.kl_div(torch.log_softmax(logits, -1), target, reduction="batchmean")
"""))),
        # An imported helper whose body is a Gaussian written out: INVALID, where the math is.
        Project((("train.py", """\
import torch
from losses import gaussian_nll
def step(model, x, y):
    with torch.autocast("cuda"):
        mu, log_std = model(x)
        return gaussian_nll(mu, log_std, y).mean()
"""), ("losses.py", """\
import math
def gaussian_nll(mu, log_std, y):
    z = (y - mu) / log_std.exp()
    return 0.5 * z.pow(2) + log_std + 0.5 * math.log(2 * math.pi)
""")), (("losses.py", 4, 12),)),
        # A Gaussian's squared quotient beside its log-scale, in an imported helper with no log written: INVALID,
        # at the math.
        Project((("train.py", """\
import torch
from losses import nll
def step(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, s, log_s = head(x)
        return nll(mu, s, log_s, y)
"""), ("losses.py", """\
def nll(mu, s, log_s, y):
    return 0.5 * ((y - mu) / s) ** 2 + log_s
""")), (("losses.py", 2, 12),)),
        # A CDF difference whose `erfc` is in a helper of the helper: INVALID, at the call.
        Project((("train.py", """\
import torch
from likelihoods import gaussian_likelihood
def step(head, x, y):
    with torch.autocast("cuda"):
        mu, scale = head(x).chunk(2, dim=-1)
        return -torch.log(gaussian_likelihood(y, mu, scale.exp())).mean()
"""), ("likelihoods.py", """\
import torch
def _cumulative(z):
    return 0.5 * torch.erfc(-(2 ** -0.5) * z)
def gaussian_likelihood(values, means, scales):
    centred = torch.abs(values - means)
    return _cumulative((0.5 - centred) / scales) - _cumulative((-0.5 - centred) / scales)
""")), (("train.py", 6, 27),)),
        # A log of what an imported helper returns: probabilities when its body computes them (a sigmoid),
        # whatever its name; `torch.log(p.float())` is too late, so the fix casts what the helper is given.
        Project((("train.py", """\
import torch
from heads import to_probs
def step(model, x):
    with torch.autocast("cpu", dtype=torch.float16):
        p = to_probs(model(x))
        return -torch.log(p).mean()
"""), ("heads.py", """\
import torch
def to_probs(out):
    return torch.sigmoid(out)
""")), (("train.py", 6, 17),)),
        # The same spelling, but the helper only rescales: no probabilities, so no log of them (VALID).
        Project((("train.py", """\
import torch
from heads import to_probs
def step(model, x):
    with torch.autocast("cpu", dtype=torch.float16):
        p = to_probs(model(x))
        return -torch.log(p).mean()
"""), ("heads.py", """\
def to_probs(out):
    return out * 2
"""))),
    ),
    at_site=in_float16_region,
    when_reached=reached_from_float16,
    message=message,
    fix_strategies=fix_strategies,
    why_unfixable=why_unfixable,
)
