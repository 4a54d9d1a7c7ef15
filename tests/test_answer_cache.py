"""A project run's answer is kept with the stamp of every path the run looked at (`project.answer`): a run over
an unchanged project reads nothing, and a change to anything the run listed or read, however it reached it, is
looked at again. Each change is checked against a run with no cache, the truth."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

import amplint.files
import amplint.project.run
from amplint.config import Config
from amplint.project.run import ProjectRun, run_project
from amplint.witness import RACY_NS
from test_solution_cache import LIGHTNING, LOSSES, TRAIN

# A file with a finding of its own (line 8), for the changes that add files to the walk.
OWN = '''import torch
from torch.distributions import Normal

head = torch.nn.Linear(4, 8)
x = torch.randn(4)
with torch.autocast("cpu", dtype=torch.float16):
    loc, log_scale = head(x).chunk(2, dim=-1)
    lp = Normal(loc, log_scale.exp()).log_prob(x)
'''


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git checkout with an ignore file at each level git reads one, a folder git leaves out for its
    `pyvenv.cfg`, and git's configuration kept inside the test."""
    root = tmp_path / "proj"
    _write(root, {"losses.py": LOSSES, "train.py": TRAIN, "pyproject.toml": "", ".gitignore": "",
                  ".git/info/exclude": "", "sub/helper.py": "x = 1\n",
                  "env2/pyvenv.cfg": "home = /usr/bin\n", "env2/amp.py": OWN})
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    (tmp_path / "xdg").mkdir()
    (tmp_path / "gitconfig").write_text("")
    return root


def _aged() -> None:
    """Past the racy window: a path written just before a run is noted racy, and that run keeps no answer."""
    time.sleep(RACY_NS / 1e9 + 0.1)


def _run(root: Path, cache: Optional[Path], report: Optional[List[Path]] = None) -> ProjectRun:
    wanted = None if report is None else frozenset(str(p) for p in report)
    return run_project([str(root)], Config(jobs=1), cache_dir=str(cache) if cache else None,
                       use_cache=cache is not None, report=wanted)


def _found(run: ProjectRun) -> List[tuple]:
    return [(Path(r.path).name, f.line, f.column, f.code, f.chain) for r in run.results for f in r.findings]


def test_an_unchanged_project_is_answered_with_nothing_read(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _aged()
    cold = _run(project, tmp_path / "cache")
    assert not cold.stats.answer_cached and [f[:4] for f in _found(cold)] == [("losses.py", 6, 13, "AMP001")]

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("read")

    monkeypatch.setattr(amplint.project.run, "discover_checked", unread)
    monkeypatch.setattr(amplint.files, "read_bytes", unread)
    monkeypatch.setattr(amplint.files, "read_stamped", unread)
    warm = _run(project, tmp_path / "cache")
    assert warm.stats.answer_cached and warm.stats.walk_work == 0
    assert _found(warm) == _found(cold) and warm.entries == cold.entries and warm.spellings == cold.spellings
    assert [r.path for r in warm.results] == [r.path for r in cold.results]


def test_a_run_over_files_written_just_now_keeps_no_answer(project: Path, tmp_path: Path) -> None:
    _run(project, tmp_path / "cache")  # the files were written a moment ago: racy
    assert not _run(project, tmp_path / "cache").stats.answer_cached


CHANGES: Dict[str, Callable[[Path, Path], None]] = {
    "a file edited": lambda root, tmp: (root / "train.py").write_text(TRAIN.replace(
        'with torch.autocast("cpu", dtype=torch.float16):', "if True:")),
    "a .gitignore edited": lambda root, tmp: (root / ".gitignore").write_text("train.py\n"),
    "git's info/exclude edited": lambda root, tmp: (root / ".git/info/exclude").write_text("train.py\n"),
    "the global excludes file made": lambda root, tmp: _write(tmp / "xdg", {"git/ignore": "train.py\n"}),
    "git's configuration names an excludes file": lambda root, tmp: (
        _write(tmp, {"mine": "train.py\n"}), (tmp / "gitconfig").write_text(f"[core]\n\texcludesFile = {tmp}/mine\n")),
    "a file added to a listed folder": lambda root, tmp: _write(root, {"sub/amp.py": OWN}),
    "a folder added": lambda root, tmp: _write(root, {"new/deeper/amp.py": OWN}),
    "a pyvenv.cfg removed": lambda root, tmp: (root / "env2/pyvenv.cfg").unlink(),
    "a file removed": lambda root, tmp: (root / "train.py").unlink(),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_each_change_is_looked_at_again(change: str, project: Path, tmp_path: Path) -> None:
    _aged()
    cold = _run(project, tmp_path / "cache")
    assert _run(project, tmp_path / "cache").stats.answer_cached
    CHANGES[change](project, tmp_path)
    changed = _run(project, tmp_path / "cache")
    truth = _run(project, None)
    assert not changed.stats.answer_cached
    assert _found(changed) == _found(truth) != _found(cold)
    assert [(r.path, r.error) for r in changed.results] == [(r.path, r.error) for r in truth.results]


def test_a_file_gits_configuration_includes_is_looked_at_again(project: Path, tmp_path: Path) -> None:
    (tmp_path / "gitconfig").write_text("[include]\n\tpath = more.cfg\n")
    _write(tmp_path, {"mine": "train.py\n", "more.cfg": ""})
    _aged()
    cold = _run(project, tmp_path / "cache")
    assert _run(project, tmp_path / "cache").stats.answer_cached
    (tmp_path / "more.cfg").write_text(f"[core]\n\texcludesFile = {tmp_path}/mine\n")
    changed = _run(project, tmp_path / "cache")
    assert not changed.stats.answer_cached
    assert _found(changed) == _found(_run(project, None)) != _found(cold)


def test_an_edited_config_file_is_looked_at_again(tmp_path: Path) -> None:
    """Lightning's precision is read from a YAML file that no source file names."""
    root = tmp_path / "lit"
    _write(root, {"model.py": LIGHTNING, "configs/trainer.yaml": "trainer:\n  precision: 16-mixed\n",
                  "pyproject.toml": ""})
    _aged()
    assert [f[:4] for f in _found(_run(root, tmp_path / "cache"))] == [("model.py", 12, 17, "AMP001")]
    assert _run(root, tmp_path / "cache").stats.answer_cached
    (root / "configs" / "trainer.yaml").write_text("trainer:\n  precision: 32\n")
    changed = _run(root, tmp_path / "cache")
    assert not changed.stats.answer_cached and _found(changed) == [] == _found(_run(root, None))


def test_the_files_reported_and_the_settings_are_part_of_the_key(project: Path, tmp_path: Path) -> None:
    _aged()
    whole = _run(project, tmp_path / "cache")
    one = _run(project, tmp_path / "cache", report=[project / "losses.py"])
    assert not one.stats.answer_cached and [Path(r.path).name for r in one.results] == ["losses.py"]
    assert _found(one) == _found(whole)
    unbounded = run_project([str(project)], Config(jobs=1, flow_budget=0), cache_dir=str(tmp_path / "cache"))
    assert not unbounded.stats.answer_cached
    ignoring = run_project([str(project)], Config(jobs=1, respect_gitignore=False), cache_dir=str(tmp_path / "cache"))
    assert not ignoring.stats.answer_cached
    assert _run(project, tmp_path / "cache").stats.answer_cached  # the first is still there
