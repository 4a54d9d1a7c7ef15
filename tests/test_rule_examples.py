"""Each rule's inline VALID/INVALID examples run through the real analysis."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from amplint.engine import check_paths, check_source
from amplint.rules import ALL_RULES

VALID = [(rule.code, i, code) for rule in ALL_RULES for i, code in enumerate(rule.valid)]
INVALID = [(rule.code, i, case) for rule in ALL_RULES for i, case in enumerate(rule.invalid)]
PROJECTS = [(rule.code, i, project) for rule in ALL_RULES for i, project in enumerate(rule.projects)]


@pytest.mark.parametrize("code,index,source", VALID, ids=lambda v: str(v) if not isinstance(v, str) or len(v) < 9 else "")
def test_valid_examples_are_clean(code: str, index: int, source: str) -> None:
    result = check_source(textwrap.dedent(source).lstrip("\n"), f"{code}_valid_{index}.py")
    assert result.error is None
    assert result.findings == []


@pytest.mark.parametrize("code,index,case", INVALID, ids=lambda v: str(v) if not hasattr(v, "code") else "")
def test_invalid_examples_are_flagged_at_their_position(code: str, index: int, case) -> None:
    result = check_source(textwrap.dedent(case.code).lstrip("\n"), f"{code}_invalid_{index}.py")
    assert result.error is None
    assert [(f.code, f.line, f.column) for f in result.findings] == [(code, case.line, case.column)]


@pytest.mark.parametrize("code,index,project", PROJECTS, ids=lambda v: str(v) if not hasattr(v, "files") else "")
def test_project_examples_are_flagged_where_they_say(tmp_path: Path, code: str, index: int, project) -> None:
    """Checked as `amplint check DIR` checks them: every file of the project, calls followed across files."""
    for name, text in project.files:
        (tmp_path / name).write_text(text)
    results = check_paths([str(tmp_path)])
    assert [r.error for r in results] == [None] * len(project.files)
    found = [(Path(r.path).name, f.line, f.column) for r in results for f in r.findings if f.code == code]
    assert sorted(found) == sorted(project.flagged)
    assert all(f.code == code for r in results for f in r.findings)


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_documentation_has_every_section(rule) -> None:
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix"):
        assert heading in doc
    assert rule.valid and rule.invalid
