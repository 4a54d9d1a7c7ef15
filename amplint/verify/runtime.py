"""The verdict of the user's own run: each finding of `verify` set against a trace from `amplint trace`.

The rebuild says whether float16 *can* fail at a finding and whether the
fixes hold, on inputs amplint makes; a trace says what the user's script
*did* there, on its own data. They answer different questions, so `verify
--trace` reports both and neither overrides the other. Which finding stands
for which traced site is `amplint.trace.compare.match`, the matching `check
--compare` uses (same statement, or a call on the site's recorded stack), so
the two commands never disagree about it.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Dict, List, Sequence, Tuple

from amplint.trace.compare import Site, match, missed_lines
from amplint.verify.results import FindingReport, RunTime, RunTimeVerdict, TracedCall


@dataclass(frozen=True)
class RunTimeReport:
    """The reports with their run-time verdicts, and the traced float16 sites no finding stands for."""

    trace: str  # the trace file, as given
    reports: Tuple[FindingReport, ...]
    missed: Tuple[Site, ...]

    def counts(self) -> Dict[RunTimeVerdict, int]:
        judged = [report.run_time.verdict for report in self.reports if report.run_time is not None]
        return {verdict: judged.count(verdict) for verdict in RunTimeVerdict}


def judge_run(reports: Sequence[FindingReport], records: List[dict], trace: str, base: str) -> RunTimeReport:
    """Each finding's run-time verdict from `records`; paths of the findings are relative to `base`.

    A bfloat16 site that check does not flag gets none: it is not a finding, and
    the recorder notes float16 computations only.
    """
    findings = [i for i, report in enumerate(reports) if report.code is not None]
    comparison = match([_finding(reports[i]) for i in findings], records, base)
    judged = list(reports)
    for i, sites in zip(findings, comparison.beside):
        judged[i] = replace(reports[i], run_time=run_time_of(sites))
    return RunTimeReport(trace, tuple(judged), tuple(comparison.missed))


def _finding(report: FindingReport) -> dict:
    """What `match` reads of a finding, in `amplint check --format json`'s keys."""
    return {"path": report.path, "line": report.line, "column": report.column, "code": report.code}


def run_time_of(sites: List[Site]) -> RunTime:
    """confirmed when a site it stands for ran with float16 inputs, float32 when only others ran, else not reached."""
    if not sites:
        return RunTime(RunTimeVerdict.NOT_REACHED)
    records = [record for site in sites for record in site.records]
    low = [record for record in records if record["trace"]["float16"]]
    if low:
        return RunTime(RunTimeVerdict.CONFIRMED, tuple(_call(record) for record in low))
    return RunTime(RunTimeVerdict.FLOAT32, tuple(_call(record) for record in records))


def _call(record: dict) -> TracedCall:
    trace = record["trace"]
    return TracedCall(
        path=record["path"], line=int(record["line"]), column=int(record["column"]),
        computation=trace["computation"], float16=bool(trace["float16"]),
        dtypes=tuple((str(name), str(dtype)) for name, dtype in trace.get("dtypes", [])),
        calls=int(trace["calls"]), nonfinite=int(trace["nonfinite"]), values=int(trace["values"]))


def text_missed(report: RunTimeReport) -> str:
    """The traced float16 sites check did not report, as `check --compare` prints them."""
    return "\n".join([f"Traced float16 sites that check did not report: {len(report.missed)}"]
                     + missed_lines(list(report.missed)))


def summary_line(report: RunTimeReport) -> str:
    counts = report.counts()
    parts = ", ".join(f"{counts[verdict]} {verdict.value}" for verdict in RunTimeVerdict)
    plural = "s" if len(report.missed) != 1 else ""
    return (f"at run time ({report.trace}): {parts}; {len(report.missed)} traced float16 site{plural} "
            "check did not report")


def json_runtime_report(report: RunTimeReport) -> str:
    """With --trace the JSON is an object: the reports under `computations`, the missed sites' records."""
    return json.dumps({
        "trace": report.trace,
        "computations": [finding.to_json() for finding in report.reports],
        "missed": [site.records[0] for site in report.missed],
    }, indent=2)
