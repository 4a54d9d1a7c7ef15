"""The fields a class's generated constructor takes: one rule for both trees.

A `@dataclass` (or `@dataclasses.dataclass(...)`) and a `typing.NamedTuple`
subclass take their annotated class-body names, in order, as constructor
parameters and keep each under its own name; a `ClassVar` annotation is no
field. The value flow reads CPython's tree (`project/flowcalls.py`), the
returns index LibCST's (`facts/returns.py`); each hands this module the names
it read, so the two cannot disagree on what a field is.
"""
from __future__ import annotations

from typing import Iterable, Optional, Tuple

FIELD_DECORATORS = frozenset({"dataclass"})
FIELD_BASES = frozenset({"NamedTuple"})


def declared_fields(decorators: Iterable[str], bases: Iterable[str],
                    annotated: Iterable[Tuple[str, str]]) -> Optional[Tuple[str, ...]]:
    """The fields, from the last names of the class's decorators and bases and its annotated body names with
    the last name of each annotation's outer type; None for a class whose `__init__` is its own."""
    if FIELD_DECORATORS.isdisjoint(decorators) and FIELD_BASES.isdisjoint(bases):
        return None
    return tuple(name for name, annotation in annotated if annotation != "ClassVar")
