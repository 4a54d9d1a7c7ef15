"""Real-code robustness sweep for ``amplint check --fix`` (issue 7).

For each strategy (``cast``, ``disable-autocast``) and each tree (the corpus
and its derived copy, see corpus.py), on a fresh copy of the tree:

1. ``amplint check --format json`` -> findings before;
2. ``amplint check --fix --strategy S``;
3. every rewritten file compiles; every file that had no finding is
   byte-identical *and* keeps its mtime; only files with a fixable finding
   change;
4. ``amplint check --format json`` again -> no fixable finding is left (lines
   shift after a fix, so fixable findings are counted, not matched by line);
5. a second ``--fix`` changes zero bytes and touches no mtime;
6. no run crashed: exit 0 or 1 and no traceback on stderr.

Totals go to ``benchmarks/SWEEP.md``; any failure is listed there and makes
the script exit 1.

Usage::

    python benchmarks/sweep.py                 # full corpus + derived, both strategies
    python benchmarks/sweep.py --slice 40      # small fixed slice (quick)
    python benchmarks/sweep.py --write benchmarks/SWEEP.md
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import corpus  # noqa: E402
from common import Amplint, Finding, Measurement  # noqa: E402
from corpus import FileSet  # noqa: E402

SWEEP = corpus.WORK / "sweep"
STRATEGIES = ("cast", "disable-autocast")
SLICE_KEYWORDS = (b"autocast", b"log_prob", b"entropy", b"kl_divergence")
MAX_LISTED_FAILURES = 100


# --------------------------------------------------------------------------
# Snapshots of a tree
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class FileState:
    """What must not change behind the user's back: bytes and mtime."""

    digest: str
    mtime_ns: int


Snapshot = Dict[str, FileState]


def snapshot(fs: FileSet) -> Snapshot:
    """Hash and stat every file of the set, keyed by relative path."""
    out: Snapshot = {}
    for rel, path in zip(fs.relative(), fs.files):
        data = path.read_bytes()
        out[rel] = FileState(hashlib.sha256(data).hexdigest(), os.stat(path).st_mtime_ns)
    return out


def changed(a: Snapshot, b: Snapshot) -> List[str]:
    """Files whose bytes differ between two snapshots."""
    return sorted(k for k in a if a[k].digest != b[k].digest)


def touched(a: Snapshot, b: Snapshot) -> List[str]:
    """Files whose mtime moved although their bytes did not."""
    return sorted(k for k in a if a[k].digest == b[k].digest and a[k].mtime_ns != b[k].mtime_ns)


# --------------------------------------------------------------------------
# One sweep run
# --------------------------------------------------------------------------


@dataclass
class RunResult:
    """Totals and failures for one (tree, strategy) pair."""

    tree: str
    strategy: str
    files: int = 0
    findings: int = 0
    files_with_findings: int = 0
    fixable: int = 0
    fixed_reported: int = 0  # from --fix's "Fixed N findings" line
    rewritten: int = 0
    findings_after: int = 0
    fixable_after: int = 0
    failures: List[str] = field(default_factory=list)
    seconds: float = 0.0
    codes: Counter = field(default_factory=Counter)


def _norm(path: str) -> str:
    """Finding paths as relative, normalised keys (amplint echoes what it was given)."""
    return os.path.normpath(path)


def _amplint_step(amp: Amplint, fs: FileSet, extra: List[str], res: RunResult,
                  step: str, out: Optional[Path] = None) -> Measurement:
    """Run one amplint command on the whole set; record a crash as a failure."""
    argv = [*amp.base(), *extra, *fs.relative()]
    m = common.measure(argv, cwd=fs.root, stdout_path=out, env=common.amplint_env())
    if m.rc not in (0, 1):
        res.failures.append(f"{step}: exit code {m.rc}: {_last_line(m.stderr_tail)}")
    if common.has_traceback(m.stderr_tail):
        res.failures.append(f"{step}: traceback on stderr:\n```\n{m.stderr_tail[-1500:]}\n```")
    return m


def _fix_step(amp: Amplint, fs: FileSet, fix: List[str], res: RunResult, step: str) -> int:
    """Run ``--fix`` and return how many fixes it reported (0 if it said nothing)."""
    out = fs.root.parent / f"{fs.root.name}.{step}.txt"
    _amplint_step(amp, fs, fix, res, step, out)
    summary = common.fix_summary(out.read_text(errors="replace"))
    return summary[0] if summary else 0


