"""Trees too deep for LibCST are refused by `deep.python_parse` on every Python, not only where CPython refuses them."""
from __future__ import annotations

import ast

import pytest

from amplint import deep


def _sum(terms: int) -> str:
    return "x = " + " + ".join(["a"] * terms) + "\n"


@pytest.mark.parametrize("text", ["x = ----a\n", "x = (\n    -\n    -\n    -\n    -a\n)\n"], ids=["one line", "lines"])
def test_depth_counts_from_the_module_to_the_deepest_leaf(text: str) -> None:
    tree = ast.parse(text)  # Module, Assign, four UnaryOps, Name, Load: 8 levels
    assert deep.deeper_than(tree, 7) and not deep.deeper_than(tree, 8)


def test_a_long_line_is_read_to_its_deepest_node() -> None:
    tree = ast.parse("def f():\n    return " + "-" * 50 + "a\n")  # Module, FunctionDef, Return, 50 UnaryOps, Name, Load
    assert deep.deeper_than(tree, 54) and not deep.deeper_than(tree, 55)


def test_statements_narrower_than_the_room_left_are_passed_over(monkeypatch: pytest.MonkeyPatch) -> None:
    visited = []
    children = ast.iter_child_nodes
    monkeypatch.setattr(deep.ast, "iter_child_nodes", lambda node: visited.append(node) or children(node))
    text = "import torch\n\n\nclass A:\n    def f(self, x):\n        y = torch.log(x + 1)\n        return y\n"
    tree = ast.parse(text)
    assert not deep.deeper_than(tree, 100)
    assert [type(node).__name__ for node in visited] == ["Module", "ClassDef", "FunctionDef", "arguments"]


@pytest.mark.parametrize("text,refused", [
    (_sum(2_000), False),
    (_sum(2_800), False),
    (_sum(3_000), True),  # CPython 3.11 refuses it
    (_sum(5_000), True),  # 3.13 builds it, and 3.9 and 3.10 any length: LibCST would take minutes
    ("x = " + "not " * 5_000 + "a\n", True),
    ("x = a" + ".b" * 4_000 + "\n", True),
], ids=["sum 2000", "sum 2800", "sum 3000", "sum 5000", "not 5000", "attributes 4000"])
def test_every_python_refuses_what_cpython_3_11_refuses(text: str, refused: bool) -> None:
    parsed = deep.python_parse(text)
    if refused:
        assert isinstance(parsed, str) and parsed.startswith("too deeply nested to parse"), parsed
    else:
        assert isinstance(parsed, ast.Module)
