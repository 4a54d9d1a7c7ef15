"""`amplint verify`: the subcommand's parser and entry point.

This module imports neither torch nor the engine at import time, so the
linter's CLI can register the subcommand for free; a missing torch is
exit code 2 with an install hint, not an ImportError.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from typing import TYPE_CHECKING, Any, List, Optional

from amplint.verify.choices import DEVICE_CHOICES

if TYPE_CHECKING:
    from amplint.verify.results import FindingReport
    from amplint.verify.usercode import UserCode

EXIT_OK, EXIT_FIX_INSUFFICIENT, EXIT_ERROR = 0, 1, 2
TIMING_RUNS = 5  # few: the ratio is a cost estimate, and a finding's verdict should stay near its 2 s budget
TORCH_MISSING = "amplint verify needs torch: pip install 'amplint[verify]'"
USER_CODE_SECONDS = 120.0  # a slice imports torch (seconds on a busy machine) and runs up to six times
USER_CODE_MIB = 4096  # address space: torch alone maps about 640 MiB


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return value


def add_verify_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register `verify` on the `amplint` subparsers; the handler is `run_verify`."""
    parser = subparsers.add_parser(
        "verify", help="run each finding before and after its fix on inputs built to make it fail",
        description="Rebuild each flagged computation (never running your code unless --run-user-code is given), "
                    "run the original, fix A and fix C under autocast on synthesized inputs, and report whether "
                    "-inf/NaN go away.")
    parser.add_argument("paths", nargs="*", default=["."], help="files or directories (default: .)")
    parser.add_argument("--device", choices=DEVICE_CHOICES, default="auto",
                        help="auto (default): each region's own device: a CUDA region on CUDA when present, else "
                             "under CUDA's autocast policy emulated on CPU; a CPU region, or one whose device is not "
                             "a literal, under CPU float16 autocast (CUDA when present). cuda-emulated: CUDA's "
                             "autocast dtype policy on a CPU-only torch")
    parser.add_argument("--batch", type=_positive, default=65536, help="rows per run (default: 65536)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the input generator (default: 0)")
    parser.add_argument("--format", choices=["text", "json"], default="text", help="text (default) or json")
    parser.add_argument("--timing-runs", type=_count, default=TIMING_RUNS, metavar="N",
                        help=f"time each version's forward and backward N times after a warm-up and report each "
                             f"fix's cost as a ratio of medians (default: {TIMING_RUNS}; 0: no timing)")
    parser.add_argument("--trace", metavar="FILE",
                        help="a trace from `amplint trace`: also mark each finding confirmed-at-run-time, "
                             "float32-at-run-time or not-reached, and list the traced float16 sites check missed")
    parser.add_argument("--run-user-code", action="store_true",
                        help="also verify hand-written math and the project's own densities by running a slice of "
                             "your code (the density and the project code it uses, importing only torch, math and "
                             "numpy) in a limited child process; see docs/security.md")
    parser.add_argument("--user-code-timeout", type=_seconds, default=USER_CODE_SECONDS, metavar="SECONDS",
                        help=f"wall-clock limit of each slice's child process (default: {USER_CODE_SECONDS:g}); its "
                             "CPU-time limit is one second more")
    parser.add_argument("--user-code-memory", type=_positive, default=USER_CODE_MIB, metavar="MIB",
                        help=f"address-space limit of each slice's child process, in MiB (default: {USER_CODE_MIB})")
    parser.add_argument("--config", metavar="FILE", help="amplint.toml or pyproject.toml to use (default: nearest)")
    parser.set_defaults(handler=run_verify)
    return parser


