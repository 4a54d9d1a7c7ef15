"""The README and docs/ as a newcomer reads them: links stay in the repository, numbers agree, commands match CI."""
from __future__ import annotations

import re

from conftest import ROOT, run_amplint

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_link_is_a_file_of_the_repository() -> None:
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        assert "://" not in "".join(LINK.findall(text)), doc
        for target in LINK.findall(text):
            path = (doc.parent / target.split("#")[0]).resolve()
            assert path.exists() and ROOT in path.parents, (doc.name, target)


def test_no_internal_references_and_no_old_section_copies() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "issue 8" not in readme and "shared/reference" not in readme
    assert not list((ROOT / "docs").glob("*-section.md"))


def test_the_numbers_agree_with_the_measurement_table_and_the_rule_text() -> None:
    table = (ROOT / "docs" / "measurements.md").read_text(encoding="utf-8")
    normal = next(line for line in table.splitlines() if line.startswith("| Normal / small s") and "| model |" in line)
    laplace = next(line for line in table.splitlines() if line.startswith("| Laplace[scale=1e-3*sigmoid]") and "| model |" in line)
    assert "f16 15107/0/378" in normal and "| f32 0/0/0 20 |" in normal  # CPU float16, CUDA policy
    assert "f16 9570/0/0" in laplace and "| f32 9570/0/0 44 |" in laplace
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    # The README's table is `amplint verify`'s (tests/test_front_ends_docs.py runs it); the reference table's
    # 15,107 is named there as a configuration of its own.
    assert "| 15,034 `-inf`, 404 NaN | 0 | 0 |" in readme and "| 8,455 `-inf` | 8,455 `-inf` | 0 |" in readme
    rule = run_amplint(["rule", "AMP001"]).stdout
    assert "15,107 `-inf` and 378 NaN under CPU float16" in " ".join(rule.split())
    for text in (readme, rule, run_amplint(["rule", "AMP002"]).stdout, (ROOT / "docs" / "fixing.md").read_text()):
        assert "15,485" not in text


def test_the_quick_start_test_command_is_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    assert ci in (ROOT / "README.md").read_text(encoding="utf-8")


def test_version_is_0_2_0_everywhere() -> None:
    assert 'version = "0.2.0"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert run_amplint(["--version"]).stdout.strip() == "amplint 0.2.0"
