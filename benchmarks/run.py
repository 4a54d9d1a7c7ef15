"""Time amplint against ast.parse, TorchFix (flake8 --select TOR), ruff and
flake8 on the same real files (issue 8).

Two file sets, labelled in every row:

* **slice**: every 10th file of diffusers' ``src/diffusers`` (111 files, ~55k
  lines), small enough for the slow tools (TorchFix, pycodestyle) to run
  several times;
* **full**: the whole corpus (~4,600 files, ~2M lines) for the fast tools.

Runs alternate (each repetition runs every case once, in a rotated order) so a
burst of background load hits all tools alike; the table gives medians with
min/max of wall seconds, CPU seconds (user+system of the whole process tree)
and peak RSS, then the ratios issue 8 sets as targets.

Usage::

    python benchmarks/run.py                       # print the table
    python benchmarks/run.py --write benchmarks/RESULTS.md
    python benchmarks/run.py --findings --write benchmarks/RESULTS.md
    python benchmarks/run.py --quick               # plumbing check, ~1 min
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common  # noqa: E402
import corpus  # noqa: E402
import onefile  # noqa: E402
import tools  # noqa: E402
from common import Amplint, Measurement  # noqa: E402
from corpus import FileSet  # noqa: E402

BENCH = corpus.WORK / "bench"
# The whole script must stay under 15 minutes; the budget stops new runs,
# and the run in flight (at most ~90 s) still has to fit.
DEFAULT_BUDGET_S = 780.0

# One file through amplint's analysis as project mode runs it (a parse is forced: no prefilter).
ANALYZE_ONE_CODE = (
    "import sys\n"
    "from amplint.config import Config\n"
    "from amplint.engine import analyze_source\n"
    "for p in sys.argv[1:]:\n"
    "    analyze_source(open(p, encoding='utf-8').read(), p, Config(), project=True)\n"
)
AST_CODE = (
    "import ast, sys\n"
    "for p in sys.argv[1:]:\n"
    "    with open(p, 'rb') as f:\n"
    "        src = f.read()\n"
    "    try:\n"
    "        ast.parse(src, p)\n"
    "    except (SyntaxError, ValueError):\n"
    "        pass\n"
)


@dataclass
class Case:
    """One command on one file set, measured once per repetition."""

    key: str
    label: str
    fileset: FileSet
    argv: List[str]  # the files are appended
    note: str = ""
    warmup: bool = True  # one untimed slice run first (compiles .pyc, loads caches)
    slow: bool = False  # runs only in the first --slow-reps repetitions
    env: Optional[Dict[str, str]] = None  # amplint rows: cache off (or a private one)
    runs: List[Measurement] = field(default_factory=list)

    def command(self) -> List[str]:
        """Full argv: tool options then the set's paths relative to its root."""
        return [*self.argv, *self.fileset.relative()]

    def run(self) -> Measurement:
        """Measure once, with the set's root as working directory."""
        return common.measure(self.command(), cwd=self.fileset.root, env=self.env)


@dataclass
class Skipped:
    """A case that could not run, with the reason shown in the table."""

    label: str
    reason: str


# --------------------------------------------------------------------------
# Building the cases
# --------------------------------------------------------------------------


def _shrink(fs: FileSet, n: Optional[int]) -> FileSet:
    """First *n* files of a set (for --quick); the label says so."""
    if n is None or n >= len(fs.files):
        return fs
    return FileSet(f"{fs.label} [first {n}]", fs.root, fs.files[:n])


