"""`amplint` command line: check, rule (and the subcommands other modules add).

Exit codes: 0 clean, 1 findings (or files that could not be checked),
2 usage errors or nothing could be read at all.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

from amplint import __version__
from amplint.config import STRATEGIES, Config
from amplint.model import FileError, FileResult, Finding

if TYPE_CHECKING:  # pragma: no cover
    from amplint.configfile import LoadedConfig

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# `check` with no PATHS checks these (unless --no-default-paths).
DEFAULT_PATHS = (".",)


def _codes(value: str) -> List[str]:
    return [part.strip().upper() for part in value.split(",") if part.strip()]


def _jobs(value: str) -> int:
    if value == "auto":
        return 0
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="amplint", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"amplint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check", help="report (and optionally fix) float16 autocast hazards")
    check.add_argument("paths", nargs="*", default=[], help="files or directories (default: .)")
    check.add_argument("--format", choices=["text", "json", "sarif", "github"], default="text")
    check.add_argument("--config", metavar="FILE", help="amplint.toml or pyproject.toml to use (default: nearest)")
    check.add_argument(
        "--no-default-paths",
        action="store_true",
        help="with no PATHS, check nothing and exit 0 instead of checking '.' (for pre-commit hooks)",
    )
    check.add_argument("--select", type=_codes, help="codes or prefixes to report, comma separated")
    check.add_argument("--ignore", type=_codes, help="codes or prefixes to skip, comma separated")
    check.add_argument("--exclude", action="append", default=None, help="glob of paths to skip (repeatable)")
    check.add_argument("--strategy", choices=STRATEGIES, help="fix strategy (default: cast)")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    check.add_argument(
        "--no-project", action="store_true",
        help="check each file on its own: do not follow calls from float16 regions into other files",
    )
    check.add_argument(
        "-j", "--jobs", type=_jobs, metavar="N",
        help="processes that parse files: 1 for none, 0 or 'auto' (the default) for one per CPU when there are "
        "enough files to parse to pay for starting them",
    )
    check.add_argument("--fix", action="store_true", help="rewrite fixable findings in place (see --strategy)")
    check.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    check.set_defaults(handler=run_check)

    rule = sub.add_parser("rule", help="print a rule's documentation")
    rule.add_argument("code", nargs="?", help="e.g. AMP001")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.set_defaults(handler=run_rule)

    show = sub.add_parser("config", help="print the resolved configuration and the file it came from")
    show.add_argument("path", nargs="?", default=".", help="file or directory to resolve for (default: .)")
    show.add_argument("--config", metavar="FILE", help="read this file instead of the nearest one")
    show.add_argument("--format", choices=["toml", "json"], default="toml")
    show.set_defaults(handler=run_config)

    server = sub.add_parser(
        "server", help="run the language server (LSP) over stdin/stdout for editors; needs amplint[lsp]"
    )
    server.set_defaults(handler=run_server)

    from amplint.verify.cli import add_verify_parser  # argparse only: torch loads when verify runs

    add_verify_parser(sub)
    return parser


def config_from_args(args: argparse.Namespace, base: Config = Config()) -> Config:
    """CLI flags override the configuration they start from."""
    changes: Dict[str, object] = {}
    if args.select:
        changes["select"] = tuple(args.select)
    if args.ignore:
        changes["ignore"] = tuple(args.ignore)
    if args.exclude:
        changes["exclude"] = tuple(base.exclude) + tuple(args.exclude)
    if args.strategy:
        changes["strategy"] = args.strategy
    if getattr(args, "no_project", False):
        changes["project"] = False
    if getattr(args, "jobs", None) is not None:
        changes["jobs"] = args.jobs
    return replace(base, **changes)


def _source_lines(results: Sequence[FileResult], notebooks_only: bool = False) -> Dict[str, List[str]]:
    lines: Dict[str, List[str]] = {}
    for result in results:
        if result.findings and (not notebooks_only or result.path.endswith(".ipynb")):
            from amplint.files import read_source, source_lines

            source = read_source(result.path)
            lines[result.path] = [] if isinstance(source, FileError) else source_lines(source.text)
    return lines


def _exit_code(findings: Sequence[Finding], errors: Sequence[FileError], checked: int, exit_zero: bool) -> int:
    if checked == 0 and errors:
        return EXIT_ERROR
    if exit_zero:
        return EXIT_CLEAN
    return EXIT_FINDINGS if findings or errors else EXIT_CLEAN


def run_check(args: argparse.Namespace) -> int:
    from amplint import output, progress
    from amplint.engine import check_paths

    if not args.paths:
        if args.no_default_paths:
            return EXIT_CLEAN  # a hook run with no files: nothing to check, say nothing
        args.paths = list(DEFAULT_PATHS)
    loaded = _load_config(args.paths, args.config)
    if loaded is None:
        return EXIT_ERROR
    config = config_from_args(args, loaded.config)
    if args.fix or args.diff:
        from amplint.fix.command import run_fix

        return run_fix(args, config)
    with progress.attached(progress.wanted(args.format)):  # erased before anything below prints
        results = check_paths(args.paths, config)
    findings = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    errors = [r.error for r in results if r.error is not None]
    checked = sum(1 for r in results if r.error is None)
    from amplint.notebook import locate

    # Notebook findings: from the lines of the notebook's Python text to (cell, line in the cell).
    findings, sources = locate(findings, _source_lines(results, notebooks_only=args.format not in ("text", "sarif")))
    for error in errors:
        print(output.error_line(error), file=sys.stderr)
    if args.format == "json":
        print(output.json_report(findings))
    elif args.format == "sarif":
        from amplint.sarif import codemod_fixes, sarif_report

        print(sarif_report(findings, errors, codemod_fixes(config), sources=sources))
    elif args.format == "github":
        from amplint.github import github_report

        report = github_report(findings, errors)
        if report:
            print(report)
    else:
        report = output.text_report(findings, sources)
        if report:
            print(report)
        print(output.summary(findings, errors))
    return _exit_code(findings, errors, checked, args.exit_zero)


def _load_config(paths: Sequence[str], explicit: Optional[str]) -> "Optional[LoadedConfig]":
    """The config file's settings, or None after printing why it cannot be used."""
    from amplint.configfile import ConfigError, resolve_config

    loaded = resolve_config(paths, explicit)
    if isinstance(loaded, ConfigError):
        print(f"amplint: error: {loaded}", file=sys.stderr)
        return None
    return loaded


