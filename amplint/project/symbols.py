"""What names resolve to in the project: classes, functions to enter, and the symbols of a lookup.

Plain frozen data shared by the resolver (`resolve.py`) and the value flow (`flow.py`), which must not
import each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union


@dataclass(frozen=True, order=True)
class ClassRef:
    path: str
    name: str


@dataclass(frozen=True, order=True)
class Target:
    """A function to enter, with the class `self` is an instance of there (exact: not a subclass)."""

    path: str
    key: str
    receiver: Optional[ClassRef] = None
    exact: bool = False
    inferred: bool = field(default=False, compare=False)  # chosen by name: the receiver's class was unknown
    # found through values that crossed calls (`project.flow`): entered even in a file that imports no
    # probability code, as code handed an object calls its methods without importing its module
    flowed: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class _Func:
    path: str
    key: str


@dataclass(frozen=True)
class _Method:
    cls: ClassRef
    name: str
    exact: bool


@dataclass(frozen=True)
class _Instance:
    cls: ClassRef
    exact: bool


@dataclass(frozen=True)
class _Module:
    path: str


Symbol = Union[_Func, _Method, _Instance, ClassRef, _Module]
