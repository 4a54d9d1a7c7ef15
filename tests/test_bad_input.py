"""Bad input never stops a run: one clear stderr line per problem, the other files still checked.

Every case goes through the real CLI (`python -m amplint check ...` in a
subprocess) next to a good file with one AMP001 finding, so each test shows
all three promises at once: exactly one line `PATH: error: PROBLEM` on
stderr, the good file's finding still on stdout, and the exit code of issue
2 (1 when some file could not be checked, 2 when nothing could be).

The engine's text prefilter skips files that never mention autocast (and, for a
file on its own, a probability method such as log_prob) without parsing them,
so every bad file here mentions both. That is deliberate,
and pinned by `test_prefilter_*` below: a file that cannot contain a region
cannot have a finding, so a syntax error in it hides nothing from amplint
(flake8/ruff report those). Decoding happens before the prefilter, for every
file, so decode errors are reported whatever the file says.

Running as root (CI containers) defeats `chmod 000`; the permission tests
then run the CLI under `setpriv` with every capability dropped, which makes
root obey file modes, and skip (saying so) only where that is impossible.
"""
from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence, Union

import pytest

from amplint.config import Config
from amplint.engine import check_paths, check_source
from conftest import OLD, ROOT

GOOD = '''\
import torch
import torch.distributions as D


def nll(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''
GOOD_FINDING = "good.py:8:17: AMP001"
REGION = b'import torch  # log_prob\nwith torch.autocast("cuda"):\n'
DROP_PRIVILEGES = ("setpriv", "--inh-caps=-all", "--bounding-set=-all", "--")


def _cli(args: Sequence[str], cwd: Path, prefix: Sequence[str] = (), timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT), AMPLINT_CACHE_DIR=str(cwd / ".cache"))
    return subprocess.run(
        [*prefix, sys.executable, "-m", "amplint", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout,
    )


def _main(args: Sequence[str], cwd: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> subprocess.CompletedProcess:
    """`amplint.cli.main` in this process: the same code path as the CLI, without the start-up cost."""
    from amplint.cli import main

    monkeypatch.chdir(cwd)
    monkeypatch.setenv("AMPLINT_CACHE_DIR", str(cwd / ".cache"))
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, captured.out, captured.err)


def _tree(root: Path, files: Dict[str, Union[str, bytes]]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return root


def _errors(proc: subprocess.CompletedProcess) -> List[str]:
    """stderr's lines but the notes (`amplint: note: no project found above ...`: these trees have no marker)."""
    return [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("amplint: note: ")]


def _one_error(proc: subprocess.CompletedProcess, path: str, *phrases: str) -> str:
    """Exactly one stderr line, `PATH: error: ...`, containing every phrase."""
    lines = _errors(proc)
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"{path}: error: "), lines[0]
    for phrase in phrases:
        assert phrase in lines[0], (phrase, lines[0])
    assert "Traceback" not in proc.stderr
    return lines[0]


def _good_still_checked(proc: subprocess.CompletedProcess) -> None:
    assert GOOD_FINDING in proc.stdout, proc.stdout
    assert proc.returncode == 1, (proc.returncode, proc.stderr)


# --- one bad file next to a good one -----------------------------------------------

PY2_PRINT = REGION + b'    print "hello"\n'
PY2_EXCEPT = REGION + b"    try:\n        pass\n    except Exception, e:\n        pass\n"
PY2_BACKTICKS = REGION + b"    s = `x`\n"
PY2_OCTAL_AND_UR = REGION + b'    mode = 0777\n    s = ur"x"\n'
UNCLOSED = REGION + b"    x = (\n"
UNDECODABLE = REGION + b'    s = "\xc3\x28 \xff"\n'
WRONG_COOKIE = b"# -*- coding: utf-8 -*-\n" + REGION + b'    s = "caf\xe9"\n'  # latin-1 bytes
ASCII_COOKIE = b"# coding: ascii\n" + REGION + b'    s = "\xc3\xa9"\n'
UNKNOWN_COOKIE = b"# -*- coding: klingon -*-\n" + REGION + b"    pass\n"
BOM_AND_OTHER_COOKIE = b"\xef\xbb\xbf# coding: latin-1\n" + REGION + b"    pass\n"
UTF16 = ('import torch  # log_prob\nwith torch.autocast("cuda"):\n    pass\n').encode("utf-16")
NUL_BYTE = REGION + b"    x = 1\x00\n"
INCONSISTENT_TABS = REGION + b"\tx = 1\n        y = 2\n"
TOO_MANY_PARENS = REGION + b"    x = " + b"(" * 3000 + b"1" + b")" * 3000 + b"\n"  # was a segfault in LibCST
TOO_DEEP_UNARY = REGION + b"    x = " + b"not " * 20000 + b"a\n"  # was a segfault in LibCST
TOO_LONG_SUM = REGION + b"    x = " + b"+".join([b"a"] * 20000) + b"\n"  # was a many-minute LibCST parse
TOO_MANY_INDENTS = b"import torch  # autocast, log_prob\n" + b"".join(b" " * i + b"if a:\n" for i in range(120)) + b" " * 120 + b"pass\n"

BAD_FILES = {
    "python2_print": (PY2_PRINT, ("syntax error", "line 3")),
    "python2_except": (PY2_EXCEPT, ("syntax error", "line 5")),
    "python2_backticks": (PY2_BACKTICKS, ("syntax error", "line 3")),
    "python2_octal_and_ur": (PY2_OCTAL_AND_UR, ("syntax error", "line 3")),
    "unclosed_paren": (UNCLOSED, ("syntax error",)),
    "undecodable_bytes": (UNDECODABLE, ("cannot decode line 3 as utf-8",)),
    "wrong_encoding_cookie": (WRONG_COOKIE, ("cannot decode line 4 as utf-8",)),
    "ascii_cookie_with_utf8": (ASCII_COOKIE, ("cannot decode line 4 as ascii",)),
    "unknown_encoding_cookie": (UNKNOWN_COOKIE, ("cannot decode", "klingon")),
    "bom_with_latin1_cookie": (BOM_AND_OTHER_COOKIE, ("cannot decode", "encoding problem")),
    "utf16_without_cookie": (UTF16, ("cannot decode",)),
    "nul_byte": (NUL_BYTE, ("null bytes",)),
    "inconsistent_tabs": (INCONSISTENT_TABS, ("syntax error", "line 4", "tabs and spaces")),
    "too_many_parentheses": (TOO_MANY_PARENS, ("too many nested parentheses",)),
    "too_deep_unary": (TOO_DEEP_UNARY, ("too deeply nested",)),
    "too_long_sum": (TOO_LONG_SUM, ("too deeply nested",)),
    "too_many_indentation_levels": (TOO_MANY_INDENTS, ("too many levels of indentation",)),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES), ids=str)
def test_bad_file_is_one_line_and_the_run_goes_on(tmp_path: Path, case: str) -> None:
    content, phrases = BAD_FILES[case]
    root = _tree(tmp_path / "src", {"bad.py": content, "good.py": GOOD})
    proc = _cli(["check", "src"], tmp_path)
    _one_error(proc, "src/bad.py", *phrases)
    _good_still_checked(proc)
    assert "could not be checked" in proc.stdout
    assert (root / "bad.py").read_bytes() == content

    alone = _cli(["check", "src/bad.py"], tmp_path)
    _one_error(alone, "src/bad.py", *phrases)
    assert alone.returncode == 2  # nothing could be checked


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_fix_reports_bad_files_and_fixes_the_rest(tmp_path: Path, strategy: str) -> None:
    files = {f"{case}.py": content for case, (content, _) in BAD_FILES.items()}
    root = _tree(tmp_path / "src", {**files, "good.py": GOOD})
    proc = _cli(["check", "--fix", "--strategy", strategy, "src"], tmp_path)
    lines = _errors(proc)
    assert sorted(line.split(": error: ")[0] for line in lines) == sorted(f"src/{name}" for name in files)
    assert proc.returncode == 2
    for name, content in files.items():
        assert (root / name).read_bytes() == content
    assert "mu.float()" in (root / "good.py").read_text()


def test_a_directory_named_like_a_source_file_is_walked_not_read(tmp_path: Path) -> None:
    _tree(tmp_path / "src", {"pkg.py/inner.py": GOOD, "good.py": GOOD})
    proc = _cli(["check", "src"], tmp_path)
    assert proc.stderr == ""
    assert "src/pkg.py/inner.py:8:17: AMP001" in proc.stdout and GOOD_FINDING in proc.stdout


# --- files that are not files ----------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_named_like_a_source_file_does_not_hang(tmp_path: Path) -> None:
    """Opening a FIFO for reading blocks until a writer comes: it used to hang the whole run."""
    root = _tree(tmp_path / "src", {"good.py": GOOD})
    os.mkfifo(root / "pipe.py")
    proc = _cli(["check", "src"], tmp_path, timeout=60)
    _one_error(proc, "src/pipe.py", "not a regular file")
    _good_still_checked(proc)
    named = _cli(["check", "src/pipe.py", "src/good.py"], tmp_path, timeout=60)
    _one_error(named, "src/pipe.py", "not a regular file")
    _good_still_checked(named)


def test_symlink_loops_do_not_hang(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src", {"good.py": GOOD, "sub/other.py": "x = 1\n"})
    os.symlink("..", root / "sub" / "up")  # a directory loop: src/sub/up -> src
    os.symlink(".", root / "here")  # src/here -> src
    os.symlink("self.py", root / "self.py")  # a file that links to itself
    proc = _cli(["check", "src"], tmp_path, timeout=60)
    _one_error(proc, "src/self.py", "cannot read", "symbolic links")
    _good_still_checked(proc)
    assert proc.stdout.count("AMP001") == 1  # walked once, not once per loop

    through_link = _cli(["check", "src/here"], tmp_path, timeout=60)
    assert "src/here/good.py:8:17: AMP001" in through_link.stdout
    assert through_link.stdout.count("AMP001") == 1

    named = _cli(["check", "src/self.py", "src/good.py"], tmp_path, timeout=60)
    _one_error(named, "src/self.py", "symbolic link")
    _good_still_checked(named)


def test_a_broken_symlink_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src", {"good.py": GOOD})
    os.symlink("nowhere.py", root / "gone.py")
    proc = _cli(["check", "src"], tmp_path)
    _one_error(proc, "src/gone.py", "cannot read", "No such file")
    _good_still_checked(proc)
    named = _cli(["check", "src/gone.py", "src/good.py"], tmp_path)
    _one_error(named, "src/gone.py", "broken symbolic link")
    _good_still_checked(named)


# --- permissions --------------------------------------------------------------------------

def _unprivileged(probe: Path) -> Sequence[str]:
    """A command prefix under which `probe` (mode 000) cannot be read, or skip saying why."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("running as root, and no setpriv to drop CAP_DAC_OVERRIDE: mode 000 cannot deny root")
    check = subprocess.run(
        [*DROP_PRIVILEGES, sys.executable, "-c", f"open({str(probe)!r})"], capture_output=True, text=True
    )
    if "PermissionError" not in check.stderr:
        pytest.skip(f"running as root, and setpriv could not drop privileges here: {check.stderr.strip()[-200:]}")
    return DROP_PRIVILEGES


def test_an_unreadable_file_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path / "src", {"secret.py": GOOD, "good.py": GOOD})
    (root / "secret.py").chmod(0)
    try:
        prefix = _unprivileged(root / "secret.py")
        proc = _cli(["check", "src"], tmp_path, prefix=prefix)
        _one_error(proc, "src/secret.py", "cannot read", "Permission denied")
        _good_still_checked(proc)
        alone = _cli(["check", "src/secret.py"], tmp_path, prefix=prefix)
        _one_error(alone, "src/secret.py", "Permission denied")
        assert alone.returncode == 2
    finally:
        (root / "secret.py").chmod(0o644)


def test_an_unreadable_file_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same through `check_paths`, with EACCES simulated so it runs as any user."""
    root = _tree(tmp_path / "src", {"secret.py": GOOD, "good.py": GOOD})
    real_open = os.open

    def deny(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).endswith("secret.py"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    results = {Path(r.path).name: r for r in check_paths([str(root)], Config())}
    assert results["secret.py"].error is not None
    assert str(results["secret.py"].error) == f"{root / 'secret.py'}: error: cannot read: Permission denied"
    assert [f.code for f in results["good.py"].findings] == ["AMP001"]


def _fix_cli(args: Sequence[str], cwd: Path, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess:
    return _cli(["check", "--fix", *args], cwd, prefix=prefix)


def _stamp(*paths: Path) -> None:
    for path in paths:
        os.utime(path, (OLD, OLD))


def _untouched(path: Path, data: bytes) -> bool:
    return path.read_bytes() == data and path.stat().st_mtime == OLD


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_fix_on_a_read_only_file_reports_it_and_changes_nothing(tmp_path: Path, strategy: str) -> None:
    """The fixer renames a temp file over the target, which a 0444 mode alone would not stop."""
    root = _tree(tmp_path / "src", {"locked.py": GOOD, "good.py": GOOD})
    (root / "locked.py").chmod(0o444)
    _stamp(root / "locked.py")
    try:
        proc = _fix_cli(["--strategy", strategy, "src"], tmp_path)
        _one_error(proc, "src/locked.py", "read-only", "left unchanged")
        assert proc.returncode == 2
        assert _untouched(root / "locked.py", GOOD.encode())
        assert stat.S_IMODE((root / "locked.py").stat().st_mode) == 0o444
        assert "mu.float()" in (root / "good.py").read_text()  # the run went on
        assert sorted(p.name for p in root.iterdir()) == ["good.py", "locked.py"]  # no temp file left
    finally:
        (root / "locked.py").chmod(0o644)


def test_fix_on_an_immutable_file_reports_it_and_changes_nothing(tmp_path: Path) -> None:
    """`chattr +i` stops even root's rename; skipped where the file system or container cannot set it."""
    root = _tree(tmp_path / "src", {"frozen.py": GOOD})
    target = root / "frozen.py"
    _stamp(target)
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    made = subprocess.run(["chattr", "+i", str(target)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i not possible here: {made.stderr.strip()}")
    try:
        proc = _fix_cli([str(target)], tmp_path)
        _one_error(proc, str(target), "left unchanged")
        assert proc.returncode == 2
        assert _untouched(target, GOOD.encode())
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=True)


def test_fix_in_a_read_only_directory_reports_it_and_changes_nothing(tmp_path: Path) -> None:
    """A writable file in a directory where no temp file can be made (root: under setpriv)."""
    root = _tree(tmp_path / "src", {"model.py": GOOD})
    probe = _tree(tmp_path / "probe", {"p.py": ""}) / "p.py"
    probe.chmod(0)
    prefix = _unprivileged(probe)
    _stamp(root / "model.py")
    root.chmod(0o555)
    try:
        proc = _fix_cli(["src"], tmp_path, prefix=prefix)
        _one_error(proc, "src/model.py", "cannot write", "left unchanged")
        assert proc.returncode == 2
        assert _untouched(root / "model.py", GOOD.encode())
        assert [p.name for p in root.iterdir()] == ["model.py"]
    finally:
        root.chmod(0o755)


# --- paths that are not there, or hold nothing ----------------------------------------------

def test_a_path_that_does_not_exist(tmp_path: Path) -> None:
    _tree(tmp_path / "src", {"good.py": GOOD})
    proc = _cli(["check", "src/missing.py", "src/good.py"], tmp_path)
    _one_error(proc, "src/missing.py", "no such file or directory")
    _good_still_checked(proc)
    alone = _cli(["check", "nowhere"], tmp_path)
    _one_error(alone, "nowhere", "no such file or directory")
    assert alone.returncode == 2
    fix = _fix_cli(["src/missing.py", "src/good.py"], tmp_path)
    _one_error(fix, "src/missing.py", "no such file or directory")
    assert fix.returncode == 2


def test_an_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    _tree(tmp_path / "src", {"good.py": GOOD})
    # As in ruff: a one-line warning and exit 0, for check and for --fix.
    warning = "amplint: warning: no Python files or notebooks found in empty\n"
    alone = _cli(["check", "empty"], tmp_path)
    assert (alone.returncode, alone.stdout, alone.stderr) == (0, "", warning)
    fix = _fix_cli(["empty"], tmp_path)
    assert (fix.returncode, fix.stdout, fix.stderr) == (0, "", warning)
    both = _cli(["check", "empty", "src"], tmp_path)
    assert both.stderr == warning
    assert "src/" + GOOD_FINDING in both.stdout and both.returncode == 1


def test_ten_thousand_empty_files_are_fast(tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for index in range(10_000):
        (root / f"m{index:05d}.py").touch()
    start = time.monotonic()
    proc = _cli(["check", "many"], tmp_path, timeout=120)
    elapsed = time.monotonic() - start
    assert (proc.returncode, proc.stderr) == (0, "")
    assert "Found 0 findings" in proc.stdout
    assert elapsed < 60, elapsed  # about 1 s here; generous for slow CI


# --- line endings, BOM, tabs: checked right and kept by --fix ------------------------------------

def _lines(text: str) -> List[str]:
    return io.StringIO(text, newline="").readlines()


def _variants() -> Dict[str, bytes]:
    lines = _lines(GOOD)
    return {
        "bom": b"\xef\xbb\xbf" + GOOD.encode(),
        "crlf": GOOD.replace("\n", "\r\n").encode(),
        "cr": GOOD.replace("\n", "\r").encode(),
        "mixed": "".join(line.replace("\n", "\r\n") if i % 2 else line for i, line in enumerate(lines)).encode(),
        "no_final_newline": GOOD.rstrip("\n").encode(),
        "tabs": GOOD.replace("    ", "\t").encode(),
        "latin1_cookie": ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + GOOD).encode("latin-1"),
        "bom_crlf": b"\xef\xbb\xbf" + GOOD.replace("\n", "\r\n").encode(),
        "form_feed_line": GOOD.replace("\n\n\ndef", "\n\n\x0c\ndef").encode(),
        "form_feed_before_def": GOOD.replace("\n\n\ndef", "\n\n\n\x0cdef").encode(),
    }


VARIANTS = _variants()
# line:column of the finding in each variant (1-based; a tab counts as one column)
WHERE = {name: "8:17" for name in VARIANTS}
WHERE.update({"tabs": "8:11", "latin1_cookie": "10:17"})
# LibCST drops a final bare CR and a form feed that starts a code line (its round trip is not exact),
# so --fix refuses these files rather than change bytes it has no finding for.
NOT_ROUND_TRIPPED = {"cr", "form_feed_before_def"}


@pytest.mark.parametrize("name", sorted(VARIANTS), ids=str)
def test_line_endings_bom_and_tabs_are_checked(tmp_path: Path, name: str, monkeypatch, capsys) -> None:
    _tree(tmp_path / "src", {f"{name}.py": VARIANTS[name]})
    proc = _main(["check", "src"], tmp_path, monkeypatch, capsys)
    assert proc.stderr == ""
    assert f"src/{name}.py:{WHERE[name]}: AMP001" in proc.stdout
    assert proc.returncode == 1


def _decode(data: bytes) -> str:
    from amplint.files import decode

    source = decode("x.py", data)
    assert not hasattr(source, "message"), source
    return source.text  # type: ignore[union-attr]


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
@pytest.mark.parametrize("name", sorted(VARIANTS), ids=str)
def test_fix_keeps_line_endings_bom_encoding_and_tabs(
    tmp_path: Path, name: str, strategy: str, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    original = VARIANTS[name]
    root = _tree(tmp_path / "src", {f"{name}.py": original})
    path = root / f"{name}.py"
    _stamp(path)
    proc = _main(["check", "--fix", "--strategy", strategy, "src"], tmp_path, monkeypatch, capsys)
    if name in NOT_ROUND_TRIPPED:
        _one_error(proc, f"src/{name}.py", "byte for byte", "left unchanged")
        assert proc.returncode == 2 and _untouched(path, original)
        return
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stdout
    fixed = path.read_bytes()
    assert fixed.startswith(b"\xef\xbb\xbf") == original.startswith(b"\xef\xbb\xbf")
    before, after = _decode(original), _decode(fixed)
    compile(after, str(path), "exec", dont_inherit=True)
    if strategy == "cast":
        # fix A only inserts casts: take them out and every byte is as it was
        assert fixed.replace(b".float()", b"") == original
    else:
        # fix C adds lines; every line it did not rewrite keeps its text and its own line ending
        kept = [line for line in _lines(before) if "log_prob" not in line]
        out = _lines(after)
        for line in kept:
            assert line in out, (line, out)
        if "\r\n" in before and "\n" not in before.replace("\r\n", ""):
            assert "\n" not in after.replace("\r\n", "")  # a CRLF file gets no bare LF
        if "\n" not in before:
            assert "\n" not in after  # a CR-only file stays CR-only
        if name == "tabs":
            assert all(not line.startswith(" ") for line in out)  # new lines indent with tabs too
    second = _main(["check", "--fix", "--strategy", strategy, "src"], tmp_path, monkeypatch, capsys)
    assert second.returncode == 0 and path.read_bytes() == fixed


# --- big and deep files --------------------------------------------------------------------------

def _generated(target_bytes: int, functions: int) -> str:
    """A generated module: region functions with one finding each, then a data table with comments."""
    out = ["# Generated: region functions, then a data table.\nimport torch\nimport torch.distributions as D\n"]
    for index in range(functions):
        out.append(
            f'\n\ndef step_{index}(model, h, x):\n    """Step {index}."""\n    with torch.autocast("cuda"):\n'
            "        mu, sigma = model(h)\n        return -D.Normal(mu, sigma).log_prob(x).sum()\n"
        )
    out.append("\n\nTABLE = [\n")
    size = sum(map(len, out))
    row = 0
    while size < target_bytes:
        if row % 5 == 0:
            line = "    # " + "x" * 500 + "\n"
        elif row % 5 == 1:
            line = "    " + ", ".join(str((row * 7919 + k * 104729) % 1_000_003) for k in range(12)) + ",\n"
        else:
            line = '    "' + "abcdefghij" * 100 + f'{row}",\n'
        out.append(line)
        size += len(line)
        row += 1
    out.append("]\n")
    return "".join(out)


def test_a_5_mb_generated_file_finishes_without_quadratic_blow_up(tmp_path: Path) -> None:
    big = _generated(5_000_000, 300)
    small = _generated(1_000_000, 60)
    assert len(big.encode()) >= 5_000_000
    _tree(tmp_path / "src", {"big.py": big, "small.py": small})
    (tmp_path / "pyproject.toml").write_text("[tool.amplint]\nmax-file-size = 0\n")  # over the 2 MB default
    proc = _cli(["check", "src/big.py"], tmp_path, timeout=600)  # about 10 s here
    assert proc.stderr == ""
    assert proc.stdout.count(": AMP001 ") == 300 and proc.returncode == 1

    def timed(text: str) -> float:
        start = time.perf_counter()
        result = check_source(text, "big.py", Config(project=False))
        assert result.error is None
        return time.perf_counter() - start

    # Five times the input should take about five times as long; quadratic would be 25 times.
    small_time, big_time = timed(small), timed(big)
    assert big_time < 15 * small_time + 2.0, (small_time, big_time)


DEEP_BUT_VALID = {
    # Each nests past Python's default recursion limit once LibCST visits it (about 3 frames a level);
    # CPython compiles all of them. They used to raise RecursionError out of `amplint check`.
    "long_sum": "total = " + " + ".join(["h"] * 500),
    "method_chain": "y = h" + ".view(-1)" * 300,
    "nested_calls": "y = " + "f(" * 180 + "h" + ")" * 180,
    "adjacent_strings": "s = " + " ".join(['"a"'] * 800),
    "nested_lists": "y = " + "[" * 190 + "]" * 190,
}


@pytest.mark.parametrize("name", sorted(DEEP_BUT_VALID), ids=str)
def test_deep_but_valid_code_is_analysed(name: str) -> None:
    text = GOOD.replace("mu, sigma = model(h)", "mu, sigma = model(h)\n        " + DEEP_BUT_VALID[name])
    compile(text, "deep.py", "exec", dont_inherit=True)
    result = check_source(text, "deep.py", Config(project=False))
    assert result.error is None
    assert [(f.line, f.code) for f in result.findings] == [(9, "AMP001")]
    assert sys.getrecursionlimit() < 10_000  # the deep retry put the limit back


@pytest.mark.parametrize("strategy", ["cast", "disable-autocast"])
def test_deep_file_through_the_cli_check_and_fix(tmp_path: Path, strategy: str) -> None:
    text = GOOD.replace("log_prob(x)", "log_prob(x" + ".view(-1)" * 250 + ")")
    text = text.replace("mu, sigma = model(h)", "mu, sigma = model(h)\n        total = " + " + ".join(["h"] * 400))
    root = _tree(tmp_path / "src", {"deep.py": text})
    proc = _cli(["check", "src"], tmp_path)
    assert proc.stderr == "" and "src/deep.py:9:17: AMP001" in proc.stdout
    fixed = _fix_cli(["--strategy", strategy, "src"], tmp_path)
    assert (fixed.returncode, fixed.stderr) == (0, "")
    after = (root / "deep.py").read_text()
    assert "D.Normal(mu.float(), sigma.float()).log_prob(x.float()" in after
    compile(after, "deep.py", "exec", dont_inherit=True)
    again = _fix_cli(["--strategy", strategy, "src"], tmp_path)
    assert again.returncode == 0 and (root / "deep.py").read_text() == after


# --- what the prefilter does (and does not) hide -------------------------------------------------

def test_prefilter_does_not_hide_syntax_errors_in_files_without_autocast(tmp_path: Path) -> None:
    """No autocast means no finding, but a file CPython cannot parse is reported whatever it holds (E999)."""
    _tree(tmp_path / "src", {"py2.py": b'print "no regions here"\n', "good.py": GOOD})
    proc = _cli(["check", "src"], tmp_path)
    _one_error(proc, "src/py2.py", "syntax error at line 1")
    _good_still_checked(proc)


def test_prefilter_does_not_hide_decode_errors(tmp_path: Path) -> None:
    """Decoding comes before the prefilter, so every file's decode error is reported."""
    _tree(tmp_path / "src", {"latin.py": b'# no regions\n\ns = "caf\xe9"\n', "good.py": GOOD})
    proc = _cli(["check", "src"], tmp_path)
    _one_error(proc, "src/latin.py", "cannot decode line 3 as utf-8")
    _good_still_checked(proc)


@pytest.mark.parametrize("separator", ["\x0c", "\x1c", "\x85", "\u2028"], ids=repr)
def test_noqa_and_source_lines_are_not_shifted_by_other_line_separators(tmp_path: Path, separator: str) -> None:
    """`str.splitlines` splits at form feeds and friends; Python (and so every reported line number) does not."""
    text = GOOD.replace("import torch\n", f"import torch  # {separator}\n")
    _tree(tmp_path / "src", {"model.py": text, "quiet.py": text.replace("log_prob(x)", "log_prob(x)  # noqa: AMP001")})
    proc = _cli(["check", "src"], tmp_path)
    assert proc.stderr == ""
    assert "src/model.py:8:17: AMP001" in proc.stdout
    assert "return -D.Normal(mu, sigma).log_prob(x)\n" in proc.stdout  # the right source line under it
    assert "quiet.py" not in proc.stdout  # the noqa is on the reported line


def test_error_lines_are_single_lines(tmp_path: Path) -> None:
    """No message may spread over several lines (LibCST's own messages can)."""
    files = {f"{case}.py": content for case, (content, _) in BAD_FILES.items()}
    _tree(tmp_path / "src", files)
    proc = _cli(["check", "src"], tmp_path)
    lines = _errors(proc)
    assert len(lines) == len(files), proc.stderr
    assert all(line.startswith("src/") and ": error: " in line for line in lines)
    assert proc.returncode == 2
