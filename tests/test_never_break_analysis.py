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
