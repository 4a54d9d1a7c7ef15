"""Never break, round two: a valid file is never called a syntax error (N13).

A form feed followed by four spaces at the start of a `with` line, after a comment line: CPython compiles it
(its tokenizer counts the indentation from the form feed), LibCST's tokenizer said "no matching outer block
for dedent". The CLI and the flake8 plugin must both report the file's finding, at CPython's position.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_amplint

FORM_FEED_WITH = (
    "import torch\nfrom torch.distributions import Normal\n\n\n"
    "def f(mu, sigma, x):\n    # a comment line\n\f    with torch.autocast(\"cuda\"):\n"
    "        return Normal(mu, sigma).log_prob(x)\n"
)
FORM_FEED_SITE = (
    "import torch\nfrom torch.distributions import Normal\n\n\n"
    "def f(mu, sigma, x):\n    # a comment line\n    with torch.autocast(\"cuda\"):\n"
    "        # another\n\f        return Normal(mu, sigma).log_prob(x)\n"
)


@pytest.mark.parametrize("text, line, column", [(FORM_FEED_WITH, 8, 16), (FORM_FEED_SITE, 9, 17)])
def test_a_form_feed_in_an_indent_is_read_as_cpython_reads_it(
    tmp_path: Path, text: str, line: int, column: int
) -> None:
    compile(text, "ff.py", "exec")  # valid Python
    (tmp_path / "ff.py").write_text(text)
    for extra in ([], ["--no-project"]):
        proc = run_amplint(["check", "--format", "json", *extra, "ff.py"], cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        (finding,) = json.loads(proc.stdout)
        assert (finding["code"], finding["line"], finding["column"]) == ("AMP001", line, column)
    assert text.split("\n")[line - 1][column - 1:].startswith("Normal(")  # not splitlines: it splits at form feeds
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--select", "AMP", "ff.py"], cwd=tmp_path,
                            capture_output=True, text=True, env=env, timeout=300)
    assert f"ff.py:{line}:{column}: AMP001" in flake8.stdout, flake8.stdout + flake8.stderr


MODULE_CALL = '''import torch
from torch import nn
from torch.distributions import Normal


class Model(nn.Module):
    def forward(self, x):
        mu, sigma = self.head(x)
        return Normal(mu, sigma).log_prob(x)


model = Model()


def train(X):
    with torch.autocast("cuda"):
        return model(X)
'''


def test_no_project_follows_a_call_of_a_module_made_in_the_same_file(tmp_path: Path) -> None:
    """N14: `model = Model()` at top level, `model(X)` in a region, the log-prob in `Model.forward`: one finding
    with `--no-project` as without it."""
    (tmp_path / "m.py").write_text(MODULE_CALL)
    for extra in (["--no-project"], []):
        proc = run_amplint(["check", "--format", "json", *extra, "m.py"], cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        (finding,) = json.loads(proc.stdout)
        assert (finding["code"], finding["line"], finding["column"]) == ("AMP001", 9, 16), extra
    rebound = MODULE_CALL.replace("model = Model()", "model = Model()\nmodel = make_other()")
    (tmp_path / "m.py").write_text(rebound)
    proc = run_amplint(["check", "--format", "json", "--no-project", "m.py"], cwd=tmp_path)
    assert json.loads(proc.stdout) == [], proc.stdout  # the name no longer holds a Model


HELPERS_WITH_A_LONG_INTEGER = '''import torch

BIG = {digits}


def nll(probs):
    return -torch.log(probs + 1e-10).mean()
'''
TRAIN_WITH_HELPERS = '''import torch
from torch import nn

from helpers import nll

net = nn.Linear(4, 3)
with torch.autocast("cpu", dtype=torch.float16):
    loss = nll(net(torch.randn(8, 4)).softmax(-1))
'''


def test_a_module_constant_past_floats_range_and_a_long_run_of_digits_are_read(tmp_path: Path) -> None:
    """N15: a 4,000-digit integer constant (sympy's tests hold 1,864-digit ones). Reading the module's number
    constants called `float` on it, and the OverflowError ended the run with a traceback; the text search for
    tiny float literals backtracked cubically in the run of digits (58 s at 1,864 digits, minutes at 4,000).
    Both files are read, in project mode and alone, and the helper's findings are the same."""
    (tmp_path / "helpers.py").write_text(HELPERS_WITH_A_LONG_INTEGER.format(digits="7" * 4000))
    (tmp_path / "train.py").write_text(TRAIN_WITH_HELPERS)
    proc = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=dict(os.environ, AMPLINT_NO_CACHE="1"))
    assert proc.stderr == "" and proc.returncode == 1, proc.stderr[-2000:]
    found = [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(proc.stdout)]
    assert found == [("helpers.py", 7, 13, "AMP003"), ("helpers.py", 7, 31, "AMP004")]
    alone = run_amplint(["check", "--format", "json", "--no-project", "helpers.py"], cwd=tmp_path)
    assert alone.returncode == 0 and json.loads(alone.stdout) == [], alone.stderr  # no region reaches it alone
