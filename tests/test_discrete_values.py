"""Discrete values (issue 13, item 5): an index, a 0/1 label or an integer count needs no float32 cast.

The table (`dtypes.DISCRETE_VALUE_CLASSES`) is checked against the installed
torch's own `support.is_discrete`, so it cannot drift, and each class is run
under CPU float16 autocast and with autocast off (fix C) to show that the
value's dtype does not matter, except for a float16 value of the classes in
`dtypes.FLOAT16_VALUE_CLASSES` (`lgamma(value + 1)`, and Bernoulli's
label-typed loss with autocast off), which the analysis keeps as an input
when the value was made in the region. The analysis, the fixer and the verifier agree: no
cast on a discrete value.
"""
from __future__ import annotations

import inspect
import warnings
from typing import Callable, Dict, List, Tuple

import pytest

torch = pytest.importorskip("torch")
import torch.distributions as td  # noqa: E402

from amplint import dtypes  # noqa: E402
from amplint.config import Config  # noqa: E402
from amplint.engine import check_source  # noqa: E402
from amplint.fix.apply import fix_text  # noqa: E402
from amplint.verify import runner  # noqa: E402
from amplint.verify.devices import CPU  # noqa: E402
from amplint.verify.resolve import plan_site  # noqa: E402
from amplint.verify.runner import RunSettings, Target, verify_target  # noqa: E402
from test_verify_helpers import region  # noqa: E402

pytestmark = pytest.mark.torch
ROWS = 4096


def _torch_discrete() -> Tuple[set, set]:
    """(classes whose support torch calls discrete, classes whose support depends on the instance)."""
    discrete, dependent = set(), set()
    for name, cls in vars(td).items():
        if not (inspect.isclass(cls) and issubclass(cls, td.Distribution) and cls is not td.Distribution):
            continue
        try:
            if getattr(cls.support, "is_discrete", False) is True:
                discrete.add(name)
        except NotImplementedError:  # Independent, MixtureSameFamily: "cannot be determined statically"
            dependent.add(name)
    return discrete, dependent


def test_the_table_is_torchs_discrete_supports() -> None:
    discrete, dependent = _torch_discrete()
    assert dtypes.DISCRETE_VALUE_CLASSES == discrete
    assert dtypes.FLOAT16_VALUE_CLASSES < dtypes.DISCRETE_VALUE_CLASSES
    # Continuous relatives keep their value: a probability in (0, 1) or a point of the simplex.
    for name in ("ContinuousBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical", "Beta", "Dirichlet"):
        assert name in vars(td) and not getattr(td, name).support.is_discrete
    # The wrapper torch has takes its base's support, as `VALUE_WRAPPERS` says.
    assert "Independent" in dependent and "Independent" in dtypes.VALUE_WRAPPERS
    base = td.Bernoulli(logits=torch.zeros(3, 2))
    assert td.Independent(base, 1).support.is_discrete
    assert not td.Independent(td.Normal(torch.zeros(3), 1.0), 1).support.is_discrete


# One instance of each discrete class with float32 parameters, and integer values on its support.
Builder = Callable[[], Tuple[td.Distribution, "torch.Tensor"]]


