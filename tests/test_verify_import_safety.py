"""`amplint verify` imports installed packages only, never the analysed project's (issue 17).

A finding uses `pyro.distributions`, pyro is not installed, and the project
has a `pyro/` folder: importing it would run the project's code. verify must
fall back to torch's class with its note instead, and the planted code must
not run, whether the project is the current directory or on PYTHONPATH.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amplint.verify.syspath import strip_project_paths

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parent.parent
PLANTED = 'import os\nopen(os.path.join(os.path.dirname(__file__), os.pardir, "PWNED"), "w").close()\n'
TRAIN = '''\
import torch
import pyro.distributions as dist


def loss(head, h, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        return dist.Normal(out, out.exp()).log_prob(x)
'''


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    (project / "pyro" / "distributions").mkdir(parents=True)
    (project / "pyro" / "__init__.py").write_text(PLANTED)
    inner = PLANTED.replace("os.pardir", "os.pardir, os.pardir")
    (project / "pyro" / "distributions" / "__init__.py").write_text(inner)
    (project / "train.py").write_text(TRAIN)
    return project


@pytest.mark.skipif(importlib.util.find_spec("pyro") is not None, reason="needs pyro not installed")
@pytest.mark.parametrize("where", ["cwd", "pythonpath"])
def test_verify_never_imports_the_projects_package(tmp_path: Path, where: str) -> None:
    project = _project(tmp_path)
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    cwd = project
    if where == "pythonpath":
        env["PYTHONPATH"] = str(project)
        cwd = tmp_path
    result = subprocess.run(
        [sys.executable, "-m", "amplint", "verify", "--batch", "1024", str(project)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
    )
    assert not (project / "PWNED").exists(), result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "pyro is not installed: ran torch.distributions.Normal" in result.stdout, result.stdout
    assert "1 confirmed" in result.stdout


def test_strip_keeps_installed_packages_inside_the_project(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    site = project / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (project / "train.py").write_text("x = 1\n")
    other = tmp_path / "other"
    other.mkdir()
    search = ["", str(project), str(site), str(other), str(project / "."), os.getcwd()]
    removed = strip_project_paths([str(project / "train.py")], search)
    assert search == [str(site), str(other)]
    assert removed == ["", str(project), str(project / "."), os.getcwd()]
