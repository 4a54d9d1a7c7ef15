"""`--format sarif`: a SARIF 2.1.0 log for GitHub code scanning and other viewers.

Beyond what ruff writes, every fixable finding carries a `fixes` entry whose
`artifactChanges`/`replacements` are the codemod's edits, so a SARIF viewer
can offer the same fix `amplint check --fix` would apply. The edits are
computed as a minimal text diff between a file and its fixed text, which keeps
this module independent of how the codemod rewrites the tree.
"""
from __future__ import annotations

import bisect
import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union
from urllib.parse import quote

from amplint import __version__
from amplint.config import Config
from amplint.model import FileError, Finding, Hop, Notice, chain_text
from amplint.rulebase import Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
STRATEGY_TEXT = {
    "cast": "Cast the computation's tensor inputs to float32 (fix A)",
    "disable-autocast": "Cast the inputs and run the statement with autocast disabled (fix C)",
}


@dataclass(frozen=True)
class FileFix:
    """The texts before and after fixing one finding: its own file's, and those of the other files its fix
    edits (a distribution built in `model.py` for a finding in `train.py`), one `artifactChanges` entry each."""

    original: str
    fixed: str
    description: str
    others: Tuple[Tuple[str, str, str], ...] = ()  # (path, original, fixed) of each other file the fix edits


# Given a fixable finding, the edit that fixes it; None when the codemod declines.
FixProvider = Callable[[Finding], Optional[FileFix]]


# ---------------------------------------------------------------------------
# Text diff -> SARIF replacements.