def _builders() -> Dict[str, Builder]:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(ROWS, 10, generator=gen) * 3
    logit = torch.randn(ROWS, generator=gen) * 3
    probs = torch.rand(ROWS, generator=gen).clamp(0.01, 0.99)
    index = torch.randint(0, 10, (ROWS,), generator=gen)
    label = torch.randint(0, 2, (ROWS,), generator=gen)
    big = torch.full((ROWS,), 9000)  # exact in float16 (a multiple of 8), lgamma(9001) > 65504
    counts = torch.stack([big, torch.full((ROWS,), 1000)], -1)
    return {
        "Categorical": lambda: (td.Categorical(logits=logits), index),
        "OneHotCategorical": lambda: (td.OneHotCategorical(logits=logits), torch.nn.functional.one_hot(index, 10)),
        "OneHotCategoricalStraightThrough": lambda: (
            td.OneHotCategoricalStraightThrough(logits=logits), torch.nn.functional.one_hot(index, 10)),
        "Bernoulli": lambda: (td.Bernoulli(logits=logit), label),
        "Geometric": lambda: (td.Geometric(probs=probs), big),
        "Binomial": lambda: (td.Binomial(10000, logits=logit), big),
        "Multinomial": lambda: (td.Multinomial(10000, logits=logits[:, :2]), counts),
        "Poisson": lambda: (td.Poisson(torch.full((ROWS,), 9000.0)), big),
        "NegativeBinomial": lambda: (td.NegativeBinomial(10.0, logits=logit), big),
    }


def _log_prob(build: Builder, dtype: "torch.dtype", autocast: bool) -> "torch.Tensor":
    with warnings.catch_warnings(), torch.autocast("cpu", dtype=torch.float16, enabled=autocast):
        warnings.simplefilter("ignore")
        dist, value = build()
        return dist.log_prob(value.to(dtype))


@pytest.mark.parametrize("autocast", [True, False], ids=["autocast", "autocast-off"])
@pytest.mark.parametrize("name", sorted(dtypes.DISCRETE_VALUE_CLASSES))
def test_the_values_dtype_matters_only_for_a_float16_value_of_the_sensitive_classes(name: str, autocast: bool) -> None:
    builders = _builders()
    assert set(builders) == dtypes.DISCRETE_VALUE_CLASSES
    wide = _log_prob(builders[name], torch.float32, autocast)
    assert wide.dtype == torch.float32 and bool(torch.isfinite(wide).all())
    if name == "Bernoulli":  # binary_cross_entropy_with_logits wants a floating label: long raises
        with pytest.raises(RuntimeError):
            _log_prob(builders[name], torch.long, autocast)
    else:
        assert torch.equal(_log_prob(builders[name], torch.long, autocast), wide)
    half = _log_prob(builders[name], torch.float16, autocast)
    if name in dtypes.FLOAT16_VALUE_CLASSES - {"Bernoulli"}:  # lgamma(9001) overflows float16
        assert not bool(torch.isfinite(half).any())  # -inf, or NaN where Multinomial subtracts two infs
    elif name == "Bernoulli" and not autocast:  # the loss takes the label's dtype: float16, rounded
        assert half.dtype == torch.float16 and not torch.equal(half.float(), wide)
    else:  # an index, or a label the float16 autocast policy computes in float32
        assert torch.equal(half, wide)


# --- the analysis and the fixer ---------------------------------------------------------------------------

def _findings(source: str) -> List[Tuple[int, int, str, str]]:
    return [(f.line, f.column, f.code, f.message) for f in check_source(source, "m.py").findings]


def test_a_cast_parameter_and_an_integer_value_is_not_reported() -> None:
    source = """\
import torch
from torch.distributions import Bernoulli, Categorical, Independent, OneHotCategorical, Poisson
with torch.autocast("cuda"):
    c = Categorical(logits=logits.float()).log_prob(act.long())
    o = OneHotCategorical(logits=logits.float()).log_prob(onehot)
    b = Independent(Bernoulli(logits=l.float()), 1).log_prob(labels)
    p = Poisson(rate.float()).log_prob(counts)
    k = head(h).round()
    q = Poisson(rate.float()).log_prob(k.long())
"""
    assert _findings(source) == []


