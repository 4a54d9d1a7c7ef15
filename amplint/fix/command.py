"""`amplint check --fix` / `--diff`: run the codemod and print what it did.

Exit codes: 0 nothing left to report, 1 findings remain that could not be
fixed (or, with `--diff`, there is a diff to apply), 2 on errors. With
`--diff` stdout is the patch alone; the summary goes to stderr.
"""
from __future__ import annotations

import argparse
import sys
from typing import Dict, List

from amplint.config import Config
from amplint.fix.apply import FixRun, fix_paths, unified_diff

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary(run: FixRun, preview: bool) -> str:
    """Counts of findings, not files: fixed (or would be fixed) and remaining, with why some were left."""
    verb = "Would fix" if preview else "Fixed"
    text = f"{verb} {_plural(run.fixed_count, 'finding')}, {len(run.remaining)} remaining"
    reasons = _reasons(run)
    if reasons:
        text += " (" + "; ".join(f"{count} {reason}" for reason, count in reasons.items()) + ")"
    if run.errors:
        text += f", {_plural(len(run.errors), 'file')} with errors"
    return text + "."


def _reasons(run: FixRun) -> Dict[str, int]:
    """How many findings were left alone for each reason, in a stable order."""
    counts: Dict[str, int] = {}
    for fix in run.fixes:
        for skipped in fix.skipped:
            counts[skipped.reason] = counts.get(skipped.reason, 0) + 1
    return dict(sorted(counts.items()))


def _source_lines(run: FixRun) -> Dict[str, List[str]]:
    """The fixed text's lines, which the remaining findings' positions refer to."""
    from amplint.files import source_lines

    return {fix.path: source_lines(fix.fixed) for fix in run.fixes if fix.remaining}


def exit_code(run: FixRun, preview: bool, exit_zero: bool) -> int:
    if run.errors:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    pending = bool(run.changed) if preview else False
    return EXIT_FINDINGS if run.remaining or pending else EXIT_CLEAN


def report(run: FixRun, args: argparse.Namespace) -> None:
    from amplint import output

    preview = bool(args.diff)
    for error in run.errors:
        print(output.error_line(error), file=sys.stderr)
    for notice in run.notices:
        print(output.error_line(notice), file=sys.stderr)
    if preview:
        for fix in run.changed:
            sys.stdout.write(unified_diff(fix))
        print(summary(run, preview), file=sys.stderr)
        return
    from amplint.notebook import locate

    remaining, sources = locate(run.remaining, _source_lines(run))  # notebook findings: cell and line in it
    if args.format == "json":
        print(output.json_report(remaining))
        print(summary(run, preview), file=sys.stderr)
        return
    text = output.text_report(remaining, sources)
    if text:
        print(text)
    print(summary(run, preview))
    unnamed = _unnamed_changes(run, args.paths)
    if unnamed:
        print(f"Changed {_plural(len(run.changed), 'file')}: {', '.join(fix.path for fix in run.changed)} "
              f"({', '.join(unnamed)} not named: {'it builds' if len(unnamed) == 1 else 'they build'} a distribution "
              "a fixed finding reads).")


def _unnamed_changes(run: FixRun, paths: List[str]) -> List[str]:
    """The files the fix changed that are not under the paths given: a cross-file fix lands there (`--fix
    losses.py` casts the constructor in `routine.py`), and the user is told which files changed."""
    import os

    tops = [os.path.abspath(path) for path in paths]

    def named(path: str) -> bool:
        full = os.path.abspath(path)
        return any(full == top or full.startswith(top.rstrip(os.sep) + os.sep) for top in tops)

    return [fix.path for fix in run.changed if not named(fix.path)]


def run_fix(args: argparse.Namespace, config: Config) -> int:
    """The `--fix`/`--diff` branch of `amplint check`; `--diff` writes nothing."""
    from amplint import progress

    with progress.attached(progress.wanted(args.format)):  # erased before the report prints
        run = fix_paths(args.paths, config, write=not args.diff, in_project=True)
    from amplint.files import NO_FILES

    for empty in [f for f in run.files if f.error is not None and f.error.message == NO_FILES]:
        print(f"amplint: warning: no Python files or notebooks found in {empty.path}", file=sys.stderr)
        run.files.remove(empty)  # a warning, not an error (as `amplint check` says it)
    if not run.files:
        return EXIT_CLEAN
    report(run, args)
    return exit_code(run, bool(args.diff), args.exit_zero)
