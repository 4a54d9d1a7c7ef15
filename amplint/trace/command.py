"""`amplint trace [-o FILE] [--project DIR] -- python SCRIPT ARGS...`: run a script under the recorder.

The script runs in its own interpreter (the one the command names), started on
`bootstrap.py`; this process only builds that command line, waits, and says in
one line what was recorded. The user's exit code is returned unchanged.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
from typing import List, Optional, Tuple

from amplint.trace.frames import relative

DEFAULT_OUTPUT = "amplint-trace.json"
_PYTHON = re.compile(r"^python[0-9.]*(\.exe)?$")
# Interpreter options that may stand before the script: (option, takes a value).
_OPTIONS = {"-u": False, "-O": False, "-OO": False, "-B": False, "-E": False, "-s": False, "-W": True, "-X": True}
BOOTSTRAP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bootstrap.py")


def add_trace_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    trace = sub.add_parser(
        "trace", help="run a Python script under a recorder of what it computes in float16 (needs torch)",
        description="Run `python SCRIPT ARGS...` (or `python -m MODULE ARGS...`) once, recording every "
        "probability computation of the project that runs with float16 inputs, in `amplint check --format "
        "json`'s shape. This runs your code: only trace scripts you trust.",
    )
    trace.add_argument("-o", "--output", default=DEFAULT_OUTPUT, metavar="FILE",
                       help=f"where to write the trace (default: {DEFAULT_OUTPUT})")
    trace.add_argument("--project", metavar="DIR",
                       help="the project whose lines are sites (default: the nearest directory above the script "
                       "holding pyproject.toml, setup.cfg, setup.py or .git, else the script's directory)")
    trace.add_argument("command", nargs=argparse.REMAINDER, help="-- python SCRIPT ARGS...")
    trace.set_defaults(handler=run_trace)


def split_command(command: List[str]) -> "Tuple[List[str], str, List[str]] | str":
    """(interpreter and its options, script path or `-m`, the rest), or why the command cannot be traced."""
    if command and command[0] == "--":
        command = command[1:]
    usage = "amplint trace needs a Python command after `--`: `python SCRIPT ARGS...` or `python -m MODULE ARGS...`"
    if not command or not _PYTHON.match(os.path.basename(command[0])) and command[0] != sys.executable:
        return usage
    head, index = [command[0]], 1
    while index < len(command) and command[index] in _OPTIONS:
        takes_value = _OPTIONS[command[index]]
        head.extend(command[index:index + 1 + takes_value])
        index += 1 + takes_value
    if index >= len(command):
        return usage
    if command[index] == "-m":
        if index + 1 >= len(command):
            return usage
        return head, "-m", command[index + 1:]
    if command[index].startswith("-"):
        return f"amplint trace: interpreter option {command[index]} is not supported; {usage[15:]}"
    return head, command[index], command[index + 1:]


def _project_root(target: str, module: bool, explicit: Optional[str]) -> str:
    from amplint.project.modules import project_top

    if explicit:
        return os.path.abspath(explicit)
    return project_top(os.getcwd() if module else os.path.abspath(target))


def run_trace(args: argparse.Namespace) -> int:
    split = split_command(list(args.command))
    if isinstance(split, str):
        print(f"amplint: error: {split}", file=sys.stderr)
        return 2
    head, target, rest = split
    module = target == "-m"
    if not module and not os.path.isfile(target):
        print(f"amplint: error: {target}: no such script", file=sys.stderr)
        return 2
    if args.project and not os.path.isdir(args.project):
        print(f"amplint: error: {args.project}: --project is not a directory", file=sys.stderr)
        return 2
    output = os.path.abspath(args.output)
    root = _project_root(rest[0] if module else target, module, args.project)
    argv = [*head, BOOTSTRAP, output, root, *(["-m"] if module else []), *(rest if module else [target, *rest])]
    if os.path.exists(output):
        os.remove(output)  # a stale trace must not pass for this run's
    code = _run(argv)
    print(_summary(output, code), file=sys.stderr)
    return code


def _run(argv: List[str]) -> int:
    """Run the traced interpreter in the foreground; Ctrl-C reaches it (same process group), not us."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        process = subprocess.Popen(argv)
        code = process.wait()
    finally:
        signal.signal(signal.SIGINT, previous)
    return 128 - code if code < 0 else code


def _summary(output: str, code: int) -> str:
    try:
        with open(output, encoding="utf-8") as handle:
            records = json.load(handle)
    except (OSError, ValueError):
        return f"amplint trace: the script ended (exit {code}) before the recorder could write {output}"
    low = [r for r in records if r["trace"]["float16"] and r["trace"]["probability"]]
    bad = sum(1 for r in low if r["trace"]["nonfinite"])
    places = len({(r["path"], r["line"]) for r in low})
    return (f"amplint trace: {len(low)} probability computation{'s' if len(low) != 1 else ''} ran with float16 "
            f"inputs at {places} line{'s' if places != 1 else ''}, {bad} with non-finite values; "
            f"{len(records)} record{'s' if len(records) != 1 else ''} written to {relative(output, os.getcwd())}")
