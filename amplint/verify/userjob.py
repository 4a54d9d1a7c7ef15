"""What the child process is asked to run: the slice, how to call the density, and what each input is.

Plain data, written as JSON into the child's temporary folder. The child
(slicechild.py) reads nothing else of the project: not its files, not its
modules, not its environment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

from amplint.transforms import Step
from amplint.verify.sliceemit import SliceModule

SITE_FUNCTION = "__amplint_site__"  # the wrapper around the expression of hand-written math


@dataclass(frozen=True)
class TensorInput:
    """A tensor the run makes: a float16 head out of an identity Linear, then the argument's own steps."""

    key: str  # the parameter or variable it stands for
    role: str  # userroles.ROLES
    steps: Tuple[Step, ...] = ()  # outermost first, as `amplint.transforms.Chain`
    items: Tuple[str, ...] = ()  # a dict of tensors the code reads as `x["y"]`: its keys, one tensor each

    def to_json(self) -> dict:
        return {"key": self.key, "role": self.role, "items": list(self.items),
                "steps": [{"kind": s.kind, "constant": s.constant, "dim": s.dim, "dtype": s.dtype}
                          for s in self.steps]}


@dataclass(frozen=True)
class Argument:
    """One argument of a call: a tensor input (by key) or a literal, by position or keyword."""

    keyword: Optional[str]
    tensor: Optional[str] = None
    literal: object = None

    def to_json(self) -> dict:
        return {"keyword": self.keyword, "tensor": self.tensor, "literal": self.literal}


@dataclass(frozen=True)
class Entry:
    """How to call the density: `callee` is looked up in `module` by attribute path.

    With `construct`, the callee is a class: an instance is built with those
    arguments (inside the region, as the code does), then its `method` is called.
    """

    module: str
    callee: Tuple[str, ...]
    args: Tuple[Argument, ...]
    label: str  # what the report calls the computation
    method: Optional[str] = None
    construct: Optional[Tuple[Argument, ...]] = None

    def to_json(self) -> dict:
        return {"module": self.module, "callee": list(self.callee), "method": self.method,
                "args": [a.to_json() for a in self.args],
                "construct": None if self.construct is None else [a.to_json() for a in self.construct]}


@dataclass(frozen=True)
class Candidate:
    """One way to call the computation, with its inputs; `note` says what it holds (for hand-written math)."""

    entry: Entry
    inputs: Tuple[TensorInput, ...]
    note: str = ""

    def to_json(self) -> dict:
        return {"entry": self.entry.to_json(), "inputs": [i.to_json() for i in self.inputs], "note": self.note}


@dataclass(frozen=True)
class UserJob:
    """A slice and the ways to call it, widest first: the child runs the first whose float64 reference runs."""

    modules: Tuple[SliceModule, ...]
    candidates: Tuple[Candidate, ...]

    @property
    def label(self) -> str:
        return self.candidates[0].entry.label

    def to_json(self) -> dict:
        return {"modules": [m.to_json() for m in self.modules], "candidates": [c.to_json() for c in self.candidates]}
