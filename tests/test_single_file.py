"""A named file is checked in its project (issue 13, item 9): `amplint check model.py`, `flake8 model.py`
and `amplint check --fix model.py` report what a whole-project run reports for that file, cross-file
findings included, and nothing about the other files. `fixtures/single` is the project: its regions are
in `train.py` (and `base.py`'s `self.amp_cm` alias), its sites in `model.py` and `trainer.py`.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

import pytest

from amplint.config import Config
from amplint.scope import Scope, marked_root, run_scopes, scopes
from conftest import FIXTURES, expected_lines, run_amplint

PROJECT = FIXTURES / "single"
Row = Tuple[str, int, int, str, str]
MODEL = ("model.py", 14, 16, "AMP001")  # reached from train.py:9 through policy(x, y) → Policy.forward
TRAINER = ("trainer.py", 12, 20, "AMP001")  # under `with self.amp_cm():`, the alias set in base.py


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the fixture project (its cache and any fix stay out of the repository)."""
    if marked_root(str(tmp_path / "x.py")) is not None:
        pytest.skip("the temporary directory is inside a project: a file outside any project cannot be made")
    target = tmp_path / "proj"
    shutil.copytree(PROJECT, target)
    return target


def check_json(args: Sequence[str], cwd: Path) -> List[Row]:
    proc = run_amplint(["check", "--format", "json", *args], cwd=cwd)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((f["path"], f["line"], f["column"], f["code"], f["message"]) for f in json.loads(proc.stdout))


def flake8(args: Sequence[str], cwd: Path) -> List[Row]:
    exe = Path(sys.executable).with_name("flake8")
    if not exe.exists():
        pytest.skip("flake8 is not installed")
    proc = subprocess.run(
        [str(exe), "--isolated", "--select", "AMP", "--format=%(path)s|%(row)d|%(col)d|%(code)s|%(text)s", *args],
        cwd=cwd, capture_output=True, text=True, env=dict(os.environ, PYTHONWARNINGS="ignore"), timeout=300,
    )
    assert proc.returncode in (0, 1), proc.stderr
    rows = []
    for line in proc.stdout.splitlines():
        path, row, col, code, text = line.split("|", 4)
        rows.append((os.path.normpath(path), int(row), int(col), code, text))
    return sorted(rows)


def positions(rows: Sequence[Row]) -> List[Tuple[str, int, int, str]]:
    return [row[:4] for row in rows]


def of(rows: Sequence[Row], path: str) -> List[Row]:
    return [row for row in rows if row[0] == path]


def test_whole_project_run_gives_the_expected_findings(project: Path) -> None:
    rows = check_json(["."], project)
    assert [f"{p}:{line}:{col} {code}" for p, line, col, code in positions(rows)] == expected_lines(
        PROJECT / "expected"
    )


def test_check_one_file_gives_its_cross_file_finding_as_the_whole_run_does(project: Path) -> None:
    whole = check_json(["."], project)
    alone = check_json(["model.py"], project)
    assert positions(alone) == [MODEL]
    assert alone == of(whole, "model.py")
    assert "reached from autocast region at train.py:9 via policy(x, y) (train.py:10:14) → Policy.forward" in alone[0][4]


def test_text_output_of_one_file_is_the_whole_runs_line(project: Path) -> None:
    whole = run_amplint(["check", "."], cwd=project).stdout.splitlines()
    alone = run_amplint(["check", "model.py"], cwd=project)
    assert alone.returncode == 1
    lines = alone.stdout.splitlines()
    assert lines[0].startswith("model.py:14:16: AMP001 [*] `Normal.log_prob` runs under float16 autocast")
    assert lines[:3] == whole[whole.index(lines[0]):whole.index(lines[0]) + 3]  # the finding, source, caret
    assert lines[-1] == "Found 1 finding, 1 fixable with `amplint check --fix`."


def test_self_alias_defined_in_another_file_is_found_from_a_single_file_run(project: Path) -> None:
    assert positions(check_json(["trainer.py"], project)) == [TRAINER]
    assert positions(flake8(["trainer.py"], project)) == [TRAINER]


def test_no_project_keeps_the_old_single_file_result(project: Path) -> None:
    assert check_json(["--no-project", "model.py", "trainer.py"], project) == []
    proc = run_amplint(["check", "--no-project", "model.py"], cwd=project)
    assert proc.returncode == 0 and proc.stdout.strip() == "Found 0 findings."


def test_flake8_on_one_file_gives_the_cross_file_finding(project: Path) -> None:
    whole = check_json(["."], project)
    rows = flake8(["model.py"], project)
    assert positions(rows) == [MODEL]
    assert rows[0][4] == of(whole, 'model.py')[0][4]
    assert flake8(["."], project) == flake8(["model.py", "trainer.py", "train.py", "base.py"], project)


