"""AMP001: a probability computation runs under float16 autocast without a float32 cast."""
from __future__ import annotations

from typing import TYPE_CHECKING, Tuple

from amplint.facts.sites import DISTRIBUTION
from amplint.model import Precision
from amplint.rulebase import (
    CAST, DISABLE, ENABLED_REGION, Code, Diagnosis, Invalid, Rule, listing, reached_via, region_phrase,
    uncast_under_float16,
)

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import Site
    from amplint.facts.reach import Reach


def in_float16_region(site: "Site") -> bool:
    """A distribution site under its own enabled float16 region, reading a tensor not cast."""
    return uncast_under_float16(site, DISTRIBUTION)


def reached_from_float16(site: "Site", reach: "Reach") -> bool:
    """A distribution site, uncast, in a function entered from a float16 region (a call chain or the walk)."""
    return site.kind == DISTRIBUTION and bool(site.uncast)


def built_in(site: "Site") -> str:
    """Where a distribution returned by another function was built: its parameters are inputs too (issue 13)."""
    uncast = {id(node) for node in site.uncast}
    places = [f"`{ref.built_in[0]}` at {ref.built_in[1]}" + _others(len(ref.built_at) - 1) for ref in site.dists
              if ref.built_in is not None and any(id(node) in uncast for node in ref.all_inputs())]
    return f" (the distribution is built in {', '.join(places)})" if places else ""


def _others(count: int) -> str:
    """Callers that give the same parameter other distributions: `--fix` casts theirs too."""
    return f" and {count} other place{'s' if count > 1 else ''}" if count > 0 else ""


def message(diagnosis: Diagnosis, code: Code) -> str:
    site = diagnosis.site
    inputs = listing(site.uncast, code) + built_in(site)
    kind = "float16" if diagnosis.region.spec.precision is Precision.FLOAT16 else "possibly-float16"
    if diagnosis.origin:  # entered from a region the project walk found (usually in another file)
        return (f"`{site.label}` runs under {kind} autocast with inputs not cast to float32: {inputs}; reached from "
                + region_phrase(diagnosis))
    return (
        f"`{site.label}` runs in the {kind} {diagnosis.region.label} at line {diagnosis.region.line} with inputs not "
        f"cast to float32: {inputs}{reached_via(diagnosis)}"
    )


def fix_strategies(diagnosis: Diagnosis) -> Tuple[str, ...]:
    """Fix A when the constructor is visible; fix C too when the device is known and the statement can be wrapped."""
    site = diagnosis.site
    if not site.constructor_visible or not site.uncast:
        return ()
    region = diagnosis.region.spec
    device_known = region.device is not None or (bool(region.device_code) and not diagnosis.chain)
    if site.statement is not None and device_known:
        from amplint.fix.safety import wrap_blocker

        # A `with` around a yield/await, or around a lambda that runs later, would not mean the same.
        if wrap_blocker(site.statement, site.call) is None:
            return (CAST, DISABLE)
    return (CAST,)


