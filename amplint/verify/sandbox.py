"""Run a slice of user code in a child process with limits, and say plainly why it gave no result.

The child is `python -I` (no user site, no `PYTHON*` variables, nothing from
the current folder) in a new, empty temporary folder, with an environment of
`PATH` alone, in its own session. It limits its own CPU time, memory and file
size first thing (slicechild.py); here the wall clock is enforced, and on
timeout or interrupt its whole process group is killed (before the child is
reaped, so the group's id still names it). The slice can start no process of
its own (no `os`, no `subprocess`). The temporary folder goes with it.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Dict, Optional

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "slicechild.py")
AMPLINT_TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass(frozen=True)
class Limits:
    """What one slice may use. CPU time gets a second more than the wall clock, so a busy loop meets the wall."""

    seconds: float = 120.0
    memory_mib: int = 4096
    file_mib: int = 16

    @property
    def cpu_seconds(self) -> int:
        return int(math.ceil(self.seconds)) + 1


@dataclass(frozen=True)
class Outcome:
    """The child's JSON result, or why there is none."""

    result: Optional[dict]
    failure: Optional[str]
    seconds: float


def child_env() -> Dict[str, str]:
    """The child's whole environment: a system PATH. No tokens, no proxies, no `PYTHONPATH`, no `HOME`."""
    return {"PATH": os.defpath}


def memory_limit(device: str) -> str:
    """`AS` (address space) on CPU; a CUDA driver reserves address space by the GiB, so `DATA` on a GPU."""
    return "DATA" if device == "cuda" else "AS"


def run_child(job: dict, limits: Limits) -> Outcome:
    """Run `job` (userjob's JSON plus settings) in the child; never raises for what the slice does."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="amplint-slice-") as folder:
        with open(os.path.join(folder, "job.json"), "w", encoding="utf-8") as handle:
            json.dump(dict(job, amplint=AMPLINT_TOP), handle)
        argv = [sys.executable, "-I", DRIVER, "job.json", str(limits.cpu_seconds), str(limits.memory_mib << 20),
                str(limits.file_mib << 20), memory_limit(job.get("device", "cpu"))]
        with open(os.path.join(folder, "stderr.txt"), "wb") as errors:
            process = subprocess.Popen(argv, cwd=folder, env=child_env(), stdin=subprocess.DEVNULL,
                                       stdout=subprocess.PIPE, stderr=errors, start_new_session=True, close_fds=True)
            try:
                out, _ = process.communicate(timeout=limits.seconds)
            except subprocess.TimeoutExpired:
                _stop(process)
                return Outcome(None, f"the slice ran past its {limits.seconds:g} s wall-clock limit and was stopped",
                               time.perf_counter() - started)
            except BaseException:  # Ctrl-C, SIGTERM: the child goes too
                _stop(process)
                raise
        tail = _tail(os.path.join(folder, "stderr.txt"))
    elapsed = time.perf_counter() - started
    result = _parse(out)
    if result is not None:
        return Outcome(result, None, elapsed)
    return Outcome(None, _why(process.returncode, limits, tail), elapsed)


def _stop(process: subprocess.Popen) -> None:
    """SIGKILL the child's session (it and anything it started) while its pid still names it, then reap it."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def _parse(out: bytes) -> Optional[dict]:
    lines = out.decode("utf-8", "replace").strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return result if isinstance(result, dict) else None


def _tail(path: str) -> str:
    """The last line the child wrote to its error stream, to name an unexpected death."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.path.getsize(path) - 4096))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def _why(code: int, limits: Limits, tail: str) -> str:
    if code == -signal.SIGXCPU:
        return f"the slice ran past its {limits.cpu_seconds} s CPU-time limit and was stopped"
    if code == -signal.SIGXFSZ:
        return f"the slice wrote past its {limits.file_mib} MiB file-size limit and was stopped"
    if code == -signal.SIGKILL:
        return "the slice's process was killed (SIGKILL), as the system's out-of-memory killer does"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
        return f"the slice's process died of {name} (its memory limit is {limits.memory_mib} MiB)" + (
            f": {tail}" if tail else "")
    return f"the slice's process exited with status {code} before reporting" + (f": {tail}" if tail else "")
