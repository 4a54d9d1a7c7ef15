"""Every assignment that may reach a computation is checked and fixed, not only the last one (issue 17).

`if cfg.a: d = Laplace(...) else: d = Normal(...)` reaches `d.log_prob(x)` through
both branches. Before, the analysis saw only the `Normal`, `--fix` cast it alone, the
`Laplace` branch stayed float16, and the re-check said 0. The fixed text is executed
under CPU float16 autocast through both branches.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Dict

import pytest

from amplint.config import Config
from amplint.engine import check_source
from amplint.fix.apply import fix_text

BRANCHES = '''\
import torch
from torch.distributions import Laplace, Normal


def loss(head, h, x, cfg):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        if cfg.laplace:
            d = Laplace(out[:, 0], 1e-3 * torch.sigmoid(out[:, 1]))
        else:
            d = Normal(out[:, 0], 1e-3 * torch.sigmoid(out[:, 1]))
        return d.log_prob(x)
'''
SEQUENTIAL = '''\
import torch
from torch.distributions import Normal


def loss(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        d = Normal(out[:, 0], out[:, 1].exp())
        d = Normal(out[:, 0].float(), out[:, 1].float().exp())
        return d.log_prob(x.float())
'''


def test_both_branches_are_the_finding_inputs() -> None:
    [finding] = check_source(BRANCHES, "m.py").findings
    assert (finding.line, finding.column, finding.code) == (12, 16, "AMP001")
    assert finding.message.count("`out[:, 0]`") == 1  # each input once, though both constructors take it
    assert "may be one of Laplace, Normal" in finding.message


def test_a_later_assignment_in_the_same_block_replaces_the_earlier_one() -> None:
    assert check_source(SEQUENTIAL, "m.py").findings == []


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_fix_casts_every_branch_and_the_fixed_code_is_finite(strategy: str, unvalidated_distributions) -> None:
    fixed = fix_text(BRANCHES, "m.py", Config(strategy=strategy))
    assert fixed.fixed_count == 1 and not fixed.remaining
    assert "Laplace(out[:, 0].float(), 1e-3 * torch.sigmoid(out[:, 1].float()))" in fixed.fixed
    assert "Normal(out[:, 0].float(), 1e-3 * torch.sigmoid(out[:, 1].float()))" in fixed.fixed
    assert check_source(fixed.fixed, "m.py").findings == []
    torch = pytest.importorskip("torch")
    generator = torch.Generator().manual_seed(0)
    mu = torch.randn(4096, generator=generator)
    h = torch.stack([mu, torch.full((4096,), -12.0)], dim=-1)  # scale 1e-3 * sigmoid(-12) = 6e-9: 0 in float16
    x = mu + 0.01 * torch.randn(4096, generator=generator)
    head = torch.nn.Linear(2, 2)
    with torch.no_grad():
        head.weight.copy_(torch.eye(2))
        head.bias.zero_()
    for code, bad in ((BRANCHES, True), (fixed.fixed, False)):  # float16 zeros would raise with validation
        namespace: Dict[str, object] = {}
        exec(compile(code, "m.py", "exec"), namespace)
        for laplace in (True, False):
            with torch.no_grad():
                values = namespace["loss"](head, h, x, SimpleNamespace(laplace=laplace))  # type: ignore[operator]
            assert bool((~torch.isfinite(values)).any()) == bad, (laplace, bad)
