"""pre-commit hooks, for real: `pre-commit try-repo` against a snapshot of this checkout.

The snapshot (tracked plus untracked-but-not-ignored files, committed in a
scratch repository) is what a user gets from `rev:`, including changes not yet
committed here. pre-commit builds the hook environment with pip, which needs
the package index: the test is marked `network` so it can be skipped offline
(`-m "not network"`); CI runs it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import ROOT, run_amplint

BAD = '''import torch
from torch.distributions import Normal


def nll(mu, sigma, x):
    with torch.autocast("cuda"):
        return -Normal(mu, sigma).log_prob(x)
'''


def _env(home: Path) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    env.update(
        PRE_COMMIT_HOME=str(home),
        GIT_AUTHOR_NAME="amplint tests",
        GIT_AUTHOR_EMAIL="tests@example.invalid",
        GIT_COMMITTER_NAME="amplint tests",
        GIT_COMMITTER_EMAIL="tests@example.invalid",
        GIT_CONFIG_NOSYSTEM="1",
        PRE_COMMIT_COLOR="never",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    return env


def _git(args: List[str], cwd: Path, env: Dict[str, str]) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _checkout_files() -> List[str]:
    if (ROOT / ".git").exists():
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
        return sorted({name for name in out.split("\0") if name and (ROOT / name).is_file()})
    skip = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}
    return sorted(
        str(path.relative_to(ROOT)) for path in ROOT.rglob("*")
        if path.is_file() and not (set(path.relative_to(ROOT).parts) & skip) and ".egg-info" not in str(path)
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> Dict[str, object]:
    """A committed snapshot of this checkout, and a pre-commit home shared by the tests."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("pre_commit")
    base = tmp_path_factory.mktemp("precommit")
    env = _env(base / "home")
    snapshot = base / "amplint-snapshot"
    for name in _checkout_files():
        dest = snapshot / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest)
    assert (snapshot / ".pre-commit-hooks.yaml").is_file()
    _git(["init", "-q"], snapshot, env)
    _git(["add", "-A"], snapshot, env)
    _git(["commit", "-q", "--no-gpg-sign", "-m", "snapshot"], snapshot, env)
    return {"path": snapshot, "env": env, "base": base}


def _project(base: Path, name: str, files: Dict[str, str], env: Dict[str, str]) -> Path:
    project = base / name
    project.mkdir()
    _git(["init", "-q"], project, env)
    for rel, text in files.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text, encoding="utf-8")
    if files:
        _git(["add", "-A"], project, env)
    return project


def _try_repo(hook_repo: Dict[str, object], project: Path, hook: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo["path"]), hook, "--all-files", "--verbose"],
        cwd=project, env=hook_repo["env"], capture_output=True, text=True, timeout=900,
    )


@pytest.mark.network
def test_hook_fails_on_a_bad_file_then_fix_hook_fixes_it(hook_repo) -> None:
    project = _project(hook_repo["base"], "user-project", {"model/loss.py": BAD, "README.md": "hi\n"}, hook_repo["env"])

    first = _try_repo(hook_repo, project, "amplint")
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "model/loss.py:7:17: AMP001" in output
    assert "Failed" in output

    fixing = _try_repo(hook_repo, project, "amplint-fix")
    output = fixing.stdout + fixing.stderr
    assert fixing.returncode == 1, output  # pre-commit fails a hook that modified files
    assert "files were modified by this hook" in output
    fixed = (project / "model" / "loss.py").read_text(encoding="utf-8")
    assert "Normal(mu.float(), sigma.float()).log_prob(x.float())" in fixed

    again = _try_repo(hook_repo, project, "amplint")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Passed" in again.stdout


@pytest.mark.network
def test_hooks_with_no_python_files_are_skipped_quietly(hook_repo) -> None:
    project = _project(hook_repo["base"], "docs-only", {"README.md": "hi\n"}, hook_repo["env"])
    for hook in ("amplint", "amplint-fix"):
        proc = _try_repo(hook_repo, project, hook)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "(no files to check)Skipped" in proc.stdout


# ---------------------------------------------------------------------------
# What the hook entries rely on, without pre-commit (fast, offline).


def test_hook_entry_with_no_files_exits_zero_and_prints_nothing(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")  # would be found if "." were checked
    for extra in ([], ["--fix"]):
        proc = run_amplint(["check", "--no-default-paths", *extra], cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert (tmp_path / "bad.py").read_text(encoding="utf-8") == BAD


def test_hook_entry_checks_the_files_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(BAD, encoding="utf-8")
    proc = run_amplint(["check", "--no-default-paths", "bad.py"], cwd=tmp_path)
    assert proc.returncode == 1
    assert "bad.py:7:17: AMP001" in proc.stdout
    assert run_amplint(["check", "--no-default-paths", "."], cwd=tmp_path).returncode == 1


def test_hooks_file_declares_both_hooks_like_ruff_pre_commit() -> None:
    yaml = pytest.importorskip("yaml")  # pre-commit depends on PyYAML
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"amplint", "amplint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python"
        assert hook["types_or"] == ["python", "pyi", "jupyter"]
        assert hook["entry"].startswith("amplint check --no-default-paths")
    assert "--fix" in hooks["amplint-fix"]["entry"].split()
    assert "--fix" not in hooks["amplint"]["entry"].split()


NOTEBOOK = {
    "cells": [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["%matplotlib inline\n", "import torch\n", "from torch.distributions import Normal"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["def nll(mu, sigma, x):\n", "    with torch.autocast(\"cuda\"):\n",
                    "        return -Normal(mu, sigma).log_prob(x)"]},
    ],
    "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
}


@pytest.mark.network
def test_hooks_check_and_fix_jupyter_notebooks(hook_repo) -> None:
    import json

    text = json.dumps(NOTEBOOK, indent=1, ensure_ascii=False) + "\n"
    project = _project(hook_repo["base"], "notebooks", {"nb/explore.ipynb": text}, hook_repo["env"])
    first = _try_repo(hook_repo, project, "amplint")
    assert first.returncode == 1, first.stdout + first.stderr
    assert "nb/explore.ipynb:cell 2:3:17: AMP001" in first.stdout
    fixing = _try_repo(hook_repo, project, "amplint-fix")
    assert fixing.returncode == 1 and "files were modified by this hook" in fixing.stdout
    fixed = json.loads((project / "nb" / "explore.ipynb").read_text(encoding="utf-8"))
    assert fixed["cells"][1]["source"][2] == "        return -Normal(mu.float(), sigma.float()).log_prob(x.float())"
    assert fixed["cells"][0] == NOTEBOOK["cells"][0]
    assert _try_repo(hook_repo, project, "amplint").returncode == 0
