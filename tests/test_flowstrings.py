"""The attribute names `getattr` may read (`project/flowstrings.py`): what the flow knows of a computed name."""
from __future__ import annotations

import ast
from typing import Dict

import pytest

from amplint.project.flowstrings import ANY, MAX_SPELLINGS, formatted, literal, matches


def _fstring(text: str) -> ast.JoinedStr:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.JoinedStr)
    return node


def _held(values: Dict[str, frozenset]):
    return lambda node: values[node.id]


def test_an_fstring_is_spelled_out_from_what_its_parts_hold() -> None:
    node = _fstring('f"loss_{kind}_{size}"')
    held = _held({"kind": frozenset({"nll", "mse"}), "size": frozenset({"a", "b"})})
    assert formatted(node, held) == {"loss_nll_a", "loss_nll_b", "loss_mse_a", "loss_mse_b"}


def test_after_a_part_not_known_whole_only_the_head_is_kept() -> None:
    node = _fstring('f"loss_{kind}_{size}"')
    assert formatted(node, _held({"kind": frozenset({"nll"}), "size": frozenset({ANY})})) == {"loss_nll_*"}
    assert formatted(node, _held({"kind": frozenset({"nl*", "mse"}), "size": frozenset({"a"})})) == \
        {"loss_nl*", "loss_mse*"}
    assert formatted(_fstring('f"loss_{kind!r}"'), _held({"kind": frozenset({"nll"})})) == {"loss_*"}


def test_too_many_spellings_widen_to_prefixes_and_drop_none() -> None:
    many = frozenset(f"n{i}" for i in range(MAX_SPELLINGS + 1))
    patterns = formatted(_fstring('f"loss_{kind}"'), _held({"kind": many}))
    assert all(matches(patterns, f"loss_{name}") for name in many)


@pytest.mark.parametrize("text, expected", [
    ('"nll"', {"nll"}), ("3", set()), ("name", None), ("a if c else b", None), ("pick(obj)", {ANY}),
    # an attribute, `getattr` written plainly and `a or b` are the flow's to read (`StringFlow`)
    ("obj.name", None), ('getattr(obj, "kind", "nll")', None), ('a or "nll"', None),
    ("getattr(obj, *names)", {ANY}), ('getattr(obj, "k", d, e)', {ANY}), ('getattr(obj, name=n)', {ANY}),
    # a builtin class's instance is no name, if the file does not bind it; a string made by `str` is any
    ("AttributeError()", None), ("object()", None), ("str(x)", {ANY}), ("AttributeError.mro()", {ANY}),
])
def test_literals(text: str, expected: object) -> None:
    found = literal(ast.parse(text, mode="eval").body)
    assert (None if found is None else set(found)) == expected


def test_matching() -> None:
    assert matches(frozenset({"loss_*"}), "loss_nll") and not matches(frozenset({"loss_*"}), "nll")
    assert matches(frozenset({ANY}), "anything") and not matches(frozenset({"nll"}), "nll_2")
