"""`--fix` never loses an edit, never writes outside the tree, keeps links and owners (issue 17).

- an edit saved while `--fix` runs (or a second run that fixed the file
  first) is kept: the file is skipped with one line and counted as not fixed;
- a symbolic link to a file outside the checked tree is not written through;
- a file with hard links is rewritten in place, so every link sees the fix;
- the owner is kept when root rewrites another user's file;
- the temporary file is removed however the write ends, Ctrl-C included.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

import amplint.fix.apply as apply
import amplint.fix.write as write
from amplint.cli import main
from amplint.config import Config
from amplint.fix.apply import fix_paths
from amplint.fix.write import CHANGED_MESSAGE, OUTSIDE_MESSAGE

BROKEN = '''\
import torch
import torch.distributions as D


def nll(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''
FIXED = BROKEN.replace("D.Normal(mu, sigma).log_prob(x)", "D.Normal(mu.float(), sigma.float()).log_prob(x.float())")
EDITED = BROKEN + "\n\n# saved in an editor while --fix ran\n"


def _leftovers(root: Path) -> list:
    return sorted(p.name for p in root.rglob("*.amplint"))


@pytest.mark.parametrize("project", [True, False])
def test_an_edit_saved_during_fix_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: bool) -> None:
    target = tmp_path / "model.py"
    target.write_text(BROKEN)
    real = apply.fix_text

    def fix_then_edit(*args, **kwargs):
        outcome = real(*args, **kwargs)
        target.write_text(EDITED)  # the user saves while amplint is between its read and its write
        return outcome

    monkeypatch.setattr(apply, "fix_text", fix_then_edit)
    run = fix_paths([str(tmp_path)], Config(project=project, jobs=1))
    assert target.read_text() == EDITED
    assert [e.message for e in run.errors] == [CHANGED_MESSAGE]
    assert run.fixed_count == 0
    assert _leftovers(tmp_path) == []


def test_a_second_run_that_got_there_first_is_not_counted_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    for index in range(3):
        (tmp_path / f"m{index}.py").write_text(BROKEN)
    real = apply.fix_text
    inner_runs = []

    def other_run_finishes_first(*args, **kwargs):
        outcome = real(*args, **kwargs)
        if not inner_runs:  # another `--fix` on the same tree runs to its end right now
            monkeypatch.setattr(apply, "fix_text", real)
            inner_runs.append(fix_paths([str(tmp_path)], Config(jobs=1)))
            monkeypatch.setattr(apply, "fix_text", other_run_finishes_first)
        return outcome

    monkeypatch.setattr(apply, "fix_text", other_run_finishes_first)
    outer = fix_paths([str(tmp_path)], Config(jobs=1))
    (inner,) = inner_runs
    assert inner.fixed_count == 3 and not inner.errors
    assert outer.fixed_count == 0
    assert sorted(e.message for e in outer.errors) == [CHANGED_MESSAGE] * 3
    assert all(p.read_text() == FIXED for p in tmp_path.glob("m*.py"))


def test_the_cli_reports_a_skipped_file_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    target = tmp_path / "model.py"
    target.write_text(BROKEN)
    real = apply.fix_text

    def fix_then_edit(*args, **kwargs):
        outcome = real(*args, **kwargs)
        target.write_text(EDITED)
        return outcome

    monkeypatch.setattr(apply, "fix_text", fix_then_edit)
    code = main(["check", "--fix", "--jobs", "1", str(target)])
    out, err = capsys.readouterr()
    assert code == 2
    assert [line for line in err.strip().splitlines() if not line.startswith("amplint: note: ")] == [
        f"{target}: error: {CHANGED_MESSAGE}"]  # the note: no project above a file in a bare tmp dir
    assert "Fixed 0 findings" in out


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_symlink_leaving_the_tree_is_not_written_through(tmp_path: Path) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    tree.mkdir()
    outside.mkdir()
    (outside / "target.py").write_text(BROKEN)
    (tree / "link.py").symlink_to(outside / "target.py")
    (tree / "inner.txt").write_text(BROKEN)
    (tree / "inner_link.py").symlink_to("inner.txt")  # inside the tree: fixed through the link
    run = fix_paths([str(tree)], Config(jobs=1))
    assert (outside / "target.py").read_text() == BROKEN
    assert [(Path(e.path).name, e.message) for e in run.errors] == [("link.py", OUTSIDE_MESSAGE)]
    assert (tree / "inner.txt").read_text() == FIXED and (tree / "inner_link.py").is_symlink()
    # A link named on the command line is judged by the folder it is in.
    run = fix_paths([str(tree / "link.py")], Config(jobs=1))
    assert (outside / "target.py").read_text() == BROKEN
    assert [e.message for e in run.errors] == [OUTSIDE_MESSAGE]


@pytest.mark.skipif(not hasattr(os, "link"), reason="needs hard links")
def test_hard_links_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    target.write_text(BROKEN)
    other = tmp_path / "elsewhere"
    other.mkdir()
    os.link(target, other / "same.py")
    inode = target.stat().st_ino
    run = fix_paths([str(target)], Config(jobs=1))
    assert not run.errors and run.fixed_count == 1
    assert target.stat().st_ino == inode and target.stat().st_nlink == 2
    assert (other / "same.py").read_text() == FIXED
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to give a file away")
def test_root_keeps_the_owner(tmp_path: Path) -> None:
    target = tmp_path / "model.py"
    target.write_text(BROKEN)
    os.chown(target, 4321, 4322)
    os.chmod(target, 0o640)
    run = fix_paths([str(target)], Config(jobs=1))
    assert not run.errors and target.read_text() == FIXED
    info = target.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (4321, 4322, 0o640)


@pytest.mark.parametrize("hard_link", [False, True])
def test_ctrl_c_during_a_write_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hard_link: bool
) -> None:
    target = tmp_path / "model.py"
    target.write_text(BROKEN)
    if hard_link:
        os.link(target, tmp_path / "link.txt")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(write.os, "replace", interrupted)
    monkeypatch.setattr(write, "_overwrite", lambda target, data: interrupted() if data != BROKEN.encode() else
                        Path(target).write_bytes(data))
    with pytest.raises(KeyboardInterrupt):
        fix_paths([str(target)], Config(jobs=1))
    assert target.read_text() == BROKEN
    assert _leftovers(tmp_path) == []


def test_two_real_fix_runs_on_one_tree_fix_each_finding_once(tmp_path: Path) -> None:
    """Two `amplint check --fix` processes started together: each finding is reported fixed by one of them."""
    import re
    import subprocess
    import sys

    count = 12
    for index in range(count):
        (tmp_path / f"m{index}.py").write_text(BROKEN)
    env = dict(os.environ, PYTHONWARNINGS="ignore", AMPLINT_NO_CACHE="1")
    root = Path(__file__).resolve().parent.parent
    runs = [
        subprocess.Popen([sys.executable, "-m", "amplint", "check", "--fix", "-j", "1", str(tmp_path)], cwd=root,
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300) for run in runs]
    fixed = 0
    for (out, err), run in zip(outputs, runs):
        match = re.search(r"Fixed (\d+) findings?", out)
        assert match, (out, err)
        fixed += int(match.group(1))
        assert set(err.splitlines()) <= {f"{p}: error: {CHANGED_MESSAGE}" for p in tmp_path.glob("m*.py")}, err
    assert fixed == count
    assert all(p.read_text() == FIXED for p in tmp_path.glob("m*.py"))
    assert _leftovers(tmp_path) == []


def test_a_file_fixed_after_the_check_counts_no_fix(tmp_path: Path) -> None:
    """The check sees a finding, another process fixes the file before this run reads it: this run counts 0.

    Deterministic form of the race above: the count comes from the text the fix read, not from the check."""
    from amplint.fix.apply import FixRun, _fix_results
    from amplint.project.run import run_project

    target = tmp_path / "model.py"
    target.write_text(BROKEN)
    config = Config(jobs=1)
    project = run_project([str(tmp_path)], config, use_cache=False)
    assert [len(r.findings) for r in project.results] == [1]
    target.write_text(FIXED)  # the other process's write
    run = FixRun()
    _fix_results(run, project, config, False, [str(tmp_path)])
    assert run.fixed_count == 0
    assert run.remaining == []
    assert target.read_text() == FIXED
