"""Helpers shared by run.py and sweep.py: process measurement, amplint probing,
findings parsing and machine facts.

Kept apart from corpus.py so that timing code never imports libcst.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MAIN_VENV = REPO / ".venv"
# AMPLINT_BIN lets the plumbing be tested with a stand-in before --fix exists.
AMPLINT = Path(os.environ.get("AMPLINT_BIN", str(MAIN_VENV / "bin" / "amplint")))
MAIN_FLAKE8 = MAIN_VENV / "bin" / "flake8"
MAIN_PYTHON = MAIN_VENV / "bin" / "python"


# --------------------------------------------------------------------------
# Running a process and measuring it
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One whole-process run: wall and CPU seconds, peak RSS, exit code."""

    wall: float
    cpu: float  # user + system of the process and every descendant it reaped
    maxrss_kb: int  # largest single process in the tree (Linux ru_maxrss)
    rc: int
    stderr_tail: str


def measure(argv: Sequence[str], cwd: Path, stdout_path: Optional[Path] = None,
            env: Optional[Dict[str, str]] = None) -> Measurement:
    """Run *argv* once and measure it with wait4.

    wait4's rusage covers the child plus the grandchildren it reaped (flake8's
    and amplint's worker pools), which a per-run ``getrusage(RUSAGE_CHILDREN)``
    difference would also give, but peak RSS can only be read per child.
    stdout goes to a file or /dev/null: it is not a pipe, so no tool shows a
    progress bar and no pipe buffer can stall it.
    """
    out = open(stdout_path, "wb") if stdout_path else open(os.devnull, "wb")
    with out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=str(cwd), stdin=subprocess.DEVNULL,
                                stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        tail = err.read()[-4000:].decode("utf-8", "replace")
    return Measurement(wall=wall, cpu=usage.ru_utime + usage.ru_stime,
                       maxrss_kb=usage.ru_maxrss, rc=proc.returncode, stderr_tail=tail)


def has_traceback(stderr: str) -> bool:
    """A Python traceback on stderr means the tool crashed, whatever its exit code."""
    return "Traceback (most recent call last)" in stderr


# --------------------------------------------------------------------------
# amplint capabilities
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Amplint:
    """What the installed amplint offers, read from ``amplint check --help``."""

    available: bool
    reason: str  # why not, when unavailable
    flags: FrozenSet[str] = frozenset()

    def has(self, flag: str) -> bool:
        """Whether ``amplint check`` accepts *flag*."""
        return flag in self.flags

    def base(self) -> List[str]:
        """``amplint check`` (the cache is switched off through ``amplint_env``)."""
        return [str(AMPLINT), "check"]

    def single_file(self) -> Optional[List[str]]:
        """Single-file mode, if it can be chosen explicitly."""
        if self.has("--no-project"):
            return [*self.base(), "--no-project"]
        return None

    def project(self) -> List[str]:
        """Project mode (the default when ``--no-project`` exists) over exactly the paths given.

        ``--no-project-root`` keeps the rows' meaning where it exists: the corpus has no project
        markers of its own, so a named file's project would be this repository's checkout.
        """
        if self.has("--project") and not self.has("--no-project"):
            return [*self.base(), "--project"]
        if self.has("--no-project-root"):
            return [*self.base(), "--no-project-root"]
        return self.base()


# Where amplint is imported from: None = the editable install (working tree),
# else an exported commit put first on PYTHONPATH (see use_ref).
_AMPLINT_SRC: Optional[Path] = None
_AMPLINT_DESC = "working tree"


