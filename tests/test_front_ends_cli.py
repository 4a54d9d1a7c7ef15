"""The command line says what it does: unknown codes, unparsable files, risk thresholds, option pairs, `-j`,
the `[*]` marker and the lone-file notice, each through the real CLI in a subprocess."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import run_amplint

MODEL = '''import torch
from torch.distributions import Normal


def loss(net, x, y, dist):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, log_std = net(x)
        nll = -Normal(mu, log_std.exp()).log_prob(y).mean()
        return nll + dist.log_prob(y).mean()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "p"\n')
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


# --- item 4: unknown codes on the command line ---------------------------------------------------------------

@pytest.mark.parametrize("argv, code", [
    (["--select", "AMP999"], "AMP999"), (["--select", "E501"], "E501"), (["--ignore", "XYZ"], "XYZ"),
    (["--select", "AMP001,amp9"], "AMP9"),
])
def test_an_unknown_code_on_the_command_line_is_one_line_and_exit_2(project: Path, argv, code: str) -> None:
    result = run_amplint(["check", *argv, "."], cwd=project)
    flag = argv[0]
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (f"amplint: error: {flag}: {code!r} matches no rule; known rules: "
                             "AMP001, AMP002, AMP003, AMP004\n")


def test_a_known_prefix_is_accepted(project: Path) -> None:
    result = run_amplint(["check", "--select", "AMP0", "--ignore", "AMP003", "."], cwd=project)
    assert result.returncode == 1 and result.stderr == ""


# --- item 5: every file that cannot be parsed is reported ----------------------------------------------------

def test_a_syntax_error_is_reported_whatever_the_file_holds(project: Path) -> None:
    (project / "broken.py").write_text("import torch\ndef f(:\n    pass\n")
    for argv, code in ((["."], 1), (["broken.py"], 2), (["--no-project", "."], 1)):  # 2: nothing else checked
        result = run_amplint(["check", *argv], cwd=project)
        assert "broken.py: error: syntax error at line 2, column 7: invalid syntax\n" in result.stderr, argv
        assert result.returncode == code and "1 file could not be checked" in result.stdout, argv


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="type parameters parse from Python 3.12")
def test_syntax_of_a_newer_python_names_the_python_it_needs(project: Path) -> None:
    (project / "generic.py").write_text("class P[T]:\n    pass\n")
    result = run_amplint(["check", "generic.py"], cwd=project)
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert result.stderr == (
        "generic.py: error: line 1 uses type parameters (PEP 695), which needs Python 3.12 or newer; amplint runs "
        f"on Python {running} here: run it with a newer Python to check this file\n")
    assert result.returncode == 2  # nothing could be checked


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="PEP 701 f-strings parse from Python 3.12")
def test_an_f_string_of_a_newer_python_names_it_and_a_broken_one_stays_a_syntax_error() -> None:
    from amplint.deep import syntax_error

    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for line in ('label = f"{row["name"]}"', "label = f'{d['k']!r:>8}'", 'p = rf"{m["a"]}\\d"'):
        assert syntax_error(f"import torch\n{line}\n") == (
            "line 2 uses its f-string's own quote inside the braces (PEP 701), which needs Python 3.12 or newer; "
            f"amplint runs on Python {running} here: run it with a newer Python to check this file"), line
    for line in ('label = f"{row"', 'label = f"{{"a"}}"', 'label = f"{x}" + f"{y"'):  # broken on every Python
        message = syntax_error(f"import torch\n{line}\n")
        assert message is not None and message.startswith("syntax error at line 2"), line


# --- item 7: unknown risk is not below low ---------------------------------------------------------------------

def _risks(project: Path, *argv: str) -> list:
    result = run_amplint(["check", "--format", "json", *argv, "."], cwd=project)
    return sorted(finding["risk"]["level"] for finding in json.loads(result.stdout))


def test_min_risk_keeps_unknown_unless_hidden(project: Path) -> None:
    assert _risks(project) == ["low", "unknown"]
    assert _risks(project, "--min-risk", "low") == ["low", "unknown"]
    assert _risks(project, "--min-risk", "high") == ["unknown"]
    assert _risks(project, "--min-risk", "low", "--hide-unknown") == ["low"]
    assert _risks(project, "--hide-unknown") == ["low"]
    assert _risks(project, "--min-risk", "high", "--hide-unknown") == []


# --- item 11: the smaller ones ---------------------------------------------------------------------------------

def test_a_missing_config_file_is_named_once(project: Path) -> None:
    result = run_amplint(["check", "--config", "nope.toml", "."], cwd=project)
    assert (result.returncode, result.stderr) == (
        2, "amplint: error: nope.toml: cannot read: No such file or directory\n")


@pytest.mark.parametrize("argv, message", [
    (["--fix", "--diff"], "--fix cannot be combined with --diff: choose one"),
    (["--add-noqa", "--fix"], "--fix cannot be combined with --add-noqa: choose one"),
    (["--diff", "--add-noqa"], "--diff cannot be combined with --add-noqa: choose one"),
])
def test_two_rewriting_actions_are_refused_and_nothing_is_written(project: Path, argv, message: str) -> None:
    before = (project / "model.py").read_text()
    result = run_amplint(["check", *argv, "."], cwd=project)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", f"amplint: error: {message}\n")
    assert (project / "model.py").read_text() == before


def test_more_jobs_than_cpus_are_capped_with_a_warning(project: Path) -> None:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    result = run_amplint(["check", "-j", "64", "."], cwd=project)
    plural = "s" if cpus != 1 else ""
    assert result.stderr == f"amplint: warning: 64 jobs asked for, {cpus} usable CPU{plural}: using {cpus}\n"
    assert result.returncode == 1


def test_text_output_marks_each_fixable_finding(project: Path) -> None:
    result = run_amplint(["check", "."], cwd=project)
    lines = [line for line in result.stdout.splitlines() if line.startswith("model.py:")]
    assert lines[0].startswith("model.py:8:16: AMP001 [*] `Normal.log_prob` runs in")
    assert lines[1].startswith("model.py:9:22: AMP001 `log_prob` runs in")  # built out of sight: no fix
    assert result.stdout.endswith("Found 2 findings, 1 fixable with `amplint check --fix`.\n")


def test_a_file_with_no_project_above_it_is_said_to_be_checked_alone(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    assert run_amplint(["check", "model.py"], cwd=tmp_path).stderr == ""  # alone in its directory: same findings
    (tmp_path / "train.py").write_text("import model\n")
    result = run_amplint(["check", "model.py"], cwd=tmp_path)
    assert result.stderr == ("amplint: note: no project found above model.py (no pyproject.toml, setup.cfg, "
                             "setup.py or .git); checking it alone\n")
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / "setup.py").write_text("")
    (marked / "model.py").write_text(MODEL)
    assert run_amplint(["check", "model.py"], cwd=marked).stderr == ""