RULE = Rule(
    code="AMP001",
    name="float16-probability",
    summary="A `log_prob`/`entropy`/`cdf`/`icdf`/`kl_divergence` runs in a float16 autocast region "
    "with inputs that are not cast to float32.",
    what_it_does=(
        "Finds probability computations inside an enabled `torch.autocast` region whose dtype is, or may be, "
        "float16: lexically inside `with`/decorator regions under any import spelling, and in helpers and "
        "methods of the same file called from such a region. A computation is protected when every tensor "
        "input (the distribution's constructor arguments, when visible, and the value) is cast with "
        "`.float()`, `.double()`, `.to(torch.float32)` and the like, or when it runs in a disabled region "
        "with cast inputs. The value of a distribution with a discrete support (torch's `support.is_discrete`: "
        "`Categorical`, `OneHotCategorical`, `Bernoulli`, `Geometric`, `Binomial`, `Multinomial`, `Poisson`, "
        "`NegativeBinomial`, and `Independent` of one) is an index, a 0/1 label or a count: it is not an input, "
        "needs no cast, and fix A casts only the parameters (`actions.long()` stays as written). Measured on CPU, "
        "under float16 autocast and with it off, their log_prob is the same for long, float32 and float16 "
        "values: an index is exact and the computation runs in the parameters' dtype. `ContinuousBernoulli`, "
        "`RelaxedBernoulli` and `RelaxedOneHotCategorical` have continuous values and keep theirs. One "
        "exception, also measured: `Poisson`, `Binomial`, `NegativeBinomial` and `Multinomial` take "
        "`lgamma(value + 1)` in the value's dtype (-inf from a float16 count of 8192), and `Bernoulli`'s loss "
        "takes its label's dtype once autocast is off (fix C), so their value stays an input when it is "
        "assigned in the float16 region, unless it is cast to an integer dtype. bfloat16 regions are not "
        "flagged. A class of the project derived from a distribution class (`class SquashedNormal(Normal)`, "
        "through other project classes in any file) is a distribution: its constructor's tensor arguments are "
        "the inputs, and fix A casts them. A `log_prob` whose receiver's constructor is not "
        "visible is assumed to be a distribution's, unless every class the receiver may be an instance of "
        "(a local name's constructor, every class assignment to a `self.` attribute, every argument the "
        "file's constructions pass to the `__init__` parameter stored there) is known not to be one: a "
        "`torch.nn` class, or a class of the same file with no base that may be a distribution. An object an "
        "imported module holds (`scipy.stats.beta`) was made at import time and is no float16 distribution. "
        "In project mode a receiver or input proved float32 on every path (a wrapper around a distribution "
        "built from cast tensors, an instance of a project class with no library base every attribute of which "
        "is, element 0 of a returned tuple, a `self.` attribute every assignment of which is cast) is no input. "
        "A distribution built in another function and returned (`return Normal(mu, std)` in `forward`, "
        "`return preds, dist`, `get_dist(...)`), or assigned to `self.dist` by a method of the class when "
        "every assignment builds one (`self.dist = None` aside), is followed into the caller, in the same file "
        "and, for returns in project "
        "mode, across files: its constructor's parameters are inputs of the caller's `log_prob`/`entropy`/"
        "`cdf`, so casting the value alone does not silence it, and the message names where it is built. A "
        "parameter annotated as a distribution (`dist: Distribution`) is an input too: it carries the caller's "
        "parameters."
    ),
    why_bad=(
        "Parameters that leave a `Linear` layer under autocast are float16. float16's smallest normal is "
        "6.1e-5 and its largest value 65504, so `scale ** 2` underflows for scales below ~1e-2 and "
        "`(x - loc) ** 2` overflows for deviations above ~256. Measured on torch 2.13, 65,536 rows, parameters "
        "and value out of an `nn.Linear` in the region (docs/measurements.md): `Normal` with scales in "
        "[1e-4, 1e-3] gave 15,107 `-inf` and 378 NaN under CPU float16 autocast, and none under CUDA "
        "autocast's dtype policy (it runs pow/log/exp/sum in float32); `Laplace` with a `1e-3 * sigmoid` "
        "scale gave 9,570 `-inf` under both. Casting the inputs to float32 gave 0. Each finding's `risk` "
        "gives the figure measured for its own region's device and head (`amplint/data/hazards.json`)."
    ),
    example="""
import torch
import torch.distributions as D

def loss(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x).mean()
""",
    fix=(
        "`amplint check --fix` casts the inputs (fix A): `D.Normal(mu.float(), sigma.float())"
        ".log_prob(x.float())`. With `--strategy disable-autocast` it also wraps the statement in "
        '`torch.autocast("cuda", enabled=False)` (fix C). Disabling autocast alone is not enough: see AMP002. '
        "When the distribution is built in another function of the file, fix A casts its parameters there, in "
        "the callee (`return Normal(self.mu(x).float(), ...)`), and the value at the call. That changes the "
        "function for every caller, which is safe: a float32 distribution gives the same values with no "
        "underflow, whoever calls it. When it is built in another file (returned by a callee there, or handed to "
        "this function by callers there), the finding names the file and line, and project-mode `--fix` casts the "
        "parameters in that file, at every caller's constructor, when that file is among those being fixed; "
        "otherwise it leaves the finding, with where to cast. A class picked at run time in a wrapper's slot, "
        "`Independent(get_dist_class(name)(**params), 1)`, is cast argument by argument, a starred one element by "
        "element: `**{k: v.float() if torch.is_tensor(v) else v for k, v in params.items()}`."
    ),
    valid=(
        # Float32 by construction: factories make float32 tensors even inside a region, so this classic
        # example computes in float32 throughout (measured on CPU float16 autocast: no -inf). Its twin with
        # parameters from a Linear inside the region is the last INVALID case.
        """
import torch
from torch.distributions import Normal
dist = Normal(torch.zeros(4), torch.full((4,), 1e-4))
with torch.autocast("cuda"):
    lp = dist.log_prob(torch.randn(4) * 1e-2)
""",
        # Cast inputs.
        """
import torch
from torch.distributions import Normal
with torch.autocast("cuda"):
    lp = Normal(mu.float(), sigma.float()).log_prob(x.float())
""",
        # bfloat16 region.
        """
import torch
from torch.distributions import Normal
with torch.autocast("cuda", dtype=torch.bfloat16):
    lp = Normal(mu, sigma).log_prob(x)
""",
        # Outside any region.
        """
from torch.distributions import Normal
lp = Normal(mu, sigma).log_prob(x)
""",
        # A method named autocast on something that is not torch.
        """
from torch.distributions import Normal
with scaler.autocast():
    lp = Normal(mu, sigma).log_prob(x)
""",
        # Receivers known not to be distributions: an nn module in every branch, a plain class of the file.
        """
import torch
from torch import nn
class PredictionLayer(nn.Module):
    def __init__(self, adaptive):
        super().__init__()
        if adaptive:
            self.proj = nn.AdaptiveLogSoftmaxWithLoss(512, 30000, cutoffs=[1000])
        else:
            self.proj = nn.Linear(512, 30000)
    def forward(self, x):
        with torch.autocast("cuda"):
            return self.proj.log_prob(x)
class TraceEvaluator:
    def log_prob(self, trace):
        return trace.log_prob_sum()
def potential(trace):
    evaluator = TraceEvaluator()
    with torch.autocast("cuda"):
        return -evaluator.log_prob(trace)
""",
        # An object an imported module holds (`scipy.stats.beta`) was made at import time, outside any region,
        # and is no torch distribution: its `cdf` computes in NumPy.
        """
import scipy.stats
import torch
with torch.autocast("cuda"):
    warped = scipy.stats.beta.cdf(lam, a=2.0, b=2.0)
""",
        # Parameters annotated as Python numbers are no float16 tensors: `alpha + eps` is a number.
        """
import torch
def concentration(logits, alpha: float = 1.0, eps: float = 1e-12):
    return torch.distributions.Beta(alpha + eps, alpha + eps).log_prob(logits.float().sigmoid())
with torch.autocast("cuda"):
    lp = concentration(head(x))
""",
        # Discrete values need no cast: an index, a 0/1 label, an integer count (the parameters are cast).
        """
import torch
from torch.distributions import Bernoulli, Categorical, Independent, Poisson
with torch.autocast("cuda"):
    lp = Categorical(logits=logits.float()).log_prob(actions.long())
    lb = Independent(Bernoulli(logits=l.float()), 1).log_prob(labels)
    lc = Poisson(rate.float()).log_prob(counts)
""",
        # A `self.` attribute every assignment of which builds the distribution from cast tensors.
        """
import torch
from torch.distributions import Normal
class Head(torch.nn.Module):
    def forward(self, x, y):
        with torch.autocast("cuda"):
            out = self.lin(x).float()
            self.dist = Normal(out, out.exp())
            return self.dist.log_prob(y.float())
""",
        # Disabled region with cast inputs (fix C).
        """
import torch
from torch.distributions import Normal
with torch.autocast("cuda"):
    with torch.autocast("cuda", enabled=False):
        lp = Normal(mu.float(), sigma.float()).log_prob(x.float())
""",
    ),
    invalid=(
        # The twin of the first VALID case: the parameters come out of a Linear inside the region.
        Invalid(
            """
import torch
from torch.distributions import Normal
head = torch.nn.Linear(4, 8)
with torch.autocast("cuda"):
    loc, log_scale = head(torch.randn(4)).chunk(2, dim=-1)
    lp = Normal(loc, log_scale.exp()).log_prob(torch.randn(4) * 1e-2)
""",
            6,
            10,
        ),
        Invalid(
            """
import torch
from torch.distributions import Normal
dist = Normal(mu, sigma)
with torch.cuda.amp.autocast():
    lp = dist.log_prob(x)
""",
            5,
            10,
        ),
        # The distribution a method assigns to `self.dist` (here or in another method): its parameters are inputs.
        Invalid(
            """
import torch
from torch.distributions import Normal
class Head(torch.nn.Module):
    def forward(self, x, y):
        with torch.autocast("cuda"):
            out = self.lin(x)
            self.dist = Normal(out, out.exp())
            return self.dist.log_prob(y.float())
""",
            8,
            20,
        ),
        Invalid(
            """
import torch as t
import torch.distributions as D
@t.autocast("cuda")
def nll(mu, sigma, x):
    return -D.Normal(mu, sigma).log_prob(x)
""",
            5,
            13,
        ),
        Invalid(
            """
import torch
import torch.distributions as D
def helper(mu, sigma, x):
    return D.Laplace(mu, sigma).log_prob(x)
with torch.autocast("cuda"):
    loss = helper(a, b, c)
""",
            4,
            12,
        ),
        Invalid(
            """
import torch
from torch.distributions import Normal
class Scorer:
    def __init__(self, loc, scale):
        self.dist = Normal(loc, scale)
    def score(self, x):
        with torch.autocast("cuda"):
            return self.dist.log_prob(x)
""",
            8,
            20,
        ),
        # Uncast parameters of a discrete distribution: the finding lists them, not the index.
        Invalid(
            """
import torch
from torch.distributions import Categorical
with torch.autocast("cuda"):
    lp = Categorical(logits=logits).log_prob(actions.long())
""",
            4,
            10,
        ),
        # Built in `forward` from a Linear and returned: casting the value alone leaves the parameters float16
        # (under CPU float16 autocast, scales of 1e-4: 512 of 512 values -inf; tests/test_reach.py).
        Invalid(
            """
import torch
from torch.distributions import Normal

class Policy(torch.nn.Module):
    def forward(self, x):
        return Normal(self.mu(x), self.log_std(x).exp())

def act(x, actions):
    policy = Policy()
    with torch.autocast("cuda"):
        return policy(x).log_prob(actions.float())
""",
            11,
            16,
        ),
        # A count made in the float16 region: Poisson's `lgamma(value + 1)` would run in float16.
        Invalid(
            """
import torch
from torch.distributions import Poisson
with torch.autocast("cuda"):
    counts = head(h).exp().round()
    lp = Poisson(rate.float()).log_prob(counts)
""",
            5,
            10,
        ),
        # The class picked at run time in a wrapper's slot is a distribution too; `params` (a dict of float16
        # Linear outputs) holds its parameters, and fix A casts them element by element.
        Invalid(
            """
import torch
from torch.distributions import Independent, Laplace, Normal
DISTS = {"normal": Normal, "laplace": Laplace}
with torch.autocast("cuda"):
    params = head(h)
    lp = Independent(DISTS[family](**params), 1).log_prob(x)
""",
            6,
            10,
        ),
    ),
    at_site=in_float16_region,
    when_reached=reached_from_float16,
    message=message,
    fix_strategies=fix_strategies,
    wraps_statement=True,
    verify_recipe=ENABLED_REGION,
)
