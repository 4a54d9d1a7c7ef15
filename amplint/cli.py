"""amplint: find and fix float16 autocast hazards in PyTorch probability code.

Subcommands: check (report, fix, add noqa), rule (documentation), config (the
resolved settings), server (the editor's language server), verify (run each
finding before and after its fix under autocast; needs torch).

Exit codes: 0 clean, 1 findings (or files that could not be checked),
2 usage errors or nothing could be read at all.
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence

from amplint import __version__

if TYPE_CHECKING:  # pragma: no cover
    from amplint.config import Config
    from amplint.configfile import LoadedConfig
    from amplint.model import FileError, FileResult, Finding, Notice
# Imported where used, as the rest of amplint is: inside `main`, whose dataclasses are compiled once.

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# `check` with no PATHS checks these (unless --no-default-paths).
DEFAULT_PATHS = (".",)
FORMATS = ["text", "json", "sarif", "github", "gitlab"]


def _codes(value: str) -> List[str]:
    return [part.strip().upper() for part in value.split(",") if part.strip()]


def _count(what: str, auto: bool = False) -> Callable[[str], int]:
    """An argparse type for a count of `what` (0 or more; `auto` also takes "auto", as 0)."""
    def parse(value: str) -> int:
        try:
            number = 0 if auto and value == "auto" else int(value)
        except ValueError:
            number = -1
        if number < 0:
            raise argparse.ArgumentTypeError(f"expected {what}, got {value!r}")
        return number
    return parse


_jobs = _count("a number of processes or 'auto'", auto=True)
_units = _count("a non-negative number of work units")


def build_parser() -> argparse.ArgumentParser:
    from amplint.config import STRATEGIES

    parser = argparse.ArgumentParser(
        prog="amplint", description=__doc__.split("\n\n")[0],
        epilog="Run `amplint COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"amplint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = sub.add_parser("check", help="report (and optionally fix) float16 autocast hazards")
    check.add_argument(
        "paths", nargs="*", default=[], help="Python files, notebooks (.ipynb) or directories (default: .)"
    )
    check.add_argument(
        "--format", "--output-format", dest="format", choices=FORMATS, default="text",
        help="text (default), json, sarif (GitHub code scanning), github (workflow annotations) or gitlab "
        "(GitLab Code Quality)",
    )
    check.add_argument(
        "--statistics", action="store_true",
        help="print how many findings each rule has instead of the findings (json with --format json)",
    )
    check.add_argument(
        "--add-noqa", action="store_true",
        help="add `# noqa: CODE` to the line of every current finding (running it again changes nothing)",
    )
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
        "--min-risk", choices=["low", "high"], default=None,
        help="report only findings whose measured risk on their region's device is at least this (low < high); "
        "findings of unknown risk (nothing measured applies) are kept unless --hide-unknown is given",
    )
    check.add_argument(
        "--hide-unknown", action="store_true",
        help="drop findings of unknown risk (hand-written math, a distribution built out of sight, ...)",
    )
    check.add_argument(
        "--no-project", action="store_true",
        help="check each file on its own: do not follow calls from float16 regions into other files, and do "
        "not look for the project of a named file",
    )
    check.add_argument(
        "--no-project-root", action="store_true",
        help="follow calls only among the paths given: do not index the project (src, or the nearest "
        "pyproject.toml/setup.cfg/setup.py/.git) of each named file (project-root = false in the config)",
    )
    gitignore = check.add_mutually_exclusive_group()
    gitignore.add_argument(
        "--respect-gitignore", dest="respect_gitignore", action="store_true", default=None,
        help="skip files and folders git ignores (.gitignore, .git/info/exclude) under the directories walked; "
        "a file named explicitly is checked anyway (the default; respect-gitignore = true in the config)",
    )
    gitignore.add_argument(
        "--no-respect-gitignore", dest="respect_gitignore", action="store_false",
        help="walk the folders git ignores too (respect-gitignore = false in the config)",
    )
    check.add_argument(
        "--flow-budget", type=_units, metavar="UNITS",
        help="value-flow work the walk from float16 regions may spend per file checked (flow-budget in the "
        "config; 0: no bound). When it is reached the run says so on stderr and stops entering functions",
    )
    check.add_argument(
        "-j", "--jobs", type=_jobs, metavar="N",
        help="processes that parse files: 1 for none, 0 or 'auto' (the default) for one per CPU when there are "
        "enough files to parse to pay for starting them",
    )
    check.add_argument(
        "--compare", metavar="TRACE",
        help="set the findings beside a trace from `amplint trace`: list the traced float16 sites the check "
        "missed (exit 1 if any), the findings the run never reached and those it ran without float16 inputs",
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
    show.add_argument("--format", choices=["toml", "json"], default="toml", help="toml (default) or json")
    show.set_defaults(handler=run_config)

    server = sub.add_parser(
        "server", help="run the language server (LSP) over stdin/stdout for editors; needs amplint[lsp]"
    )
    server.set_defaults(handler=run_server)

    from amplint.trace.command import add_trace_parser
    from amplint.verify.cli import add_verify_parser  # argparse only: torch loads when verify runs

    add_verify_parser(sub)
    add_trace_parser(sub)
    return parser


def config_from_args(args: argparse.Namespace, base: "Optional[Config]" = None) -> "Config":
    """CLI flags override the configuration they start from (None: the defaults)."""
    from amplint.config import Config

    base = Config() if base is None else base
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
    if getattr(args, "no_project_root", False):
        changes["project_root"] = False
    if getattr(args, "respect_gitignore", None) is not None:
        changes["respect_gitignore"] = args.respect_gitignore
    if getattr(args, "flow_budget", None) is not None:
        changes["flow_budget"] = args.flow_budget
    if getattr(args, "jobs", None) is not None:
        changes["jobs"] = args.jobs
    return replace(base, **changes)


def _source_lines(results: Sequence[FileResult], notebooks_only: bool = False) -> Dict[str, List[str]]:
    lines: Dict[str, List[str]] = {}
    for result in results:
        if result.findings and (not notebooks_only or result.path.endswith(".ipynb")):
            from amplint.files import read_source, source_lines
            from amplint.model import FileError

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
    from amplint.engine import check
    from amplint.model import Finding

    if not args.paths:
        if args.no_default_paths:
            return EXIT_CLEAN  # a hook run with no files: nothing to check, say nothing
        args.paths = list(DEFAULT_PATHS)
    clash = _compare_clash(args) or _code_error(args) or _option_clash(args)
    if clash:
        print(f"amplint: error: {clash}", file=sys.stderr)
        return EXIT_ERROR
    loaded = _load_config(args.paths, args.config)
    if loaded is None:
        return EXIT_ERROR
    config = _capped_jobs(config_from_args(args, loaded.config))
    _note_lone_files(args.paths, config)
    if args.fix or args.diff:
        from amplint.fix.command import run_fix

        return run_fix(args, config)
    with progress.attached(progress.wanted(args.format)):  # erased before anything below prints
        checked = check(args.paths, config, in_project=True)
    results, notices = checked.results, checked.notices
    findings = sorted((f for r in results for f in r.findings), key=Finding.sort_key)
    if args.min_risk or args.hide_unknown:
        from amplint.risk import at_least

        findings = at_least(findings, args.min_risk, args.hide_unknown)
    all_errors = [r.error for r in results if r.error is not None]
    errors = _warn_empty(all_errors)
    checked = sum(1 for r in results if r.error is None)
    if checked == 0 and not errors and all_errors:
        return EXIT_CLEAN  # only empty directories: the warning says it all
    for error in errors:
        print(output.error_line(error), file=sys.stderr)
    for notice in notices:
        print(output.error_line(notice), file=sys.stderr)
    if args.add_noqa:
        return _add_noqa(findings, errors)
    if args.compare:
        return _compare(args, findings)
    from amplint.notebook import locate

    # Notebook findings: from the lines of the notebook's Python text to (cell, line in the cell).
    wanted = args.format in ("text", "sarif", "gitlab") and not args.statistics
    findings, sources = locate(findings, _source_lines(results, notebooks_only=not wanted))
    _print_report(args, config, findings, errors, sources, notices)
    return _exit_code(findings, errors, checked, args.exit_zero)


def _print_report(
    args: argparse.Namespace, config: Config, findings: List[Finding], errors: List[FileError],
    sources: Dict[str, List[str]], notices: Sequence[Notice] = (),
) -> None:
    from amplint import output, reports

    if args.statistics:
        if args.format == "json":
            import json

            print(json.dumps(reports.statistics(findings), indent=2))
        elif findings:
            print(reports.statistics_text(findings))
    elif args.format == "json":
        print(output.json_report(findings))
    elif args.format == "sarif":
        from amplint.sarif import codemod_fixes, sarif_report

        print(sarif_report(findings, errors, codemod_fixes(config), sources=sources, notices=notices))
    elif args.format == "gitlab":
        from amplint.sarif import fingerprints

        print(reports.gitlab_report(findings, fingerprints(findings, sources, os.path.abspath(os.curdir))))
    elif args.format == "github":
        from amplint.github import github_report

        report = github_report(findings, errors, notices)
        if report:
            print(report)
    else:
        report = output.text_report(findings, sources)
        if report:
            print(report)
        print(output.summary(findings, errors))


def _note_lone_files(paths: Sequence[str], config: Config) -> None:
    """Say on stderr which named files have no project above them (`amplint.scope`) but have neighbours.

    Such a file is checked with the paths given instead of in its project, so its findings may differ from a
    run over its directory, whose other Python files would be followed: the user is told rather than left to
    wonder. A file with no other Python file or notebook beside it gets the same findings either way: no note.
    """
    if not (config.project and config.project_root):
        return
    from amplint.scope import project_dirs

    directories = [os.path.abspath(p) for p in paths if os.path.isdir(p)]
    for path in paths:
        full = os.path.abspath(path)
        if not os.path.isfile(path) or any(full.startswith(d.rstrip(os.sep) + os.sep) for d in directories):
            continue
        if project_dirs(path, config) is None and _has_neighbours(full, paths):
            alone = "alone" if len(paths) == 1 else "with the other paths given"
            print(f"amplint: note: no project found above {path} (no pyproject.toml, setup.cfg, setup.py or .git); "
                  f"checking it {alone}", file=sys.stderr)


def _has_neighbours(full: str, paths: Sequence[str]) -> bool:
    """Does the directory of `full` hold a Python file or notebook that is not among `paths`?"""
    named = {os.path.abspath(path) for path in paths}
    directory = os.path.dirname(full)
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any(name.endswith((".py", ".pyi", ".ipynb")) and os.path.join(directory, name) not in named
               for name in names)


def _capped_jobs(config: Config) -> Config:
    """`-j N` (or `jobs = N`) above the usable CPUs runs one worker per CPU, and says so on stderr.

    More workers than CPUs only compete for them (and each holds its own trees): `-j 64` on 2 CPUs is 2.
    """
    from amplint.parallel import usable_cpus

    cpus = usable_cpus()
    if config.jobs is None or config.jobs <= cpus:
        return config
    print(f"amplint: warning: {config.jobs} jobs asked for, {cpus} usable CPU{'s' if cpus != 1 else ''}: "
          f"using {cpus}", file=sys.stderr)
    return replace(config, jobs=cpus)


def _code_error(args: argparse.Namespace) -> Optional[str]:
    """Why a code given to --select or --ignore is refused, if one is: the check `[tool.amplint]` makes.

    An unknown code would select nothing (`--select AMP999`: "Found 0 findings", exit 0) or ignore nothing,
    silently; the configuration file refuses the same codes, so the command line does too.
    """
    given = [(flag, code) for flag, codes in (("--select", args.select), ("--ignore", args.ignore))
             for code in codes or ()]
    if not given:
        return None
    from amplint.configfile import CODE
    from amplint.rules import BY_CODE  # imports LibCST: only when there are codes to check

    for flag, code in given:
        if not CODE.match(code):
            return f"{flag}: {code!r} is not a rule code or prefix (upper-case letters then digits, e.g. AMP001)"
        if not any(known.startswith(code) for known in BY_CODE):
            return f"{flag}: {code!r} matches no rule; known rules: {', '.join(BY_CODE)}"
    return None


def _option_clash(args: argparse.Namespace) -> Optional[str]:
    """Why the rewriting options given cannot go together: each of --fix, --diff and --add-noqa is one action.

    Before, `--fix --diff` silently did `--diff` and `--add-noqa --fix` only the fix; refused, no option is
    ever ignored.
    """
    given = [flag for flag, on in (("--fix", args.fix), ("--diff", args.diff), ("--add-noqa", args.add_noqa)) if on]
    if len(given) > 1:
        return f"{given[0]} cannot be combined with {given[1]}: choose one"
    return None


def _compare_clash(args: argparse.Namespace) -> Optional[str]:
    """Why `--compare` cannot go with the other options given, if it cannot."""
    if not args.compare:
        return None
    for flag, given in (("--fix", args.fix), ("--diff", args.diff), ("--add-noqa", args.add_noqa),
                        ("--statistics", args.statistics)):
        if given:
            return f"--compare cannot be combined with {flag}"
    if args.format not in ("text", "json"):
        return f"--compare prints text or json, not {args.format}"
    return None


def _compare(args: argparse.Namespace, findings: "Sequence[Finding]") -> int:
    """Exit 1 when the trace holds a float16 site no finding stands for, else 0."""
    from amplint.trace.compare import json_report, load_trace, match, text_report

    records = load_trace(args.compare)
    if isinstance(records, str):
        print(f"amplint: error: {records}", file=sys.stderr)
        return EXIT_ERROR
    comparison = match([finding.to_json() for finding in findings], records, os.getcwd())
    print(json_report(comparison) if args.format == "json" else text_report(comparison))
    return EXIT_FINDINGS if comparison.missed else EXIT_CLEAN


def _warn_empty(errors: List[FileError]) -> List[FileError]:
    """A directory with no Python files is a one-line warning, not an error (as in ruff); the rest stay errors."""
    from amplint.files import NO_FILES

    for error in errors:
        if error.message == NO_FILES:
            print(f"amplint: warning: no Python files or notebooks found in {error.path}", file=sys.stderr)
    return [error for error in errors if error.message != NO_FILES]


def _add_noqa(findings: Sequence[Finding], errors: Sequence[FileError]) -> int:
    from amplint.addnoqa import add_noqa_to_files
    from amplint.output import error_line

    added, written, failed = add_noqa_to_files(findings)
    for error in failed:
        print(error_line(error), file=sys.stderr)
    plural = "" if written == 1 else "s"
    print(f"Added a `# noqa` comment for {added} finding{'' if added == 1 else 's'} in {written} file{plural}.")
    return EXIT_ERROR if failed or errors else EXIT_CLEAN


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
              "install them with: pip install 'amplint[lsp]' (in a clone: pip install '.[lsp]')", file=sys.stderr)
        return EXIT_ERROR
    return serve()


def main(argv: Optional[Sequence[str]] = None) -> int:
    from amplint.cstimport import own_classes_compiled_once

    with own_classes_compiled_once():  # the modules a command imports define dataclasses: compiled once
        return _main(argv)


def _main(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    from amplint.collection import batch_collection
    from amplint.output import tolerate_unencodable

    tolerate_unencodable()  # a line the console cannot encode is escaped, never a crash
    if argv is None:  # the real command line: SIGTERM stops it as Ctrl-C does (files whole, exit 143)
        from amplint.interrupts import terminate_as_interrupt

        terminate_as_interrupt()
    try:
        with batch_collection(ending=argv is None):  # no argv: the real command line, which exits next
            return int(args.handler(args))
    except BrokenPipeError:  # e.g. `amplint check | head`: stop quietly, like other CLI tools
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FINDINGS
    except KeyboardInterrupt:  # Ctrl-C: the process pool's workers are already stopped (`amplint.parallel`)
        print("amplint: interrupted", file=sys.stderr)
        if argv is None:  # the real command line: exit without joining the pool's threads
            from amplint.interrupts import exit_status
            from amplint.parallel import exit_now

            exit_now(exit_status())
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