def _third_party_cases(sl: FileSet, full: FileSet, env: tools.ToolEnv,
                       amp_plugin: Optional[str]) -> Tuple[List[Case], List[Skipped]]:
    """ast, TorchFix, ruff and flake8 rows (amplint-independent except AMP)."""
    py = str(common.MAIN_PYTHON)
    ruff = [str(env.ruff), "check", "--isolated", "--select", "ALL", "--no-cache",
            "--output-format", "concise"]
    cases = [
        Case("ast_slice", "python: ast.parse every file", sl, [py, "-c", AST_CODE]),
        Case("tor_slice", "flake8 --select TOR (TorchFix 0.7.0)", sl,
             [str(env.flake8_tor), "--isolated", "--select", "TOR"], warmup=False,
             slow=True),
        Case("ruff_slice", "ruff check --select ALL --no-cache", sl, ruff),
        Case("f8e_slice", "flake8 --select E (no plugins)", sl,
             [str(env.flake8_plain), "--isolated", "--select", "E"], warmup=False,
             note="same flake8/pycodestyle versions as amplint's venv"),
        Case("ast_full", "python: ast.parse every file", full, [py, "-c", AST_CODE]),
        Case("ruff_full", "ruff check --select ALL --no-cache", full, ruff),
    ]
    skipped: List[Skipped] = []
    main_f8 = str(common.MAIN_FLAKE8)
    if amp_plugin is None:
        cases += [
            Case("f8e_amp_installed_slice", "flake8 --select E (AMP installed)", sl,
                 [main_f8, "--isolated", "--select", "E"], warmup=False,
                 env=common.amplint_env(),
                 note="amplint's venv: flake8 runs every plugin whatever --select says"),
            Case("f8eamp_slice", "flake8 --select E,AMP", sl,
                 [main_f8, "--isolated", "--select", "E,AMP"], warmup=False,
                 env=common.amplint_env()),
        ]
    else:
        skipped += [Skipped("flake8 --select E,AMP", amp_plugin)]
    return cases, skipped


def _amplint_cases(amp: Amplint, sl: FileSet, full: FileSet,
                   fix_sets: Dict[str, FileSet]) -> Tuple[List[Case], List[Skipped]]:
    """amplint rows: single-file mode, project mode, --fix on a clean copy."""
    if not amp.available:
        return [], [Skipped("amplint check (all modes)", amp.reason)]
    cases: List[Case] = []
    skipped: List[Skipped] = []
    single = amp.single_file()
    project_label = "amplint check (project mode)" if single else "amplint check (default mode)"
    cold = common.amplint_env()
    for tag, fs in (("slice", sl), ("full", full)):
        if single:
            cases.append(Case(f"amp_single_{tag}", "amplint check --no-project", fs, single,
                              env=cold))
        cases.append(Case(f"amp_project_{tag}", project_label, fs, amp.project(), env=cold,
                          note="cache off (AMPLINT_NO_CACHE=1), as every amplint row"))
        if tag == "slice":  # on the full corpus this row cost ~90 s a repetition
            warm_dir = BENCH / f"cache-{tag}"
            shutil.rmtree(warm_dir, ignore_errors=True)
            cases.append(Case(f"amp_warm_{tag}", f"{project_label}, warm cache", fs,
                              amp.project(), env=common.amplint_env(warm_dir), warmup=True,
                              note="cache filled by an untimed first run"))
        if amp.has("--fix") and tag in fix_sets:
            cases.append(Case(f"amp_fix_{tag}", "amplint check --fix (copy, no findings left)",
                              fix_sets[tag], [*amp.project(), "--fix"], env=cold))
            # The same copy checked: the --fix ratio compares like with like (same paths, same page cache).
            cases.append(Case(f"amp_fixcheck_{tag}", "amplint check (the same copy)",
                              fix_sets[tag], amp.project(), env=cold))
    largest = _largest_parsed(full)
    if largest is not None:
        cases.append(Case("amp_project_largest", "amplint's analysis of one file (project=True)", largest,
                          [str(common.MAIN_PYTHON), "-c", ANALYZE_ONE_CODE], env=cold,
                          note="the largest file project mode parses in the full corpus, analysed alone "
                               "in-process: the memory of one parse tree, the baseline"))
    if not single:
        skipped.append(Skipped("amplint check --no-project", "flag not offered yet"))
    if not amp.has("--fix"):
        skipped.append(Skipped("amplint check --fix", "flag not offered yet"))
    return cases, skipped


