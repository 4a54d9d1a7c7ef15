"""Score `amplint check` against what generated projects actually compute in float16.

For each seed: generate the project into a work directory, run `amplint check
--format json` in it, run `python run.py` under `amplint trace` (the trace is
written outside the project directory), and set the findings against the
traced sites with `amplint.trace.compare.match` (same statement as the site,
or as a call on its recorded stack). The truth of a project is its traced
records with `float16` and `probability`; a project built to run in float32
must have none and one built for float16 at least one, or the generator is
wrong, and that is counted, not hidden.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .generate import generate
from .meta import HOP_KINDS, REGION_KINDS, SITE_KINDS, TWIN_KINDS

TIMEOUT = 60.0


@dataclass
class ProjectResult:
    """One project's numbers; `error` set when it could not be scored (timeout, crash, bad output)."""

    seed: int
    meta: Dict[str, object]
    truth: int = 0        # traced float16 probability sites (statements)
    matched: int = 0      # of those, the ones a finding stands for
    findings: int = 0     # static findings in the project
    found: int = 0        # findings that stand for a truth site
    truth_sites: List[Tuple[str, int]] = field(default_factory=list)
    missed: List[Tuple[str, int]] = field(default_factory=list)
    unmatched: List[Tuple[str, int, str]] = field(default_factory=list)  # findings standing for no truth site
    away: int = 0         # truth sites outside the lines the generator planned (information only)
    error: Optional[str] = None
    crash: Optional[str] = None  # amplint itself failed (a traceback or an unexpected exit status)
    seconds: float = 0.0

    @property
    def inconsistent(self) -> bool:
        """A project built for float32 that traced float16, or one built for float16 that traced none."""
        if self.error:
            return False
        return (self.truth > 0) if self.meta["twin"] is not None else (self.truth == 0)


def _env(amplint: Optional[str]) -> Dict[str, str]:
    """No bytecode or amplint cache written into the project; `amplint` (a source tree) first on the path."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONDONTWRITEBYTECODE="1", AMPLINT_NO_CACHE="1")
    if amplint:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (amplint, env.get("PYTHONPATH")) if p)
    return env


def _run(cmd: Sequence[str], cwd: Path, timeout: float, amplint: Optional[str] = None) -> subprocess.CompletedProcess:
    """`cmd` in its own session, so a timeout ends the script the recorder started too."""
    proc = subprocess.Popen(list(cmd), cwd=cwd, env=_env(amplint), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=max(timeout, 1.0))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _tail(text: str, lines: int = 6) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def compare(findings: List[dict], records: List[dict],
            root: Path) -> Tuple[List[Tuple[str, int]], List[bool], List[dict]]:
    """(truth sites as (path, first line), whether each was matched, findings that stand for one),
    through the project's own matcher."""
    from amplint.trace.compare import match

    records = [r for r in records if (r.get("trace") or {}).get("float16") and r["trace"].get("probability")]
    result = match(findings, records, str(root))
    base = os.path.realpath(root)
    sites = [(os.path.relpath(site.span[0], base), site.span[1]) for site, _ in result.matched]
    sites += [(os.path.relpath(site.span[0], base), site.span[1]) for site in result.missed]
    hit = [True] * len(result.matched) + [False] * len(result.missed)
    return sites, hit, result.found


def score_one(seed: int, work: Path, timeout: float = TIMEOUT, amplint: Optional[str] = None) -> ProjectResult:
    """Generate, check, trace and compare one project under `work/p{seed}/`, with the amplint installed
    or the one in the source tree `amplint`."""
    started = time.monotonic()
    folder = work / f"p{seed}"
    project = folder / "project"
    meta = generate(seed, project)
    result = ProjectResult(seed, meta.summary())
    deadline = started + timeout
    try:
        check = _run([sys.executable, "-m", "amplint", "check", "--format", "json", "--exit-zero", "."],
                     project, deadline - time.monotonic(), amplint)
        if check.returncode != 0 or "Traceback" in check.stderr:
            result.crash = f"check exit {check.returncode}: {_tail(check.stderr)}"
            result.error = "amplint check failed"
            return result
        findings = json.loads(check.stdout or "[]")
        out = folder / "trace.json"
        trace = _run([sys.executable, "-m", "amplint", "trace", "-o", str(out), "--", sys.executable, "run.py"],
                     project, deadline - time.monotonic(), amplint)
        if trace.returncode != 0 or not out.exists():
            if "Traceback" in trace.stderr and "amplint" in trace.stderr:
                result.crash = f"trace exit {trace.returncode}: {_tail(trace.stderr)}"
            result.error = f"trace exit {trace.returncode}: {_tail(trace.stderr, 3)}"
            return result
        records = json.loads(out.read_text(encoding="utf-8"))
    except subprocess.TimeoutExpired:
        result.error = f"timeout after {timeout:.0f} s"
        return result
    except ValueError as exc:
        result.error = f"unreadable JSON: {exc}"
        return result
    finally:
        result.seconds = time.monotonic() - started
    sites, hit, found = compare(findings, records, project)
    planned = {tuple(loc) for loc in meta.sites}
    result.truth, result.matched = len(sites), sum(hit)
    result.truth_sites = sites
    result.missed = [s for s, h in zip(sites, hit) if not h]
    result.findings, result.found = len(findings), len(found)
    used = {id(f) for f in found}
    result.unmatched = [(f["path"], f["line"], f["code"]) for f in findings if id(f) not in used]
    result.away = sum(1 for s in sites if s not in planned)
    return result


