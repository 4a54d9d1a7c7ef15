"""`--fix` does what `check` promised, through the real CLI: a finding `amplint check FILE` calls fixable is fixed
by `amplint check --fix FILE` even when its edit lands in another file of the project, and the run says which
files it changed (ruff's convention: a fix is applied or not, never promised in vain)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_amplint

MODEL = '''import torch
from torch.distributions import Normal


def make_dist(net, x):
    mu, log_std = net(x)
    return Normal(mu, log_std.exp())
'''
TRAIN = '''import torch

from model import make_dist


def step(net, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        dist = make_dist(net, x)
        return -dist.log_prob(y).mean()
'''
FIXED_MODEL = MODEL.replace("Normal(mu, log_std.exp())", "Normal(mu.float(), log_std.float().exp())")
FIXED_TRAIN = TRAIN.replace("log_prob(y)", "log_prob(y.float())")


def _notebook(text: str) -> str:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text.splitlines(True)}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def test_fix_of_a_named_file_fixes_what_check_of_it_promised(project: Path) -> None:
    check = run_amplint(["check", "train.py"], cwd=project)
    assert check.stdout.startswith("train.py:9:17: AMP001 [*] `Normal.log_prob`")
    assert check.stdout.endswith("Found 1 finding, 1 fixable with `amplint check --fix`.\n")
    fix = run_amplint(["check", "--fix", "train.py"], cwd=project)
    assert (fix.returncode, fix.stderr) == (0, "")
    assert fix.stdout == ("Fixed 1 finding, 0 remaining.\nChanged 2 files: train.py, model.py (model.py not named: it "
                          "builds a distribution a fixed finding reads).\n")
    assert (project / "train.py").read_text() == FIXED_TRAIN
    assert (project / "model.py").read_text() == FIXED_MODEL
    assert run_amplint(["check", "."], cwd=project).stdout == "Found 0 findings.\n"


def test_diff_of_a_named_file_shows_the_edit_in_the_other_file_and_writes_nothing(project: Path) -> None:
    diff = run_amplint(["check", "--diff", "train.py"], cwd=project)
    assert diff.returncode == 1 and diff.stderr == "Would fix 1 finding, 0 remaining.\n"
    assert "--- model.py\n+++ model.py\n" in diff.stdout
    assert "+    return Normal(mu.float(), log_std.float().exp())\n" in diff.stdout
    assert (project / "model.py").read_text() == MODEL and (project / "train.py").read_text() == TRAIN


def test_fix_of_a_notebook_fixes_what_check_of_it_promised(project: Path) -> None:
    (project / "train.py").unlink()
    (project / "nb.ipynb").write_text(_notebook(TRAIN))
    check = run_amplint(["check", "nb.ipynb"], cwd=project)
    assert check.stdout.endswith("Found 1 finding, 1 fixable with `amplint check --fix`.\n")
    fix = run_amplint(["check", "--fix", "nb.ipynb"], cwd=project)
    assert fix.returncode == 0 and fix.stdout.startswith("Fixed 1 finding, 0 remaining.\n")
    assert (project / "nb.ipynb").read_text() == _notebook(FIXED_TRAIN)
    assert (project / "model.py").read_text() == FIXED_MODEL


def test_the_other_files_own_findings_are_left_to_a_run_that_names_it(project: Path) -> None:
    """`--fix train.py` casts model.py's constructor for train.py's finding, and nothing else of model.py."""
    own = '''

def own(net, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, log_std = net(x)
        return Normal(mu, log_std.exp()).log_prob(y)
'''
    (project / "model.py").write_text(MODEL + own)
    fix = run_amplint(["check", "--fix", "train.py"], cwd=project)
    assert fix.returncode == 0 and fix.stdout.startswith("Fixed 1 finding, 0 remaining.\n")
    assert (project / "model.py").read_text() == FIXED_MODEL + own
    assert run_amplint(["check", "model.py"], cwd=project).stdout.endswith(
        "Found 1 finding, 1 fixable with `amplint check --fix`.\n")


def test_a_fix_that_spans_files_is_written_to_all_of_them_or_none(project: Path) -> None:
    """A read-only train.py: model.py is not rewritten either, and the finding is printed and counted."""
    train = project / "train.py"
    train.chmod(0o444)
    try:
        fix = run_amplint(["check", "--fix", "."], cwd=project)
    finally:
        train.chmod(0o644)
    assert (project / "model.py").read_text() == MODEL and train.read_text() == TRAIN
    assert fix.returncode == 2
    assert fix.stderr == "train.py: error: cannot write: the file is read-only; file left unchanged\n"
    assert fix.stdout.startswith("train.py:9:17: AMP001 [*] `Normal.log_prob` runs in")
    assert fix.stdout.endswith("Fixed 0 findings, 1 remaining (1 not fixed: the fix spans files and train.py cannot "
                               "be written), 1 file with errors.\n")


def test_a_read_only_file_keeps_its_findings_in_the_count(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    alone = tmp_path / "alone.py"
    alone.write_text(MODEL + '''

def own(net, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, log_std = net(x)
        return Normal(mu, log_std.exp()).log_prob(y)
''')
    alone.chmod(0o444)
    try:
        fix = run_amplint(["check", "--fix", "."], cwd=tmp_path)
    finally:
        alone.chmod(0o644)
    assert fix.returncode == 2 and "alone.py:13:16: AMP001" in fix.stdout
    assert fix.stdout.endswith("Fixed 0 findings, 1 remaining, 1 file with errors.\n")


def test_a_file_fix_refuses_is_not_called_fixable(tmp_path: Path) -> None:
    """Tabs and spaces mixed as CPython allows: checked with tabs expanded, never rewritten, so never `[*]`."""
    mixed = ("import torch\nimport torch.distributions as D\n\n\ndef nll(model, h, x):\n    if h:\n\t    z = 1\n"
             "    with torch.autocast(\"cuda\"):\n\t    mu, sigma = model(h)\n"
             "\t    return -D.Normal(mu, sigma).log_prob(x)\n")
    (tmp_path / "mixed.py").write_text(mixed)
    check = run_amplint(["check", "mixed.py"], cwd=tmp_path)
    assert check.stdout.startswith("mixed.py:10:14: AMP001 `Normal.log_prob`")
    assert check.stdout.endswith("Found 1 finding.\n")
    found = json.loads(run_amplint(["check", "--format", "json", "mixed.py"], cwd=tmp_path).stdout)
    assert [finding["fixable"] for finding in found] == [False]
