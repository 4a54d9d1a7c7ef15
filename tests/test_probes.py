"""Float16 emulated on probe activations (`amplint.facts.probes`), and what it decides (`devicemath.on_device`).

The probes are pure Python: `struct`'s half format rounds as IEEE float16 does,
so these answers hold without torch; `test_devicemath.py` runs the same kind of
code under torch's own autocast and checks that a `low` risk runs finite.
"""
from __future__ import annotations

import ast
import math
import textwrap
from typing import Optional

import libcst as cst
import pytest

from amplint.engine import check_source
from amplint.facts import probes
from amplint.facts.devicemath import OnDevice, on_device
from amplint.facts.mathenv import function_env
from amplint.model import PROBE_TOLERANCE, Probed
from amplint.names import import_table
from amplint.policies import CPU, CUDA


@pytest.mark.parametrize("value,expected", [
    (65504.0, 65504.0),  # float16's largest
    (65519.0, 65504.0),  # rounds down to it
    (65520.0, math.inf),  # rounds up past it
    (-1e6, -math.inf),
    (1e-10, 0.0),  # below half the smallest subnormal
    (6.0e-8, 2.0 ** -24),  # the smallest subnormal
    (1.0001, 1.0),  # 11 bits of mantissa
    (0.1, 0.0999755859375),
])
def test_half_rounds_as_float16(value: float, expected: float) -> None:
    assert probes.half(value) == expected