def _git(*args: str) -> str:
    """Run git in the repository and return its stripped stdout."""
    return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def export_ref(ref: str) -> Tuple[Path, str]:
    """Export amplint as of a commit, laid out as the editable install maps it.

    Lets the benchmark and the sweep measure a committed state while someone
    keeps editing the working tree (a half-written module would otherwise
    crash runs or skew timings). The venv's editable finder sits after the
    path finder, so a PYTHONPATH entry wins over the working tree.
    """
    sha = _git("rev-parse", "--verify", f"{ref}^{{commit}}")
    dest = HERE / ".work" / f"amplint-{sha[:12]}"
    if not (dest / "amplint" / "__init__.py").exists():
        tmp = dest.with_name(dest.name + ".partial")
        subprocess.run(["rm", "-rf", str(tmp)], check=True)
        tmp.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", sha, "amplint", "rules"], cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        if (tmp / "rules").is_dir() and not (tmp / "amplint" / "rules").exists():
            (tmp / "rules").rename(tmp / "amplint" / "rules")
        subprocess.run(["rm", "-rf", str(dest)], check=True)
        tmp.rename(dest)
    return dest, sha


SNAPSHOT = "SNAPSHOT"


def snapshot_worktree() -> Tuple[Path, str]:
    """Copy the working tree's amplint (uncommitted edits included) as it is now.

    A run of many minutes then measures one state of the code even while the
    files keep changing under it.
    """
    import hashlib
    import shutil

    digest = hashlib.sha256()
    for top in ("amplint", "rules"):
        for path in sorted((REPO / top).rglob("*.py")):
            digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    tag = digest.hexdigest()[:12]
    dest = HERE / ".work" / f"amplint-snapshot-{tag}"
    if not (dest / "amplint" / "__init__.py").exists():
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(REPO / "amplint", tmp / "amplint", ignore=ignore)
        if not (tmp / "amplint" / "rules").exists():
            shutil.copytree(REPO / "rules", tmp / "amplint" / "rules", ignore=ignore)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest, tag


def use_ref(ref: Optional[str]) -> str:
    """Make every amplint run import *ref* (None: the working tree, SNAPSHOT: a
    frozen copy of it); describe the choice for the results header."""
    global _AMPLINT_SRC, _AMPLINT_DESC
    if ref == SNAPSHOT:
        _AMPLINT_SRC, tag = snapshot_worktree()
        head = _git("rev-parse", "--short=12", "HEAD")
        _AMPLINT_DESC = f"snapshot of the working tree at {head} (content {tag})"
        return _AMPLINT_DESC
    if ref is None:
        _AMPLINT_SRC = None
        try:
            dirty = _git("status", "--porcelain", "--", "amplint", "rules")
            head = _git("rev-parse", "--short=12", "HEAD")
            _AMPLINT_DESC = f"working tree at {head}" + (" + uncommitted changes" if dirty else "")
        except (OSError, subprocess.CalledProcessError):
            _AMPLINT_DESC = "working tree"
    else:
        _AMPLINT_SRC, sha = export_ref(ref)
        _AMPLINT_DESC = f"commit {sha[:12]} ({ref}), exported to {_AMPLINT_SRC.name}"
    return _AMPLINT_DESC


def amplint_source() -> str:
    """Which amplint the numbers are for (results header)."""
    return _AMPLINT_DESC


def amplint_env(cache_dir: Optional[Path] = None) -> Dict[str, str]:
    """Environment for amplint runs: its on-disk cache off, or moved to *cache_dir*.

    Timings must measure the analysis, not a cache warmed by the previous
    repetition, and the sweep must not let a cache hide a fresh result; the
    cache also lands in the checked tree's top folder, which would litter the
    corpus. A warm-cache row passes a private *cache_dir* instead.
    """
    env = dict(os.environ)
    env.pop("AMPLINT_CACHE_DIR", None)
    if _AMPLINT_SRC is not None:
        env["PYTHONPATH"] = str(_AMPLINT_SRC)
    else:
        env.pop("PYTHONPATH", None)
    if cache_dir is None:
        env["AMPLINT_NO_CACHE"] = "1"
    else:
        env.pop("AMPLINT_NO_CACHE", None)
        env["AMPLINT_CACHE_DIR"] = str(cache_dir)
    return env