def _largest_parsed(full: FileSet) -> Optional[FileSet]:
    """The largest file project mode parses in *full*, as a one-file set (None if it cannot tell).

    Peak memory is one parse tree at a time (plus a bounded few kept for the
    entry pass), so amplint's RSS on the whole corpus should be close to its
    RSS on this file alone: that ratio, not full / slice, shows whether memory
    grows with the number of files.
    """
    code = ("import sys; from amplint.config import Config; from amplint.project.run import run_project; "
            "r = run_project([sys.argv[1]], Config(jobs=1), use_cache=False); "
            "import os; print(max(set(r.stats.parsed), key=os.path.getsize) if r.stats.parsed else '')")
    proc = subprocess.run([str(common.MAIN_PYTHON), "-c", code, str(full.root)], capture_output=True,
                          text=True, env=common.amplint_env())
    name = proc.stdout.strip()
    if proc.returncode != 0 or not name:
        return None
    path = Path(name).resolve()
    return FileSet(f"largest parsed file ({path.relative_to(full.root.resolve())})", full.root, (path,))


def _prepare_fix_copy(amp: Amplint, fs: FileSet, tag: str) -> Tuple[FileSet, str]:
    """Copy a set and fix it once (untimed), so timed --fix runs find nothing to do.

    Returns the copy and a note with how many findings remain (unfixable ones).
    """
    copy = corpus.materialize(fs, BENCH / f"fixcopy-{tag}")
    fix = [*amp.project(), "--fix", *copy.relative()]
    out = BENCH / f"fixcopy-{tag}.txt"
    common.measure(fix, cwd=copy.root, env=common.amplint_env(), stdout_path=out)
    summary = common.fix_summary(out.read_text(errors="replace"))
    if summary is None:
        return copy, "fixed once, untimed"
    fixed, remaining = summary
    return copy, f"untimed --fix first: {fixed} fixed, {remaining} left (unfixable)"


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def _warm_page_cache(sets: Sequence[FileSet]) -> None:
    """Read every file once so the first timed tool does not pay for the disk."""
    for fs in sets:
        for p in fs.files:
            p.read_bytes()


def _log(msg: str) -> None:
    """Progress on stderr, so stdout carries only the table."""
    print(msg, file=sys.stderr, flush=True)


def run_cases(cases: List[Case], reps: int, budget_s: float, started: float,
              slow_reps: int) -> int:
    """Run all cases *reps* times, alternating; stop early if over budget.

    The first repetition always completes (every row gets a number); later
    ones stop before a repetition that would not fit, or mid-way once the
    budget is spent (a loaded machine), so the script keeps to 15 minutes.
    Slow cases (TorchFix: ~90 CPU s a run, hundreds of times amplint) run only
    in the first *slow_reps* repetitions: their ratio has a wide margin, and
    repeating them would crowd out the repetitions of the rows that are close.
    Returns the number of completed repetitions.
    """
    for case in cases:
        if case.warmup and ("slice" in case.key or case.key.startswith("amp_warm")):
            m = case.run()
            _log(f"[warm-up] {case.label} ({case.fileset.label}): {m.wall:.2f} s rc={m.rc}")
    done = 0
    for rep in range(reps):
        order = cases[rep % len(cases):] + cases[:rep % len(cases)]
        for case in order:
            if case.slow and rep >= slow_reps:
                continue
            if rep > 0 and time.perf_counter() - started > budget_s:
                _log(f"budget of {budget_s:.0f} s spent during repetition {rep + 1}: "
                     "remaining runs skipped (see the runs column)")
                return done
            m = case.run()
            case.runs.append(m)
            _log(f"[rep {rep + 1}/{reps}] {case.label} ({case.fileset.label}): "
                 f"{m.wall:.2f} s wall, {m.cpu:.2f} s CPU, rc={m.rc}")
            if common.has_traceback(m.stderr_tail):
                _log(f"  traceback on stderr:\n{m.stderr_tail[-1500:]}")
        done += 1
        elapsed = time.perf_counter() - started
        next_time = sum(c.runs[-1].wall for c in cases
                        if c.runs and not (c.slow and rep + 1 >= slow_reps))
        if rep + 1 < reps and elapsed + next_time > budget_s:
            _log(f"stopping after {done} repetitions: another would pass the "
                 f"{budget_s:.0f} s budget")
            break
    return done


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def _stat(values: Sequence[float], fmt: str = "{:.2f}") -> str:
    """'median (min–max)' for a list of numbers."""
    med = statistics.median(values)
    return f"{fmt.format(med)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def _rc_summary(runs: Sequence[Measurement]) -> str:
    """Distinct exit codes, plus a warning when a traceback was seen."""
    rcs = ",".join(str(rc) for rc in sorted({m.rc for m in runs}))
    if any(common.has_traceback(m.stderr_tail) for m in runs):
        rcs += " TRACEBACK"
    return rcs


