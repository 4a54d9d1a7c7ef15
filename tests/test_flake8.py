"""The flake8 plugin, through the real `flake8` executable: same findings as `amplint check`, flake8's noqa."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence, Set, Tuple

import pytest

from amplint import configfile
from amplint.engine import analyze_source
from amplint.flake8_plugin import AmpLintChecker
from conftest import FIXTURES, ROOT, expected_lines, run_amplint

FORMAT = "%(path)s|%(row)d|%(col)d|%(code)s|%(text)s"
TARGETS = [FIXTURES / "check", FIXTURES / "integrations"]
Row = Tuple[str, int, int, str, str]

BAD = '''import torch
from torch.distributions import Normal


def nll(mu, sigma, x):
    with torch.autocast("cuda"):
        return -Normal(mu, sigma).log_prob(x)
'''


def _flake8_exe() -> List[str]:
    exe = Path(sys.executable).with_name("flake8")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("flake8")
    if found is None:
        pytest.skip("flake8 is not installed")
    return [found]


def flake8(args: Sequence[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The real flake8 CLI; `--isolated` so no flake8 config file of the machine or repo changes the result."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [*_flake8_exe(), "--isolated", f"--format={FORMAT}", *args],
        cwd=cwd, capture_output=True, text=True, env=env, timeout=300,
    )


def _rows(stdout: str) -> List[Row]:
    rows = []
    for line in stdout.splitlines():
        path, row, col, code, text = line.split("|", 4)
        rows.append((os.path.normpath(path), int(row), int(col), code, text))
    return sorted(rows)


def test_plugin_is_registered_under_the_AMP_prefix() -> None:
    proc = subprocess.run([*_flake8_exe(), "--version"], capture_output=True, text=True, timeout=120)
    from amplint import __version__

    assert f"amplint: {__version__}" in proc.stdout, proc.stdout


def test_flake8_reports_what_amplint_check_reports_at_the_same_positions() -> None:
    paths = [str(path.relative_to(ROOT)) for path in TARGETS]
    proc = flake8(["--select", "AMP", *paths])
    assert proc.returncode == 1, proc.stderr
    got = _rows(proc.stdout)
    findings = json.loads(run_amplint(["check", "--format", "json", *paths]).stdout)
    want = sorted(
        (os.path.normpath(f["path"]), f["line"], f["column"], f["code"], f["message"])
        for f in findings
    )
    assert got == want
    assert len(got) > 40
    # ... and both match the `.expected` files a reader checks by eye.
    expected = sorted(
        (os.path.normpath(str(case.relative_to(ROOT))), line.split()[0], line.split()[1])
        for target in TARGETS
        for case in target.glob("*.py")
        for line in expected_lines(case.with_suffix(".expected"))
    )
    assert sorted((path, f"{row}:{col}", code) for path, row, col, code, _ in got) == expected


def test_noqa_goes_through_flake8() -> None:
    target = str((FIXTURES / "integrations" / "positions.py").relative_to(ROOT))
    normal = _rows(flake8(["--select", "AMP", target]).stdout)
    everything = _rows(flake8(["--select", "AMP", "--disable-noqa", target]).stdout)
    hidden = sorted(set(everything) - set(normal))
    assert [(row, col, code) for _, row, col, code, _ in hidden] == [(28, 18, "AMP001")]
    # flake8 saw the finding on the noqa line, so the plugin did not drop it itself.
    text = (FIXTURES / "integrations" / "positions.py").read_text(encoding="utf-8")
    kept = analyze_source(text, target, noqa=False)
    assert len(kept.findings) == len(everything)


def test_flake8_own_options_still_apply() -> None:
    target = str((FIXTURES / "check" / "seed_minimal.py").relative_to(ROOT))
    assert len(_rows(flake8(["--select", "AMP", target]).stdout)) == 1
    assert flake8(["--select", "AMP", "--extend-ignore", "AMP001", target]).stdout == ""
    assert flake8(["--select", "AMP", "--per-file-ignores", "*/seed_minimal.py:AMP", target]).stdout == ""
    assert flake8(["--select", "E999", target]).stdout == ""


def test_plugin_reads_tool_amplint_from_the_nearest_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text(BAD, encoding="utf-8")
    assert len(_rows(flake8(["--select", "AMP", "pkg"], cwd=tmp_path).stdout)) == 1
    (tmp_path / "pyproject.toml").write_text('[tool.amplint]\nignore = ["AMP001"]\n', encoding="utf-8")
    assert flake8(["--select", "AMP", "pkg"], cwd=tmp_path).stdout == ""
    (tmp_path / "pyproject.toml").write_text('[tool.amplint]\nexclude = ["pkg"]\n', encoding="utf-8")
    assert flake8(["--select", "AMP", "pkg"], cwd=tmp_path).stdout == ""


def test_plugin_uses_extend_autocast(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(BAD.replace("torch.autocast", "mypkg.half"), encoding="utf-8")
    (tmp_path / "model.py").write_text(
        "import mypkg\n" + (tmp_path / "model.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    assert flake8(["--select", "AMP", "model.py"], cwd=tmp_path).stdout == ""
    (tmp_path / "amplint.toml").write_text('extend-autocast = ["mypkg.half"]\n', encoding="utf-8")
    assert [row[1:4] for row in _rows(flake8(["--select", "AMP", "model.py"], cwd=tmp_path).stdout)] == [
        (8, 17, "AMP001")
    ]


def test_bad_config_stops_flake8_with_the_file_and_key(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.amplint]\nstrategy = "fast"\n', encoding="utf-8")
    proc = flake8(["--select", "AMP", "model.py"], cwd=tmp_path)
    assert proc.returncode != 0
    assert "pyproject.toml: [tool.amplint] key 'strategy'" in proc.stdout + proc.stderr


def test_amplint_config_option(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(BAD, encoding="utf-8")
    (tmp_path / "elsewhere.toml").write_text('ignore = ["AMP"]\n', encoding="utf-8")
    assert flake8(["--select", "AMP", "--amplint-config", "elsewhere.toml", "model.py"], cwd=tmp_path).stdout == ""


def test_project_mode_chains_across_files_match_amplint_check(tmp_path: Path) -> None:
    """A helper in one file called from a region in another: both front ends walk the same paths."""
    (tmp_path / "helpers.py").write_text(
        "import torch.distributions as D\n\n\ndef nll(mu, sigma, x):\n    return -D.Normal(mu, sigma).log_prob(x)\n",
        encoding="utf-8",
    )
    (tmp_path / "main.py").write_text(
        "import torch\nfrom helpers import nll\n\n\ndef step(mu, sigma, x):\n"
        "    with torch.autocast(\"cuda\"):\n        return nll(mu, sigma, x)\n",
        encoding="utf-8",
    )
    for args in (["."], ["helpers.py", "main.py"], ["helpers.py"]):
        got = [row[:4] + (row[4],) for row in _rows(flake8(["--select", "AMP", *args], cwd=tmp_path).stdout)]
        findings = json.loads(run_amplint(["check", "--format", "json", *args], cwd=tmp_path).stdout)
        want = sorted(
            (os.path.normpath(f["path"]), f["line"], f["column"], f["code"], f["message"]) for f in findings
        )
        assert got == want, args
    assert [row[:4] for row in got] == []  # helpers.py alone: no region calls into it
    both = _rows(flake8(["--select", "AMP", "."], cwd=tmp_path).stdout)
    assert [row[:4] for row in both] == [("helpers.py", 5, 13, "AMP001")]
    assert "main.py:6" in both[0][4]


# ---------------------------------------------------------------------------
# In process: the text prefilter means no parse for files without autocast.


def _run_plugin(path: Path) -> List[Tuple[int, int, str]]:
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    AmpLintChecker.config_file = None
    checker = AmpLintChecker(tree=None, lines=lines, filename=str(path))  # type: ignore[arg-type]
    return [(row, col, text.split()[0]) for row, col, text, _ in checker.run()]


def test_files_without_autocast_are_never_parsed(monkeypatch) -> None:
    import libcst

    def boom(*args, **kwargs):
        raise AssertionError("parsed a file that does not mention autocast")

    monkeypatch.setattr(libcst, "parse_module", boom)
    configfile.clear_cache()
    assert _run_plugin(FIXTURES / "integrations" / "no_autocast.py") == []
    with pytest.raises(AssertionError, match="parsed a file"):
        _run_plugin(FIXTURES / "integrations" / "tabs.py")


def test_region_files_with_nothing_to_report_are_not_parsed(monkeypatch, tmp_path: Path) -> None:
    # An autocast region with no probability call in this file, and no entries from elsewhere:
    # `amplint check` parses nothing here, and neither does the plugin.
    import libcst

    def boom(*args, **kwargs):
        raise AssertionError("parsed a file with nothing to report")

    monkeypatch.setattr(libcst, "parse_module", boom)
    configfile.clear_cache()
    quiet = tmp_path / "train.py"
    quiet.write_text("import torch\n\ndef step(model, x):\n    with torch.autocast('cuda'):\n"
                     "        return model(x).mean()  # cross_entropy, log_prob: words only\n")
    assert _run_plugin(quiet) == []


def test_plugin_yields_zero_based_columns_for_flake8_to_shift() -> None:
    configfile.clear_cache()
    assert _run_plugin(FIXTURES / "integrations" / "tabs.py") == [(7, 10, "AMP001")]


def test_syntax_errors_are_left_to_flake8(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torch\nwith torch.autocast('cuda'):\n    x = (\n", encoding="utf-8")
    proc = flake8(["--select", "AMP,E999", "broken.py"], cwd=tmp_path)
    codes: Set[str] = {row[3] for row in _rows(proc.stdout)}
    assert codes == {"E999"}


# ---------------------------------------------------------------------------
# Project mode, warm: the findings of a file's text come from its project's cache.

HELPERS = "import torch.distributions as D\n\n\ndef nll(mu, sigma, x):\n    return -D.Normal(mu, sigma).log_prob(x)\n"
MAIN = ("import torch\nfrom helpers import nll\n\n\ndef step(mu, sigma, x):\n"
        "    with torch.autocast(\"cuda\"):\n        return nll(mu, sigma, x)  # noqa: AMP001\n")


def _plugin_rows(paths: Sequence[Path]) -> List[Tuple[str, int, int, str]]:
    """The plugin in this process, as flake8 runs it on `paths` (its positional paths: project mode)."""
    AmpLintChecker.config_file = None
    AmpLintChecker.filenames = tuple(str(path) for path in paths)
    AmpLintChecker._context = None
    rows = []
    try:
        for path in paths:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            checker = AmpLintChecker(tree=None, lines=lines, filename=str(path))  # type: ignore[arg-type]
            rows += [(path.name, row, col, text.split()[0]) for row, col, text, _ in checker.run()]
    finally:
        AmpLintChecker.filenames = ()
        AmpLintChecker._context = None
    return rows


def _text_entries(cache: Path) -> List[Path]:
    return sorted((cache / "text-findings").rglob("*.json"))


@pytest.fixture
def cached_project(monkeypatch, tmp_path: Path) -> Tuple[List[Path], Path]:
    """helpers.py and main.py (a region calling into helpers.py), and the disk cache they run with."""
    project, cache = tmp_path / "proj", tmp_path / "cache"
    project.mkdir()
    (project / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (project / "main.py").write_text(MAIN, encoding="utf-8")
    monkeypatch.delenv("AMPLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("AMPLINT_CACHE_DIR", str(cache))
    configfile.clear_cache()
    return [project / "helpers.py", project / "main.py"], cache


def test_a_warm_run_takes_each_files_findings_from_the_project_cache(
        monkeypatch, cached_project: Tuple[List[Path], Path]) -> None:
    """The second run parses nothing with LibCST and reports the same; an edited file is analysed again."""
    import amplint.cstparse

    paths, cache = cached_project
    first = _plugin_rows(paths)
    assert first == [("helpers.py", 5, 12, "AMP001")]  # flake8 shifts the column to amplint's 13
    assert len(_text_entries(cache)) == 2  # one per file: main.py has a region, and a call a site may be in

    parses: List[str] = []
    real = amplint.cstparse.parse_module
    monkeypatch.setattr(amplint.cstparse, "parse_module", lambda text: parses.append(text) or real(text))
    assert _plugin_rows(paths) == first and parses == []

    edited = HELPERS + "# an edit that changes nothing\n"
    paths[0].write_text(edited, encoding="utf-8")
    assert _plugin_rows(paths) == first
    assert parses == [edited, edited]  # the walk reads its summary (it builds a distribution), the plugin its findings
    assert len(_text_entries(cache)) == 3


def test_an_entry_that_is_not_findings_is_analysed_again(cached_project: Tuple[List[Path], Path]) -> None:
    paths, cache = cached_project
    first = _plugin_rows(paths)
    entry = next(path for path in _text_entries(cache) if "helpers.py" in path.read_text(encoding="utf-8"))
    stored = json.loads(entry.read_text(encoding="utf-8"))
    entry.write_text(json.dumps(dict(stored, value={"t": ["not a finding"]})), encoding="utf-8")
    assert _plugin_rows(paths) == first
    assert json.loads(entry.read_text(encoding="utf-8")) == stored  # written again, whole


def test_flake8_with_a_warm_cache_reports_what_it_reported_cold(tmp_path: Path) -> None:
    """The real flake8, twice on a project with its cache: the same rows, noqa still flake8's to apply."""
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (tmp_path / "quiet.py").write_text(HELPERS.replace("log_prob(x)", "log_prob(x)  # noqa: AMP001"),
                                       encoding="utf-8")
    (tmp_path / "main.py").write_text(
        "import torch\nimport helpers\nimport quiet\n\n\ndef step(mu, sigma, x):\n"
        "    with torch.autocast(\"cuda\"):\n        return helpers.nll(mu, sigma, x) + quiet.nll(mu, sigma, x)\n",
        encoding="utf-8")
    env = dict(os.environ, PYTHONWARNINGS="ignore", AMPLINT_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("AMPLINT_NO_CACHE", None)

    def rows(*extra: str) -> List[Tuple[str, int, int, str]]:
        proc = subprocess.run([*_flake8_exe(), "--isolated", f"--format={FORMAT}", "--select", "AMP", *extra, "."],
                              cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)
        return [row[:4] for row in _rows(proc.stdout)]

    assert rows() == [("helpers.py", 5, 13, "AMP001")]
    assert len(_text_entries(tmp_path / "cache")) == 3  # one per file
    assert rows() == [("helpers.py", 5, 13, "AMP001")]
    assert rows("--disable-noqa") == [("helpers.py", 5, 13, "AMP001"), ("quiet.py", 5, 13, "AMP001")]
    assert len(_text_entries(tmp_path / "cache")) == 3  # the same entries: `# noqa` is flake8's to apply


def test_the_plugin_runs_with_amplints_collector_thresholds_and_gives_flake8_its_own_back(
        monkeypatch, tmp_path: Path) -> None:
    import gc

    from amplint import collection

    seen: List[Tuple[int, int, int]] = []
    real = AmpLintChecker._findings
    monkeypatch.setattr(AmpLintChecker, "_findings", lambda self: seen.append(gc.get_threshold()) or real(self))
    monkeypatch.setenv("AMPLINT_NO_CACHE", "1")
    configfile.clear_cache()
    (tmp_path / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (tmp_path / "main.py").write_text(MAIN, encoding="utf-8")
    before = gc.get_threshold()
    try:
        gc.set_threshold(500, 7, 9)
        assert _plugin_rows([tmp_path / "helpers.py", tmp_path / "main.py"]) == [("helpers.py", 5, 12, "AMP001")]
        assert gc.get_threshold() == (500, 7, 9)
    finally:
        gc.set_threshold(*before)
    assert seen == [collection.BATCH_THRESHOLDS] * 2
