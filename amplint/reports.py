"""Machine-readable summaries beyond JSON and SARIF: `--statistics` and `--output-format gitlab`."""
from __future__ import annotations

import json
from typing import Dict, List, Sequence

from amplint.model import Finding


def statistics(findings: Sequence[Finding]) -> List[Dict[str, object]]:
    """Per rule: how many findings, and how many of them `--fix` fixes; most frequent first."""
    from amplint.rules import BY_CODE

    counts: Dict[str, List[int]] = {}
    for finding in findings:
        count = counts.setdefault(finding.code, [0, 0])
        count[0] += 1
        count[1] += int(finding.fixable)
    rows = sorted(counts.items(), key=lambda item: (-item[1][0], item[0]))
    return [
        {"code": code, "name": BY_CODE[code].name if code in BY_CODE else "", "count": total, "fixable": fixable}
        for code, (total, fixable) in rows
    ]


def statistics_text(findings: Sequence[Finding]) -> str:
    """ruff's layout: count, code, `[*]` when every one is fixable, the rule's name."""
    rows = statistics(findings)
    width = max((len(str(row["count"])) for row in rows), default=1)
    return "\n".join(
        f"{row['count']:>{width}}\t{row['code']}\t{'[*]' if row['fixable'] == row['count'] else '[ ]'} {row['name']}"
        for row in rows
    )


def gitlab_report(findings: Sequence[Finding], fingerprints: Sequence[str]) -> str:
    """GitLab Code Quality JSON (a `codequality` report artifact); fingerprints as in SARIF."""
    issues = []
    for finding, fingerprint in zip(findings, fingerprints):
        where = f"cell {finding.cell}: " if finding.cell is not None else ""
        issues.append(
            {
                "description": f"{finding.code}: {where}{finding.message}",
                "check_name": finding.code,
                "fingerprint": fingerprint,
                "severity": "major",
                "location": {"path": finding.path, "lines": {"begin": finding.line, "end": finding.end_line}},
            }
        )
    return json.dumps(issues, indent=2, ensure_ascii=False)
