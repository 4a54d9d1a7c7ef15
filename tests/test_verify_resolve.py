"""Rebuilding a computation from the analysis: allowlisted classes, bound arguments, clear refusals."""
from __future__ import annotations

import pytest

pytest.importorskip("torch")

import torch.distributions as td  # noqa: E402

from amplint.model import SiteSpec  # noqa: E402
from amplint.verify.resolve import SitePlan, Unverifiable, plan_site, resolve_class  # noqa: E402
from test_verify_helpers import NORMAL, arg, dist, log_prob  # noqa: E402


def test_positional_and_keyword_arguments_bind_to_parameter_names() -> None:
    plan = plan_site(log_prob(dist("torch.distributions.normal.Normal", arg("mu", 0), arg("s", name="scale"))))
    assert isinstance(plan, SitePlan)
    [normal] = plan.dists
    assert normal.cls is td.Normal
    assert [(t.param, t.spec.code) for t in normal.tensors] == [("loc", "mu"), ("scale", "s")]
    assert plan.value is not None and plan.value.spec.code == "x"


def test_components_and_literals() -> None:
    independent = dist("torch.distributions.Independent", arg("1", 1, literal=True), components=(NORMAL,))
    plan = plan_site(log_prob(independent))
    assert isinstance(plan, SitePlan)
    [top] = plan.dists
    assert top.literals == (("reinterpreted_batch_ndims", 1),)
    assert [(name, sub.cls) for name, sub in top.components] == [("base_distribution", td.Normal)]
    mixture = dist("torch.distributions.MixtureSameFamily",
                   components=(dist("torch.distributions.Categorical", arg("w", name="logits")), NORMAL))
    plan = plan_site(log_prob(mixture))
    assert isinstance(plan, SitePlan)
    assert plan.label == "MixtureSameFamily(Categorical, Normal).log_prob"


def test_a_mapping_feeds_each_tensor_parameter_the_call_does_not_pass() -> None:
    """`Normal(**params)`, `Categorical(**params)`: the keys are unknown, so every tensor parameter is fed (for
    `probs`/`logits`, which exclude each other, `logits`); a parameter the call passes keeps its argument."""
    from dataclasses import replace

    mapping = arg("params")
    plan = plan_site(log_prob(replace(dist("torch.distributions.Normal", arg("mu", 0)), mapping=mapping)))
    assert isinstance(plan, SitePlan)
    [normal] = plan.dists
    assert [(t.param, t.spec.code) for t in normal.tensors] == [("loc", "mu"), ("scale", "params")]
    assert normal.notes == ("`**params` (its keys are not in the code) fed Normal's tensor parameters: scale",)
    plan = plan_site(log_prob(replace(dist("torch.distributions.Categorical"), mapping=mapping)))
    assert isinstance(plan, SitePlan)
    assert [t.param for t in plan.dists[0].tensors] == ["logits"]


@pytest.mark.parametrize(
    "qualname",
    ["os.system", "torch.nn.Linear", "torch.distributions.kl_divergence", "torch.distributions.Nope",
     "torch.distributions.__import__('os')", "subprocess.run"],
)
def test_only_distribution_classes_under_the_allowed_roots_resolve(qualname: str) -> None:
    assert isinstance(resolve_class(qualname), Unverifiable)


def test_pyro_names_fall_back_to_the_torch_class_with_a_note() -> None:
    resolved = resolve_class("pyro.distributions.Normal")
    assert not isinstance(resolved, Unverifiable)
    cls, notes = resolved
    assert issubclass(cls, td.Normal)
    try:
        import pyro  # noqa: F401
    except ImportError:
        assert notes and "pyro is not installed" in notes[0]


@pytest.mark.parametrize(
    "site, reason",
    [
        (SiteSpec("log_prob", (), (arg("x", 0),)), "as check says: verify rebuilds what check reads"),
        (None, "no computation"),
        (log_prob(dist("torch.distributions.Independent", arg("n", 1), components=(NORMAL,))),
         "neither a number literal nor a tensor parameter"),
        (log_prob(dist("torch.distributions.Independent", arg("base", 0), arg("1", 1, literal=True))),
         "could not resolve"),
        (log_prob(dist("torch.distributions.Normal", arg("mu", 0), arg("s", name="sigma"))), "no parameter `sigma`"),
        (SiteSpec("rsample", (NORMAL,), ()), "`rsample` is not a torch.distributions computation"),
        (SiteSpec("log-of-prob", (), ()), "verify never runs your own code"),
    ],
)
def test_unverifiable_with_a_reason(site, reason: str) -> None:
    plan = plan_site(site)
    assert isinstance(plan, Unverifiable)
    assert reason in plan.reason
