"""Trees too deep for LibCST are refused by `deep.python_parse` on every Python, with one message, whichever
parser draws the line."""
from __future__ import annotations

import ast

import pytest

from amplint import deep


def _sum(terms: int) -> str:
    return "x = " + " + ".join(["a"] * terms) + "\n"


@pytest.mark.parametrize("text", ["x = ----a\n", "x = (\n    -\n    -\n    -\n    -a\n)\n"], ids=["one line", "lines"])
def test_depth_counts_from_the_module_to_the_deepest_leaf(text: str) -> None:
    tree = ast.parse(text)  # Module, Assign, four UnaryOps, Name, Load: 8 levels
    for source in ("", text):
        assert deep.deeper_than(tree, 7, source) and not deep.deeper_than(tree, 8, source)


def test_a_long_line_is_read_to_its_deepest_node() -> None:
    text = "def f():\n    return " + "-" * 50 + "a\n"  # Module, FunctionDef, Return, 50 UnaryOps, Name, Load
    tree = ast.parse(text)
    assert deep.deeper_than(tree, 54, text) and not deep.deeper_than(tree, 55, text)


def test_an_f_string_is_read_to_its_deepest_node() -> None:
    text = 'x = f"{' + "-" * 50 + 'a}"\n'  # Module, Assign, JoinedStr, FormattedValue, 50 UnaryOps, Name, Load
    tree = ast.parse(text)
    assert deep.deeper_than(tree, 55, text) and not deep.deeper_than(tree, 56, text)


CLASS = "import torch\n\n\nclass A:\n    def f(self, x):\n        y = torch.log(x + 1)\n        return y\n"


@pytest.mark.parametrize("text,read", [
    ("", ["Module", "ClassDef", "FunctionDef", "arguments"]),  # by the width of each line only
    (CLASS, ["Module"]),  # the class spans 84 characters: too few for the levels left
])
def test_nodes_narrower_than_the_levels_left_are_passed_over(monkeypatch: pytest.MonkeyPatch, text: str,
                                                             read: list) -> None:
    visited = []
    children = ast.iter_child_nodes
    monkeypatch.setattr(deep.ast, "iter_child_nodes", lambda node: visited.append(node) or children(node))
    assert not deep.deeper_than(ast.parse(CLASS), 200, text)
    assert [type(node).__name__ for node in visited] == read


@pytest.mark.parametrize("text,refused", [
    (_sum(2_000), False),
    (_sum(2_490), False),  # 2,493 levels
    (_sum(2_600), True),
    (_sum(5_000), True),  # CPython 3.13 builds it, and 3.9 and 3.10 any length: LibCST would take minutes
    ("x = " + "not " * 5_000 + "a\n", True),
    ("x = a" + ".b" * 4_000 + "\n", True),
    (_sum(20_000), True),  # CPython 3.11 to 3.13 refuse it themselves
], ids=["sum 2000", "sum 2490", "sum 2600", "sum 5000", "not 5000", "attributes 4000", "sum 20000"])
def test_every_python_refuses_the_same_trees_with_the_same_words(text: str, refused: bool) -> None:
    parsed = deep.python_parse(text)
    if refused:
        assert parsed == deep.TOO_DEEP == "too deeply nested to parse (amplint reads up to 2,500 levels of nesting)"
    else:
        assert isinstance(parsed, ast.Module)


def read_at(frames: int, read):  # type: ignore[no-untyped-def]
    """`read()` called `frames` frames deeper than this call."""
    return read() if frames <= 0 else read_at(frames - 1, read)


def _frames_left() -> int:
    """How many frames deeper `read_at` can go from here: the frames on the stack are not all Python's."""
    frames = 0
    while True:
        try:
            read_at(frames + 1, lambda: None)
        except RecursionError:
            return frames
        frames += 1


@pytest.mark.parametrize("spare", [3, 5, 8, 20])
def test_a_file_read_with_the_stack_nearly_full_is_judged_as_from_the_top(spare: int) -> None:
    """CPython's parser counts the frames on the stack against its own limit. A file first read deep in the
    project walk was refused with an 11-level tree and reported as too deeply nested for the whole run
    (diffusers' `__init__.py`, in a run over 24,246 files); it is judged again from an empty stack."""
    text = "x = [[[[[[1]]]]]]\nif a:\n    pass\nelif b:\n    pass\n"
    too_deep = "x = " + "-" * 3000 + "a\n"
    frames = _frames_left()
    assert ast.dump(read_at(frames - spare, lambda: deep.python_parse(text))) == ast.dump(ast.parse(text))
    assert read_at(frames - spare, lambda: deep.python_parse(too_deep)) == deep.TOO_DEEP


@pytest.mark.parametrize("spare", [3, 5, 8])
def test_a_deep_call_starts_with_the_stack_nearly_full(spare: int) -> None:
    """`call_deep` is the retry of LibCST's analysis; started deep in the walk, making its thread ran out of
    frames, and the file was reported as too deeply nested to analyse."""
    frames = _frames_left()
    assert read_at(frames - spare, lambda: deep.call_deep(lambda: "analysed")) == "analysed"
