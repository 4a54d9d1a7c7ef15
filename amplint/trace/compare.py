"""A trace beside static findings: which float16 sites the check missed, and which findings never ran.

A finding stands for a traced site when it is in the same file and in the same
statement as the site, or in the same statement as one of the calls on the
site's recorded stack (a finding at the call in the region names the site).
Sites are counted once per statement: two `torch.log`s of one line are one site.
The scorer of generated projects (`tests/reachgen`) uses this same `match`.
"""
from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Set, Tuple, Union

Span = Tuple[str, int, int]  # (real path, first line, last line) of a statement


class StatementIndex:
    """The innermost statement holding each line of a file; a compound statement holds only its header."""

    def __init__(self) -> None:
        self._files: Dict[str, Dict[int, Tuple[int, int]]] = {}

    def span(self, path: str, line: int) -> Span:
        lines = self._files.get(path)
        if lines is None:
            lines = self._files[path] = _statement_lines(path)
        first, last = lines.get(line, (line, line))
        return path, first, last


def _statement_lines(path: str) -> Dict[int, Tuple[int, int]]:
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return {}
    spans: List[Tuple[int, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                decorators = getattr(node, "decorator_list", [])
                start = min([node.lineno] + [d.lineno for d in decorators])
                spans.append((start, max(start, body[0].lineno - 1)))
            else:
                spans.append((node.lineno, node.end_lineno or node.lineno))
    lines: Dict[int, Tuple[int, int]] = {}
    for first, last in sorted(spans, key=lambda s: s[0] - s[1]):  # widest first: inner ones overwrite
        for line in range(first, last + 1):
            lines[line] = (first, last)
    return lines


@dataclass
class Site:
    """The traced records of one statement, with the statements of the calls that led there."""

    span: Span
    records: List[dict]
    float16: bool
    via: Set[Span] = field(default_factory=set)


@dataclass
class Comparison:
    matched: List[Tuple[Site, List[dict]]]  # float16 sites and the findings that stand for them
    missed: List[Site]  # float16 sites no finding stands for
    unreached: List[dict]  # findings no traced record stands beside
    float32: List[dict]  # findings whose computation ran, never with float16 inputs
    found: List[dict]  # findings that stand for a float16 site
    # per finding, in the order given: every traced site it stands for, float16 or not (`amplint verify --trace`)
    beside: List[List[Site]] = field(default_factory=list)

    @property
    def sites(self) -> int:
        return len(self.matched) + len(self.missed)


def _real(path: str, base: str) -> str:
    return os.path.realpath(os.path.join(base, path))


def traced_sites(records: Iterable[dict], base: str, index: StatementIndex) -> List[Site]:
    """Probability records grouped by statement; float16 when any of the statement's records is."""
    sites: Dict[Span, Site] = {}
    for record in records:
        trace = record.get("trace") or {}
        if not trace.get("probability"):
            continue
        root = trace.get("cwd") or base
        span = index.span(_real(record["path"], root), int(record["line"]))
        site = sites.setdefault(span, Site(span, [], False))
        site.records.append(record)
        site.float16 = site.float16 or bool(trace.get("float16"))
        for call in trace.get("stack", [])[:-1]:
            site.via.add(index.span(_real(call["path"], root), int(call["line"])))
    return sorted(sites.values(), key=lambda s: s.span)


def match(findings: List[dict], records: List[dict], base: str, index: Optional[StatementIndex] = None) -> Comparison:
    """Set static findings (paths relative to `base`) against a trace's records."""
    index = index or StatementIndex()
    sites = traced_sites(records, base, index)
    spans = [index.span(_real(f["path"], base), int(f["line"])) for f in findings]
    matched: List[Tuple[Site, List[dict]]] = []
    missed: List[Site] = []
    used: Set[int] = set()
    seen32: Set[int] = set()
    beside: List[List[Site]] = [[] for _ in findings]
    for site in sites:
        hits = [i for i, span in enumerate(spans) if span == site.span or span in site.via]
        for i in hits:
            beside[i].append(site)
        if not site.float16:
            seen32.update(hits)
            continue
        used.update(hits)
        if hits:
            matched.append((site, [findings[i] for i in hits]))
        else:
            missed.append(site)
    float32 = [findings[i] for i in sorted(seen32 - used)]
    unreached = [f for i, f in enumerate(findings) if i not in used and i not in seen32]
    return Comparison(matched, missed, unreached, float32, [findings[i] for i in sorted(used)], beside)


def load_trace(path: str) -> Union[List[dict], str]:
    """The records of a trace file, or why it cannot be read (one line)."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except OSError as exc:
        return f"{path}: cannot read the trace: {exc.strerror or exc}"
    except ValueError as exc:
        return f"{path}: not a trace (invalid JSON: {exc})"
    if not isinstance(data, list) or not all(isinstance(r, dict) and "trace" in r and "path" in r for r in data):
        return f"{path}: not a trace: expected the JSON array `amplint trace` writes"
    return data


def _where(record: dict) -> str:
    return f"{record['path']}:{record['line']}:{record['column']}"


def _stack(site: Site) -> str:
    calls = site.records[0]["trace"].get("stack", [])
    return " -> ".join(f"{c['path']}:{c['line']}" for c in calls)


def missed_lines(missed: List[Site]) -> List[str]:
    """Each missed site's place, message and stack: `check --compare` and `verify --trace` print them alike."""
    lines = []
    for site in missed:
        record = site.records[0]
        lines.append(f"  {_where(record)}: {record['message']}")
        lines.append(f"    stack: {_stack(site)}")
    return lines


def text_report(comparison: Comparison) -> str:
    lines = [f"Traced float16 sites that static analysis found: {len(comparison.matched)}"]
    for site, findings in comparison.matched:
        record = site.records[0]
        codes = ", ".join(f"{f['code']} at {_where(f)}" for f in findings)
        lines.append(f"  {_where(record)}: {record['trace']['computation']}, {record['trace']['nonfinite']:,} of "
                     f"{record['trace']['values']:,} values non-finite; reported as {codes}")
    lines.append(f"Traced float16 sites that static analysis missed: {len(comparison.missed)}")
    lines.extend(missed_lines(comparison.missed))
    lines.append(f"Static findings the run did not reach: {len(comparison.unreached)}")
    lines.extend(f"  {_where(f)}: {f['code']} {f['message']}" for f in comparison.unreached)
    lines.append(f"Static findings whose computation ran without float16 inputs: {len(comparison.float32)}")
    lines.extend(f"  {_where(f)}: {f['code']} {f['message']}" for f in comparison.float32)
    lines.append(f"{comparison.sites} traced float16 site{'s' if comparison.sites != 1 else ''}: "
                 f"{len(comparison.matched)} found, {len(comparison.missed)} missed.")
    return "\n".join(lines)


def json_report(comparison: Comparison) -> str:
    return json.dumps({
        "missed": [site.records[0] for site in comparison.missed],
        "unreached": comparison.unreached,
        "float32": comparison.float32,
        "found": comparison.found,
        "sites": comparison.sites,
    }, indent=2)
