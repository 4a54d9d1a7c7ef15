"""Shapes of hand-written probability math (`amplint.probmath`), on code as real projects write it.

Each INVALID snippet is the shape of a float16 hazard seen in public training
code; each near miss is a log or a square that is not probability math.
"""
from __future__ import annotations

import textwrap
from typing import List, Optional, Tuple

import libcst as cst
import pytest

from amplint.facts import probmath
from amplint.names import collect_imports

HEADER = "import math\nimport torch\nimport torch.nn.functional as F\n"


def _shapes(source: str) -> List[Tuple[str, str, Optional[float]]]:
    """(kind, code of the reported node, epsilon) for every shape in every function of `source`."""
    module = cst.parse_module(HEADER + textwrap.dedent(source))
    imports = collect_imports(module)
    found = []

    def scan(body, class_node=None):
        for statement in body:
            if isinstance(statement, cst.ClassDef):
                scan(statement.body.body, statement)
            elif isinstance(statement, cst.FunctionDef):
                env = probmath.function_env(statement, imports, class_node)
                for small in probmath.statements_of(statement):
                    value = getattr(small, "value", None)
                    for site in probmath.inline_sites(value, env) if value is not None else ():
                        epsilon = site.epsilon.value if site.epsilon is not None else None
                        found.append((site.kind, module.code_for_node(site.at).strip(), epsilon))

    scan(module.body)
    return found


@pytest.mark.parametrize(
    "source, expected",
    [
        pytest.param(
            """
            def div(logits, epsilon=1e-8):
                probs = F.softmax(logits, dim=1)
                probs_mean = probs.mean(dim=0)
                return -torch.sum(-probs_mean * torch.log(probs_mean + epsilon))
            """,
            [("log-of-prob", "torch.log(probs_mean + epsilon)", 1e-8)],
            id="mean-softmax-plus-default-epsilon",
        ),
        pytest.param(
            "def f(outputs):\n    return -torch.log(outputs.softmax(dim=1) + 1e-10)\n",
            [("log-of-prob", "torch.log(outputs.softmax(dim=1) + 1e-10)", 1e-10)],
            id="softmax-method-plus-literal",
        ),
        pytest.param(
            "def f(Y, unary):\n    return (unary * Y + Y * torch.log(Y.clip(1e-20))).sum()\n",
            [("log-of-prob", "torch.log(Y.clip(1e-20))", 1e-20)],
            id="entropy-term-p-log-p",
        ),
        pytest.param(
            """
            def f(logits, logits_mask):
                exp_logits = torch.exp(logits) * logits_mask
                return logits - torch.log(exp_logits.sum(1, keepdim=True))
            """,
            [("log-sum-exp", "torch.log(exp_logits.sum(1, keepdim=True))", None)],
            id="manual-log-softmax",
        ),
        pytest.param(
            """
            class Ratio:
                def __init__(self, clip=0.99, eps=1e-5):
                    self.eps = eps
                def __call__(self, logits):
                    probs = logits.softmax(1)
                    probs = torch.clamp(probs, min=0.0, max=0.99)
                    return -(probs * torch.log((probs / (torch.ones_like(probs) - probs)) + self.eps)).sum(1)
            """,
            [("log-of-prob", "torch.log((probs / (torch.ones_like(probs) - probs)) + self.eps)", 1e-5)],
            id="ratio-with-attribute-epsilon",
        ),
        pytest.param(
            """
            def f(a, b, Q, T=0.2):
                sim = torch.exp(torch.mm(a, b.t()) / T)
                sim_probs = sim / sim.sum(1, keepdim=True)
                return -(torch.log(sim_probs + 1e-7) * Q).sum(1)
            """,
            [("log-of-prob", "torch.log(sim_probs + 1e-7)", 1e-7)],
            id="normalised-exp",
        ),
        pytest.param(
            "def f(logits):\n    return F.kl_div(F.softmax(logits, dim=-1).log(), logits)\n",
            [("log-of-prob", "F.softmax(logits, dim=-1).log()", None)],
            id="log-method-of-softmax",
        ),
        pytest.param(
            "def f(probs, target):\n    return F.nll_loss(torch.log(probs), target)\n",
            [("log-of-prob", "torch.log(probs)", None)],
            id="parameter-named-probs",
        ),
        pytest.param(
            """
            def kl(prior_mu, prior_sigma, posterior_mu, posterior_sigma):
                posterior_var = posterior_sigma ** 2
                prior_var = prior_sigma ** 2
                posterior_log_sigma = torch.log(posterior_sigma)
                prior_log_sigma = torch.log(prior_sigma)
                return (
                    prior_log_sigma - posterior_log_sigma - 0.5
                    + (posterior_var + (posterior_mu - prior_mu) ** 2) / (2 * prior_var)
                )
            """,
            [("gaussian", "prior_log_sigma - posterior_log_sigma", None)],  # the sum starts where the math does
            id="gaussian-kl-written-out",
        ),
        pytest.param(
            """
            def vae_sample(mean, scale):
                stdev = F.softplus(scale) + 1e-4
                var = stdev * stdev
                logvar = torch.log(var)
                return (mean * mean + var - logvar - 1).sum(1).mean()
            """,
            [("gaussian", "mean * mean + var", None)],
            id="vae-kl-to-standard-normal",
        ),
        pytest.param(
            "def f(y, mu_y, y_mask):\n"
            "    return torch.sum(0.5 * ((y - mu_y) ** 2 + math.log(2 * math.pi)) * y_mask)\n",
            [("gaussian", "(y - mu_y) ** 2", None)],
            id="gaussian-nll-with-log-2pi",
        ),
        pytest.param(
            """
            def f(y, mu_x, factor, n_feats):
                const = -0.5 * math.log(2 * math.pi) * n_feats
                y_square = torch.matmul(factor.transpose(1, 2), y ** 2)
                return y_square - torch.matmul(factor, y) + const
            """,
            [("gaussian", "y_square - torch.matmul(factor, y)", None)],
            id="gaussian-log-prior-by-matmul",
        ),
        pytest.param(
            """
            def bits(likelihoods):
                return sum(torch.log(lkl[k]).sum() / -math.log(2) for lkl in likelihoods.values() for k in "yz")
            """,
            [("log-of-prob", "torch.log(lkl[k])", None)],
            id="element-of-a-likelihoods-dict",
        ),
        pytest.param(
            """
            def log_likelihood(x, means, inv_stdv):
                cdf_plus = normal_cdf(inv_stdv * (x - means + 1.0 / 255.0))
                return torch.log(cdf_plus.clamp(min=1e-12))
            """,
            [("log-of-prob", "torch.log(cdf_plus.clamp(min=1e-12))", 1e-12)],
            id="log-of-a-cdf-helper",
        ),
        pytest.param(
            "def f(w, eps=1e-10):\n    return torch.log(w / (w.sum(-1, keepdim=True) + eps))\n",
            [("log-of-prob", "torch.log(w / (w.sum(-1, keepdim=True) + eps))", None)],
            id="normalised-by-its-own-sum",
        ),
        pytest.param(
            "def f(counts, i):\n    return torch.log(counts[i] / torch.sum(counts))\n",
            [("log-of-prob", "torch.log(counts[i] / torch.sum(counts))", None)],
            id="an-element-over-the-sum",
        ),
    ],
)
def test_probability_shapes(source: str, expected: list) -> None:
    assert _shapes(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("def f(gt, stride, eps=1e-8):\n    return torch.log(gt / stride + eps)\n", id="log-of-box-size"),
        pytest.param("def f(ious):\n    return -torch.log(ious + 1e-8)\n", id="log-of-iou"),
        pytest.param("def f(x_mag, fac, eps):\n    return torch.log(fac * x_mag + eps)\n", id="log-of-magnitude"),
        pytest.param("def f(attn):\n    return torch.log(1e-8 + torch.sum(attn, -1))\n", id="log-of-durations"),
        pytest.param("def f(a, b):\n    return (a - b) ** 2 + 0.1 * a.abs()\n", id="squared-error"),
        pytest.param("def f(n):\n    return math.log(n) + n ** 2\n", id="python-math"),
        pytest.param("def f(x):\n    return F.log_softmax(x, dim=-1)\n", id="fused-log-softmax"),
        pytest.param("def f(self, loss):\n    self.log('loss', loss)\n", id="lightning-logging"),
        pytest.param(
            "def f(posterior_sigma):\n    return torch.log(posterior_sigma)\n", id="log-of-a-scale"),
        pytest.param(
            "def f(logits):\n    probs = logits * 2\n    return torch.log(probs)\n", id="local-named-probs-not-probs"),
        pytest.param(  # SI-SDR: a ratio of two energies, in decibels
            "def f(target, res, eps=1e-8):\n"
            "    return 10 * torch.log10((target ** 2).sum(-1) / ((res ** 2).sum(-1) + eps) + eps)\n",
            id="log-of-a-ratio-of-sums"),
        pytest.param(
            "def f(inter, union):\n    return -torch.log(inter.sum() / (union.sum() + 1e-6))\n", id="log-of-iou-sums"),
    ],
)
def test_near_misses_are_not_probability_math(source: str) -> None:
    assert _shapes(source) == []