def results_table(cases: Sequence[Case], skipped: Sequence[Skipped]) -> str:
    """Markdown table of every case, grouped by file set."""
    rows = ["| tool | file set | files | lines | runs | wall s median (min–max) "
            "| CPU s median (min–max) | peak RSS MB (max) | exit | note |",
            "|---|---|---:|---:|---:|---|---|---:|---|---|"]
    lines_cache: Dict[str, int] = {}
    for c in cases:
        if not c.runs:
            continue
        lines = lines_cache.setdefault(c.fileset.label + str(len(c.fileset.files)),
                                       c.fileset.lines())
        rss = max(m.maxrss_kb for m in c.runs) / 1024
        rows.append(f"| {c.label} | {c.fileset.label} | {len(c.fileset.files)} | {lines} "
                    f"| {len(c.runs)} | {_stat([m.wall for m in c.runs])} "
                    f"| {_stat([m.cpu for m in c.runs])} | {rss:.0f} "
                    f"| {_rc_summary(c.runs)} | {c.note} |")
    for s in skipped:
        rows.append(f"| {s.label} | — | | | 0 | skipped | | | | {s.reason} |")
    return "\n".join(rows)


@dataclass(frozen=True)
class Ratio:
    """A target from issue 8, as num/den of medians with a bound."""

    label: str
    num: str
    den: str
    target: str  # "<= 2" or ">= 40"


def _ratios(single_key: str) -> List[Ratio]:
    """The issue's targets; *single_key* is the best stand-in for single-file mode."""
    return [
        Ratio("TorchFix (flake8 TOR) / amplint single-file, slice", "tor_slice",
              f"{single_key}_slice", ">= 40"),
        Ratio("amplint single-file / ruff ALL, slice", f"{single_key}_slice",
              "ruff_slice", "<= 2"),
        Ratio("amplint single-file / ruff ALL, full", f"{single_key}_full",
              "ruff_full", "<= 2"),
        Ratio("amplint project / single-file, slice", "amp_project_slice",
              f"{single_key}_slice", "<= 2"),
        Ratio("amplint project / single-file, full", "amp_project_full",
              f"{single_key}_full", "<= 2"),
        Ratio("flake8 E,AMP / flake8 E (no plugins), slice", "f8eamp_slice",
              "f8e_slice", "<= 1.2"),
        Ratio("flake8 E (AMP installed) / flake8 E (no plugins), slice",
              "f8e_amp_installed_slice", "f8e_slice", "<= 1.2"),
        Ratio("amplint --fix (nothing to fix) / amplint check, slice", "amp_fix_slice",
              "amp_fixcheck_slice", "<= 1.1"),
        Ratio("amplint --fix (nothing to fix) / amplint check, full", "amp_fix_full",
              "amp_fixcheck_full", "<= 1.1"),
        Ratio("amplint project, warm cache / cold, slice", "amp_warm_slice",
              "amp_project_slice", "(context)"),
        Ratio("amplint single-file / ast.parse every file, full",
              f"{single_key}_full", "ast_full", "(context)"),
        *(Ratio(*row) for row in onefile.RATIOS),
    ]