def _line_starts(text: str) -> List[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _position(starts: Sequence[int], offset: int) -> Tuple[int, int]:
    """1-based (line, column) of a character offset; the end of a file after `\\n` is (last + 1, 1)."""
    line = bisect.bisect_right(starts, offset) - 1
    return line + 1, offset - starts[line] + 1


CHAR_DIFF_LIMIT = 4000  # longer changed blocks are trimmed, not diffed character by character
MERGE_GAP = 4  # edits closer than this many unchanged characters become one


def _block_edits(deleted: str, inserted: str) -> List[Tuple[int, int, int, int]]:
    """(i1, i2, j1, j2) spans of `deleted` replaced by spans of `inserted`, small gaps merged."""
    if len(deleted) + len(inserted) > CHAR_DIFF_LIMIT:
        prefix = 0
        limit = min(len(deleted), len(inserted))
        while prefix < limit and deleted[prefix] == inserted[prefix]:
            prefix += 1
        suffix = 0
        while suffix < limit - prefix and deleted[-1 - suffix] == inserted[-1 - suffix]:
            suffix += 1
        return [(prefix, len(deleted) - suffix, prefix, len(inserted) - suffix)]
    spans: List[Tuple[int, int, int, int]] = []
    matcher = difflib.SequenceMatcher(None, deleted, inserted, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if spans and i1 - spans[-1][1] < MERGE_GAP:
            spans[-1] = (spans[-1][0], i2, spans[-1][2], j2)
        else:
            spans.append((i1, i2, j1, j2))
    return spans


def text_edits(original: str, fixed: str) -> List[Tuple[int, int, str]]:
    """Small (start, end, inserted) character edits, in order, turning `original` into `fixed`.

    Lines are matched first (difflib), then each changed block is diffed by
    character, so a cast shows up as `.float()` inserted, not as a whole line
    replaced.
    """
    a_lines = original.splitlines(keepends=True)
    b_lines = fixed.splitlines(keepends=True)
    a_starts = [0]
    for line in a_lines:
        a_starts.append(a_starts[-1] + len(line))
    edits: List[Tuple[int, int, str]] = []
    matcher = difflib.SequenceMatcher(None, a_lines, b_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        deleted = "".join(a_lines[i1:i2])
        inserted = "".join(b_lines[j1:j2])
        base = a_starts[i1]
        for d1, d2, n1, n2 in _block_edits(deleted, inserted):
            edits.append((base + d1, base + d2, inserted[n1:n2]))
    return edits


def replacements(original: str, fixed: str) -> List[Dict[str, Any]]:
    """SARIF `replacement` objects (deletedRegion + insertedContent) for the diff."""
    starts = _line_starts(original)
    out = []
    for start, end, inserted in text_edits(original, fixed):
        start_line, start_column = _position(starts, start)
        end_line, end_column = _position(starts, end)
        region = {"startLine": start_line, "startColumn": start_column, "endLine": end_line, "endColumn": end_column}
        replacement: Dict[str, Any] = {"deletedRegion": region}
        if inserted:
            replacement["insertedContent"] = {"text": inserted}
        out.append(replacement)
    return out


# ---------------------------------------------------------------------------
# The log.


def artifact_location(path: str, root: str) -> Dict[str, str]:
    """Relative to the run's root (`%SRCROOT%`) when inside it, else an absolute file URI."""
    full = os.path.abspath(path)
    try:
        relative = os.path.relpath(full, root)
    except ValueError:  # another drive on Windows
        relative = os.pardir
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return {"uri": file_uri(full)}
    return {"uri": quote(os.fsencode(Path(relative).as_posix())), "uriBaseId": SRCROOT}


def file_uri(path: str) -> str:
    """`file://` URI of an absolute path; a name that is not valid UTF-8 (`bad\\xff.py`, read by
    Python as a lone surrogate) is percent-encoded from its bytes instead of crashing the log."""
    try:
        return Path(path).as_uri()
    except (UnicodeEncodeError, ValueError):
        return "file://" + quote(os.fsencode(Path(path).as_posix()))


def rule_descriptor(rule: Rule) -> Dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.what_it_does},
        "help": {"text": rule.documentation(), "markdown": rule.documentation()},
        "defaultConfiguration": {"level": "warning"},
        "properties": {"tags": ["correctness", "numerics", "pytorch"], "precision": "high"},
    }


def _region(finding: Finding) -> Dict[str, int]:
    return {
        "startLine": finding.line,
        "startColumn": finding.column,
        "endLine": finding.end_line,
        "endColumn": finding.end_column,
    }


# risk high -> error (measured -inf/NaN under the region's device policy), low -> note (measured finite),
# unknown -> warning (the rule's default level: nothing measured applies).
RISK_LEVELS = {"high": "error", "low": "note", "unknown": "warning"}


def sarif_level(finding: Finding) -> str:
    return RISK_LEVELS[finding.risk.level if finding.risk is not None else "unknown"]


def fingerprints(findings: Sequence[Finding], sources: Dict[str, List[str]], root: str) -> List[str]:
    """A `partialFingerprints` value per finding that survives re-runs and lines moving up or down.

    The hash covers the file (relative to the root), the rule, and the finding's
    source line with its whitespace collapsed, plus how many identical ones came
    before it in the file: GitHub code scanning then keeps one alert per problem
    instead of opening a new one whenever code above it changes.
    """
    import hashlib

    seen: Dict[Tuple[str, str, str], int] = {}
    out: List[str] = []
    for finding in findings:
        key = finding.path if finding.cell is None else f"{finding.path}:cell {finding.cell}"
        lines = sources.get(key)
        if lines is None:
            from amplint.files import read_source, source_lines

            source = read_source(finding.path)
            lines = sources[key] = [] if isinstance(source, FileError) else source_lines(source.text)
        text = " ".join(lines[finding.line - 1].split()) if 0 < finding.line <= len(lines) else finding.message
        where = artifact_location(finding.path, root)["uri"]
        identity = (where, finding.code, text)
        seen[identity] = seen.get(identity, 0) + 1
        digest = hashlib.sha256("\0".join((*identity, str(seen[identity]))).encode("utf-8", "surrogatepass"))
        out.append(digest.hexdigest()[:32])
    return out


def _result(finding: Finding, rule_index: Dict[str, int], root: str, fix_for: Optional[FixProvider]) -> Dict[str, Any]:
    location = artifact_location(finding.path, root)
    result: Dict[str, Any] = {
        "ruleId": finding.code,
        "level": sarif_level(finding),
        "message": {"text": finding.message},
        "locations": [{"physicalLocation": {"artifactLocation": location, "region": _region(finding)}}],
        "properties": {
            "fixable": finding.fixable,
            "fixStrategies": list(finding.fix_strategies),
            "callChain": [hop.to_json() for hop in finding.chain],
            "risk": finding.to_json()["risk"],
        },
    }
    if finding.cell is not None:  # a notebook: lines and columns count within this (1-based) cell
        result["locations"][0]["properties"] = {"cell": finding.cell}
        result["properties"]["cell"] = finding.cell
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.region is not None:
        result["relatedLocations"] = [
            {
                "id": 1,
                "message": {"text": f"{finding.region.precision.value} autocast region"},
                "physicalLocation": {
                    # A project-mode region may sit in another file than the finding.
                    "artifactLocation": (
                        artifact_location(finding.region_path, root) if finding.region_path else location
                    ),
                    "region": {"startLine": finding.region.line},
                },
            }
        ]
    if finding.chain:
        result.setdefault("relatedLocations", []).extend(
            _hop_location(hop, root, index == 2, index) for index, hop in enumerate(finding.chain, start=2))
        result["codeFlows"] = [code_flow(finding, root)]
    if finding.fixable and fix_for is not None and finding.cell is None:
        fix = fix_for(finding)
        if fix is not None and (fix.fixed != fix.original or fix.others):
            changes = [(location, fix.original, fix.fixed)] if fix.fixed != fix.original else []
            changes += [(artifact_location(path, root), original, fixed) for path, original, fixed in fix.others]
            result["fixes"] = [
                {
                    "description": {"text": fix.description},
                    "artifactChanges": [
                        {"artifactLocation": where, "replacements": replacements(original, fixed)}
                        for where, original, fixed in changes
                    ],
                }
            ]
    return result


def _hop_location(hop: Hop, root: str, first: bool, index: Optional[int] = None) -> Dict[str, Any]:
    """A SARIF `location` for one hop of the chain: its file, and its line and column where known."""
    physical: Dict[str, Any] = {"artifactLocation": artifact_location(hop.path, root)}
    if hop.line:
        physical["region"] = {"startLine": hop.line, **({"startColumn": hop.column} if hop.column else {})}
    location: Dict[str, Any] = {"physicalLocation": physical, "message": {"text": hop.describe(first)}}
    if index is not None:
        location["id"] = index
    if hop.cell:  # a notebook: the line counts within this cell
        location["properties"] = {"cell": hop.cell}
    return location


def code_flow(finding: Finding, root: str) -> Dict[str, Any]:
    """The chain as CodeQL shows a path: one thread flow from the call in the region, through each call on the
    way (and where the distribution was built), to the computation itself."""
    steps = [_hop_location(hop, root, index == 0) for index, hop in enumerate(finding.chain)]
    site = {"physicalLocation": {"artifactLocation": artifact_location(finding.path, root),
                                 "region": _region(finding)},
            "message": {"text": "the probability computation"}}
    if finding.cell is not None:
        site["properties"] = {"cell": finding.cell}
    steps.append(site)
    flow = [{"location": step, "executionOrder": order} for order, step in enumerate(steps, start=1)]
    return {"message": {"text": f"reached via {chain_text(finding.chain)}"}, "threadFlows": [{"locations": flow}]}


def _notification(said: Union[FileError, Notice], root: str) -> Dict[str, Any]:
    """A file that could not be checked (an error), or what the run says of itself (a warning)."""
    return {
        "level": "error" if isinstance(said, FileError) else "warning",
        "message": {"text": said.message},
        "locations": [{"physicalLocation": {"artifactLocation": artifact_location(said.path, root)}}],
    }


def sarif_log(
    findings: Sequence[Finding],
    errors: Sequence[FileError],
    rules: Sequence[Rule],
    fix_for: Optional[FixProvider] = None,
    root: Optional[str] = None,
    sources: Optional[Dict[str, List[str]]] = None,
    notices: Sequence[Notice] = (),
) -> Dict[str, Any]:
    """The whole log: one run, every rule in the catalogue, one result per finding.

    `sources`: each file's lines (notebook cells under "path:cell N"), for the fingerprints;
    files missing from it are read. `notices`: what the run says of itself (a warning each).
    """
    root = os.path.abspath(root or os.curdir)
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    run: Dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "amplint",
                "version": __version__,
                "semanticVersion": __version__,
                "rules": [rule_descriptor(rule) for rule in rules],
            }
        },
        "originalUriBaseIds": {SRCROOT: {"uri": file_uri(root).rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "invocations": [
            {
                "executionSuccessful": not errors,
                "toolExecutionNotifications": [_notification(said, root) for said in [*errors, *notices]],
            }
        ],
        "results": [_result(finding, rule_index, root, fix_for) for finding in findings],
    }
    for result, fingerprint in zip(run["results"], fingerprints(findings, dict(sources or {}), root)):
        result["partialFingerprints"] = {"amplintFingerprint/v1": fingerprint}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def sarif_report(
    findings: Sequence[Finding],
    errors: Sequence[FileError],
    fix_for: Optional[FixProvider] = None,
    root: Optional[str] = None,
    sources: Optional[Dict[str, List[str]]] = None,
    notices: Sequence[Notice] = (),
) -> str:
    import json

    from amplint.rules import ALL_RULES

    log = sarif_log(findings, errors, ALL_RULES, fix_for, root, sources, notices)
    text = json.dumps(log, indent=2, ensure_ascii=False)
    # A lone surrogate (a file name that is not UTF-8, in a message) becomes its JSON escape: valid UTF-8 out.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def codemod_fixes(config: Config) -> FixProvider:
    """The codemod (`amplint.fix`) as a FixProvider: each finding's file with only that finding fixed, or,
    when `--fix` with the finding's file named edits other files too, every file that run edits.

    A finding whose distribution is built in another file is fixed there and here (`amplint.fix.remote`);
    before, SARIF gave such a finding no `fixes` while calling it fixable. The project runs are kept by file.
    """
    from amplint.fix.apply import FixRun, fix_finding, fix_paths

    description = STRATEGY_TEXT.get(config.strategy, config.strategy)
    runs: Dict[str, FixRun] = {}

    def across(finding: Finding) -> Optional[FileFix]:
        """The edits of `--fix FILE --diff` for the finding's file, when they reach beyond it and fix it."""
        if not config.project:
            return None
        if finding.path not in runs:
            runs[finding.path] = fix_paths([finding.path], config, write=False, in_project=True)
        run = runs[finding.path]
        same = os.path.abspath(finding.path)
        others = tuple((fix.path, fix.original, fix.fixed) for fix in run.changed if os.path.abspath(fix.path) != same)
        left = {(os.path.abspath(f.path), f.line, f.column, f.code) for f in run.remaining}
        if not others or (same, finding.line, finding.column, finding.code) in left:
            return None
        own = [fix for fix in run.changed if os.path.abspath(fix.path) == same]
        original, fixed = (own[0].original, own[0].fixed) if own else ("", "")
        return FileFix(original, fixed, description, others)

    def provider(finding: Finding) -> Optional[FileFix]:
        spanning = across(finding)
        if spanning is not None:
            return spanning
        outcome = fix_finding(finding, config)
        if isinstance(outcome, FileError) or not outcome.changed:
            return None
        return FileFix(outcome.original, outcome.fixed, description)

    return provider
