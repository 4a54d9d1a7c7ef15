"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

The runner turns `::warning file=…,line=…::message` lines on stdout into
annotations on the pull request diff, with no upload step and no SARIF.
"""
from __future__ import annotations

from typing import Iterable, List, Sequence

from amplint.model import FileError, Finding, Notice


def _escape_data(text: str) -> str:
    """What the runner un-escapes in a command's message (actions/toolkit `escapeData`)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """Property values also end at `,` and `:` (actions/toolkit `escapeProperty`)."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(kind: str, properties: Iterable[tuple], message: str) -> str:
    props = ",".join(f"{key}={_escape_property(str(value))}" for key, value in properties)
    return f"::{kind} {props}::{_escape_data(message)}"


def annotation(finding: Finding) -> str:
    return _command(
        "warning",
        (
            ("file", finding.path),
            ("line", finding.line),
            ("col", finding.column),
            ("endLine", finding.end_line),
            ("endColumn", finding.end_column),
            ("title", finding.code if finding.cell is None else f"{finding.code} (cell {finding.cell})"),
        ),
        finding.message,
    )


def error_annotation(error: FileError) -> str:
    return _command("error", (("file", error.path), ("title", "amplint")), error.message)


def github_report(findings: Sequence[Finding], errors: Sequence[FileError] = (), notices: Sequence[Notice] = ()) -> str:
    """One line per file error, one per notice of the run, then one per finding, in the order given."""
    lines: List[str] = [error_annotation(error) for error in errors]
    lines.extend(_command("warning", (("title", "amplint"),), f"{notice.path}: {notice.message}")
                 for notice in notices)
    lines.extend(annotation(finding) for finding in findings)
    return "\n".join(lines)