def _meets(value: float, target: str) -> str:
    """'yes'/'no' against a '<= x' or '>= x' bound; '' for context rows."""
    parts = target.split()
    if len(parts) != 2 or parts[0] not in ("<=", ">="):
        return ""
    bound = float(parts[1])
    ok = value <= bound if parts[0] == "<=" else value >= bound
    return "yes" if ok else "**no**"


def ratio_table(cases: Sequence[Case], single_key: str) -> str:
    """Markdown table of the target ratios, on wall and on CPU medians."""
    by_key = {c.key: c for c in cases if c.runs}
    rows = ["| ratio | target | wall (median/median) | met | CPU (median/median) | met "
            "| CPU (min/min) | met |",
            "|---|---|---:|---|---:|---|---:|---|"]
    for r in _ratios(single_key):
        if r.num not in by_key or r.den not in by_key:
            rows.append(f"| {r.label} | {r.target} | n/a | | n/a | | n/a | |")
            continue
        num, den = by_key[r.num].runs, by_key[r.den].runs
        wall = statistics.median(m.wall for m in num) / statistics.median(m.wall for m in den)
        cpu = statistics.median(m.cpu for m in num) / statistics.median(m.cpu for m in den)
        # The fastest run saw the least interference: the load-robust estimate.
        cpu_min = min(m.cpu for m in num) / min(m.cpu for m in den)
        rows.append(f"| {r.label} | {r.target} | {wall:.2f} | {_meets(wall, r.target)} "
                    f"| {cpu:.2f} | {_meets(cpu, r.target)} "
                    f"| {cpu_min:.2f} | {_meets(cpu_min, r.target)} |")
    rows.append(_rss_row(by_key, single_key))
    rows.append(_rss_project_row(by_key))
    return "\n".join(rows)


def _rss_row(by_key: Dict[str, Case], single_key: str) -> str:
    """Memory flatness: amplint's peak RSS on the full corpus vs the slice."""
    a, b = by_key.get(f"{single_key}_full"), by_key.get(f"{single_key}_slice")
    if not a or not b:
        return "| amplint peak RSS full / slice | flat | n/a | | | | | |"
    ra = max(m.maxrss_kb for m in a.runs)
    rb = max(m.maxrss_kb for m in b.runs)
    files = len(a.fileset.files) / max(1, len(b.fileset.files))
    return (f"| amplint peak RSS full / slice ({files:.0f}× the files) | flat (<= 1.5) "
            f"| {ra / rb:.2f} | {_meets(ra / rb, '<= 1.5')} | | | | |")


def _rss_project_row(by_key: Dict[str, Case]) -> str:
    """Memory flatness in project mode: the whole corpus vs the largest file it parses, alone."""
    a, b = by_key.get("amp_project_full"), by_key.get("amp_project_largest")
    if not a or not b:
        return "| amplint project peak RSS full / largest parsed file alone | flat | n/a | | | | | |"
    ra = max(m.maxrss_kb for m in a.runs)
    rb = max(m.maxrss_kb for m in b.runs)
    return (f"| amplint project peak RSS full / largest parsed file alone ({len(a.fileset.files)} files vs 1) "
            f"| flat (<= 1.5) | {ra / rb:.2f} | {_meets(ra / rb, '<= 1.5')} | | | | |")


def _busy_note() -> List[str]:
    """Warn when other work shared the CPUs: wall times then overstate, CPU does not."""
    try:
        load = float(common.loadavg().split()[1])  # 5-minute average
        cpus = int(common.nproc())
    except (ValueError, IndexError):
        return []
    if load < 0.5 * cpus:
        return []
    return [f"**The machine was busy** (5-minute load {load:.1f} on {cpus} CPUs, other "
            "processes included): wall times are inflated and noisy; compare the CPU columns."]


