"""Every fixture pair under fixtures/fix/<strategy>/: NAME.in.py fixed with <strategy> is NAME.out.py.

For each pair: the output equals the expected bytes, compiles, re-checks with
no fixable finding left, and a second fix changes nothing. The CLI test then
fixes a copy of each directory in place and compares the files byte for byte.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import List, Tuple

import pytest

from amplint.cli import main
from amplint.config import Config
from amplint.engine import check_source
from amplint.fix.apply import fix_text
from conftest import FIXTURES, ROOT, run_amplint

FIX = FIXTURES / "fix"
STRATEGIES = ("cast", "disable-autocast")
PAIRS: List[Tuple[str, Path]] = [
    (strategy, case) for strategy in STRATEGIES for case in sorted((FIX / strategy).glob("*.in.py"))
]


def _expected(case: Path) -> Path:
    return case.with_name(case.name[: -len(".in.py")] + ".out.py")


def _pair_id(pair: Tuple[str, Path]) -> str:
    return f"{pair[0]}/{pair[1].name[: -len('.in.py')]}"


def test_every_input_has_an_expected_output() -> None:
    assert len(PAIRS) >= 2 * 15
    for _, case in PAIRS:
        assert _expected(case).exists(), f"{case} has no .out.py"


def test_both_strategies_cover_the_same_cases() -> None:
    names = [sorted(p.name for p in (FIX / strategy).glob("*.in.py")) for strategy in STRATEGIES]
    assert names[0] == names[1]


@pytest.mark.parametrize("pair", PAIRS, ids=_pair_id)
def test_fixture_pair(pair: Tuple[str, Path]) -> None:
    strategy, case = pair
    config = Config(strategy=strategy)
    source = case.read_bytes().decode("utf-8")
    expected = _expected(case).read_bytes()

    fixed = fix_text(source, str(case), config)
    assert not isinstance(fixed, Exception) and hasattr(fixed, "fixed"), fixed
    assert fixed.fixed.encode("utf-8") == expected
    compile(fixed.fixed, str(case), "exec", dont_inherit=True)

    recheck = check_source(fixed.fixed, str(case), config)
    assert recheck.error is None
    assert [f for f in recheck.findings if f.fixable] == []
    assert [f.to_json() for f in recheck.findings] == [f.to_json() for f in fixed.remaining]

    again = fix_text(fixed.fixed, str(case), config)
    assert again.fixed == fixed.fixed and not again.changed and again.fixed_count == 0


def test_crlf_fixture_really_is_crlf() -> None:
    """Guards against a checkout that normalised the fixture's newlines (see .gitattributes)."""
    for strategy in STRATEGIES:
        for path in (FIX / strategy / "crlf.in.py", FIX / strategy / "crlf.out.py"):
            data = path.read_bytes()
            assert data.count(b"\r\n") == data.count(b"\n") > 5


def test_noqa_lines_are_byte_for_byte_unchanged() -> None:
    for strategy in STRATEGIES:
        before = (FIX / strategy / "noqa.in.py").read_text().splitlines()
        after = (FIX / strategy / "noqa.out.py").read_text().splitlines()
        noqa = [line for line in before if "# noqa" in line and not line.startswith('"""')]
        assert len(noqa) == 3 and all(line in after for line in noqa)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_cli_fixes_a_copy_of_the_fixtures_until_nothing_fixable_remains(
    strategy: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    copy = tmp_path / "fix"
    shutil.copytree(FIX / strategy, copy)
    for out in copy.glob("*.out.py"):
        out.unlink()
    # The real entry point, once, file by file as `fix_text` fixes the pairs (project mode joins `score(...)`
    # in helpers.in.py to its caller's cast Normal and casts only the value: tests/test_fix_remote.py).
    first = run_amplint(["check", "--no-project", "--fix", "--strategy", strategy, str(copy)])
    assert first.returncode == 1, first.stderr  # the helpers/noqa/lazy cases cannot be fixed
    assert "Fixed " in first.stdout and " remaining" in first.stdout
    for case in (FIX / strategy).glob("*.in.py"):
        assert (copy / case.name).read_bytes() == _expected(case).read_bytes(), case.name
    assert main(["check", "--no-project", "--fix", "--strategy", strategy, str(copy)]) == 1
    assert "Fixed 0 findings" in capsys.readouterr().out
    assert main(["check", "--no-project", "--format", "json", "--strategy", strategy, str(copy)]) == 1
    findings = json.loads(capsys.readouterr().out)
    assert findings and not [f for f in findings if f["fixable"]]


def _doc_examples() -> List[Tuple[str, str, str]]:
    """(strategy, before, after) from the `--fix` documentation (docs/fixing.md)."""
    for doc in (ROOT / "docs" / "fixing.md", ROOT / "README.md"):
        if doc.exists() and "# after `amplint check --fix" in doc.read_text(encoding="utf-8"):
            text = doc.read_text(encoding="utf-8")
            break
    else:
        return []
    examples = []
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if "# after `amplint check --fix" not in block:
            continue
        before, after = re.split(r"\n# after `amplint check --fix[^\n]*\n", block.replace("# before\n", "", 1))
        strategy = "disable-autocast" if "--strategy disable-autocast" in block else "cast"
        examples.append((strategy, before.rstrip("\n") + "\n", after))
    return examples


def test_readme_examples_are_real_codemod_output() -> None:
    examples = _doc_examples()
    assert {strategy for strategy, _, _ in examples} == set(STRATEGIES)
    header = "import torch\nimport torch.distributions as D\n"
    for strategy, before, after in examples:
        fixed = fix_text(header + before, "example.py", Config(strategy=strategy))
        assert fixed.fixed == header + after, strategy
