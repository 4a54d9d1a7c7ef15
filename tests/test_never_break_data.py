"""Never break, round two: no edit is lost, no file is two files (N4, N9).

N4 stops a real `--fix` run (SIGSTOP) while its temporary file `.X.py.*.amplint` exists, that is after it
checked `X.py`, saves `X.py` as an editor would (in place, or by renaming a new file over it), and lets the
run go on (SIGCONT): the edit must survive, and the run must say so. N9: a file reached under two names (a
symbolic or hard link) is one file: one finding, one fix.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, dense_source, run_amplint

BROKEN = '''import torch
import torch.distributions as D


def nll(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''
# A large literal: the temporary file takes a while to write and sync, the parse stays quick.
PAYLOAD = 'DATA = """' + "0123456789abcdef" * 25_000 + '"""\n'
EDIT = "# the user's edit, saved while amplint was writing\n"


def _save(path: Path, text: str, style: str) -> None:
    if style == "in-place":
        with open(path, "w") as handle:
            handle.write(text)
    else:  # as most editors save: a new file renamed over the old one
        fresh = path.with_name(path.name + ".editor-new")
        fresh.write_text(text)
        os.replace(fresh, path)


def _writing(pid: int, tree: Path) -> bool:
    """Has the run staged the new text of a file in `tree`: a temporary `.X.py.*.amplint` file, or an unnamed
    one (`O_TMPFILE`, `/proc/PID/fd` shows it as `tree/#NNN (deleted)`)?"""
    if any(name.endswith(".amplint") for name in os.listdir(tree)):
        return True
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith(f"{tree}/#") or (link.startswith(f"{tree}/.") and ".amplint" in link):
            return True
    return False


def _catch_the_write(tree: Path) -> "tuple[subprocess.CompletedProcess, bool]":
    """Run `--fix` on `tree`, stop it while its temporary file exists and save X.py then; (result, caught)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", AMPLINT_NO_CACHE="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "amplint", "check", "--fix", "-j", "1", "--no-project", str(tree)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    caught = False
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline:
            if _writing(process.pid, tree):
                os.kill(process.pid, signal.SIGSTOP)
                caught = _writing(process.pid, tree)
                if caught:
                    _save(tree / "X.py", EDIT + BROKEN + PAYLOAD, _catch_the_write.style)  # type: ignore[attr-defined]
                os.kill(process.pid, signal.SIGCONT)
                break
        out, err = process.communicate(timeout=120)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(process.args, process.returncode, out, err), caught


@pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="needs SIGSTOP")
@pytest.mark.parametrize("style", ["in-place", "rename"])
def test_an_edit_saved_while_fix_writes_is_never_lost(tmp_path: Path, style: str) -> None:
    _catch_the_write.style = style  # type: ignore[attr-defined]
    for attempt in range(8):
        tree = tmp_path / f"try{attempt}"
        tree.mkdir()
        (tree / "X.py").write_text(BROKEN + PAYLOAD)
        proc, caught = _catch_the_write(tree)
        if caught:
            break
    else:
        pytest.skip("never caught the temporary file on disk")
    assert (tree / "X.py").read_text().startswith(EDIT), "the edit saved during the write was lost"
    assert sorted(p.name for p in tree.iterdir()) == ["X.py"]  # no temporary file left
    if proc.returncode != 2:  # stopped after the exchange: the edit came after the fix, and won
        assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
        return
    assert "changed on disk" in proc.stderr, proc.stderr


def _two_names(tree: Path, kind: str) -> Path:
    """`tree/a.py` with a finding, and `tree/b.py` the same file (a symbolic or a hard link)."""
    tree.mkdir()
    (tree / "a.py").write_text(BROKEN)
    if kind == "symlink":
        (tree / "b.py").symlink_to("a.py")
    else:
        os.link(tree / "a.py", tree / "b.py")
    return tree


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
def test_one_file_under_two_names_is_checked_once(tmp_path: Path, kind: str) -> None:
    _two_names(tmp_path / "tree", kind)
    for args in (["check", "--format", "json", "tree"], ["check", "--format", "json", "tree/a.py", "tree/b.py"]):
        proc = run_amplint(args, cwd=tmp_path)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert len(json.loads(proc.stdout)) == 1, proc.stdout


@pytest.mark.parametrize("kind", ["symlink", "hardlink"])
@pytest.mark.parametrize("named", [False, True])
def test_one_file_under_two_names_is_fixed_once(tmp_path: Path, kind: str, named: bool) -> None:
    tree = _two_names(tmp_path / "tree", kind)
    paths = ["tree/a.py", "tree/b.py"] if named else ["tree"]
    proc = run_amplint(["check", "--fix", *paths], cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "error" not in proc.stderr, proc.stderr
    assert ".float()" in (tree / "a.py").read_text()
    assert (tree / "b.py").read_text() == (tree / "a.py").read_text()
    assert run_amplint(["check", *paths], cwd=tmp_path).returncode == 0




def test_fix_never_writes_a_file_the_next_run_refuses(tmp_path: Path) -> None:
    """N11: a file just under max-file-size that the fix would grow over it is left alone, and said so."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.amplint]\nmax-file-size = 24000\n")
    text = dense_source(23_000)
    (tmp_path / "big.py").write_text(text)
    (tmp_path / "small.py").write_text(BROKEN)
    fixed = run_amplint(["check", "--fix", "--format", "json", "."], cwd=tmp_path)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert (tmp_path / "big.py").read_text() == text
    assert ".float()" in (tmp_path / "small.py").read_text()
    again = run_amplint(["check", "."], cwd=tmp_path)
    assert again.returncode == 1 and "too large" not in again.stdout + again.stderr, again.stdout + again.stderr


def test_fix_bounds_the_size_it_rewrites(tmp_path: Path) -> None:
    """N11: `--fix` rewrites files up to a quarter of max-file-size; a larger one keeps its findings, reported
    as not fixed with the reason, and is not written."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.amplint]\nmax-file-size = 40000\n")
    text = dense_source(12_000)
    (tmp_path / "big.py").write_text(text)
    fixed = run_amplint(["check", "--fix", "big.py"], cwd=tmp_path)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr
    assert "too large to rewrite" in fixed.stdout, fixed.stdout
    assert (tmp_path / "big.py").read_text() == text
    assert run_amplint(["check", "big.py"], cwd=tmp_path).returncode == 1