def test_fix_on_one_file_writes_that_file_only_and_as_the_whole_run_does(project: Path, tmp_path: Path) -> None:
    whole_copy = tmp_path / "whole"
    shutil.copytree(project, whole_copy)
    assert run_amplint(["check", "--fix", "."], cwd=whole_copy).returncode == 0
    before = {p.name: p.read_text() for p in project.glob("*.py")}
    proc = run_amplint(["check", "--fix", "model.py"], cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == "Fixed 1 finding, 0 remaining."
    after = {p.name: p.read_text() for p in project.glob("*.py")}
    assert [name for name in sorted(after) if after[name] != before[name]] == ["model.py"]
    assert after["model.py"] == (whole_copy / "model.py").read_text()
    assert "Normal(self.mu(x).float(), self.log_sigma(x).float().exp()).log_prob(y.float())" in after["model.py"]
    assert (whole_copy / "trainer.py").read_text() != before["trainer.py"]  # the whole run fixed it too
    assert check_json(["model.py"], project) == []


def test_file_names_are_shown_as_given(project: Path) -> None:
    whole = of(check_json(["."], project), "model.py")
    absolute = check_json([str(project / "model.py")], project)
    assert absolute == [(str(project / "model.py"), *whole[0][1:])]
    from_above = check_json(["proj/model.py"], project.parent)
    assert from_above == [("proj/model.py", *whole[0][1:])]


def test_files_from_two_projects_each_get_their_own(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(project, other)
    rows = check_json([str(project / "model.py"), "other/trainer.py"], tmp_path)
    assert positions(rows) == sorted([
        ("other/trainer.py", 12, 20, "AMP001"), (str(project / "model.py"), 14, 16, "AMP001"),
    ])


def test_a_file_outside_any_project_is_checked_with_the_files_given(project: Path) -> None:
    (project / "pyproject.toml").unlink()  # no marker up to the filesystem root (checked by the fixture)
    assert check_json(["model.py"], project) == []
    assert positions(check_json(["model.py", "train.py"], project)) == [MODEL]


def test_config_exclusions_apply_to_the_indexing(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.amplint]\nexclude = ["train.py"]\n')
    assert check_json(["."], project) == check_json(["model.py", "trainer.py"], project)
    assert positions(check_json(["model.py", "trainer.py"], project)) == [TRAINER]


def test_src_names_the_project_above_a_nested_marker(project: Path) -> None:
    """`app/` has its own setup.py, so without `src` its project is `app/` and the region in
    `scripts/train.py` is not seen; `src = ["."]` makes the whole tree the project."""
    app, scripts = project / "app", project / "scripts"
    app.mkdir()
    scripts.mkdir()
    shutil.move(str(project / "model.py"), app / "model.py")
    (app / "setup.py").write_text("")
    shutil.move(str(project / "train.py"), scripts / "train.py")
    text = (scripts / "train.py").read_text().replace("from model import", "from app.model import")
    (scripts / "train.py").write_text(text)
    assert check_json(["app/model.py"], project) == []
    (project / "pyproject.toml").write_text('[tool.amplint]\nsrc = ["."]\n')
    whole = check_json(["."], project)
    assert positions(check_json(["app/model.py"], project)) == [("app/model.py", 14, 16, "AMP001")]
    assert check_json(["app/model.py"], project) == of(whole, "app/model.py")


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_src_entry_spelled_through_a_link_holds_the_files_named_by_their_real_path(
        project: Path, tmp_path: Path) -> None:
    """A checkout reached through a link (`/home` -> `/data/home`): the file named from inside the real
    folder is still in the project, and reported under the name given. Before, it was checked alone."""
    (project / "pyproject.toml").unlink()  # no marker: `src` alone makes the folder a project
    link = tmp_path / "link"
    link.symlink_to(project, target_is_directory=True)
    config = tmp_path / "amplint.toml"
    config.write_text(f"src = [{json.dumps(str(link))}]\n")
    whole = check_json(["--config", str(config), "."], project)
    named = check_json(["--config", str(config), "model.py"], project)
    assert positions(named) == [MODEL] and named == of(whole, "model.py")
    assert positions(check_json(["--config", str(config), str(link / "model.py")], project)) == [
        (str(link / "model.py"), *MODEL[1:])]


def test_a_src_entry_that_is_not_a_directory_is_a_config_error(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.amplint]\nsrc = ["nowhere"]\n')
    proc = run_amplint(["check", "model.py"], cwd=project)
    assert proc.returncode == 2
    assert "key 'src': 'nowhere' is not a directory" in proc.stderr


def test_scopes_group_named_files_by_project(project: Path, tmp_path: Path) -> None:
    config = Config()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    named = scopes([str(project / "model.py"), str(project / "trainer.py"), str(elsewhere)], config)
    assert named[0] == Scope((str(project),), frozenset({str(project / "model.py"), str(project / "trainer.py")}))
    assert named[1] == Scope((str(elsewhere),))  # a directory is its own project, as before
    under = scopes([str(project / "model.py"), str(tmp_path)], config)
    assert under == [Scope((str(project / "model.py"), str(tmp_path)))]  # a file under a named directory


def test_a_warm_single_file_run_parses_nothing_and_reports_only_that_file(project: Path) -> None:
    config = Config(jobs=1)
    target = str(project / "model.py")
    run_scopes([target], config)  # fills the cache
    ((scope, run),) = run_scopes([target], config)
    assert [result.path for result in run.results] == [target]
    assert run.stats.parsed == []
    assert [(f.line, f.column, f.code) for f in run.results[0].findings] == [MODEL[1:]]


def test_the_language_server_finds_the_same_project_and_spellings(project: Path) -> None:
    """The LSP workspace walks the project `amplint check FILE` walks, and applies its own spellings."""
    from amplint.lsp.workspace import Workspace

    workspace = Workspace()
    for name, expected in (("model.py", MODEL), ("trainer.py", TRAINER)):
        path = project / name
        report = workspace.check(str(path), path.read_text())
        assert [(name, f.line, f.column, f.code) for f in report.findings] == [expected]
    assert workspace.top(str(project / "model.py")) == (str(project),)
    assert workspace.counters.project_runs == 1


def test_no_project_root_follows_calls_among_the_paths_given_only(project: Path) -> None:
    assert check_json(["--no-project-root", "model.py"], project) == []
    assert positions(check_json(["--no-project-root", "model.py", "train.py"], project)) == [MODEL]


def test_project_root_false_in_the_config_turns_the_search_off_for_flake8_too(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.amplint]\nproject-root = false\n")
    assert check_json(["model.py"], project) == []
    assert flake8(["model.py"], project) == []
    assert positions(flake8(["model.py", "train.py"], project)) == [MODEL]
