"""What stays float32: in-place updates and `torch.where` (issue 51, item 3).

`logits = raw.float(); logits /= t` is float32 whatever `t` is: an in-place
update keeps its tensor's dtype. It read as float16 because `t` was not known
to be float32, and the log of its softmax was a false alarm. A Python number
is not a tensor: `loc = 0.0; loc += out[:, 0]` takes `out`'s float16.
`torch.where(c, a, b)` is as wide as `a` and `b`, not as its condition.
`mu, s = out.float().chunk(2)` unpacks float32 names; `a, b = x.float(), y`
pairs them element by element. A log under a floor float16 keeps (`1e-6`,
`1e-3`) is finite; one under a floor it drops (`1e-10`) is AMP003 and AMP004.
Each case runs the real CLI; the fixed twins run under CPU float16 autocast.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

HEADER = '''\
import torch
from torch.distributions import Normal


def loss(head, x, y, t):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(x)
'''
CASES = {
    "in_place_on_a_cast_tensor": ('''\
        logits = out.float()
        logits /= t
        p = torch.softmax(logits, -1)
        return -(p * torch.log(p)).sum(-1)
''', []),
    "in_place_on_a_number": ('''\
        loc = 0.0
        loc += out[:, 0]
        return Normal(loc, out[:, 1].float().exp()).log_prob(y.float())
''', [(10, 16, "AMP001")]),
    "in_place_number_plus_number": ('''\
        loc = 0.0
        loc += 1.0
        return Normal(loc, out[:, 1].float().exp()).log_prob(y.float())
''', []),
    "where_of_cast_values": ('''\
        scale = torch.where(out[:, 1] > 0, out[:, 1].float().exp(), 1.0)
        return Normal(out[:, 0].float(), scale).log_prob(y.float())
''', []),
    "where_of_an_uncast_value": ('''\
        scale = torch.where(out[:, 1] > 0, out[:, 1].exp(), 1.0)
        return Normal(out[:, 0].float(), scale).log_prob(y.float())
''', [(9, 16, "AMP001")]),
    "unpacking_a_cast_tensor": ('''\
        mu, log_std = out.float().chunk(2, dim=-1)
        return Normal(mu, log_std.exp()).log_prob(y.float())
''', []),
    "unpacking_a_tuple_element_by_element": ('''\
        mu, log_std = out[:, 0].float(), out[:, 1]
        return Normal(mu, log_std.exp()).log_prob(y.float())
''', [(9, 16, "AMP001")]),
    "a_log_under_a_floor_float16_keeps": ('''\
        p = out.softmax(-1)
        return torch.log(p.clamp_min(1e-3)) + torch.log(p + 1e-6)
''', []),
    "a_log_under_a_floor_float16_drops": ('''\
        p = out.softmax(-1)
        return torch.log(p + 1e-10)
''', [(9, 16, "AMP003"), (9, 30, "AMP004")]),
}


def _findings(path: Path) -> List[Tuple[int, int, str]]:
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--no-project", "--format", "json", str(path)],
                          capture_output=True, text=True, timeout=120)
    return [(f["line"], f["column"], f["code"]) for f in json.loads(done.stdout)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_an_update_or_a_select_keeps(tmp_path: Path, case: str) -> None:
    body, expected = CASES[case]
    path = tmp_path / f"{case}.py"
    path.write_text(HEADER + body)
    assert _findings(path) == expected


@pytest.mark.torch
def test_an_in_place_update_of_a_cast_tensor_is_float32_at_run_time() -> None:
    torch = pytest.importorskip("torch")
    head = torch.nn.Linear(4, 3)
    namespace: dict = {}
    exec(compile(HEADER + CASES["in_place_on_a_cast_tensor"][0], "m.py", "exec"), namespace)
    seen = []
    original = torch.softmax

    def watch(value, *args, **kwargs):
        seen.append(value.dtype)
        return original(value, *args, **kwargs)

    torch.softmax = watch
    try:
        namespace["loss"](head, torch.randn(8, 4), None, torch.tensor(0.5, dtype=torch.float16))
    finally:
        torch.softmax = original
    assert seen == [torch.float32]
