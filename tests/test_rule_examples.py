"""Each rule's inline VALID/INVALID examples run through the real analysis."""
from __future__ import annotations

import textwrap

import pytest

from amplint.engine import check_source
from amplint.rules import ALL_RULES

VALID = [(rule.code, i, code) for rule in ALL_RULES for i, code in enumerate(rule.valid)]
INVALID = [(rule.code, i, case) for rule in ALL_RULES for i, case in enumerate(rule.invalid)]


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


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda r: r.code)
def test_rule_documentation_has_every_section(rule) -> None:
    doc = rule.documentation()
    for heading in ("## What it does", "## Why is this bad?", "## Example", "## Fix"):
        assert heading in doc
    assert rule.valid and rule.invalid
