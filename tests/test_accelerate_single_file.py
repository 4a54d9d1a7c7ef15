"""Accelerate's regions in a file checked alone (`--no-project`): an `Accelerator(...)` the file builds opens its
region there as in project mode.

`with accelerator.autocast():` on a name or `self.` attribute bound to `Accelerator(mixed_precision="fp16")`, and
`with ctx():` where `ctx = accelerator.autocast`, were regions only in project mode: the same file checked with
`--no-project` reported nothing. What needs the project (an accelerator given as a parameter, a model prepared in
another function) stays project mode's.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import List, Sequence, Tuple

from conftest import run_amplint

SOURCE = '''\
from accelerate import Accelerator
from torch.distributions import Normal


class Trainer:
    def __init__(self, head):
        self.head = head
        self.accelerator = Accelerator(mixed_precision="fp16")

    def step(self, x):
        with self.accelerator.autocast():
            out = self.head(x)
            return Normal(out[:, 0], out[:, 1].exp()).log_prob(x[:, 0])

    def bf16(self, x):
        accelerator = Accelerator(mixed_precision="bf16")
        ctx = accelerator.autocast
        with ctx():
            out = self.head(x)
            return Normal(out[:, 0], out[:, 1].exp()).log_prob(x[:, 0])

    def fp16(self, x):
        accelerator = Accelerator(mixed_precision="fp16")
        ctx = accelerator.autocast
        with ctx():
            out = self.head(x)
            return Normal(out[:, 0], out[:, 1].exp()).log_prob(x[:, 0])

    def given(self, accelerator, x):
        with accelerator.autocast():
            out = self.head(x)
            return Normal(out[:, 0], out[:, 1].exp()).log_prob(x[:, 0])
'''
Row = Tuple[int, int, str, str]


def _check(args: Sequence[str], cwd: Path) -> List[Row]:
    proc = run_amplint(["check", "--format", "json", *args], cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((f["line"], f["column"], f["code"], f["message"]) for f in json.loads(proc.stdout))


def test_a_file_alone_opens_the_regions_of_the_accelerators_it_builds(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    (tmp_path / "train.py").write_text(SOURCE)
    alone = _check(["--no-project", "train.py"], tmp_path)
    assert [row[:3] for row in alone] == [(13, 20, "AMP001"), (27, 20, "AMP001")]
    assert "accelerator.autocast() region of Accelerator(mixed_precision=\"fp16\") at line 11" in alone[0][3]
    assert "at line 25" in alone[1][3]
    # The same findings, word for word, as the project run; the parameter's accelerator (line 32) opens no
    # region in either: nothing in the project gives it one.
    assert _check(["train.py"], tmp_path) == alone


def test_fix_a_file_alone_casts_in_an_accelerator_region(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    proc = run_amplint(["check", "--no-project", "--fix", str(path)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fixed = path.read_text()
    ast.parse(fixed)
    lines = fixed.splitlines()
    assert lines[12].strip() == "return Normal(out[:, 0].float(), out[:, 1].float().exp()).log_prob(x[:, 0].float())"
    assert lines[26].strip() == lines[12].strip()
    assert lines[19].strip() == "return Normal(out[:, 0], out[:, 1].exp()).log_prob(x[:, 0])"  # bfloat16: kept
    assert _check(["--no-project", str(path)], tmp_path) == []
