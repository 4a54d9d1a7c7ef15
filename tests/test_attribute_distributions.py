"""`self.dist.log_prob(x)`: the distribution a method of the class assigns to `self.dist` (issue 53, item 1).

check reads the class's `self.dist = Normal(...)` assignments as it reads a callee's `return Normal(...)`
(`facts.returns.ReturnIndex.attribute`): their parameters are the call's inputs, the message names the method
and line, fix A casts them there, and verify rebuilds that constructor (tests/test_verify_slots.py). An
assignment that is not a constructor keeps the receiver unknown; `self.dist = None` is no receiver.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from amplint.config import Config
from amplint.engine import check_source
from amplint.fix.apply import fix_paths

HEAD = '''\
import torch
from torch.distributions import Normal


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)
        self.dist = None

    def forward(self, x, y):
        with torch.autocast("cpu", dtype=torch.float16):
            out = self.lin(x)
            self.dist = Normal(out[:, 0], out[:, 1].sigmoid() * 1e-3)
            return self.score(y)

    def score(self, y):
        return self.dist.log_prob(y)
'''


def _findings(source: str):
    return [(f.line, f.column, f.code, f.message) for f in check_source(textwrap.dedent(source), "m.py").findings]


def test_the_assigned_constructor_is_read_and_named() -> None:
    [(line, column, code, message)] = _findings(HEAD)
    assert (line, column, code) == (18, 16, "AMP001")
    assert message.startswith("`Normal.log_prob` runs in the float16 autocast region at line 12 with inputs not cast "
                              "to float32: `out[:, 0]`, `out[:, 1].sigmoid() * 1e-3`, `y` (the distribution is built "
                              "in `Head.forward` at line 14)")


def test_cast_assignments_are_float32_and_other_assignments_keep_it_unknown() -> None:
    cast = HEAD.replace("out = self.lin(x)", "out = self.lin(x).float()")
    cast = cast.replace("self.score(y)", "self.score(y.float())")
    assert _findings(cast) == []
    opaque = HEAD.replace("self.dist = None", "self.dist = make_prior()")
    [(_, _, _, message)] = _findings(opaque)
    assert "`self.dist`, `y`" in message
    assert "risk unknown: the distribution is built where the analysis cannot see it" in message


@pytest.mark.torch
def test_fix_casts_where_the_attribute_is_built_and_the_run_is_finite(tmp_path: Path) -> None:
    path = tmp_path / "head.py"
    run = '''
torch.manual_seed(0)
head = Head()
with torch.no_grad():
    head.lin.weight.copy_(torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0]]))
    head.lin.bias.zero_()
x = torch.stack([torch.randn(4096) * 1e-2, torch.full((4096,), -4.0), torch.zeros(4096), torch.zeros(4096)], 1)
y = torch.randn(4096) * 1e-2
print(int((~torch.isfinite(head(x, y))).sum()))
'''
    path.write_text(HEAD + run)
    before = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True)
    assert int(before.stdout) > 0
    fix_paths([str(path)], Config())
    text = path.read_text()
    assert "self.dist = Normal(out[:, 0].float(), out[:, 1].float().sigmoid() * 1e-3)" in text
    assert "return self.dist.log_prob(y.float())" in text
    after = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, check=True)
    assert int(after.stdout) == 0
    assert _findings(text) == []
