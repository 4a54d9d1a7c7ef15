"""`--format github`: one `::warning` workflow command per finding, escaped as the Actions runner expects."""
from __future__ import annotations

import json
import re
from pathlib import Path

from amplint.github import annotation, error_annotation, github_report
from amplint.model import FileError, Finding
from conftest import FIXTURES, run_amplint

COMMAND = re.compile(
    r"^::warning file=(?P<file>[^,]+),line=(?P<line>\d+),col=(?P<col>\d+),"
    r"endLine=(?P<end_line>\d+),endColumn=(?P<end_col>\d+),title=(?P<title>AMP\d{3})::(?P<message>.+)$"
)


def test_cli_prints_one_annotation_per_finding_matching_json() -> None:
    target = str(FIXTURES / "check")
    proc = run_amplint(["check", target, "--format", "github"])
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(run_amplint(["check", target, "--format", "json"]).stdout)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(findings) > 10
    for line, finding in zip(lines, findings):
        match = COMMAND.match(line)
        assert match, line
        assert match["file"] == finding["path"]
        assert (int(match["line"]), int(match["col"])) == (finding["line"], finding["column"])
        assert (int(match["end_line"]), int(match["end_col"])) == (finding["end_line"], finding["end_column"])
        assert match["title"] == finding["code"]
        assert match["message"] == finding["message"]


def test_clean_run_prints_nothing_and_exits_zero(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("x = 1\n", encoding="utf-8")
    proc = run_amplint(["check", str(tmp_path), "--format", "github"])
    assert (proc.returncode, proc.stdout) == (0, "")


def test_unreadable_file_is_an_error_annotation(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torch\nwith torch.autocast('cuda'):\n    x = d.log_prob(\n", encoding="utf-8")
    proc = run_amplint(["check", "broken.py", "--format", "github"], cwd=tmp_path)
    assert proc.returncode == 2  # nothing could be checked
    assert proc.stdout.startswith("::error file=broken.py,title=amplint::syntax error")


def test_escaping_of_properties_and_message() -> None:
    finding = Finding("dir,1/a:b.py", 3, 5, 3, 9, "AMP001", "50% of\nlines\r")
    assert annotation(finding) == (
        "::warning file=dir%2C1/a%3Ab.py,line=3,col=5,endLine=3,endColumn=9,title=AMP001::50%25 of%0Alines%0D"
    )
    error = FileError("x.py", "cannot read: 100%")
    assert error_annotation(error) == "::error file=x.py,title=amplint::cannot read: 100%25"
    assert github_report([], []) == ""