def test_only_the_parameters_are_listed_and_a_float16_count_still_is() -> None:
    source = """\
import torch
from torch.distributions import Bernoulli, Categorical, ContinuousBernoulli, Poisson
with torch.autocast("cuda"):
    c = Categorical(logits=logits).log_prob(act.long())
    b = Bernoulli(logits=l).log_prob(y)
    r = ContinuousBernoulli(logits=l.float()).log_prob(y)
    k = head(h).round()
    p = Poisson(rate.float()).log_prob(k)
"""
    found = _findings(source)
    assert [(line, col, code) for line, col, code, _ in found] == [
        (4, 9, "AMP001"), (5, 9, "AMP001"), (6, 9, "AMP001"), (8, 9, "AMP001")]
    assert [message.split("inputs not cast to float32: ")[1].split(";")[0] for *_, message in found] == [
        "`logits`", "`l`", "`y`", "`k`"]


FIX_SNIPPET = '''\
import torch
from torch.distributions import Bernoulli, Categorical


def losses(head, h, actions, labels):
    with torch.autocast("cpu", dtype=torch.float16):
        logits = head(h)
        a = Categorical(logits=logits).log_prob(actions.long())
        b = Bernoulli(logits=logits[:, 0]).log_prob(labels)
        made = (logits[:, 2] > 0).half()
        c = Bernoulli(logits=logits[:, 1]).log_prob(made)
        return a, b, c
'''


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_fix_casts_the_parameters_and_only_a_float16_made_label(strategy: str) -> None:
    found = _findings(FIX_SNIPPET)
    assert [f[:3] for f in found] == [(8, 13, "AMP001"), (9, 13, "AMP001"), (11, 13, "AMP001")]
    assert found[2][3].split("float32: ")[1].split(";")[0] == "`logits[:, 1]`, `made`"
    fixed = fix_text(FIX_SNIPPET, "m.py", Config(strategy=strategy))
    assert not isinstance(fixed, Exception)
    assert "Categorical(logits=logits.float()).log_prob(actions.long())" in fixed.fixed
    assert "Bernoulli(logits=logits[:, 0].float()).log_prob(labels)" in fixed.fixed
    assert "Bernoulli(logits=logits[:, 1].float()).log_prob(made.float())" in fixed.fixed
    assert _findings(fixed.fixed) == []
    namespace: Dict[str, object] = {}
    exec(compile(fixed.fixed, "m.py", "exec"), namespace)
    gen = torch.Generator().manual_seed(1)
    head = torch.nn.Linear(16, 10)
    h = torch.randn(ROWS, 16, generator=gen) * 10
    actions = torch.randint(0, 10, (ROWS,), generator=gen)
    labels = torch.randint(0, 2, (ROWS,), generator=gen).float()  # 0/1 labels from the data
    a, b, c = namespace["losses"](head, h, actions, labels)  # type: ignore[operator]
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
        logits = head(h).float()
    assert a.dtype == b.dtype == c.dtype == torch.float32
    assert torch.equal(a, td.Categorical(logits=logits).log_prob(actions))
    assert torch.equal(b, td.Bernoulli(logits=logits[:, 0]).log_prob(labels))
    assert torch.equal(c, td.Bernoulli(logits=logits[:, 1]).log_prob((logits[:, 2] > 0).float()))


def test_the_verifier_leaves_a_discrete_value_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    source = """\
import torch
from torch.distributions import Categorical
with torch.autocast("cuda"):
    lp = Categorical(logits=logits).log_prob(actions.long())
"""
    (finding,) = check_source(source, "m.py").findings
    plan = plan_site(finding.site)
    assert not isinstance(plan, Exception) and getattr(plan, "discrete_value", False)
    seen: List["torch.dtype"] = []
    original = runner.reference_output

    def spy(method, dists, value):  # type: ignore[no-untyped-def]
        seen.append(value.dtype)
        return original(method, dists, value)

    monkeypatch.setattr(runner, "reference_output", spy)
    report = verify_target(Target("m.py", 4, 10, "AMP001", finding.site, region()), RunSettings(CPU, 512, 0))
    assert report.fix_cast is not None and report.fix_cast.nonfinite == 0
    assert seen and set(seen) == {torch.int64}  # the original and both fixes: the index is never cast
