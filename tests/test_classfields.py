"""What a class's generated constructor takes (`facts/classfields.py`): the flow's CPython reader and the returns
index's LibCST reader give the same answer, a `NamedTuple`'s fields and a `ClassVar` included."""
from __future__ import annotations

import ast

import libcst as cst

from amplint.facts.returns import _declared_fields
from amplint.project.flowcalls import dataclass_fields

CLASSES = '''
@dataclass
class Output:
    dist: "Normal"
    loc: object
    count: ClassVar[int] = 0
    other: typing.ClassVar = 1


class Pair(typing.NamedTuple):
    dist: object
    loc: object


class Plain:
    z: int


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: int
'''
EXPECTED = {"Output": ("dist", "loc"), "Pair": ("dist", "loc"), "Plain": None, "Frozen": ("w",)}


def test_both_trees_read_the_same_fields() -> None:
    by_ast = {node.name: dataclass_fields(node) for node in ast.parse(CLASSES).body
              if isinstance(node, ast.ClassDef)}
    by_cst = {node.name.value: _declared_fields(node) for node in cst.parse_module(CLASSES).body
              if isinstance(node, cst.ClassDef)}
    assert {k: None if v is None else tuple(v) for k, v in by_ast.items()} == EXPECTED
    assert by_cst == EXPECTED
