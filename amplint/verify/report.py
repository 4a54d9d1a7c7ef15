"""Render verification results: a table per finding (text) or a JSON array."""
from __future__ import annotations

import json
from typing import List, Optional, Sequence

from amplint.verify.results import FindingReport, Verdict, VersionResult


def json_report(reports: Sequence[FindingReport]) -> str:
    return json.dumps([report.to_json() for report in reports], indent=2)


def _number(value: Optional[float]) -> str:
    return "-" if value is None else f"{value:.2g}"


def _grads(value: Optional[bool]) -> str:
    return {None: "-", True: "finite", False: "non-finite"}[value]


def _row(name: str, result: Optional[VersionResult]) -> List[str]:
    if result is None:
        return [name, "-", "-", "-", "-", "-", "-"]
    if result.error is not None:
        return [name, "raised", "-", "-", "-", "-", result.error]
    return [name, result.dtype or "-", str(result.neg_inf), str(result.pos_inf), str(result.nan),
            _number(result.max_abs_error), _grads(result.grads_finite)]


def _table(rows: List[List[str]]) -> List[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["    " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1]
            for row in rows]


def text_report(reports: Sequence[FindingReport]) -> str:
    blocks = []
    for report in reports:
        code = report.code or "bfloat16 site (not flagged)"
        lines = [f"{report.path}:{report.line}:{report.column}: {code} {report.computation}: {report.verdict.value}"]
        if report.verdict is Verdict.UNVERIFIABLE:
            lines.append(f"    reason: {report.reason}")
        else:
            # every number in the table is reproducible from the seed; the timings on the `cost` line are not
            lines.append(f"    device {report.device}, {report.precision}, batch {report.batch}, seed {report.seed}")
            lines.append(f"    inputs: {report.recipe}")
            rows = [["version", "dtype", "-inf", "+inf", "NaN", "max|err|", "grads"],
                    _row("original", report.original), _row("fix A (cast)", report.fix_cast),
                    _row("fix C (disable+cast)", report.fix_disable)]
            lines.extend(_table(rows))
            if report.timing is not None:
                lines.append(f"    cost: {report.timing.describe()}")
        if report.run_time is not None:
            lines.append(f"    at run time: {report.run_time.describe()}")
        lines.extend(f"    note: {note}" for note in report.notes)
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def summary(reports: Sequence[FindingReport]) -> str:
    """Verdict counts overall and per device, and what each device name means."""
    from amplint.verify.devices import CPU, CUDA, CUDA_EMULATED

    counts = {verdict: 0 for verdict in Verdict}
    for report in reports:
        counts[report.verdict] += 1
    parts = ", ".join(f"{counts[v]} {v.value}" for v in Verdict)
    lines = [f"verified {len(reports)} computation(s): {parts}"]
    described = {device.name: device.description for device in (CPU, CUDA, CUDA_EMULATED)}
    for name in sorted({report.device for report in reports}):
        mine = [report for report in reports if report.device == name]
        per = ", ".join(f"{n} {v.value}" for v in Verdict if (n := sum(r.verdict is v for r in mine)))
        lines.append(f"  {name} ({described.get(name, name)}): {per}")
    return "\n".join(lines)
