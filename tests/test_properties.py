"""Property-based tests on generated programs: no crash, safe and convergent fixes, front ends agree.

Programs come from `progen.programs()` (every autocast spelling, region form,
distribution, cast, helper call and formatting quirk, combined at random) and,
for plain robustness, from hypothesmith's grammar-based generator.

CI runs 2,010 derandomized cases (the same every run; about 3 minutes of one
core): 1,200 analyzer, 110 fix (both strategies each), 300 plugin, 50 real
flake8 and 350 hypothesmith cases. For a longer, randomized run:

    AMPLINT_HYPOTHESIS_PROFILE=nightly python -m pytest tests/test_properties.py

which multiplies every budget by 20 (or AMPLINT_HYPOTHESIS_SCALE=N by N).
"""
from __future__ import annotations

import difflib
import io
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import List, Tuple

import pytest
from hypothesis import HealthCheck, Phase, example, given, seed, settings
from hypothesis import strategies as st

from amplint.config import Config
from amplint.engine import analyze_source, check_source, may_have_findings
from amplint.files import source_lines
from amplint.fix.apply import TextFix, fix_text
from amplint.model import FileError
from conftest import ROOT
from progen import programs

NIGHTLY = os.environ.get("AMPLINT_HYPOTHESIS_PROFILE") == "nightly"
SCALE = int(os.environ.get("AMPLINT_HYPOTHESIS_SCALE", "20" if NIGHTLY else "1"))
STRATEGIES = ("cast", "disable-autocast")
PATH = "gen.py"


def budget(examples: int) -> settings:
    """`examples` derandomized cases in CI; SCALE times as many, randomized, at night."""
    return settings(
        max_examples=examples * SCALE,
        derandomize=not NIGHTLY,
        database=None if not NIGHTLY else settings.default.database,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        print_blob=True,
        # Shrinking these programs can take minutes; CI shows the failing program as generated.
        phases=list(Phase) if NIGHTLY else [Phase.explicit, Phase.generate],
    )


SMALL = programs(functions=1, statements=2, classes=False)  # about 0.8 kB: the bulk of the cases
MEDIUM = programs(functions=1, statements=2)  # adds a class with `self.score(...)` calls


def _compiles(text: str) -> None:
    compile(text, PATH, "exec", dont_inherit=True)


# --- the analyzer never raises -----------------------------------------------------------------

@budget(1200)
@given(SMALL)
def test_analyzer_never_raises_on_generated_programs(source: str) -> None:
    _compiles(source)  # the generator's own promise
    outcome = analyze_source(source, PATH, Config(project=False))
    assert not isinstance(outcome, FileError), outcome  # valid code is never a file error
    lines = source_lines(source)
    for finding in outcome.findings:
        assert finding.code in ("AMP001", "AMP002")
        assert 1 <= finding.line <= finding.end_line <= len(lines)
        assert set(finding.fix_strategies) <= set(STRATEGIES)
        assert not finding.fixable or "cast" in finding.fix_strategies


# --- --fix: compiles, converges, is idempotent, touches nothing else ---------------------------

WITH_DISABLED = re.compile(r"^[ \t]*with [\w.]*autocast\(device_type=.+, enabled=False\):[ \t]*$")
# What fix A may insert: a cast, or a cast of a parenthesised expression (`(mu + eps).float()`).
INSERTIONS = (").float()", ".float()", "(")


def only_casts_inserted(old: str, new: str) -> bool:
    """True when `new` is `old` with casts inserted in places, every other character kept.

    A search over (position in `old`, position in `new`): a character kept moves both, an insertion moves
    `new` only. Greedy matching is not enough: in `log_prob((x * r).float())` the `)` that closes the
    parenthesised expression would be matched against the one that closes the call."""
    pending, seen = [(0, 0)], set()
    while pending:
        i, j = pending.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(old) and j == len(new):
            return True
        pending.extend((i, j + len(inserted)) for inserted in INSERTIONS if new.startswith(inserted, j))
        if i < len(old) and j < len(new) and old[i] == new[j]:
            pending.append((i + 1, j + 1))  # tried first: most characters are kept
    return False


def only_wraps_and_casts(old: str, new: str) -> bool:
    """Fix C's diff: `with ...autocast(device_type=..., enabled=False):` lines added, statements re-indented, casts."""
    a, b = source_lines(old), source_lines(new)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        added = [line for line in b[j1:j2] if not WITH_DISABLED.match(line)]
        if len(added) != i2 - i1:
            return False
        if not all(only_casts_inserted(o.lstrip(), n.lstrip()) for o, n in zip(a[i1:i2], added)):
            return False
    return True


def _line_endings(text: str) -> set:
    return set(re.findall(r"\r\n|\r|\n", text))


