"""Hand-written math judged per device (`amplint.facts.devicemath`), each case run under the device's policy.

Each case is a loss function whose body runs in a float16 region on CPU or CUDA. amplint reports it (or not),
and each finding's risk says whether the device's policy computes it without range lost in float16 (`low`).
The same function then runs on inputs that provoke the failure: under CPU float16 autocast for real, and under
CUDA's policy emulated on CPU (`amplint.verify.devices.CUDA_EMULATED`: torch's own AutocastCUDA kernels pick
each op's dtype). What amplint says about a device must be what that device computes: a finding of `low` risk
runs finite there, a finding of any other risk does not, and a function with no finding runs finite.
"""
from __future__ import annotations

import contextlib
import functools
import textwrap
from typing import Any, Callable, Dict, List, Tuple

import pytest

from amplint.config import Config
from amplint.engine import check_source

torch = pytest.importorskip("torch")
F = torch.nn.functional
from amplint.fix.apply import fix_text  # noqa: E402
from amplint.rules.amp003_handwritten_density import UNFIXABLE_STATEMENT  # noqa: E402
from amplint.verify.devices import CUDA_EMULATED, EmulatedCudaTensor, to_host  # noqa: E402

pytestmark = pytest.mark.torch

TEMPLATE = '''\
import torch
import torch.nn.functional as F


def loss(head, x, y):
    with torch.autocast("{device}", dtype=torch.float16):
        out = head(x)
        z, s = out[:, :8], out[:, 8:]
{body}
'''
CODES = ("AMP003", "AMP004")


