"""Every fixture under fixtures/check reports exactly its `.expected` findings."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from amplint.config import Config
from amplint.engine import check_paths
from conftest import FIXTURES, chain_via, expected_lines, run_amplint

CHECK = FIXTURES / "check"
CASES = sorted(CHECK.glob("*.py"))


def _render(finding) -> str:
    return f"{finding.line}:{finding.column} {finding.code}{chain_via(finding.chain)}"


def test_every_fixture_has_expectations() -> None:
    assert CASES, "no fixtures found"
    for case in CASES:
        assert case.with_suffix(".expected").exists(), f"{case.name} has no .expected file"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_fixture_findings_are_exact(case: Path) -> None:
    results = check_paths([str(case)], Config())
    assert [r.error for r in results] == [None]
    assert [_render(f) for f in results[0].findings] == expected_lines(case.with_suffix(".expected"))


def test_cli_on_fixture_directory_matches_expected_files() -> None:
    proc = run_amplint(["check", str(CHECK), "--format", "json"])
    assert proc.returncode == 1, proc.stderr
    findings = json.loads(proc.stdout)
    expected = sorted(
        (str(case), line) for case in CASES for line in expected_lines(case.with_suffix(".expected"))
    )
    got = sorted(
        (f["path"], f"{f['line']}:{f['column']} {f['code']}{chain_via(f['chain'])}")
        for f in findings
    )
    assert got == expected


def test_seed_example_is_float32_by_construction_and_its_linear_twin_is_reported() -> None:
    """Factories make float32 even in a region: only the twin with a Linear head's parameters is a finding."""
    [result] = check_paths([str(CHECK / "seed_minimal.py")])
    [finding] = result.findings
    assert (finding.line, finding.code) == (22, "AMP001")
    assert "line 20" in finding.message
    lines = (CHECK / "seed_minimal.py").read_text().splitlines()
    assert lines[15].strip() == "lp = dist.log_prob(x)"  # float32 throughout: not reported
    assert lines[21].strip() == "lp = Normal(loc, log_scale.exp()).log_prob(x)"