def probe_amplint() -> Amplint:
    """Ask ``amplint check --help``; a failure makes every amplint step skip."""
    if not AMPLINT.exists():
        return Amplint(False, f"{AMPLINT} does not exist")
    try:
        res = subprocess.run([str(AMPLINT), "check", "--help"], capture_output=True,
                             text=True, timeout=120, env=amplint_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Amplint(False, f"amplint check --help failed: {exc}")
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        return Amplint(False, f"amplint check --help exited {res.returncode}: {last}")
    flags = frozenset(re.findall(r"--[a-z][a-z0-9-]*", res.stdout))
    smoke = _smoke_test()
    if smoke:
        return Amplint(False, smoke, flags)
    return Amplint(True, "", flags)


_SMOKE_SOURCE = (
    "import torch\n"
    "def f(mu, sigma, x):\n"
    "    with torch.autocast('cuda', dtype=torch.float16):\n"
    "        return torch.distributions.Normal(mu, sigma).log_prob(x)\n"
)


def _smoke_test() -> Optional[str]:
    """Check one tiny file end to end: --help working does not mean check works
    (the analyzer is under construction), and timing a crash is meaningless."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "smoke.py").write_text(_SMOKE_SOURCE)
        try:
            res = subprocess.run([str(AMPLINT), "check", "smoke.py"], cwd=tmp,
                                 capture_output=True, text=True, timeout=120,
                                 env=amplint_env())
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"amplint check on a tiny file failed: {exc}"
    if res.returncode not in (0, 1) or has_traceback(res.stderr):
        return (f"amplint check on a tiny file exited {res.returncode}: "
                f"{(res.stderr.strip().splitlines() or ['(no output)'])[-1]}")
    return None


def probe_flake8_amp() -> Optional[str]:
    """None if amplint's flake8 plugin loads in amplint's venv, else why not."""
    if not MAIN_FLAKE8.exists():
        return f"{MAIN_FLAKE8} does not exist"
    res = subprocess.run([str(MAIN_FLAKE8), "--version"], capture_output=True, text=True,
                         env=amplint_env())
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"flake8 --version exited {res.returncode}: {last}"
    if "amplint" not in res.stdout:
        return "amplint is not listed among flake8's plugins"
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "smoke.py").write_text(_SMOKE_SOURCE)
        res = subprocess.run([str(MAIN_FLAKE8), "--isolated", "--select", "AMP", "smoke.py"],
                             cwd=tmp, capture_output=True, text=True, env=amplint_env())
    if res.returncode not in (0, 1) or has_traceback(res.stderr):
        last = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"flake8 --select AMP on a tiny file exited {res.returncode}: {last}"
    return None


# --------------------------------------------------------------------------
# Findings from ``amplint check --format json``
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """The fields of a finding that the sweep and the results file need."""

    path: str
    line: int
    code: str
    message: str
    fixable: bool
    column: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


_KEYS = {
    "path": ("path", "file", "filename", "location.path"),
    "line": ("line", "lineno", "row", "location.line", "start.line"),
    "column": ("column", "col", "col_offset", "location.column", "start.column"),
    "code": ("code", "rule", "rule_id", "id"),
    "message": ("message", "msg", "text"),
}


def _dig(obj: Dict[str, Any], dotted: str) -> Any:
    """``obj['a']['b']`` for ``'a.b'``, or None."""
    cur: Any = obj
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _first(obj: Dict[str, Any], field_name: str) -> Any:
    """The first key among the accepted spellings of *field_name*."""
    for key in _KEYS[field_name]:
        val = _dig(obj, key)
        if val is not None:
            return val
    return None


def _is_fixable(obj: Dict[str, Any], strategy: Optional[str] = None) -> bool:
    """Fixable (by *strategy*, when the JSON lists ``fix_strategies``)."""
    if strategy is not None and isinstance(obj.get("fix_strategies"), list):
        return strategy in obj["fix_strategies"]
    if "fixable" in obj:
        return bool(obj["fixable"])
    fix = obj.get("fix") or obj.get("fixes")
    return bool(fix)


def _finding_list(doc: Any) -> List[Dict[str, Any]]:
    """The list of finding objects, whether top-level or under a key."""
    if isinstance(doc, list):
        return [d for d in doc if isinstance(d, dict)]
    if isinstance(doc, dict):
        for key in ("findings", "results", "diagnostics"):
            if isinstance(doc.get(key), list):
                return [d for d in doc[key] if isinstance(d, dict)]
    return []


def parse_findings(text: str, strategy: Optional[str] = None) -> List[Finding]:
    """Parse amplint's JSON output; raises ValueError if it is not JSON.

    ``fixable`` is judged for *strategy* when given (a finding may be fixable
    by one strategy and not the other).
    """
    doc = json.loads(text) if text.strip() else []
    out = []
    for obj in _finding_list(doc):
        out.append(Finding(path=str(_first(obj, "path") or ""),
                           line=int(_first(obj, "line") or 0),
                           code=str(_first(obj, "code") or ""),
                           message=str(_first(obj, "message") or ""),
                           fixable=_is_fixable(obj, strategy),
                           column=int(_first(obj, "column") or 0), raw=obj))
    return sorted(out, key=lambda f: (f.path, f.line, f.column, f.code, f.message))


def fix_summary(text: str) -> Optional[Tuple[int, int]]:
    """(fixed, remaining) from ``--fix``'s closing line "Fixed N findings, M remaining."."""
    match = re.search(r"Fixed (\d+) findings?, (\d+) remaining", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def file_errors(text: str) -> List[Dict[str, Any]]:
    """Per-file errors (syntax errors, unreadable files) if the JSON carries them."""
    try:
        doc = json.loads(text) if text.strip() else []
    except ValueError:
        return []
    if isinstance(doc, dict):
        for key in ("errors", "file_errors"):
            if isinstance(doc.get(key), list):
                return [e for e in doc[key] if isinstance(e, dict)]
    return []


# --------------------------------------------------------------------------
# Machine facts for the results header
# --------------------------------------------------------------------------


def cpu_model() -> str:
    """CPU model name from /proc/cpuinfo (falls back to platform)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def nproc() -> str:
    """What ``nproc`` says: the CPUs this process may use (not the host's)."""
    try:
        return subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return str(len(os.sched_getaffinity(0)))


def mem_total_gib() -> str:
    """Installed memory, for context on peak RSS."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "unknown"


def loadavg() -> str:
    """1/5/15-minute load: a busy machine explains noisy wall times."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine_lines() -> List[str]:
    """Markdown bullet lines describing when and where the numbers were taken."""
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return [
        f"- Date: {now}",
        f"- CPU: {cpu_model()}, `nproc` = {nproc()}, memory {mem_total_gib()}",
        f"- OS: {platform.system()} {platform.release()}",
        f"- Python: {sys.version.split()[0]} ({sys.executable})",
        f"- Load average at start: {loadavg()}",
    ]


def replace_section(path: Path, name: str, body: str) -> None:
    """Replace (or append) the ``<!-- name:start -->``...``end`` block of *path*.

    Lets the benchmark table, the findings list and a hand-written preamble
    live in one results file without one run erasing the others.
    """
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    block = f"{start}\n{body.rstrip()}\n{end}\n"
    text = path.read_text() if path.exists() else ""
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        text = before + block + ("\n" + after if after else "")
    else:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block
    path.write_text(text)


def section_text(path: Path, name: str) -> str:
    """Current contents of a named block (empty if absent)."""
    if not path.exists():
        return ""
    text = path.read_text()
    start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
    if start not in text or end not in text:
        return ""
    return text.split(start, 1)[1].split(end, 1)[0]