@pytest.mark.parametrize(
    "value, vanishes, subnormal",
    [(1e-10, True, False), (1e-8, True, False), (2.0 ** -24, False, True), (1e-7, False, True),
     (1e-5, False, True), (1e-4, False, False)],
)
def test_epsilon_limits_follow_float16(value: float, vanishes: bool, subnormal: bool) -> None:
    epsilon = probmath.Epsilon(cst.Float(repr(value)), value)
    assert (epsilon.vanishes, epsilon.subnormal) == (vanishes, subnormal)


@pytest.mark.torch
def test_vanishing_epsilons_really_vanish_in_float16() -> None:
    torch = pytest.importorskip("torch")
    for value in (1e-8, 1e-10, 1e-12, 1e-20):
        assert probmath.Epsilon(cst.Float(repr(value)), value).vanishes
        assert torch.tensor(value, dtype=torch.float16).item() == 0.0
    for value in (1e-7, 1e-5):
        assert not probmath.Epsilon(cst.Float(repr(value)), value).vanishes
        assert torch.tensor(value, dtype=torch.float16).item() > 0.0


def test_floor_under_a_log_is_read_through_bindings() -> None:
    """An epsilon given as a default, a local or a `self.` attribute is the literal it is bound to."""
    shapes = _shapes(
        """
        class Loss:
            def __init__(self, eps=1e-12):
                self.eps = eps
            def forward(self, logits):
                p = logits.sigmoid()
                floor = 1e-9
                return torch.log(p.clamp(min=self.eps)) + torch.log(torch.clamp(1 - p, floor))
        """
    )
    assert shapes == [("log-of-prob", "torch.log(p.clamp(min=self.eps))", 1e-12),
                      ("log-of-prob", "torch.log(torch.clamp(1 - p, floor))", 1e-9)]