def _last_line(text: str) -> str:
    """Last non-empty line of some output, for a one-line failure message."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"


def _check_json(amp: Amplint, fs: FileSet, res: RunResult, step: str,
                strategy: str) -> Optional[List[Finding]]:
    """``amplint check --format json``, parsed; None (and a failure) if unusable."""
    out = fs.root.parent / f"{fs.root.name}.{step}.json"
    _amplint_step(amp, fs, ["--format", "json"], res, step, out)
    try:
        return common.parse_findings(out.read_text(), strategy)
    except ValueError as exc:
        res.failures.append(f"{step}: output is not JSON: {exc}")
        return None


def _compiles(path: Path) -> Optional[str]:
    """None if the file compiles, else the error (compile() reads any coding cookie)."""
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _check_first_fix(fs: FileSet, orig: FileSet, before: List[Finding], snap0: Snapshot,
                     snap1: Snapshot, res: RunResult) -> None:
    """Rewritten files compile; files with no (fixable) finding are untouched."""
    with_finding = {_norm(f.path) for f in before}
    with_fixable = {_norm(f.path) for f in before if f.fixable}
    rewritten = changed(snap0, snap1)
    res.rewritten = len(rewritten)
    for rel in rewritten:
        err = _compiles(fs.root / rel)
        if err and _compiles(orig.root / rel) is None:
            res.failures.append(f"{rel}: does not compile after --fix: {err}")
        if _norm(rel) not in with_fixable:
            res.failures.append(f"{rel}: rewritten although it had no fixable finding")
    for rel in touched(snap0, snap1):
        if _norm(rel) not in with_finding:
            res.failures.append(f"{rel}: mtime changed, bytes did not (file had no finding)")


def _check_after(after: List[Finding], res: RunResult) -> None:
    """No fixable finding may survive the fix."""
    res.findings_after = len(after)
    left = [f for f in after if f.fixable]
    res.fixable_after = len(left)
    for f in left[:MAX_LISTED_FAILURES]:
        res.failures.append(f"{f.path}:{f.line}: {f.code} still fixable after --fix")


def _check_second_fix(snap1: Snapshot, snap2: Snapshot, res: RunResult) -> None:
    """A second --fix must change no byte and touch no mtime."""
    for rel in changed(snap1, snap2):
        res.failures.append(f"{rel}: second --fix changed bytes (not idempotent)")
    for rel in touched(snap1, snap2):
        res.failures.append(f"{rel}: second --fix touched mtime without changing bytes")


def sweep_one(amp: Amplint, orig: FileSet, tree: str, strategy: str) -> RunResult:
    """The whole check list of the module docstring for one tree and strategy."""
    start = time.perf_counter()
    res = RunResult(tree=tree, strategy=strategy, files=len(orig.files))
    fs = corpus.materialize(orig, SWEEP / f"{tree}-{strategy}")
    snap0 = snapshot(fs)
    before = _check_json(amp, fs, res, "check-before", strategy)
    if before is None:
        return res
    res.findings = len(before)
    res.files_with_findings = len({_norm(f.path) for f in before})
    res.fixable = sum(f.fixable for f in before)
    res.codes = Counter(f.code for f in before)
    fix = ["--fix", "--strategy", strategy]
    res.fixed_reported = _fix_step(amp, fs, fix, res, "fix-1")
    snap1 = snapshot(fs)
    _check_first_fix(fs, orig, before, snap0, snap1, res)
    after = _check_json(amp, fs, res, "check-after", strategy)
    if after is not None:
        _check_after(after, res)
    again = _fix_step(amp, fs, fix, res, "fix-2")
    if again:
        res.failures.append(f"fix-2: reported {again} more fixes (expected 0)")
    _check_second_fix(snap1, snapshot(fs), res)
    res.seconds = time.perf_counter() - start
    return res


# --------------------------------------------------------------------------
# File sets
# --------------------------------------------------------------------------


def fixed_slice(fs: FileSet, n: int) -> FileSet:
    """A fixed, deterministic slice of *n* files.

    Files that mention autocast *and* a probability method come first (they
    exercise the fixer), then those that mention either, then the rest; each
    rank is taken round-robin over the projects so that one
    alphabetically-first project does not fill the slice.
    """
    rank = {p: _slice_rank(p.read_bytes()) for p in fs.files}
    per_project: Dict[str, List[Path]] = {}
    for p in sorted(fs.files):
        per_project.setdefault(p.relative_to(fs.root).parts[0], []).append(p)
    picked: List[Path] = []
    for wanted in (0, 1, 2):
        queues = [[p for p in files if rank[p] == wanted] for files in per_project.values()]
        while len(picked) < n and any(queues):
            for q in queues:
                if q and len(picked) < n:
                    picked.append(q.pop(0))
    return FileSet(f"{fs.label} [slice of {n}]", fs.root, tuple(sorted(picked)))


def _slice_rank(data: bytes) -> int:
    """0: autocast and a probability method, 1: either keyword, 2: neither."""
    autocast = b"autocast" in data
    prob = any(k in data for k in SLICE_KEYWORDS[1:])
    return 0 if autocast and prob else 1 if autocast or prob else 2


def trees(n: Optional[int]) -> List[Tuple[str, FileSet]]:
    """The corpus and the derived copy, sliced with --slice."""
    corpus.ensure_corpus()
    corpus.ensure_derived()
    sets = [("corpus", corpus.corpus_fileset()), ("derived", corpus.derived_fileset())]
    if n is not None:
        sets = [(name, fixed_slice(fs, n)) for name, fs in sets]
    return sets


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def report(results: Sequence[RunResult], machine: List[str], elapsed: float,
           slice_n: Optional[int]) -> str:
    """Markdown totals table plus every failure."""
    scope = f"fixed slice of {slice_n} files per tree" if slice_n else "whole trees"
    rows = [
        "## Real-code sweep (issue 7)", "", *machine,
        f"- Scope: {scope}; projects: "
        + ", ".join(f"{k}=={v}" for k, v in corpus.PROJECTS.items()),
        f"- Script time: {elapsed:.0f} s", "",
        "| tree | strategy | files | findings | files with findings | fixable "
        "| fixes reported | files rewritten | findings after | fixable after | failures "
        "| seconds |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        rows.append(f"| {r.tree} | {r.strategy} | {r.files} | {r.findings} "
                    f"| {r.files_with_findings} | {r.fixable} | {r.fixed_reported} "
                    f"| {r.rewritten} "
                    f"| {r.findings_after} | {r.fixable_after} | {len(r.failures)} "
                    f"| {r.seconds:.0f} |")
    total_fail = sum(len(r.failures) for r in results)
    rows += ["", f"**Total failures: {total_fail}** over "
             f"{sum(r.files for r in results)} file runs.", ""]
    codes = Counter()
    for r in results:
        if r.strategy == STRATEGIES[0]:
            codes.update(r.codes)
    if codes:
        rows.append("Findings by code (before fixing, first strategy): "
                    + ", ".join(f"{c} {n}" for c, n in sorted(codes.items())))
        rows.append("")
    for r in results:
        for msg in r.failures[:MAX_LISTED_FAILURES]:
            rows.append(f"- {r.tree}/{r.strategy}: {msg}")
    rows += ["", "Reproduce: `.venv/bin/python benchmarks/sweep.py --ref SNAPSHOT "
             "--write benchmarks/SWEEP.md`"]
    return "\n".join(rows)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the sweep for both strategies on both trees."""
    p = argparse.ArgumentParser(description="amplint --fix robustness sweep (issue 7)")
    p.add_argument("--slice", type=int, metavar="N", help="only a fixed slice of N files per tree")
    p.add_argument("--write", type=Path, help="write the totals to this markdown file")
    p.add_argument("--strategy", choices=STRATEGIES, action="append",
                   help="only this strategy (repeatable; default both)")
    p.add_argument("--ref", help="sweep amplint as of this git commit (e.g. HEAD) "
                   "instead of the working tree; SNAPSHOT freezes a copy of the "
                   "working tree for the whole run")
    p.add_argument("--keep", action="store_true",
                   help="keep the fixed copies under .work/sweep for inspection")
    args = p.parse_args(argv)
    started = time.perf_counter()
    machine = common.machine_lines()
    machine.append(f"- amplint: {common.use_ref(args.ref)}")
    amp = common.probe_amplint()
    if not amp.available:
        print(f"sweep skipped: {amp.reason}", file=sys.stderr)
        return 0
    if not amp.has("--fix"):
        print("sweep skipped: `amplint check --help` offers no --fix yet", file=sys.stderr)
        return 0
    results = []
    for tree, fs in trees(args.slice):
        for strategy in args.strategy or STRATEGIES:
            print(f"sweeping {tree} ({len(fs.files)} files) with --strategy {strategy}",
                  file=sys.stderr, flush=True)
            r = sweep_one(amp, fs, tree, strategy)
            print(f"  {r.findings} findings, {r.fixable} fixable, {r.rewritten} rewritten, "
                  f"{len(r.failures)} failures, {r.seconds:.0f} s", file=sys.stderr, flush=True)
            results.append(r)
    if not args.keep:
        # Thousands of copied files under the repo slow down any `amplint check .`.
        shutil.rmtree(SWEEP, ignore_errors=True)
    text = report(results, machine, time.perf_counter() - started, args.slice)
    print(text)
    if args.write:
        common.replace_section(args.write, "sweep", text)
    return 1 if any(r.failures for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
