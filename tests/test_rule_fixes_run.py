"""Every INVALID example of AMP003/AMP004 that `--fix` rewrites runs finite after the fix, under CPU float16 autocast.

The examples in the rule modules are what users read first; a fix that removes the finding but leaves the loss
non-finite would be a promise not kept. Each fixed example runs with its regions made CPU float16 autocast
(the policy that promotes nothing, so every float16 op stays float16), on a head whose outputs span [-20, 20]:
the range where softmax, sigmoid and softplus give values float16 rounds to 0.
"""
from __future__ import annotations

import inspect
import re
import textwrap
from typing import Any, Dict, List, Tuple

import pytest

from amplint.config import Config
from amplint.engine import check_source
from amplint.rules import ALL_RULES

torch = pytest.importorskip("torch")
from amplint.fix.apply import fix_text  # noqa: E402

pytestmark = pytest.mark.torch

CODES = ("AMP003", "AMP004")
WIDTH = 16
ROWS = 64
_REGION = re.compile(r"torch\.autocast\([^)]*\)")


def _fixable() -> List[Tuple[str, int, str]]:
    out = []
    for rule in ALL_RULES:
        if rule.code not in CODES:
            continue
        for index, case in enumerate(rule.invalid):
            code = textwrap.dedent(case.code).lstrip("\n")
            if any(f.fixable for f in check_source(code, "example.py").findings):
                out.append((rule.code, index, code))
    return out


FIXABLE = _fixable()


def _values() -> Dict[str, Any]:
    """What the examples' free names and parameters hold: a head that returns its input, inputs over [-20, 20]
    (half the rows spread evenly, half drawn at random)."""
    spread = torch.linspace(-20.0, 20.0, WIDTH).repeat(ROWS // 2, 1)  # every row the whole range
    drawn = torch.empty(ROWS // 2, WIDTH).uniform_(-20.0, 20.0, generator=torch.Generator().manual_seed(0))
    x = torch.cat([spread, drawn])  # columns drawn apart: two logits both near saturation, one above the other
    head = torch.nn.Linear(WIDTH, WIDTH)
    with torch.no_grad():
        head.weight.copy_(torch.eye(WIDTH))
        head.bias.zero_()
    return {"head": head, "x": x, "target": torch.rand(ROWS, WIDTH)}


def _outputs(code: str) -> List[Any]:
    """Every tensor the example computes: its module-level results, and what each function returns."""
    values = _values()
    namespace: Dict[str, Any] = dict(values)
    cpu = 'torch.autocast("cpu", dtype=torch.float16)'
    with torch.no_grad():
        exec(compile(_REGION.sub(cpu, code), "<example>", "exec"), namespace)
        outputs = [v for k, v in namespace.items() if torch.is_tensor(v) and k not in values]
        for name, value in list(namespace.items()):
            if inspect.isfunction(value) and value.__code__.co_filename == "<example>":
                params = inspect.signature(value).parameters
                if all(p in values or params[p].default is not inspect.Parameter.empty for p in params):
                    outputs.append(value(**{p: values[p] for p in params if p in values}))
    assert outputs, "the example computes nothing this test can read"
    return outputs


def test_the_rules_have_fixable_examples() -> None:
    assert len(FIXABLE) >= 4


@pytest.mark.parametrize("code,index,source", FIXABLE,
                         ids=lambda v: str(v) if not isinstance(v, str) or len(v) < 9 else "")
def test_a_fixed_example_runs_finite_under_cpu_float16_autocast(code: str, index: int, source: str) -> None:
    fixed = fix_text(source, "example.py", Config(strategy="cast"))
    assert fixed.changed and not [f for f in fixed.remaining if f.code in CODES]
    before, after = _outputs(source), _outputs(fixed.fixed)
    assert all(bool(torch.isfinite(out).all()) for out in after), (code, index, fixed.fixed)
    # The inputs provoke what the finding says: non-finite values, a floor float16 rounded away (a zero where
    # float32 keeps `p + 1e-10` positive), or values off by more than 1e-2 (tests/mathgen's rule for a hazard).
    lost = sum(int((~torch.isfinite(out)).sum()) for out in before)
    zeros = [int((out == 0).sum()) for out in before], [int((out == 0).sum()) for out in after]
    off = max(float(((b.double() - a.double()).abs() / a.double().abs().clamp(min=1.0)).nan_to_num(0.0).max())
              for b, a in zip(before, after))
    assert lost > 0 or sum(zeros[0]) > sum(zeros[1]) or off > 1e-2, (code, index, lost, zeros, off)
