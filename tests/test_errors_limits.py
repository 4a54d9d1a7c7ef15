"""Bad names, bad consoles, unreadable folders, huge files, odd indentation, broken originals (issue 17).

Each is one clear line naming the file, and the run goes on.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amplint.cli import main
from amplint.fix.apply import MIXED_INDENT_ERROR, verify

from conftest import run_amplint

ROOT = Path(__file__).resolve().parent.parent
BROKEN = '''\
import torch
import torch.distributions as D


def nll(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''


@pytest.mark.skipif(sys.platform in ("darwin", "win32"), reason="needs a file system that takes any bytes")
def test_sarif_with_a_file_name_that_is_not_utf8(tmp_path: Path) -> None:
    os.makedirs(os.fsencode(tmp_path / "src"))
    with open(os.path.join(os.fsencode(tmp_path / "src"), b"bad\xff.py"), "w") as handle:
        handle.write(BROKEN)
    result = run_amplint(["check", "--format", "sarif", "."], cwd=tmp_path / "src")
    assert result.returncode == 1, result.stderr
    log = json.loads(result.stdout)
    (finding,) = log["runs"][0]["results"]
    location = finding["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "bad%FF.py", "uriBaseId": "%SRCROOT%"}
    # Outside the root the URI is absolute, percent-encoded from the name's bytes as well.
    outside = run_amplint(["check", "--format", "sarif", str(tmp_path / "src")])
    assert outside.returncode == 1 and "Traceback" not in outside.stderr
    (finding,) = json.loads(outside.stdout)["runs"][0]["results"]
    uri = finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri.startswith("file:///") and uri.endswith("/src/bad%FF.py")


def test_text_report_on_a_console_that_cannot_encode_the_line(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text(BROKEN.replace("log_prob(x)", "log_prob(x)  # größe σ"), encoding="utf-8")
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONIOENCODING="ascii")
    result = subprocess.run([sys.executable, "-m", "amplint", "check", str(target)], cwd=ROOT, env=env,
                            capture_output=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"log_prob(x)  # gr\\xf6\\xdfe \\u03c3" in result.stdout


@pytest.fixture
def unreadable_sub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tree with a subfolder that cannot be listed (root reads anything, so the denial is simulated)."""
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "hidden.py").write_text(BROKEN)
    (tree / "fine.py").write_text(BROKEN)
    denied = str(tree / "sub")
    real = os.scandir

    def scandir(path="."):
        if os.fspath(path) == denied:
            raise PermissionError(13, "Permission denied", denied)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return tree


@pytest.mark.parametrize("fix", [False, True])
def test_an_unreadable_subdirectory_is_reported(unreadable_sub: Path, capsys: pytest.CaptureFixture, fix: bool) -> None:
    code = main(["check", *(["--fix"] if fix else []), "--jobs", "1", str(unreadable_sub)])
    out, err = capsys.readouterr()
    assert f"{unreadable_sub / 'sub'}: error: cannot read directory: Permission denied" in err.splitlines()
    if fix:
        assert code == 2  # not "0 remaining" and exit 0
        assert "Fixed 1 finding, 0 remaining, 1 file with errors." in out
    else:
        assert "Found 1 finding, 1 fixable with `amplint check --fix`, 1 file could not be checked." in out


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can list any folder")
def test_a_real_unreadable_subdirectory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.py").write_text(BROKEN)
    (tmp_path / "fine.py").write_text(BROKEN)
    os.chmod(tmp_path / "sub", 0)
    try:
        result = run_amplint(["check", "--fix", str(tmp_path)])
    finally:
        os.chmod(tmp_path / "sub", 0o755)
    assert result.returncode == 2 and "cannot read directory" in result.stderr


def test_files_over_the_size_limit_are_skipped_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(BROKEN + "# padding\n" * 210_000)  # 2.1 MB
    (tmp_path / "small.py").write_text(BROKEN)
    result = run_amplint(["check", str(tmp_path)])
    big = tmp_path / "big.py"
    assert result.stderr.splitlines() == [f"{big}: error: skipped: too large (2.1 MB, over the 2.0 MB max-file-size)"]
    assert f"{tmp_path / 'small.py'}:8:17: AMP001" in result.stdout
    assert "Found 1 finding" in result.stdout


def test_the_size_limit_is_configurable(tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(BROKEN)
    (tmp_path / "pyproject.toml").write_text("[tool.amplint]\nmax-file-size = 100\n")
    result = run_amplint(["check", "--fix", str(tmp_path)])
    assert result.returncode == 2
    assert "small.py: error: skipped: too large (0.0 MB, over the 0.0 MB max-file-size)" in result.stderr
    assert (tmp_path / "small.py").read_text() == BROKEN
    (tmp_path / "pyproject.toml").write_text("[tool.amplint]\nmax-file-size = 0\n")  # no limit
    result = run_amplint(["check", str(tmp_path)])
    assert result.returncode == 1 and "small.py:8:17: AMP001" in result.stdout


MIXED = (
    "import torch\nimport torch.distributions as D\n\n\n"
    "def nll(model, h, x):\n"
    "    if h:\n"
    "\t    z = 1\n"  # 12 columns with tabs of 8, 5 with tabs of 1: deeper either way, so CPython accepts it
    "    with torch.autocast(\"cuda\"):\n"
    "\t    mu, sigma = model(h)\n"
    "\t    return -D.Normal(mu, sigma).log_prob(x)\n"
)


def test_valid_mixed_indentation_is_checked_not_a_syntax_error(tmp_path: Path) -> None:
    compile(MIXED, "mixed.py", "exec")
    target = tmp_path / "mixed.py"
    target.write_text(MIXED)
    result = run_amplint(["check", str(target)])
    assert result.stderr == ""
    assert result.stdout.splitlines()[0].startswith(f"{target}:10:14: AMP001 `Normal.log_prob`")
    fixed = run_amplint(["check", "--fix", str(target)])
    assert fixed.stderr.splitlines() == [f"{target}: error: {MIXED_INDENT_ERROR}"]
    assert target.read_text() == MIXED


def test_a_file_that_did_not_compile_before_is_not_blamed_on_the_fix(tmp_path: Path) -> None:
    target = tmp_path / "script.py"
    original = BROKEN.replace("def nll(model, h, x):\n    with", "if True:\n    with")  # `return` outside a function
    target.write_text(original)
    result = run_amplint(["check", "--fix", str(target)])
    assert "does not compile" not in result.stderr and "does not parse" not in result.stderr
    assert result.returncode == 0, result.stderr
    assert "D.Normal(mu.float(), sigma.float()).log_prob(x.float())" in target.read_text()
    # A fix that would change how it fails is refused, and the message says the file was broken before.
    error = verify("break\nreturn 1\n", "s.py", "return 1\n")
    assert error is not None and "does not compile before the fix either" in error.message
    assert verify("x = (\n1)\n", "s.py", "x = 1\n") is None
    error = verify("return 1\n", "s.py", "x = 1\n")
    assert error is not None and "the fix produced code that does not parse or compile" in error.message