def run_config(args: argparse.Namespace) -> int:
    import json

    from amplint import configfile

    loaded = _load_config([args.path], args.config)
    if loaded is None:
        return EXIT_ERROR
    if args.format == "json":
        print(json.dumps(configfile.to_json(loaded), indent=2))
    else:
        print(configfile.to_toml(loaded))
    return EXIT_CLEAN


def run_rule(args: argparse.Namespace) -> int:
    from amplint.rules import ALL_RULES, BY_CODE

    if args.all or not args.code:
        for rule in ALL_RULES:
            print(f"{rule.code}  {rule.name:<36} {rule.summary}")
        return EXIT_CLEAN
    rule = BY_CODE.get(args.code.upper())
    if rule is None:
        print(f"amplint: error: unknown rule {args.code!r}; known: {', '.join(BY_CODE)}", file=sys.stderr)
        return EXIT_ERROR
    print(rule.documentation())
    return EXIT_CLEAN


def run_server(args: argparse.Namespace) -> int:
    try:
        from amplint.lsp.server import serve
    except ImportError as exc:  # pygls/lsprotocol are the optional `lsp` extra
        print(f"amplint: error: the language server needs pygls and lsprotocol ({exc}); "
              "install them with: pip install 'amplint[lsp]'", file=sys.stderr)
        return EXIT_ERROR
    return serve()


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return int(args.handler(args))
    except BrokenPipeError:  # e.g. `amplint check | head`: stop quietly, like other CLI tools
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS
    except KeyboardInterrupt:  # Ctrl-C: the process pool's workers are already stopped (`amplint.parallel`)
        print("amplint: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