def test_a_leaf_is_the_same_for_its_key_and_spans_the_envelope() -> None:
    first, again, other = probes.leaf("s", True), probes.leaf("s", True), probes.leaf("mu", True)
    assert first == again and first != other
    rows = sum(count + 2 * max(1, count // 4) for _, count in probes.LADDER)
    assert len(first.device) == rows and all(len(row) == probes.WIDTH for row in first.device)
    values = [v for row in first.device for v in row]
    assert min(values) == -probes.ENVELOPE and max(values) == probes.ENVELOPE
    assert all(probes.half(v) == v for v in values)  # float16 activations
    data = [v for row in probes.leaf("k", False, data=True).device for v in row]
    assert min(data) == 0.0 and max(data) == probes.ENVELOPE  # data: not negative, float32
    wide = [v for row in probes.leaf("x.float()", False).device for v in row]
    assert min(wide) == -probes.ENVELOPE and any(probes.half(v) != v for v in wide)  # a float32 activation


def test_an_op_in_float16_rounds_only_the_device_numbers() -> None:
    x = probes.Probe(((12.0, -20.0, 1.0),), ((12.0, -20.0, 1.0),))
    out = probes.apply("exp", [x], True)
    assert isinstance(out, probes.Probe)
    assert out.device == ((math.inf, 0.0, probes.half(math.e)),)
    assert out.reference == ((math.exp(12.0), math.exp(-20.0), math.e),)
    assert probes.judge(out) == Probed(3, 1, abs(probes.half(math.e) - math.e) / math.e)
    assert probes.apply("exp", [x], False).device == out.reference  # in float32 it is exact here


def test_reductions_run_over_a_row_and_numbers_stay_numbers() -> None:
    x = probes.Probe(((1.0, 2.0), (3.0, 4.0)), ((1.0, 2.0), (3.0, 4.0)))
    assert probes.apply("sum", [x], True).device == ((3.0,), (7.0,))
    assert probes.apply("mul", [2.0, math.pi], False) == 2 * math.pi
    assert probes.apply("erfinv", [x], True) is None  # an op it does not know: no numbers
    assert probes.judge(None) is None


def test_a_reference_that_is_not_finite_is_left_out() -> None:
    value = probes.Probe(((math.inf, 1.0),), ((math.nan, 1.0),))
    assert probes.judge(value) == Probed(1, 0, 0.0)


def _on_device(body: str, expression: str, policy, whole: Optional[str] = None) -> OnDevice:
    code = "import math\nimport torch\nimport torch.nn.functional as F\n\n\ndef loss(head, x, y, k):\n" + \
        textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"
    module = cst.parse_module(code)
    function = next(n for n in module.body if isinstance(n, cst.FunctionDef))
    env = function_env(function, import_table(ast.parse(code)))
    nodes = {}

    class Find(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, cst.BaseExpression):
                nodes.setdefault(module.code_for_node(node), node)
            return True

    module.visit(Find())
    return on_device(nodes[expression], env, policy, lambda node: False, frozenset({"y", "k"}),
                     whole=nodes[whole] if whole else None)


@pytest.mark.parametrize("body,expression,policy,holds", [
    # exp(0.5 * 20) = 22026 fits float16; exp(20) does not.
    ("s = head(x)\nreturn torch.exp(0.5 * s)", "torch.exp(0.5 * s)", CPU, True),
    ("s = head(x)\nreturn torch.exp(s)", "torch.exp(s)", CPU, False),
    # A square of a location up to 20 is 400: in range.
    ("mu = head(x)\nreturn mu ** 2 + y", "mu ** 2 + y", CPU, True),
    # softplus(-20) is 2e-9: 0 in float16, and its log -inf; a sigmoid scale divides by that 0 on CUDA too.
    ("s = head(x)\nreturn torch.log(F.softplus(s))", "torch.log(F.softplus(s))", CPU, False),
    ("mu, s = head(x), head(x)\nreturn (y - mu) / torch.sigmoid(s)", "(y - mu) / torch.sigmoid(s)", CUDA, False),
])
def test_probes_decide_whether_the_float16_ops_hold(body: str, expression: str, policy, holds: bool) -> None:
    device = _on_device(body, expression, policy)
    assert not device.spared and device.probed is not None and device.probed.values > 0
    assert device.probed.holds is holds


def test_math_close_to_the_tolerance_is_drawn_again_denser(monkeypatch: pytest.MonkeyPatch) -> None:
    """`rate - k * log(rate)` loses its digits only near its root, a band the first draw barely meets: its
    largest error there is within `NEAR` of the tolerance, so a draw `REFINE` times as dense is taken too, and
    finds the loss (measured on torch: tests/mathgen, a Poisson NLL off by 1.5% under CPU autocast)."""
    body = "mu = head(x)\nrate = torch.exp(0.5 * mu)\nreturn rate - (k * rate.log())"
    refined = _on_device(body, "rate - (k * rate.log())", CPU).probed
    monkeypatch.setattr(probes, "NEAR", 0)
    first = _on_device(body, "rate - (k * rate.log())", CPU).probed
    assert first is not None and first.holds and first.max_error * 5 > PROBE_TOLERANCE
    assert refined is not None and not refined.holds and refined.values > first.values * probes.REFINE


def test_a_policy_that_runs_every_lossy_op_in_float32_spares_without_probes() -> None:
    assert _on_device("s = head(x)\nreturn torch.exp(s)", "torch.exp(s)", CUDA) == OnDevice("cuda", spared=True)


def test_the_statement_judges_a_log_its_product_makes_exact() -> None:
    """`1 - sigmoid(8.5)` is 0 in float16, so `log(p + 1e-6)` is off by 40% there; times `p` it is 0 either way."""
    body = "p = 1 - torch.sigmoid(head(x))\nreturn -(p * torch.log(p + 1e-06)).sum(-1)"
    alone = _on_device(body, "torch.log(p + 1e-06)", CPU)
    whole = _on_device(body, "torch.log(p + 1e-06)", CPU, whole="-(p * torch.log(p + 1e-06)).sum(-1)")
    assert alone.probed is not None and not alone.probed.holds and alone.probed.max_error > PROBE_TOLERANCE
    assert whole.probed is not None and whole.probed.holds


MODULE = '''\
import torch
import torch.nn.functional as F


def nll(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        mu, s = head(x).chunk(2, dim=-1)
        std = {scale}
        return (0.5 * ((y - mu) / std) ** 2 + torch.log(std)).sum(-1)
'''


@pytest.mark.parametrize("scale,level,detail", [
    # exp(0.5 * s) stays within [4.5e-5, 22026] for |s| <= 20: float16 holds it, and `y - mu` is float32 data.
    ("torch.exp(0.5 * s)", "low", "every value stays within float16's range, largest error "),
    # softplus(s) is 0 in float16 below -17: the deviation divided by it is inf, its log -inf.
    ("F.softplus(s)", "high", " probe values are non-finite on activations up to ±20 under CPU autocast's policy"),
])
def test_the_risk_of_a_written_out_density_comes_from_the_probes(scale: str, level: str, detail: str) -> None:
    result = check_source(MODULE.format(scale=scale), "nll.py")
    assert [(f.code, f.line, f.column) for f in result.findings] == [("AMP003", 9, 17)]
    risk = result.findings[0].risk
    assert risk is not None and risk.level == level and risk.device == "cpu" and detail in risk.detail
    held = " (under CPU autocast its float16 ops stay in range on activations up to ±20" in result.findings[0].message
    assert held is (level == "low")


REACHED_LOSSES = '''\
import math

import torch
import torch.nn.functional as F


def gaussian_nll(mu, log_std, y):
    z = (y - mu) / log_std.exp()
    return 0.5 * z.pow(2) + log_std + 0.5 * math.log(2 * math.pi)


def scale_entropy(s):
    return 0.5 + torch.log(F.softplus(s))
'''
REACHED_TRAIN = '''\
import torch

from pkg.losses import gaussian_nll, scale_entropy


def step(model, x, y):
    with torch.autocast("{device}"{dtype}):
        mu, log_std = model(x).chunk(2, dim=-1)
        return gaussian_nll(mu, log_std, y).mean() + scale_entropy(log_std).mean()
'''


@pytest.mark.parametrize("device,dtype,nll,entropy", [
    # CUDA runs `exp`, `pow`, `log` and `softplus` in float32: nothing of the Gaussian is lost there.
    ("cuda", "", "low", "low"),
    # CPU runs them in float16: `exp(log_std)` is inf above 11.1, and `softplus(s)` 0 below -17.
    ("cpu", ", dtype=torch.float16", "high", "high"),
])
def test_math_a_region_elsewhere_reaches_is_judged_on_that_regions_device(tmp_path, device: str, dtype: str,
                                                                          nll: str, entropy: str) -> None:
    """A function with no region of its own is judged per device, its parameters taken as the region's
    activations; the finding's risk reads the device of the region that reaches it (before: `unknown`)."""
    from amplint.config import Config
    from amplint.engine import check_paths

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "losses.py").write_text(REACHED_LOSSES)
    (tmp_path / "pkg" / "train.py").write_text(REACHED_TRAIN.format(device=device, dtype=dtype))
    found = sorted((f.path.rsplit("/", 1)[-1], f.line, f.column, f.code, f.risk.level, f.risk.device)
                   for r in check_paths([str(tmp_path)], Config()) for f in r.findings)
    assert found == [("losses.py", 9, 12, "AMP003", nll, device), ("losses.py", 13, 18, "AMP003", entropy, device)]