def check_fix(source: str, strategy: str) -> TextFix:
    """Every guarantee of `--fix` on one source with one strategy; returns the fix."""
    config = Config(project=False, strategy=strategy)
    before = analyze_source(source, PATH, config)
    assert not isinstance(before, FileError), before
    fixable = [f for f in before.findings if f.fixable]
    outcome = fix_text(source, PATH, config)
    assert isinstance(outcome, TextFix), outcome  # a FileError: the fix did not compile, or could not re-check
    fixed = outcome.fixed
    if not fixable:
        assert fixed == source  # nothing fixable: not one byte moves
        return outcome
    _compiles(fixed)
    assert [f for f in outcome.remaining if f.fixable] == []  # no fixable finding is left behind
    assert len(outcome.remaining) <= len(before.findings) - len(fixable)  # and the fix made none
    after = analyze_source(fixed, PATH, config)
    assert not isinstance(after, FileError)
    assert [f.fixable for f in after.findings] == [False] * len(after.findings)
    again = fix_text(fixed, PATH, config)
    assert isinstance(again, TextFix) and again.fixed == fixed  # idempotent
    assert _line_endings(fixed) <= _line_endings(source) or not _line_endings(source)
    if strategy == "cast":
        assert only_casts_inserted(source, fixed)
    else:
        assert only_wraps_and_casts(source, fixed)
    return outcome


@budget(110)
@given(MEDIUM)
def test_fix_output_compiles_converges_and_is_idempotent(source: str) -> None:
    _compiles(source)
    for strategy in STRATEGIES:
        check_fix(source, strategy)


def test_diff_checkers_accept_fixes_and_reject_other_edits() -> None:
    """The two helpers above must themselves catch a stray edit."""
    assert only_casts_inserted("d.log_prob(x.exp())", "d.log_prob(x.float().exp())")
    assert only_casts_inserted("x.float().exp()", "x.float().float().exp()")
    assert only_casts_inserted("N(mu + eps, s)", "N((mu + eps).float(), s.float())")
    assert only_casts_inserted("N(loc=y[0], s=z(a)).cdf(y)", "N(loc=y[0].float(), s=z(a).float()).cdf(y.float())")
    assert not only_casts_inserted("d.log_prob(x)", "d.log_prob(x) ")
    assert not only_casts_inserted("d.log_prob(x)  # c", "d.log_prob(x.float())  # C")
    old = "with torch.autocast('cuda'):\n    lp = d.log_prob(x)\n    y = 1\n"
    new = "with torch.autocast('cuda'):\n    with torch.autocast(device_type='cuda', enabled=False):\n" \
          "        lp = d.log_prob(x.float())\n    y = 1\n"
    assert only_wraps_and_casts(old, new)
    assert not only_wraps_and_casts(old, new.replace("y = 1", "y = 2"))


# --- front ends agree: amplint check and the flake8 plugin -----------------------------------------

def _flake8_noqa(source: str, filename: str, line: int, code: str) -> bool:
    """flake8's own inline noqa decision for a report at `line` (its FileProcessor and Violation)."""
    from flake8.processor import FileProcessor
    from flake8.violation import Violation

    lines = io.StringIO(source, newline=None).readlines()
    processor = FileProcessor(filename, options=_flake8_options(), lines=lines)
    physical = processor.noqa_line_for(line)
    return Violation(code, filename, line, 1, "", physical).is_inline_ignored(disable_noqa=False)


def _flake8_options():  # type: ignore[no-untyped-def]
    import argparse

    return argparse.Namespace(hang_closing=False, indent_size=4, max_line_length=79, max_doc_length=None,
                              verbose=0, stdin_display_name="stdin", indent_char=" ")


def _plugin_findings(source: str, filename: str) -> List[tuple]:
    """What flake8 would report: the plugin called as flake8 calls it, then flake8's noqa."""
    import ast

    from amplint.flake8_plugin import AmpLintChecker

    lines = io.StringIO(source.replace("\r\n", "\n"), newline="\n").readlines()  # flake8 reads universal newlines
    checker = AmpLintChecker(ast.parse("".join(lines)), lines, filename)
    out = []
    for line, col, text, _ in checker.run():
        code = text.split(" ", 1)[0]
        if not _flake8_noqa(source, filename, line, code):
            out.append((line, col + 1, text))  # flake8 shows col + 1
    return sorted(out)


NOQA_SCOPES = """\
import torch
import torch.distributions as D


def f(mu, sigma, x):
    with torch.autocast("cuda"):
        a = D.Normal(mu, sigma).log_prob(
            x)  # noqa -- inside brackets a noqa covers only its own physical line
        b = \\
            D.Normal(mu, sigma).log_prob(x)  # noqa
        c = D.Normal(mu, sigma).log_prob(x); d = 1  # noqa: AMP001
        e = D.Normal(mu, sigma).log_prob(x) \\
            + 1  # noqa: AMP001 -- a backslash joins the lines, for flake8 and for amplint
        return a, b, c, e
"""


def test_noqa_scope_is_flake8s() -> None:
    """A noqa anywhere on a backslash-continued line covers it; inside brackets, only its own line."""
    result = check_source(NOQA_SCOPES, PATH, Config(project=False))
    assert [(f.line, f.code) for f in result.findings] == [(7, "AMP001")]


