"""`--statistics`, `--add-noqa`, `--output-format gitlab`, SARIF fingerprints, help text: through the real CLI."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest

from amplint.addnoqa import add_noqa
from amplint.cli import build_parser, main
from conftest import run_amplint

MODEL = '''import torch
from torch.distributions import Normal, kl_divergence


def loss(net, x, y, prior):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, log_std = net(x)
        nll = -Normal(mu, log_std.exp()).log_prob(y).mean()
        kl = kl_divergence(Normal(mu, log_std.exp()), prior).mean()
    with torch.autocast("cuda", enabled=False):
        return nll + kl + Normal(mu, 1.0).log_prob(y).mean()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(MODEL)
    return tmp_path


def _findings(project: Path):
    proc = run_amplint(["check", "--format", "json", "."], cwd=project)
    return [(f["path"], f["line"], f["column"], f["code"]) for f in json.loads(proc.stdout)]


def test_the_project_has_three_findings_of_two_rules(project: Path) -> None:
    assert _findings(project) == [
        ("model.py", 8, 16, "AMP001"), ("model.py", 9, 14, "AMP001"), ("model.py", 11, 27, "AMP002")
    ]


def test_statistics_count_per_rule(project: Path) -> None:
    proc = run_amplint(["check", "--statistics", "."], cwd=project)
    assert proc.returncode == 1
    assert proc.stdout == "2\tAMP001\t[*] float16-probability\n1\tAMP002\t[*] disabled-autocast-without-cast\n"
    rows = json.loads(run_amplint(["check", "--statistics", "--format", "json", "."], cwd=project).stdout)
    assert rows == [
        {"code": "AMP001", "name": "float16-probability", "count": 2, "fixable": 2},
        {"code": "AMP002", "name": "disabled-autocast-without-cast", "count": 1, "fixable": 1},
    ]


def test_add_noqa_silences_every_finding_and_is_idempotent(project: Path) -> None:
    proc = run_amplint(["check", "--add-noqa", "."], cwd=project)
    assert (proc.returncode, proc.stdout) == (0, "Added a `# noqa` comment for 3 findings in 1 file.\n")
    text = (project / "model.py").read_text()
    assert text == (
        MODEL.replace("log_prob(y).mean()\n        kl", "log_prob(y).mean()  # noqa: AMP001\n        kl")
        .replace("prior).mean()\n", "prior).mean()  # noqa: AMP001\n")
        .replace("log_prob(y).mean()\n", "log_prob(y).mean()  # noqa: AMP002\n")
    )
    compile(text, "model.py", "exec")
    assert _findings(project) == []
    again = run_amplint(["check", "--add-noqa", "."], cwd=project)
    assert again.stdout == "Added a `# noqa` comment for 0 findings in 0 files.\n"
    assert (project / "model.py").read_text() == text


@pytest.mark.parametrize(
    "text,targets,expected",
    [
        ("x = f(a,\n      b)\n", [(1, "AMP001")], "x = f(a,  # noqa: AMP001\n      b)\n"),
        ("y = g()  # hi\n", [(1, "AMP001")], "y = g()  # hi  # noqa: AMP001\n"),
        ("z = h()  # noqa: AMP002\n", [(1, "AMP001")], "z = h()  # noqa: AMP002,AMP001\n"),
        ("w = \\\n  k()\n", [(1, "AMP001")], "w = \\\n  k()  # noqa: AMP001\n"),
        ("s = '''a\nb''' + m()\n", [(1, "AMP001")], "s = '''a\nb''' + m()  # noqa: AMP001\n"),
        ("a = b()\r\n", [(1, "AMP001"), (1, "AMP002")], "a = b()  # noqa: AMP001,AMP002\r\n"),
        ("a = (\n", [(1, "AMP001")], "a = (\n"),  # does not tokenize: left alone
    ],
)
def test_add_noqa_puts_the_comment_where_noqa_is_read(text: str, targets, expected: str) -> None:
    assert add_noqa(text, targets) == expected
    assert add_noqa(expected, targets) == expected


def test_gitlab_code_quality_report(project: Path) -> None:
    proc = run_amplint(["check", "--output-format", "gitlab", "."], cwd=project)
    assert proc.returncode == 1
    issues = json.loads(proc.stdout)
    assert [(i["check_name"], i["location"]["path"], i["location"]["lines"]) for i in issues] == [
        ("AMP001", "model.py", {"begin": 8, "end": 8}),
        ("AMP001", "model.py", {"begin": 9, "end": 9}),
        ("AMP002", "model.py", {"begin": 11, "end": 11}),
    ]
    assert all(i["severity"] == "major" and i["description"].startswith(i["check_name"] + ": ") for i in issues)
    assert len({i["fingerprint"] for i in issues}) == 3


def _fingerprints(project: Path):
    log = json.loads(run_amplint(["check", "--format", "sarif", "."], cwd=project).stdout)
    return [(r["locations"][0]["physicalLocation"]["region"]["startLine"], r["partialFingerprints"]["amplintFingerprint/v1"])
            for r in log["runs"][0]["results"]]


def test_sarif_fingerprints_are_stable_across_runs_and_line_shifts(project: Path) -> None:
    first = _fingerprints(project)
    assert len({fingerprint for _, fingerprint in first}) == 3
    assert _fingerprints(project) == first
    (project / "model.py").write_text("# a new header\n\n\n" + MODEL)
    shifted = _fingerprints(project)
    assert [line for line, _ in shifted] == [line + 3 for line, _ in first]
    assert [fingerprint for _, fingerprint in shifted] == [fingerprint for _, fingerprint in first]


def test_sarif_fingerprints_tell_identical_lines_apart(tmp_path: Path) -> None:
    twice = MODEL.replace("        kl = kl_divergence(Normal(mu, log_std.exp()), prior).mean()\n",
                          "        nll = -Normal(mu, log_std.exp()).log_prob(y).mean()\n")
    (tmp_path / "model.py").write_text(twice)
    found = _fingerprints(tmp_path)
    assert [line for line, _ in found] == [8, 9, 11]
    assert len({fingerprint for _, fingerprint in found}) == 3


def _parsers(parser: argparse.ArgumentParser, name: str = "amplint"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from _parsers(child, f"{name} {sub}")


def test_every_option_and_subcommand_has_help_text() -> None:
    missing = []
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                missing += [f"{name} {c.dest}" for c in action._choices_actions if not c.help]
            elif not action.help:
                missing.append(f"{name} {action.option_strings or action.dest}")
    assert missing == []
    text = run_amplint(["--help"]).stdout
    assert "other modules add" not in text
    for command in ("check", "rule", "config", "server", "verify"):
        assert f"    {command} " in text


def test_output_format_is_an_alias_of_format(project: Path) -> None:
    assert run_amplint(["check", "--output-format", "json", "."], cwd=project).stdout == run_amplint(
        ["check", "--format", "json", "."], cwd=project
    ).stdout


def test_server_without_pygls_is_one_line_with_the_install_hint(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "pygls", None)  # `import pygls` now raises ImportError
    monkeypatch.delitem(sys.modules, "amplint.lsp.server", raising=False)
    assert main(["server"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("amplint: error: the language server needs pygls and lsprotocol")
    assert line.endswith("pip install 'amplint[lsp]' (in a clone: pip install '.[lsp]')")
