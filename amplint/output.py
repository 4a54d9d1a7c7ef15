"""Render findings and errors for people (text) and programs (json)."""
from __future__ import annotations

import json
import sys
from typing import Dict, List, Sequence, TextIO, Union

from amplint.model import FileError, Finding, Notice


def text_report(findings: Sequence[Finding], sources: Dict[str, List[str]]) -> str:
    """`path:line:col: CODE [*] message`, then the offending source line, like ruff's concise+source view.

    `[*]` marks a fixable finding, as ruff does, so the summary's "N fixable" can be told apart line by line.
    """
    out: List[str] = []
    for finding in findings:
        where = finding.path if finding.cell is None else f"{finding.path}:cell {finding.cell}"
        mark = " [*]" if finding.fixable else ""  # ruff's marker: `--fix` with the same arguments fixes this one
        out.append(f"{where}:{finding.line}:{finding.column}: {finding.code}{mark} {finding.message}")
        lines = sources.get(where, [])
        if 0 < finding.line <= len(lines):
            source_line = lines[finding.line - 1].rstrip("\r\n")
            out.append(f"    {source_line}")
            prefix = source_line[: finding.column - 1]
            out.append("    " + "".join(c if c == "\t" else " " for c in prefix) + "^")  # tabs keep alignment
    return "\n".join(out)


def json_report(findings: Sequence[Finding]) -> str:
    return json.dumps([finding.to_json() for finding in findings], indent=2)


def error_line(error: Union[FileError, Notice]) -> str:
    """`PATH: error: ...` for a file that could not be checked, `PATH: warning: ...` for what a run says."""
    return str(error)


def summary(findings: Sequence[Finding], errors: Sequence[FileError]) -> str:
    fixable = sum(1 for f in findings if f.fixable)
    parts = [f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''}"]
    if fixable:
        parts.append(f"{fixable} fixable with `amplint check --fix`")
    if errors:
        parts.append(f"{len(errors)} file{'s' if len(errors) != 1 else ''} could not be checked")
    return ", ".join(parts) + "."


def tolerate_unencodable(streams: Sequence[TextIO] = ()) -> None:
    """Let stdout and stderr write what their encoding cannot hold as `\\xNN`/`\\uNNNN` escapes.

    A flagged line with `σ` in it, on a console that encodes ASCII or cp1252,
    must not turn a report into a `UnicodeEncodeError` traceback.
    """
    for stream in streams or (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", "strict") == "strict":
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a stream that cannot change now: leave it
                pass
