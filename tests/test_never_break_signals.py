"""Never break, round two: real processes, real signals (N2, N3).

N2: the pool's workers die with the main process, however it ends (SIGTERM, SIGKILL): no worker may live on
with PPID 1 holding the terminal's pipes. N3: SIGTERM is Ctrl-C: the file in hand is finished or untouched,
no temporary file is left, one line, exit 143. The helpers here serve `test_never_break_fuzz.py` too.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest

from conftest import ROOT, broken_tree, default_sigint, fixed_module

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")



def start(args: List[str], pool: bool = True) -> subprocess.Popen:
    """The real CLI in a session of its own (its process group is its pid), Ctrl-C at its default."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", AMPLINT_NO_CACHE="1")
    if pool:
        env["AMPLINT_FORCE_POOL"] = "1"
    return subprocess.Popen(
        [sys.executable, "-m", "amplint", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=default_sigint,
    )


def children(pid: int) -> List[int]:
    try:
        return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def wait_for_children(pid: int, timeout: float = 60.0) -> List[int]:
    """Until `pid` has forked (its pool started), or it ended; returns its children."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = children(pid)
        if found or not Path(f"/proc/{pid}").exists():
            return found
        time.sleep(0.01)
    return []


def running(pid: int) -> bool:
    """`pid` exists and is not a zombie (a container's PID 1 may never reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(group: int) -> List[int]:
    """Live processes of process group `group` (the CLI's session: it and every worker it forked)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == group:
            members.append(int(entry.name))
    return members


def wait_gone(group: int, timeout: float = 10.0) -> List[int]:
    """Until no process of `group` is left; returns those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = group_members(group)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def kill_group(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def temporary_files(tree: Path) -> List[str]:
    return sorted(p.name for p in tree.rglob("*") if p.name.endswith(".amplint"))


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_workers_die_with_the_main_process(tmp_path: Path, signum: int) -> None:
    """N2: `kill -TERM` / `kill -KILL` of the main pid alone: no worker lives on."""
    tree = tmp_path / "tree"
    broken_tree(tree, 60)
    process = start(["check", "-j", "2", str(tree)])
    try:
        workers = wait_for_children(process.pid)
        if not workers:
            pytest.skip("the run ended before its pool started")
        os.kill(process.pid, signum)
        process.communicate(timeout=60)
        left = wait_gone(process.pid)
        assert left == [], f"still alive after the main process died of {signal.Signals(signum).name}: {left}"
    finally:
        kill_group(process.pid)


def test_sigterm_in_the_write_phase(tmp_path: Path) -> None:
    """N3: SIGTERM while `--fix` writes: exit 143, one line, no temporary file, each file old or fixed."""
    tree = tmp_path / "tree"
    texts = broken_tree(tree, 150, padding="")
    first = tree / "m000.py"
    process = start(["check", "--fix", "-j", "1", str(tree)], pool=False)
    try:
        while process.poll() is None and first.read_text() == texts["m000.py"]:
            time.sleep(0.001)
        os.kill(process.pid, signal.SIGTERM)  # the write phase has begun: the first file is written
        out, err = process.communicate(timeout=60)
    finally:
        kill_group(process.pid)
    assert temporary_files(tree) == []
    contents = {name: (tree / name).read_text() for name in texts}
    assert all(contents[name] in (text, fixed_module(text)) for name, text in texts.items())
    if process.returncode in (0, 1):
        pytest.skip("the run wrote every file before the signal")
    assert process.returncode == 143, (process.returncode, out, err)
    assert err == "amplint: interrupted\n", err
    assert any(contents[name] == text for name, text in texts.items())  # it stopped: some files are left


@pytest.mark.parametrize("delay", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("whole_group", [False, True])
def test_sigterm_during_a_pooled_fix(tmp_path: Path, delay: float, whole_group: bool) -> None:
    """N3 with a pool: SIGTERM to the main pid (as `kill` sends) or to the group (as `timeout`, CI runners)."""
    tree = tmp_path / "tree"
    texts = broken_tree(tree, 24)
    process = start(["check", "--fix", "-j", "2", str(tree)])
    try:
        wait_for_children(process.pid)
        time.sleep(delay)
        try:
            (os.killpg if whole_group else os.kill)(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        out, err = process.communicate(timeout=60)
        assert wait_gone(process.pid) == []
    finally:
        kill_group(process.pid)
    assert temporary_files(tree) == []
    for name, text in texts.items():
        assert (tree / name).read_text() in (text, fixed_module(text)), name
    if process.returncode in (0, 1) or (process.returncode == -signal.SIGTERM and out.startswith("Fixed ")):
        pytest.skip(f"the run finished within {delay} s of starting its pool")
    assert process.returncode == 143, (process.returncode, out, err)
    assert err == "amplint: interrupted\n", err
