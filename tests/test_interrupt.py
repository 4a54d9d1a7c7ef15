"""Ctrl-C during `--fix`: no hang, no traceback, exit 130 with one line, every file whole (issue 17).

The subprocess test sends a real SIGINT to the whole process group, as a
terminal's Ctrl-C does (the pool's workers get it too), at several points of a
`--fix -j 2` run with a forced process pool. The in-process test interrupts
the write phase itself: the file being replaced is finished, no other is started.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import amplint.fix.write as write
from amplint.config import Config
from amplint.fix.apply import fix_paths
from conftest import broken_tree, default_sigint, fixed_module

ROOT = Path(__file__).resolve().parent.parent


def _wait_for_workers(pid: int, timeout: float = 60.0) -> None:
    """Until the run has forked its pool (Linux: /proc lists the children), so that Ctrl-C lands in the
    work and not in Python's start-up, however loaded the machine is; elsewhere, a fixed wait."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if not children.exists():
        time.sleep(1.5)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if children.read_text().split():
                return
        except OSError:
            return  # the process is gone
        time.sleep(0.02)


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
@pytest.mark.parametrize("delay", [0.0, 0.3, 0.8, 1.6])
def test_ctrl_c_during_a_pooled_fix(tmp_path: Path, delay: float) -> None:
    tree = tmp_path / "tree"
    texts = broken_tree(tree, 24)
    env = dict(os.environ, PYTHONWARNINGS="ignore", AMPLINT_FORCE_POOL="1", AMPLINT_NO_CACHE="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "amplint", "check", "--fix", "-j", "2", str(tree)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=default_sigint,
    )
    _wait_for_workers(process.pid)
    time.sleep(delay)
    try:
        os.killpg(process.pid, signal.SIGINT)
    except ProcessLookupError:
        pass
    try:
        out, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:  # the hang issue 17 measured
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("amplint --fix hung after Ctrl-C")
    assert sorted(p.name for p in tree.iterdir() if not p.name.endswith(".py")) == []  # no temporary files
    for name, text in texts.items():
        assert (tree / name).read_text() in (text, fixed_module(text)), name  # whole: old or new
    # Finished before the signal: an exit code of its own, or killed by it while the interpreter shut down
    # (Python gives SIGINT its default action back then; a shell reports 130 for that too), after the last line.
    if process.returncode in (0, 1) or (
            process.returncode == -signal.SIGINT and err == "" and out.startswith("Fixed ")):
        pytest.skip(f"the run finished within {delay} s of starting its pool")
    assert process.returncode == 130, (process.returncode, out, err)
    assert err == "amplint: interrupted\n", err


def test_ctrl_c_in_the_write_phase_finishes_the_current_file_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ctrl_c: None
) -> None:
    tree = tmp_path / "tree"
    texts = broken_tree(tree, 4)
    real = write.atomic_write
    calls = []

    def interrupted_write(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while the first file is being replaced
        return real(*args, **kwargs)

    monkeypatch.setattr(write, "atomic_write", interrupted_write)
    with pytest.raises(KeyboardInterrupt):
        fix_paths([str(tree)], Config(jobs=1))
    assert len(calls) == 1
    first = Path(calls[0]).name
    for name, text in texts.items():
        assert (tree / name).read_text() == (fixed_module(text) if name == first else text), name
    assert sorted(p.name for p in tree.iterdir() if p.is_file()) == sorted(texts)  # no temporary file
