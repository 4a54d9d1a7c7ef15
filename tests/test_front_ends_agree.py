"""One two-file project through every front end: `amplint check .`, `amplint check FILE`, `--fix FILE`, flake8,
the language server (diagnostics and fix-all) and SARIF report the same findings, and each front end that
offers fixes fixes every finding it calls fixable, in both files (the distribution is built in model.py, the
finding is in train.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import run_amplint
from test_flake8 import _rows, flake8
from test_front_ends_fix import FIXED_MODEL, FIXED_TRAIN, MODEL, TRAIN
from test_sarif import apply_replacements, validate

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402

from test_lsp import Session, run  # noqa: E402

Where = Tuple[str, int, int, str]
EXPECTED: List[Where] = [("train.py", 9, 17, "AMP001")]
FIXED = {"train.py": FIXED_TRAIN, "model.py": FIXED_MODEL}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (root / "model.py").write_text(MODEL)
    (root / "train.py").write_text(TRAIN)
    return root


def _json(project: Path, *argv: str) -> List[dict]:
    return json.loads(run_amplint(["check", "--format", "json", *argv], cwd=project).stdout)


def _where(findings: List[dict]) -> List[Where]:
    return [(Path(f["path"]).name, f["line"], f["column"], f["code"]) for f in findings]


def _copy(project: Path, name: str) -> Path:
    target = project.parent / name
    shutil.copytree(project, target, ignore=shutil.ignore_patterns(".amplint_cache"))
    return target


def _texts(root: Path) -> Dict[str, str]:
    return {name: (root / name).read_text() for name in FIXED}


def _lsp(project: Path) -> Tuple[List[Where], Dict[str, str], Dict[str, str]]:
    """The server's diagnostics for train.py, and the texts after its fix-all and after its quick fix."""
    out: Dict[str, object] = {}

    def applied(action: types.CodeAction) -> Dict[str, str]:
        assert action.edit is not None and action.edit.changes is not None
        texts = {}
        for uri, edits in action.edit.changes.items():
            name = Path(uri).name
            lines = (project / name).read_text().splitlines(keepends=True)
            for edit in sorted(edits, key=lambda e: e.range.start.line, reverse=True):
                start, end = edit.range.start, edit.range.end
                assert start.character == 0
                tail = "".join(lines[end.line:])[end.character:] if end.line < len(lines) else ""
                lines = ("".join(lines[:start.line]) + edit.new_text + tail).splitlines(keepends=True)
            texts[name] = "".join(lines)
        return texts

    async def scenario() -> None:
        session = Session()
        await session.start(project)
        try:
            uri = session.open(project / "train.py")
            found = await session.diagnostics(uri)
            out["where"] = [("train.py", d.range.start.line + 1, d.range.start.character + 1, d.code) for d in found]
            every = await session.actions(uri, found[0])
            fix_all = [a for a in every if a.kind == "source.fixAll.amplint"]
            quick = [a for a in every if a.title.startswith("amplint: cast the inputs")]
            out["all"] = applied(fix_all[0]) if fix_all else {}
            out["quick"] = applied(quick[0]) if quick else {}
        finally:
            await session.stop()

    run(scenario())
    return out["where"], out["all"], out["quick"]  # type: ignore[return-value]


def test_every_front_end_reports_the_same_findings_and_fixes_every_fixable_one(project: Path) -> None:
    # amplint check ., amplint check FILE: the same finding, fixable.
    whole = _json(project, ".")
    assert _where(whole) == EXPECTED and [f["fixable"] for f in whole] == [True]
    assert _where(_json(project, "train.py")) == EXPECTED
    assert _json(project, "model.py") == []

    # flake8: the same place and code.
    rows = _rows(flake8(["--select", "AMP", "."], cwd=project).stdout)
    assert [(Path(path).name, row, col, code) for path, row, col, code, _ in rows] == EXPECTED

    # SARIF: the same result, valid, whose fix edits both files into what --fix writes.
    log = json.loads(run_amplint(["check", "--format", "sarif", "."], cwd=project).stdout)
    validate(log)
    [result] = log["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert ("train.py", region["startLine"], region["startColumn"], result["ruleId"]) == EXPECTED[0]
    [fix] = result["fixes"]
    sarif_fixed = {change["artifactLocation"]["uri"]: apply_replacements((project / change["artifactLocation"]["uri"])
                                                                           .read_text(), change["replacements"])
                   for change in fix["artifactChanges"]}
    assert sarif_fixed == FIXED

    # The language server: the same diagnostic, and fix-all and the quick fix are one edit of both files.
    where, fix_all, quick = _lsp(project)
    assert where == EXPECTED
    assert fix_all == FIXED and quick == FIXED

    # --fix FILE and --fix . write the same two files, and nothing is left.
    for name, argv in (("named", ["train.py"]), ("whole", ["."])):
        copy = _copy(project, name)
        result = run_amplint(["check", "--fix", *argv], cwd=copy)
        assert result.returncode == 0 and result.stdout.startswith("Fixed 1 finding, 0 remaining.\n"), result
        assert _texts(copy) == FIXED
        assert _json(copy, ".") == []
        assert flake8(["--select", "AMP", "."], cwd=copy).stdout == ""
    assert _texts(project) == {"train.py": TRAIN, "model.py": MODEL}  # none of the above wrote the original