def report(cases: Sequence[Case], skipped: Sequence[Skipped], amp: Amplint,
           env: tools.ToolEnv, reps_done: int, elapsed: float, machine: List[str],
           slow_reps: int) -> str:
    """The whole markdown block: machine, versions, table, ratios, how to rerun."""
    single_key = "amp_single" if amp.single_file() else "amp_project"
    versions = [
        f"- TorchFix/flake8: {tools.version_of([str(env.flake8_tor)])}",
        f"- ruff: {tools.version_of([str(env.ruff)])}",
        f"- flake8 (plain): {tools.version_of([str(env.flake8_plain)])}",
        f"- amplint: {common.amplint_source()}"
        + ("" if amp.available else f" — unavailable: {amp.reason}"),
    ]
    parts = [
        "## Benchmark", "", *machine, f"- Load average at end: {common.loadavg()}",
        f"- Repetitions: {reps_done} (alternating, rotated order; TorchFix only in the "
        f"first {slow_reps}), script time {elapsed:.0f} s",
        *versions, "",
        "Wall and CPU are whole processes (start-up included); CPU is user+system of "
        "the process tree, peak RSS the largest single process.", *_busy_note(), "",
        results_table(cases, skipped), "", "### Targets (issue 8)", "",
        ratio_table(cases, single_key), "",
        "Reproduce: `.venv/bin/python benchmarks/run.py --ref SNAPSHOT "
        "--write benchmarks/RESULTS.md` (downloads the pinned sdists and tools on first use).",
    ]
    return "\n".join(parts)


# --------------------------------------------------------------------------
# Findings mode
# --------------------------------------------------------------------------

_VERDICT_PLACEHOLDER = "?"


def _old_verdicts(results: Optional[Path], section: str) -> Dict[Tuple[str, str], str]:
    """Verdicts written by hand in a previous findings table, keyed by (place, code)."""
    if results is None:
        return {}
    verdicts = {}
    for line in common.section_text(results, section).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[-1] and cells[-1] != _VERDICT_PLACEHOLDER \
                and cells[0] not in ("place", "---"):
            verdicts[(cells[0], cells[1])] = cells[-1]
    return verdicts


def findings_block(amp: Amplint, full: FileSet, results: Optional[Path],
                   title: str = "Findings on the corpus", section: str = "findings") -> str:
    """Run amplint on a whole tree and list every finding for a by-hand verdict."""
    if not amp.available or not amp.has("--format"):
        return f"## {title}\n\nSkipped: {amp.reason or 'no --format flag'}\n"
    BENCH.mkdir(parents=True, exist_ok=True)
    out = BENCH / f"{section}.json"
    m = common.measure([*amp.project(), "--format", "json", *full.relative()],
                       cwd=full.root, stdout_path=out, env=common.amplint_env())
    try:
        findings = common.parse_findings(out.read_text())
    except ValueError as exc:
        return (f"## {title}\n\namplint's output was not JSON ({exc}); "
                f"exit {m.rc}\n")
    errors = common.file_errors(out.read_text())
    old = _old_verdicts(results, section)
    rows = ["| place | code | message | fixable | verdict |", "|---|---|---|---|---|"]
    for f in findings:
        place = f"{f.path}:{f.line}:{f.column}" if f.column else f"{f.path}:{f.line}"
        verdict = old.get((place, f.code), _VERDICT_PLACEHOLDER)
        msg = f.message.replace("|", "\\|")
        rows.append(f"| {place} | {f.code} | {msg} | {'yes' if f.fixable else 'no'} "
                    f"| {verdict} |")
    head = [
        f"## {title}", "",
        f"`amplint check --format json` (project mode) on {len(full.files)} files: "
        f"{len(findings)} findings, {len(errors)} file errors, exit {m.rc}, "
        f"{m.wall:.1f} s. Paths are relative to `{full.root.relative_to(corpus.HERE.parent)}/`. "
        "Verdict: real / false alarm (by hand; kept across reruns).", "",
    ]
    return "\n".join(head + rows) + "\n"


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def _parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description="amplint speed benchmark (issue 8)")
    p.add_argument("--reps", type=int, default=3, help="timed repetitions (default 3)")
    p.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S,
                   help="stop adding repetitions past this many seconds")
    p.add_argument("--ref", help="measure amplint as of this git commit (e.g. HEAD) "
                   "instead of the working tree; SNAPSHOT freezes a copy of the "
                   "working tree for the whole run")
    p.add_argument("--slow-reps", type=int, default=1,
                   help="repetitions for the slow TorchFix row (default 1)")
    p.add_argument("--write", type=Path, help="write/update the results file (markdown)")
    p.add_argument("--findings", action="store_true",
                   help="list amplint's findings on the whole corpus instead of timing")
    p.add_argument("--with-derived", action="store_true",
                   help="with --findings: also list findings on the derived copy")
    p.add_argument("--one-file", action="store_true", help="only the rows of onefile.py and amp_project_full")
    p.add_argument("--quick", action="store_true",
                   help="plumbing check: 1 repetition on 20 slice files / 200 corpus files")
    return p.parse_args(argv)


