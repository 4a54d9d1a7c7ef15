"""AMP001: a probability computation runs under float16 autocast without a float32 cast."""
from amplint.rulebase import Invalid, Rule

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
        "with cast inputs. bfloat16 regions are not flagged. A `log_prob` whose receiver's constructor is not "
        "visible is assumed to be a distribution's, unless every class the receiver may be an instance of "
        "(a local name's constructor, every class assignment to a `self.` attribute, every argument the "
        "file's constructions pass to the `__init__` parameter stored there) is known not to be one: a "
        "`torch.nn` class, or a class of the same file with no base that may be a distribution."
    ),
    why_bad=(
        "Parameters that leave a `Linear` layer under autocast are float16. float16's smallest normal is "
        "6.1e-5 and its largest value 65504, so `scale ** 2` underflows for scales below ~1e-2 and "
        "`(x - loc) ** 2` overflows for deviations above ~256. Measured on torch 2.13, 65,536 rows, parameters "
        "and value out of an `nn.Linear` in the region (docs/measurements.md): `Normal` with scales in "
        "[1e-4, 1e-3] gave 15,107 `-inf` and 378 NaN under CPU float16 autocast, and none under CUDA "
        "autocast's dtype policy (it runs pow/log/exp/sum in float32); `Laplace` with a `1e-3 * sigmoid` "
        "scale gave 9,570 `-inf` under both. Casting the inputs to float32 gave 0."
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
        '`torch.autocast("cuda", enabled=False)` (fix C). Disabling autocast alone is not enough: see AMP002.'
    ),
    valid=(
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
    ),
)
