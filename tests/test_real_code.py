"""A fixed slice of the real-code sweep: vendored third-party files, and autocast-wrapped copies of them.

`fixtures/real/` holds unmodified files from PyPI sdists (see its README and
NOTICE files). The originals have no autocast region; `realcode.wrap_in_autocast`
derives copies, at test time, in which every function body that calls
`log_prob`, `entropy` or `kl_divergence` runs under `torch.autocast("cuda")`.
On both trees, through the real CLI, with both strategies:

- nothing raises and no file is reported as unreadable;
- every rewritten file compiles and changes only by the fix's own edits;
- `amplint check` afterwards reports no fixable finding;
- a second `--fix` changes zero bytes;
- every file without a fixable finding keeps its bytes and its mtime.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import FIXTURES, OLD, ROOT
from realcode import wrap_in_autocast
from test_properties import only_casts_inserted, only_wraps_and_casts

REAL = FIXTURES / "real"
SOURCES = sorted(REAL.rglob("*.py"))


def _cli(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT), AMPLINT_CACHE_DIR=str(cwd / ".cache"))
    return subprocess.run([sys.executable, "-m", "amplint", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=900)


def _snapshot(root: Path) -> Dict[str, Tuple[bytes, float]]:
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime) for p in sorted(root.rglob("*.py"))}


def _findings(root: Path, strategy: str) -> List[dict]:
    proc = _cli(["check", "--format", "json", "--strategy", strategy, "tree"], root)
    assert proc.returncode in (0, 1), proc.stderr
    assert proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)


def test_the_slice_is_what_the_readme_says() -> None:
    assert len(SOURCES) >= 30
    for project in (p for p in REAL.iterdir() if p.is_dir()):
        assert (project / "NOTICE").is_file() and any(project.glob("LICEN[CS]E*")), project
    assert all("torch.autocast" not in p.read_text(encoding="utf-8") for p in SOURCES)


def test_originals_check_clean_through_the_cli(tmp_path: Path) -> None:
    shutil.copytree(REAL, tmp_path / "tree")
    before = _snapshot(tmp_path / "tree")
    proc = _cli(["check", "tree"], tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout + proc.stderr
    fix = _cli(["check", "--fix", "tree"], tmp_path)
    assert (fix.returncode, fix.stderr) == (0, ""), fix.stdout + fix.stderr
    assert _snapshot(tmp_path / "tree") == before


@pytest.fixture(scope="module")
def derived(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The derived tree: wrapped copies where a function calls a trigger, the other files as they are."""
    root = tmp_path_factory.mktemp("derived") / "tree"
    for source in SOURCES:
        target = root / source.relative_to(REAL)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = source.read_text(encoding="utf-8")
        target.write_text(wrap_in_autocast(text) or text, encoding="utf-8")
    return root


def test_derived_copies_compile_and_have_findings(derived: Path) -> None:
    wrapped = [p for p in derived.rglob("*.py") if "torch.autocast" in p.read_text()]
    assert len(wrapped) >= 15
    for path in derived.rglob("*.py"):
        compile(path.read_text(), str(path), "exec", dont_inherit=True)


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_fix_on_derived_real_code(tmp_path: Path, derived: Path, strategy: str) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(derived, tree)
    for path in tree.rglob("*.py"):
        os.utime(path, (OLD, OLD))
    before = _snapshot(tree)
    findings = _findings(tmp_path, strategy)
    fixable = {f["path"] for f in findings if f["fixable"]}
    assert findings and fixable, "the slice must give the fixer work"

    fixed = _cli(["check", "--fix", "--strategy", strategy, "tree"], tmp_path)
    assert fixed.returncode in (0, 1) and fixed.stderr == "", fixed.stdout + fixed.stderr
    after = _snapshot(tree)
    assert after.keys() == before.keys()
    for name, (data, mtime) in after.items():
        old_data, old_mtime = before[name]
        if os.path.join("tree", name) not in fixable:
            assert (data, mtime) == (old_data, old_mtime), f"{name} had no fixable finding but was written"
            continue
        text, old_text = data.decode("utf-8"), old_data.decode("utf-8")
        compile(text, name, "exec", dont_inherit=True)
        edits_only = only_casts_inserted if strategy == "cast" else only_wraps_and_casts
        assert edits_only(old_text, text), f"{name}: the fix changed more than its own edits"
    assert any(after[name][0] != before[name][0] for name in after)

    left = _findings(tmp_path, strategy)
    assert [f for f in left if f["fixable"]] == []
    assert len(left) <= len(findings) - sum(f["fixable"] for f in findings)

    again = _cli(["check", "--fix", "--strategy", strategy, "tree"], tmp_path)
    assert again.returncode in (0, 1) and again.stderr == ""
    assert _snapshot(tree) == after  # a second --fix changes zero bytes and writes nothing