def test_a_file_is_tokenized_once_for_its_noqa_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    """The findings and the fixes a noqa forbids (`NoqaGuard`) read the same scope: one tokenize, not two."""
    import tokenize

    from amplint.noqa import noqa_texts

    calls: List[int] = []
    generate = tokenize.generate_tokens
    monkeypatch.setattr(tokenize, "generate_tokens", lambda readline: calls.append(1) or generate(readline))
    noqa_texts.cache_clear()
    result = check_source(NOQA_SCOPES, PATH, Config(project=False))
    # No fix for it: both would edit line 8 (`x`), and a line with a noqa is left as written (`NoqaGuard`).
    assert [(f.line, f.code, f.fix_strategies) for f in result.findings] == [(7, "AMP001", ())]
    assert len(calls) == 1
    with pytest.raises(TypeError):
        noqa_texts(NOQA_SCOPES)[7] = ""  # shared by its readers: read only


@budget(300)
@example(source=NOQA_SCOPES)
@given(source=SMALL)
def test_flake8_plugin_reports_what_check_reports(tmp_path_factory: pytest.TempPathFactory, source: str) -> None:
    filename = str(tmp_path_factory.getbasetemp() / "gen.py")  # no amplint config above it
    checked = check_source(source, filename, Config(project=False))
    assert checked.error is None
    expected = sorted((f.line, f.column, f"{f.code} {f.message}") for f in checked.findings)
    assert _plugin_findings(source, filename) == expected


def _seeded_programs(count: int, salt: int) -> List[str]:
    """`count` MEDIUM programs, each from its own fixed seed (the same every run)."""
    drawn: List[str] = []
    for index in range(count):
        @seed(salt * 100_000 + index)
        @settings(max_examples=1, database=None, deadline=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(MEDIUM)
        def one(source: str) -> None:
            drawn.append(source)

        one()
    return drawn


@pytest.mark.parametrize("batch", range(2))
def test_real_flake8_agrees_with_amplint_check_on_generated_files(tmp_path: Path, batch: int) -> None:
    """The real `flake8` and `amplint check` (project mode, JSON) on 25 generated files at once."""
    for index, source in enumerate(_seeded_programs(25 * SCALE, batch)):
        (tmp_path / f"g{batch}_{index:03d}.py").write_bytes(source.encode())
    env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONPATH=str(ROOT), AMPLINT_CACHE_DIR=str(tmp_path / ".c"))
    flake8 = subprocess.run(
        [sys.executable, "-m", "flake8", "--isolated", "--select=AMP", "--format=%(path)s:%(row)d:%(col)d:%(code)s",
         "."], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )
    assert flake8.returncode in (0, 1), flake8.stderr
    assert "AMP" in flake8.stdout or not flake8.stdout  # the plugin is registered and ran
    from_flake8 = sorted(
        (os.path.normpath(path), int(line), int(col), code)
        for path, line, col, code in (row.rsplit(":", 3) for row in flake8.stdout.splitlines())
    )
    check = subprocess.run(
        [sys.executable, "-m", "amplint", "check", "--format", "json", "."],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )
    assert check.returncode in (0, 1), check.stderr
    from_check = sorted(
        (os.path.normpath(f["path"]), f["line"], f["column"], f["code"]) for f in json.loads(check.stdout)
    )
    assert from_flake8, "no findings at all: the comparison would prove nothing"
    assert from_flake8 == from_check


# --- grammar-based programs: hypothesmith ------------------------------------------------------------

try:
    import hypothesmith
except ImportError:  # pragma: no cover - the dev extra installs it
    hypothesmith = None
# Built once, on first use: building the grammar strategy costs seconds.
GRAMMAR = st.deferred(lambda: hypothesmith.from_grammar()) if hypothesmith is not None else st.just("")


@pytest.mark.skipif(hypothesmith is None, reason="hypothesmith is not installed (pip install -e '.[dev]')")
@budget(350)
@given(source=GRAMMAR)
def test_analyzer_never_raises_on_hypothesmith_programs(source: str) -> None:
    # The prefilter (autocast and a probability word) would skip it otherwise; at the end, so a
    # `from __future__` stays first.
    source = source + ("\n" if source and not source.endswith("\n") else "") + "# autocast log_prob\n"
    assert may_have_findings(source, Config())  # or this test would check nothing
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "'int' object is not callable; perhaps you missed a comma?"
        outcome = analyze_source(source, PATH, Config(project=False))
        parses, compiles = _cpython_accepts(source)
    if not parses:
        assert isinstance(outcome, FileError)  # CPython's parser refuses it: so does amplint, with a message
        assert outcome.message and "\n" not in outcome.message
    elif compiles:
        assert not isinstance(outcome, FileError), outcome
    # parses but does not compile (`return` outside a function...): either answer is fine


def _cpython_accepts(source: str) -> Tuple[bool, bool]:
    import ast

    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False, False
    try:
        _compiles(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True, False
    return True, True