def score(seeds: Iterable[int], jobs: int = 2, timeout: float = TIMEOUT, work: Optional[Path] = None,
          progress: Optional[Callable[[ProjectResult], None]] = None,
          amplint: Optional[str] = None) -> List[ProjectResult]:
    """Score every seed, `jobs` (at most 2) projects at a time, each running its own subprocesses."""
    seeds = list(seeds)
    with tempfile.TemporaryDirectory(prefix="reachgen-") as tmp:
        root = Path(work) if work else Path(tmp)
        root.mkdir(parents=True, exist_ok=True)

        def one(seed: int) -> ProjectResult:
            try:
                result = score_one(seed, root, timeout, amplint)
            except Exception as exc:  # a generator bug: reported per project, never a crash of the run
                result = ProjectResult(seed, {"twin": None}, error=f"{type(exc).__name__}: {exc}")
            if progress:
                progress(result)
            return result

        with ThreadPoolExecutor(max_workers=max(1, min(jobs, 2))) as pool:
            results = list(pool.map(one, seeds))
        (root / "manifest.json").write_text(json.dumps([asdict(r) for r in results], indent=1), encoding="utf-8")
    return results


def _ratio(num: int, den: int) -> Optional[float]:
    return num / den if den else None


def summarize(results: List[ProjectResult]) -> Dict[str, object]:
    """Overall recall and precision, the same per hop kind, region spelling, computation and variant."""
    ok = [r for r in results if not r.error]
    truth = sum(r.truth for r in ok)
    matched = sum(r.matched for r in ok)
    findings = sum(r.findings for r in ok)
    found = sum(r.found for r in ok)

    def table(key: Callable[[ProjectResult], List[str]], kinds: Sequence[str]) -> Dict[str, Dict[str, object]]:
        rows: Dict[str, Dict[str, int]] = {k: defaultdict(int) for k in kinds}  # type: ignore[misc]
        for r in ok:
            for k in key(r):
                row = rows.setdefault(k, defaultdict(int))
                row["projects"] += 1
                row["float16_projects"] += int(r.meta["twin"] is None)
                row["truth"] += r.truth
                row["matched"] += r.matched
                row["findings"] += r.findings
                row["found"] += r.found
        return {k: dict(v, recall=_ratio(v["matched"], v["truth"]), precision=_ratio(v["found"], v["findings"]))
                for k, v in rows.items()}

    return {
        "projects": len(results), "scored": len(ok),
        "errors": [(r.seed, r.error) for r in results if r.error],
        "crashes": [(r.seed, r.crash) for r in results if r.crash],
        "inconsistencies": [(r.seed, r.meta.get("twin"), r.truth) for r in results if r.inconsistent],
        "away": sum(r.away for r in ok),
        "truth": truth, "matched": matched, "findings": findings, "found": found,
        "recall": _ratio(matched, truth), "precision": _ratio(found, findings),
        "by_hop": table(lambda r: list(r.meta["hops"]), HOP_KINDS),  # type: ignore[arg-type]
        "by_region": table(lambda r: [str(r.meta["region"])], REGION_KINDS),
        "by_site": table(lambda r: [str(r.meta["site"])], SITE_KINDS),
        "by_variant": table(lambda r: [str(r.meta["twin"] or "float16")], ("float16",) + TWIN_KINDS),
        "seconds": sum(r.seconds for r in results),
    }
