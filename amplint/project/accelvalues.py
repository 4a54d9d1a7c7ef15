"""Accelerate's objects as the value flow (`flow.py`) knows them: an `Accelerator(...)` and a model it prepared.

An accelerator is known by where it is built and what its `mixed_precision` makes (rule A, read as the
collector reads it). `accelerator.prepare(model)` with `Accelerator(mixed_precision="fp16")` wraps the
model's `forward` in autocast: calling the prepared model runs `forward` in a float16 region, wherever the
call is made (`preparedflow.py` finds those calls).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional

from amplint.facts.astnodes import literal
from amplint.facts.frameworks import accelerate_precision, describe
from amplint.model import Precision
from amplint.project.symbols import _Instance


@dataclass(frozen=True)
class Accelerated:
    """An `Accelerator(...)` of Accelerate built at `path`:`line` (rule A), and what its `mixed_precision` makes:
    None when its `autocast()` is a no-op (`"no"`)."""

    path: str
    line: int
    precision: Optional[Precision]
    label: str  # the construction as messages show it: 'Accelerator(mixed_precision="fp16")'


@dataclass(frozen=True)
class Prepared:
    """`accelerator.prepare(model)`'s result for one argument: the module, whose `forward` now runs in the
    accelerator's region. Anywhere else it is the module itself (its methods, its attributes)."""

    module: _Instance
    accelerator: Accelerated


def accelerated(path: str, call: ast.Call) -> Accelerated:
    """`Accelerator(mixed_precision=...)` as the collector reads it (`facts.nodes.accelerator_binding`)."""
    mixed = next((k.value for k in call.keywords if k.arg == "mixed_precision"), None)
    double_star = any(k.arg is None for k in call.keywords)
    text = None if mixed is None else (f'"{mixed.value}"' if isinstance(mixed, ast.Constant) and isinstance(
        mixed.value, str) and '"' not in mixed.value else ast.unparse(mixed))
    arg = None if mixed is None or text is None else literal(mixed, text)
    return Accelerated(path, call.lineno, accelerate_precision(arg, double_star),
                       describe("Accelerator", "mixed_precision", arg, double_star))