def run_verify(args: argparse.Namespace) -> int:
    """Exit 1 if any finding is fix-insufficient, 2 without torch or nothing readable, else 0."""
    from amplint.verify.syspath import strip_project_paths

    strip_project_paths(args.paths)  # import installed packages only, never the analysed project's
    if importlib.util.find_spec("torch") is None:
        print(f"amplint: error: {TORCH_MISSING}", file=sys.stderr)
        return EXIT_ERROR
    from amplint.configfile import ConfigError, resolve_config
    from amplint.trace.compare import load_trace
    from amplint.verify.targets import collect

    records = load_trace(args.trace) if getattr(args, "trace", None) else None
    if isinstance(records, str):
        print(f"amplint: error: {records}", file=sys.stderr)
        return EXIT_ERROR
    loaded = resolve_config(args.paths, getattr(args, "config", None))
    if isinstance(loaded, ConfigError):  # the same configuration check would use, or none at all
        print(f"amplint: error: {loaded}", file=sys.stderr)
        return EXIT_ERROR
    # Check's findings first, before torch starts threads: the analysis's process pool then forks
    # clean workers, and none of them imports torch (or prints its import warnings).
    collected = collect(args.paths, loaded.config)
    try:
        with warnings.catch_warnings():  # a torch without numpy says so at import: not the user's concern
            warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
            import torch  # noqa: F401
    except ImportError as exc:  # installed but broken
        print(f"amplint: error: torch failed to import ({exc}); {TORCH_MISSING}", file=sys.stderr)
        return EXIT_ERROR
    from amplint.verify.devices import device_for, resolve_device
    from amplint.verify.report import json_report, summary, text_report
    from amplint.verify.results import Verdict
    from amplint.verify.runner import RunSettings
    from amplint.verify.usercode import verify_finding

    choice = resolve_device(args.device)
    if choice.device is None and args.device != "auto":
        print(f"amplint: error: {choice.error}", file=sys.stderr)
        return EXIT_ERROR
    for said in [*collected.errors, *collected.notices]:
        print(str(said), file=sys.stderr)
    if collected.checked == 0 and collected.errors:
        return EXIT_ERROR
    user = _user_code(args)
    reports = []
    total = len(collected.targets)
    for index, target in enumerate(collected.targets, 1):
        device = device_for(target.region, args.device)
        settings = RunSettings(device, args.batch, args.seed, getattr(args, "timing_runs", TIMING_RUNS))
        print(f"[{index}/{total}] {target.path}:{target.line} ...", end="", file=sys.stderr, flush=True)
        report = verify_finding(target, settings, user)
        print(f" {report.computation} on {device.name}: {report.verdict.value} ({report.seconds:.2f} s)",
              file=sys.stderr, flush=True)
        reports.append(report)
    if records is not None:
        _print_with_trace(reports, records, args)
    elif args.format == "json":
        print(json_report(reports))
    else:
        if reports:
            print(text_report(reports))
            print()
        print(summary(reports))
    return EXIT_FIX_INSUFFICIENT if any(r.verdict is Verdict.FIX_INSUFFICIENT for r in reports) else EXIT_OK


def _user_code(args: argparse.Namespace) -> "Optional[UserCode]":
    """`--run-user-code`'s settings: the folders given (a slice reads no file outside them) and the limits."""
    if not getattr(args, "run_user_code", False):
        return None
    from amplint.verify.sandbox import Limits
    from amplint.verify.sliceimports import bases_of
    from amplint.verify.usercode import UserCode

    limits = Limits(getattr(args, "user_code_timeout", USER_CODE_SECONDS),
                    getattr(args, "user_code_memory", USER_CODE_MIB))
    return UserCode(bases_of(args.paths), limits)


def _print_with_trace(reports: "List[FindingReport]", records: List[dict], args: argparse.Namespace) -> None:
    """The reports with their run-time verdicts, then the traced sites check did not report, then the counts."""
    import os

    from amplint.verify.report import summary, text_report
    from amplint.verify.runtime import json_runtime_report, judge_run, summary_line, text_missed

    judged = judge_run(reports, records, args.trace, os.getcwd())
    if args.format == "json":
        print(json_runtime_report(judged))
        return
    if judged.reports:
        print(text_report(judged.reports))
        print()
    print(text_missed(judged))
    print()
    print(summary(judged.reports))
    print(summary_line(judged))
