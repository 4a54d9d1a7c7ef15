"""The text pass's literal-first patterns (`prefilter._where`) against the anchored regexes they replaced.

Each pattern starts with a literal, which `re` finds fast, and `_where` tests what comes before a match:
only indentation on its line (imports), an indentation and maybe `async` (a method's `def`), no ASCII
letter (the names of probability code), a digit or a dot (a tiny literal's exponent). Written as
`^[ \\t]*` with re.M or as a lookbehind, `re` tried every position, several times slower (issue 12).
Both forms must give the same matches, in the same order.
"""
from __future__ import annotations

import ast
import re
from typing import List, Set

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplint.project.prefilter import (
    _FROM, _IMPORT, _NAME_WORD, _TINY_EXPONENT, NAME_WORDS, _ends_mantissa, _found, _line_starts, _where,
    _starts_identifier, imported_names, is_candidate_file, method_definitions, stored_attributes,
)
from conftest import ROOT

ANCHORED_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
ANCHORED_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
NAME_WORD = re.compile(r"(?<![A-Za-z])(?:" + "|".join(NAME_WORDS) + ")")
TINY_LITERAL = re.compile(r"[0-9.]e-(?:[12][0-9]|[89])")
METHOD_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+f[ \t]*\(", re.M)

# Pieces that make and break what the patterns find: keywords, indentation, line ends, separators, words,
# exponents.
PIECES = ["from", "import", " ", "\t", "\n", "\r\n", "\r", ".", "..", "a", "b.c", "as", ",", ";", "#", "(", ")",
          "*", "x = ", "re", "'", '"""', "\\\n", "ümport",
          "Redistributions", "log_prob", "xentropy", "é", "_entropy", "kl_divergence", "1", "e-", "8", "12", "1e",
          "e-9", ".e-20", "stage", "def", "async", "f", "f(", "def f(", "    def f(", "async def f("]


def _anchored(text: str) -> List[tuple]:
    return [("from", m.groups()) for m in ANCHORED_FROM.finditer(text)] + [
        ("import", m.groups()) for m in ANCHORED_IMPORT.finditer(text)]


def _fast(text: str) -> List[tuple]:
    return [("from", m.groups()) for m in _line_starts(_FROM, text)] + [
        ("import", m.groups()) for m in _line_starts(_IMPORT, text)]


@pytest.mark.parametrize("text", [
    "from a import b\nimport c, d as e\n",
    "    from .m import (x,\n  y)\nclass K:\n\timport z\n",
    "x = 1; import a\nfrom b import c; import d\n",
    "reimport a\n# import b\n'''\nimport c\n'''\n",
    "from a import (b  # from c import d\n)\nimport e",
    "s = 'from a import (b'\nfrom c import d\n)\n",
    "import",
    "",
])
def test_the_same_matches_as_the_anchored_patterns(text: str) -> None:
    assert _fast(text) == _anchored(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_the_same_matches_on_any_text(text: str) -> None:
    assert _fast(text) == _anchored(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_the_same_words_and_literals_as_the_lookbehinds(text: str) -> None:
    assert _found(_NAME_WORD, text, _starts_identifier) == (NAME_WORD.search(text) is not None)
    assert _found(_TINY_EXPONENT, text, _ends_mantissa) == (TINY_LITERAL.search(text) is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_the_same_method_definitions_as_the_anchored_pattern(text: str) -> None:
    assert method_definitions(text, "f") == sum(1 for _ in METHOD_DEF.finditer(text))


@pytest.mark.parametrize(("text", "candidate"), [
    ("# Redistributions of source code\nx = 1\n", False),
    ("from torch import distributions\n", True),
    ("h = xentropy(p)\n", False),
    ("h = _entropy(p)\n", True),
    ("eps = 1e-8\n", True),
    ("eps = 1e-2\nstage-12\n", False),
    ("eps = 1.e-20\n", True),
])
def test_candidate_files(text: str, candidate: bool) -> None:
    assert is_candidate_file(text) is candidate


def test_imported_names_reads_lines_only_indentation_precedes() -> None:
    text = "from .m import (x,\n  y as z)\n    import a.b, c as d\nq = 1; import no\nfrom e import *\n"
    assert imported_names(text) == [".m.x", ".m.y", ".m.z", "e", "a.b", "c", "d"]


def test_a_pattern_that_can_match_nothing_ends_as_finditer_does() -> None:
    """No pattern of the text pass matches empty text, but `_where` must not loop on one that does."""
    pattern = re.compile("x*")
    assert [m.span() for m in _where(pattern, "axxb", lambda text, start: True)] == [
        m.span() for m in pattern.finditer("axxb")]


def _stores_in_tree(tree: ast.AST) -> Set[str]:
    """What `flowtrees` indexes as stores on owners other than `self`: `owner.attr = ...` targets."""
    found: Set[str] = set()
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        for target in targets:
            if isinstance(target, ast.Attribute) and not (isinstance(target.value, ast.Name) and
                                                          target.value.id == "self"):
                found.add(target.attr)
    return found


def test_stored_attributes_holds_every_store_the_tree_has() -> None:
    """The text index may hold more (a string, a comment) but never less than the trees: a file it leaves out is
    never read for `policy.head = ...` (`Flow._stored_outside`). Checked on every file of this repository."""
    files = sorted((ROOT / "amplint").rglob("*.py")) + sorted((ROOT / "fixtures").rglob("*.py")) + \
        sorted((ROOT / "tests").glob("*.py"))
    read = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        read += 1
        assert _stores_in_tree(tree) <= set(stored_attributes(text)), path
    assert read > 300


@pytest.mark.parametrize("text, expected", [
    ("policy.head = NormalHead()\n", ["head"]), ("self.head = h\n", []), ("self.agent.head = h\n", ["head"]),
    ("a.b.c: int = 3\n", ["c"]), ("if a.b == c:\n    pass\n", []), ("x = a.b\n", []), ("a.b += 1\n", []),
])
def test_stored_attributes(text: str, expected: List[str]) -> None:
    assert stored_attributes(text) == expected