def source(body: str, device: str) -> str:
    return TEMPLATE.format(device=device, body=textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


# name: (body, {device: [(line, column, code, risk level), ...]})
CASES: Dict[str, Tuple[str, Dict[str, List[Tuple[int, int, str, str]]]]] = {
    # CUDA runs softmax and log in float32: the log of a softmax holds there, not under CPU autocast.
    "log of a softmax": ("return torch.log(F.softmax(z, -1))", {
        "cpu": [(9, 16, "AMP003", "high")], "cuda": [(9, 16, "AMP003", "low")]}),
    # A Gaussian whose scale is an `exp`, its deviation from float32 data: float32 on CUDA from the `exp` on.
    "Gaussian, exp scale": ("return (0.5 * ((y - z) / s.exp()) ** 2 + torch.log(s.exp())).sum(-1)", {
        "cpu": [(9, 17, "AMP003", "high")], "cuda": [(9, 17, "AMP003", "low")]}),
    # A sigmoid runs in float16 on both: a deviation divided by it overflows there too (and its log is a log of
    # probabilities: a sigmoid's output).
    "Gaussian, sigmoid scale": (
        "scale = torch.sigmoid(s)\nreturn (0.5 * (z / scale) ** 2 + torch.log(scale)).sum(-1)",
        {"cpu": [(10, 17, "AMP003", "high"), (10, 42, "AMP003", "high")],
         "cuda": [(10, 17, "AMP003", "high"), (10, 42, "AMP003", "high")]}),
    # The floor float16 rounds to 0 under a sigmoid: CUDA's float32 log reads the zero.
    "log of a sigmoid plus 1e-10": ("return torch.log(torch.sigmoid(z) + 1e-10)", {
        "cpu": [(9, 16, "AMP003", "high"), (9, 45, "AMP004", "unknown")],
        "cuda": [(9, 16, "AMP003", "high"), (9, 45, "AMP004", "unknown")]}),
    # A cast after the sigmoid comes too late: float16 rounded its small values to 0 already.
    "sigmoid cast too late": ("p = torch.sigmoid(z).float()\nreturn -torch.log(p)", {
        "cpu": [(10, 17, "AMP003", "high")], "cuda": [(10, 17, "AMP003", "high")]}),
    # A cast after a softmax: too late on CPU; on CUDA the softmax ran in float32, so the cast is in time.
    "softmax cast too late": ("p = F.softmax(z, -1).float()\nreturn -torch.log(p)", {
        "cpu": [(10, 17, "AMP003", "high")], "cuda": []}),
    # A binary entropy under a floor float16 keeps: its sigmoid and logs run in float16 on both devices, and
    # on every probe activation they stay in range (`amplint.facts.probes`): each `p` times its log is exact.
    # The log of the complement `1 - p` is the site; `p * log(p + 1e-6)` is an entropy term, no log-parameter.
    "binary entropy with a floor float16 keeps": (
        "p = torch.sigmoid(z)\nreturn -(p * torch.log(p + 1e-06) + (1 - p) * torch.log(1 - p + 1e-06)).sum(-1)",
        {"cpu": [(10, 55, "AMP003", "low")], "cuda": [(10, 55, "AMP003", "low")]}),
    # The log-normaliser's own input is cast, but its statement multiplies by a float16 `exp`, which overflows
    # under CPU autocast; CUDA runs the `exp` in float32, so nothing is lost there and nothing is reported.
    "cast lgamma times a float16 exp": ("return torch.lgamma(F.softplus(z.float()) + 1e-3) * s.exp()", {
        "cpu": [(9, 16, "AMP003", "high")], "cuda": []}),
    # A cast before the sigmoid: float32 throughout on both.
    "sigmoid cast in time": ("p = torch.sigmoid(z.float())\nreturn -torch.log(p)", {"cpu": [], "cuda": []}),
}


def _inputs() -> Tuple[Any, Any]:
    """Head outputs that provoke each failure: logits spread over [-20, 20], raw scales over [-12, 12]."""
    z = torch.linspace(-20.0, 20.0, 8).repeat(64, 1)
    s = torch.linspace(-12.0, 12.0, 8).repeat(64, 1)
    x = torch.cat([z, s], dim=1)
    return x, z + 0.05


def run(text: str, device: str) -> Any:
    """`loss` of `text` on the provoking inputs, on `device` (cpu, or cuda under CUDA's emulated policy)."""
    namespace: Dict[str, Any] = {}
    region_text = f'torch.autocast("{device}", dtype=torch.float16)'
    assert region_text in text
    exec(compile(text.replace(region_text, "region()"), "<case>", "exec"), namespace)
    put: Callable[[Any], Any]
    if device == "cpu":
        put, session = (lambda t: t), contextlib.nullcontext()
        namespace["region"] = lambda: torch.autocast("cpu", dtype=torch.float16)
    else:
        put, session = EmulatedCudaTensor, CUDA_EMULATED.session()
        namespace["region"] = functools.partial(CUDA_EMULATED.autocast, True, torch.float16)
    x, y = _inputs()
    head = functools.partial(F.linear, weight=put(torch.eye(16)), bias=put(torch.zeros(16)))
    with torch.no_grad(), session:
        return to_host(namespace["loss"](head, put(x), put(y)))


def nonfinite(out: Any) -> int:
    return int((~torch.isfinite(out)).sum())


def findings(text: str) -> List[Tuple[int, int, str, str]]:
    result = check_source(text, "case.py", Config())
    assert result.error is None
    return sorted((f.line, f.column, f.code, f.risk.level) for f in result.findings if f.code in CODES)


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("name", list(CASES))
def test_findings_and_their_risk_per_device(name: str, device: str) -> None:
    body, expected = CASES[name]
    assert findings(source(body, device)) == expected[device]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("name", list(CASES))
def test_what_amplint_says_is_what_the_device_computes(name: str, device: str) -> None:
    text = source(CASES[name][0], device)
    reported = findings(text)
    bad = nonfinite(run(text, device))
    if not reported or all(level == "low" for *_, level in reported):
        assert bad == 0, (name, device, reported)
    else:
        assert bad > 0, (name, device, reported)


def test_float32_data_is_read_as_float32_only_where_the_region_makes_nothing_of_it() -> None:
    """`y` is a parameter the region does not make: the deviation `y - z` is promoted to float32 by it, so CUDA's
    float32 `pow` and `exp` leave nothing in float16. Rebinding `y` to a float16 value inside makes it the
    region's, and the product of two float16 tensors runs in float16 on CUDA too; `y` is then the caller's
    value or the rebound one, and the probes prove nothing of either."""
    body = "y = z * 2\nd = y - z\nreturn (0.5 * (d * d) / torch.exp(s) + s).sum(-1)"
    assert findings(source(body, "cuda")) == [(11, 17, "AMP003", "unknown")]
    assert findings(source(body.replace("y = z * 2\n", ""), "cuda")) == [(10, 17, "AMP003", "low")]


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_fix_casts_before_the_op_that_lost_range(device: str) -> None:
    """Fix A casts what the sigmoid reads, not the sigmoid's result: after it, the log is finite on the device."""
    text = source(CASES["sigmoid cast too late"][0], device)
    fixed = fix_text(text, "case.py", Config())
    assert fixed.fixed == text.replace("p = torch.sigmoid(z).float()", "p = torch.sigmoid(z.float()).float()")
    assert fixed.remaining == ()
    assert nonfinite(run(text, device)) > 0
    assert nonfinite(run(fixed.fixed, device)) == 0


def test_math_lost_in_its_statement_is_reported_and_not_fixed() -> None:
    """The cast belongs where the float16 `exp` is made, outside the math: the codemod leaves it, and says where."""
    text = source(CASES["cast lgamma times a float16 exp"][0], "cpu")
    result = check_source(text, "case.py", Config())
    [finding] = result.findings
    assert "the statement holding it" in finding.message and "`s`" in finding.message
    assert not finding.fixable and finding.fix_strategies == ()
    fixed = fix_text(text, "case.py", Config())
    assert fixed.fixed == text and [f.line for f in fixed.remaining] == [9]
    assert [s.reason for s in fixed.skipped] == [UNFIXABLE_STATEMENT]


def test_the_message_lists_the_float16_inputs_not_the_callers_data() -> None:
    """`k` is a parameter the region does not make (counts, float32 data by the rule that leaves a site reading
    only parameters unreported): the message names `rate` only. Reached from a region elsewhere, a parameter is
    that region's activation and is listed."""
    body = "rate = F.softplus(s)\nreturn (torch.lgamma(y + 1) - y * torch.log(rate) + rate).sum(-1)"
    own = [f.message for f in check_source(source(body, "cpu"), "case.py", Config()).findings]
    assert [m.split("not cast to float32: ")[1].split(";")[0] for m in own] == ["`rate`", "`rate`"]
    reached = (
        "import torch\n\n\ndef nll(rate, k):\n    return torch.lgamma(k + 1) - k * torch.log(rate) + rate\n\n\n"
        "def step(head, x, k):\n    with torch.autocast(\"cpu\", dtype=torch.float16):\n"
        "        return nll(head(x), k)\n")
    messages = [f.message for f in check_source(reached, "case.py", Config()).findings]
    assert [m.split("not cast to float32: ")[1].split(" (reached")[0] for m in messages] == ["`k`, `rate`", "`k`"]


def test_min_risk_high_leaves_out_what_the_device_spares() -> None:
    from amplint.risk import at_least

    text = source(CASES["log of a softmax"][0], "cuda") + source(CASES["sigmoid cast too late"][0], "cuda").replace(
        "def loss(", "def loss2(").split("\n\n\n", 1)[1]
    result = check_source(text, "case.py", Config())
    kept = at_least(result.findings, "high")
    assert sorted((f.line, f.code) for f in result.findings) == [(9, "AMP003"), (15, "AMP003")]
    assert [(f.line, f.code) for f in kept] == [(15, "AMP003")]
    spared = next(f for f in result.findings if f.line == 9)
    assert "CUDA autocast runs every range-losing op of it in float32" in spared.message
