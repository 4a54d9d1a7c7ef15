"""Never break, round two: a checked-out repository is untrusted input (N1, N7).

N1: `[tool.amplint] src` (or a `--config` file's) that leads outside the config file's directory is refused
with one line, and no cache is written outside the project. N7: `python -m amplint` never imports a module
from the current directory (`tomllib/`, `libcst/`), whatever the subcommand.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_amplint

BAD = '''import torch
from torch.distributions import Normal


def nll(mu, sigma, x):
    with torch.autocast("cuda"):
        return -Normal(mu, sigma).log_prob(x)
'''


def _repository(tmp_path: Path, src: str) -> Path:
    """`tmp_path/outer/repo`, a repository whose pyproject.toml sets `src`, beside a sibling directory."""
    outer = tmp_path / "outer"
    (outer / "sibling").mkdir(parents=True)
    (outer / "sibling" / "other.py").write_text(BAD)
    repo = outer / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "pyproject.toml").write_text(f'[tool.amplint]\nsrc = ["{src}"]\n')
    (repo / "ok.py").write_text("x = 1\n")
    return repo


@pytest.mark.parametrize("src", ["..", "../../../../../../../../../../", "/", "sub/../.."])
def test_src_outside_the_repository_is_refused(tmp_path: Path, src: str) -> None:
    repo = _repository(tmp_path, src)
    proc = run_amplint(["check", "ok.py"], cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "outside" in lines[0] and "'src'" in lines[0], proc.stderr
    assert not (tmp_path / "outer" / ".amplint_cache").exists()
    assert not (tmp_path / ".amplint_cache").exists()
    assert "other.py" not in proc.stdout


def test_src_through_a_link_that_leaves_is_refused(tmp_path: Path) -> None:
    repo = _repository(tmp_path, "escape")
    (repo / "escape").symlink_to(tmp_path / "outer" / "sibling", target_is_directory=True)
    proc = run_amplint(["check", "ok.py"], cwd=repo)
    assert proc.returncode == 2 and "outside" in proc.stderr, proc.stdout + proc.stderr
    assert not (tmp_path / "outer" / "sibling" / ".amplint_cache").exists()


def test_a_named_config_file_cannot_lead_out_either(tmp_path: Path) -> None:
    repo = _repository(tmp_path, ".")
    (repo / "conf").mkdir()
    (repo / "conf" / "amplint.toml").write_text('src = ["../.."]\n')
    proc = run_amplint(["check", "--config", "conf/amplint.toml", "ok.py"], cwd=repo)
    assert proc.returncode == 2 and "outside" in proc.stderr, proc.stdout + proc.stderr
    assert not (tmp_path / "outer" / ".amplint_cache").exists()


def test_src_inside_the_repository_still_works(tmp_path: Path) -> None:
    repo = _repository(tmp_path, "pkg")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "model.py").write_text(BAD)
    proc = run_amplint(["check", "pkg/model.py"], cwd=repo)
    assert proc.returncode == 1 and "AMP001" in proc.stdout, proc.stdout + proc.stderr
    assert not (tmp_path / "outer" / ".amplint_cache").exists()


PLANTED = 'import os\nopen(os.path.join(os.path.dirname(__file__), os.pardir, "PWNED-{name}"), "w").close()\n'


@pytest.mark.parametrize("module", ["tomllib", "libcst"])
@pytest.mark.parametrize("args", [["check", "model.py"], ["check", "--fix", "model.py"], ["rule", "AMP001"],
                                  ["rule", "--all"], ["config"]])
def test_python_m_amplint_never_imports_the_current_directory(tmp_path: Path, module: str, args) -> None:
    (tmp_path / module).mkdir()
    (tmp_path / module / "__init__.py").write_text(PLANTED.format(name=module))
    (tmp_path / "model.py").write_text(BAD)
    proc = run_amplint(args, cwd=tmp_path)
    assert not (tmp_path / f"PWNED-{module}").exists(), proc.stdout + proc.stderr
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
