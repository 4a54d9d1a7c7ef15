"""The real `amplint` CLI in a subprocess: output shapes, exit codes, selection."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES, ROOT, run_amplint

SEED = FIXTURES / "check" / "seed_minimal.py"
NOQA = FIXTURES / "check" / "noqa.py"
NEAR = FIXTURES / "check" / "near_misses.py"
JSON_KEYS = {"path", "line", "column", "end_line", "end_column", "code", "message", "fixable"}


def test_text_output_has_location_code_message_and_source_line() -> None:
    proc = run_amplint(["check", str(SEED)])
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{SEED}:22:10: AMP001 [*] `Normal.log_prob` runs in the float16 autocast region at line 20")
    assert lines[1] == "        lp = Normal(loc, log_scale.exp()).log_prob(x)"
    assert lines[2] == "             ^"
    assert lines[-1] == "Found 1 finding, 1 fixable with `amplint check --fix`."


def test_json_output_schema_and_nothing_else_on_stdout() -> None:
    proc = run_amplint(["check", str(FIXTURES / "check"), "--format", "json"])
    assert proc.returncode == 1
    findings = json.loads(proc.stdout)  # stdout is exactly one JSON document
    assert findings
    for finding in findings:
        assert JSON_KEYS <= set(finding)
        assert isinstance(finding["line"], int) and finding["line"] >= 1
        assert isinstance(finding["column"], int) and finding["column"] >= 1
        assert (finding["end_line"], finding["end_column"]) >= (finding["line"], finding["column"])
        assert finding["code"] in {"AMP001", "AMP002"}
        assert isinstance(finding["fixable"], bool)
    keys = [(f["path"], f["line"], f["column"]) for f in findings]
    assert keys == sorted(keys)


def test_clean_file_exits_zero() -> None:
    proc = run_amplint(["check", str(NEAR)])
    assert proc.returncode == 0
    assert proc.stdout.strip() == "Found 0 findings."


def test_exit_zero_forces_success() -> None:
    assert run_amplint(["check", str(SEED), "--exit-zero"]).returncode == 0


def test_select_and_ignore_take_codes_and_prefixes() -> None:
    amp002 = FIXTURES / "check" / "amp002.py"
    both = json.loads(run_amplint(["check", str(amp002), "--format", "json"]).stdout)
    assert {f["code"] for f in both} == {"AMP002"}
    assert json.loads(run_amplint(["check", str(amp002), "--format", "json", "--select", "AMP001"]).stdout) == []
    assert json.loads(run_amplint(["check", str(amp002), "--format", "json", "--ignore", "AMP"]).stdout) == []
    assert len(json.loads(run_amplint(["check", str(amp002), "--format", "json", "--select", "AMP0"]).stdout)) == 2


def test_noqa_suppresses_only_matching_codes() -> None:
    findings = json.loads(run_amplint(["check", str(NOQA), "--format", "json"]).stdout)
    assert [(f["line"], f["code"]) for f in findings] == [(11, "AMP001")]


def test_python_dash_m_matches_console_script() -> None:
    script = Path(sys.executable).with_name("amplint")
    by_script = subprocess.run([str(script), "check", str(SEED), "--format", "json"], capture_output=True, text=True)
    by_module = run_amplint(["check", str(SEED), "--format", "json"])
    assert by_script.returncode == by_module.returncode == 1
    assert json.loads(by_script.stdout) == json.loads(by_module.stdout)


def test_default_path_is_current_directory(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SEED.read_text())
    proc = run_amplint(["check", "--format", "json"], cwd=tmp_path)
    assert [(f["path"], f["line"]) for f in json.loads(proc.stdout)] == [("m.py", 22)]


def test_walk_skips_virtualenvs_git_build_and_excluded(tmp_path: Path) -> None:
    bad = SEED.read_text()
    for folder in (".git", "build", "dist", ".venv", "env_custom", "skipme", "src"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text(bad)
    (tmp_path / "env_custom" / "pyvenv.cfg").write_text("home = /usr\n")
    proc = run_amplint(["check", ".", "--format", "json", "--exclude", "skipme"], cwd=tmp_path)
    assert sorted({f["path"] for f in json.loads(proc.stdout)}) == ["src/m.py"]


def test_unparsable_file_is_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "a_bad.py").write_text("import torch\nwith torch.autocast('cuda'):\n    print 'py2', d.log_prob(x)\n")
    (tmp_path / "b_good.py").write_text(SEED.read_text())
    proc = run_amplint(["check", str(tmp_path), "--format", "json"])
    assert proc.returncode == 1
    assert [f["path"] for f in json.loads(proc.stdout)] == [str(tmp_path / "b_good.py")]
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"{tmp_path / 'a_bad.py'}: error: syntax error at line 3")


def test_only_errors_exit_one_and_nothing_readable_exits_two(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_bytes(b"# autocast\nx = '\xff\xfe'\n")
    proc = run_amplint(["check", str(tmp_path / "bad.py")])
    assert proc.returncode == 2  # the only file could not be read
    assert "bad.py: error: cannot decode" in proc.stderr
    (tmp_path / "ok.py").write_text("x = 1\n")
    proc = run_amplint(["check", str(tmp_path)])
    assert proc.returncode == 1
    missing = run_amplint(["check", str(tmp_path / "nope.py")])
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"{tmp_path / 'nope.py'}: error: no such file or directory"


def test_usage_error_exits_two() -> None:
    assert run_amplint(["check", "--format", "yaml"]).returncode == 2
    assert run_amplint(["frobnicate"]).returncode == 2


def test_rule_command_prints_documentation() -> None:
    proc = run_amplint(["rule", "AMP001"])
    assert proc.returncode == 0
    assert proc.stdout.startswith("# AMP001 (float16-probability)")
    assert "## Why is this bad?" in proc.stdout
    listing = run_amplint(["rule", "--all"]).stdout.splitlines()
    assert [line.split()[0] for line in listing] == ["AMP001", "AMP002", "AMP003", "AMP004"]
    assert run_amplint(["rule", "AMP999"]).returncode == 2


def test_linting_imports_neither_torch_nor_libcst_for_files_without_autocast(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("import torch\nx = torch.ones(1)\n")
    code = (
        "import sys; from amplint.engine import check_paths; "
        f"r = check_paths([{str(tmp_path)!r}]); "
        "print(len(r), 'torch' in sys.modules, 'libcst' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["1", "False", "False"]


def test_words_only_in_comments_and_docstrings_do_not_import_libcst(tmp_path: Path) -> None:
    # The text prefilter passes this file; CPython's tree (the screen) shows nothing to parse.
    (tmp_path / "mentions.py").write_text('"""Run under torch.autocast."""\nimport torch\nx = 1  # d.log_prob(x)\n')
    code = (
        "import sys; from amplint.engine import check_paths; from amplint.config import Config; "
        f"r = check_paths([{str(tmp_path)!r}], Config(project=False)); "
        "print(len(r), r[0].findings, 'libcst' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split() == ["1", "[]", "False"], out.stderr


def test_fix_on_a_tree_without_findings_does_not_import_libcst(tmp_path: Path) -> None:
    # `--fix` with nothing to fix must cost what `check` costs (issue 8): no LibCST start-up.
    (tmp_path / "plain.py").write_text("import torch\nx = torch.ones(1)\n")
    code = (
        "import sys; from amplint.cli import main; "
        f"rc = main(['check', '--fix', {str(tmp_path)!r}]); "
        "print(rc, 'libcst' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.split()[-2:] == ["0", "False"], out.stderr


def test_linting_a_file_with_findings_does_not_import_torch() -> None:
    code = f"import sys; from amplint.engine import check_paths; check_paths([{str(SEED)!r}]); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "False"


def test_compiler_warnings_about_the_users_code_are_not_printed(tmp_path: Path) -> None:
    # CPython's parser screens each file; its SyntaxWarnings are the user's compiler's business, not ours.
    target = tmp_path / "warns.py"
    target.write_text(
        'import torch\nx = "\\d"\nassert (x, "tuple is always true")\n'
        'with torch.autocast("cuda"):\n    y = torch.distributions.Normal(a, b).log_prob(c)\n'
    )
    out = subprocess.run([sys.executable, "-W", "default", "-m", "amplint.cli", "check", "--no-project", str(target)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 1 and ":5:9: AMP001" in out.stdout
    assert "Warning" not in out.stderr, out.stderr