def _emit(block: str, section: str, write: Optional[Path]) -> None:
    """Print a block and, with --write, store it in its section of the results file."""
    print(block)
    if write:
        common.replace_section(write, section, block)
        _log(f"wrote section '{section}' of {write}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Build corpus and tools, run the timings or the findings listing."""
    args = _parse_args(argv)
    started = time.perf_counter()
    machine = common.machine_lines()
    corpus.ensure_corpus()
    _log(f"amplint: {common.use_ref(args.ref)}")
    amp = common.probe_amplint()
    if not amp.available:
        _log(f"amplint parts skipped: {amp.reason}")
    full = corpus.corpus_fileset()
    full = FileSet("full corpus", full.root, full.files)
    if args.findings:
        _emit(findings_block(amp, full, args.write), "findings", args.write)
        if args.with_derived:
            corpus.ensure_derived()
            derived = corpus.derived_fileset()
            block = findings_block(amp, derived, args.write,
                                   "Findings on the derived copy", "findings-derived")
            _emit(block, "findings-derived", args.write)
        return 0
    env = tools.ensure_tools()
    sl = corpus.slice_fileset()
    if args.quick:
        sl, full, args.reps = _shrink(sl, 20), _shrink(full, 200), 1
    amp_plugin = common.probe_flake8_amp()
    if amp_plugin:
        _log(f"flake8 AMP rows skipped: {amp_plugin}")
    cases, skipped = _third_party_cases(sl, full, env, amp_plugin)
    fix_sets: Dict[str, FileSet] = {}
    fix_notes: Dict[str, str] = {}
    if amp.available and amp.has("--fix") and not args.one_file:
        for tag, fs in (("slice", sl), ("full", full)):
            fix_sets[tag], fix_notes[tag] = _prepare_fix_copy(amp, fs, tag)
            _log(f"fix copy {tag}: {fix_notes[tag]}")
    amp_cases, amp_skipped = _amplint_cases(amp, sl, full, fix_sets)
    for c in amp_cases:
        if c.key.startswith("amp_fix_"):
            c.note = fix_notes[c.key[len("amp_fix_"):]]
    cases += amp_cases
    skipped += amp_skipped
    corpus.ensure_derived()  # where the one-file rows find a file with findings (built once, ~45 s)
    rows, reasons = onefile.rows(amp, full, BENCH, str(env.flake8_plain), amp_plugin, corpus.derived_fileset())
    if args.one_file:  # only the single-file rows and the whole-project row they are compared with
        cases, skipped = [c for c in cases if c.key == "amp_project_full"], []
    cases += [Case(r.key, r.label, r.fileset, r.argv, note=r.note, warmup=r.warmup, env=r.env) for r in rows]
    skipped += [Skipped(label, reason) for label, reason in reasons]
    _warm_page_cache([sl, full, *fix_sets.values()])
    reps = run_cases(cases, args.reps, args.budget, started, args.slow_reps)
    elapsed = time.perf_counter() - started
    _emit(report(cases, skipped, amp, env, reps, elapsed, machine, args.slow_reps), "bench",
          args.write)
    for fs in fix_sets.values():  # thousands of files that `amplint check .` would walk
        shutil.rmtree(fs.root, ignore_errors=True)
    for tag in ("slice", "full", "one", "found"):
        shutil.rmtree(BENCH / f"cache-{tag}", ignore_errors=True)
    _log(f"total script time {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
