"""Recognise the elementwise transform and casts around a model head, by parsing only.

Real heads look like `log_sigma.exp()` or `1e-3 * torch.sigmoid(h)`. Where the
cast sits matters (measured: a Poisson rate `exp(head)` cast after the `exp`
still gives NaN; cast before it, none), and the codemod casts the transform's
input. So the verifier needs the transform chain, not just "some tensor".

The argument text is parsed with `ast` and matched against a small allowlist;
nothing is evaluated except numeric constants, through `ast.literal_eval`.
Anything unrecognised is an opaque head: a Linear output used as is.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Optional, Tuple

from amplint.names import ast_last_name

# Elementwise transforms the verifier can rebuild and invert.
UNARY = frozenset({"exp", "sigmoid", "softplus", "softmax", "log_softmax"})
TAKES_DIM = frozenset({"softmax", "log_softmax"})
WIDE_DTYPES = {"float32": "float32", "float": "float32", "float64": "float64", "double": "float64"}


@dataclass(frozen=True)
class Step:
    """One operation between the head and the argument, e.g. `exp` or `scale 1e-3`."""

    kind: str  # one of UNARY, "scale", "shift", "cast"
    constant: float = 0.0  # the factor of "scale", the addend of "shift"
    dim: int = -1  # softmax/log_softmax dimension
    dtype: str = "float32"  # target of "cast"


@dataclass(frozen=True)
class Chain:
    """An argument as `steps` (outermost first) applied to an opaque head."""

    steps: Tuple[Step, ...]
    head: str  # source text of the head expression, for the report only

    @property
    def has_cast(self) -> bool:
        return any(step.kind == "cast" for step in self.steps)

    def with_leaf_cast(self) -> "Chain":
        """The chain as the codemod writes it: a float32 cast on the head itself."""
        if self.has_cast:
            return self
        return Chain(self.steps + (Step("cast"),), self.head)

    def with_outer_cast(self) -> "Chain":
        """A cast the analysis knows of but cannot place: apply it last."""
        if self.has_cast:
            return self
        return Chain((Step("cast"),) + self.steps, self.head)

    def describe(self) -> str:
        text = "head"
        for step in reversed(self.steps):
            if step.kind == "scale":
                text = f"{step.constant:g} * {text}"
            elif step.kind == "shift":
                text = f"{text} + {step.constant:g}"
            elif step.kind == "cast":
                text = f"{text}.to({step.dtype})"
            else:
                text = f"{step.kind}({text})"
        return text


def parse_chain(code: str) -> Chain:
    """Split `code` into allowlisted steps and an opaque head; never evaluates it."""
    try:
        node: ast.expr = ast.parse(code.strip(), mode="eval").body
    except SyntaxError:
        return Chain((), code)
    steps = []
    while True:
        matched = _match(node)
        if matched is None:
            return Chain(tuple(steps), ast.unparse(node))
        step, node = matched
        steps.append(step)


def _number(node: ast.expr) -> Optional[float]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _dtype_of(call: ast.Call) -> Optional[str]:
    """The wide dtype of `.to(torch.float32)`, `.to(dtype=torch.double)`, `.type(...)`."""
    candidates = list(call.args[:1]) + [kw.value for kw in call.keywords if kw.arg == "dtype"]
    for candidate in candidates:
        name = ast_last_name(candidate)
        if name in WIDE_DTYPES:
            return WIDE_DTYPES[name]
    return None


def _dim(call: ast.Call, first: int) -> Optional[int]:
    """The literal `dim` of a softmax call (positional at `first`, or keyword)."""
    nodes = list(call.args[first:first + 1]) + [kw.value for kw in call.keywords if kw.arg == "dim"]
    if not nodes:
        return -1
    value = _number(nodes[0])
    return int(value) if value is not None and value == int(value) else None


def _match(node: ast.expr) -> Optional[Tuple[Step, ast.expr]]:
    if isinstance(node, ast.Call):
        return _match_call(node)
    if isinstance(node, ast.BinOp):
        return _match_binop(node)
    return None


def _match_call(call: ast.Call) -> Optional[Tuple[Step, ast.expr]]:
    func = call.func
    name = ast_last_name(func)
    if isinstance(func, ast.Attribute):  # method on the tensor: x.exp(), x.float(), x.softmax(-1)
        receiver = func.value
        if name in ("float", "double") and not call.args and not call.keywords:
            return Step("cast", dtype=WIDE_DTYPES[name]), receiver
        if name in ("to", "type"):
            dtype = _dtype_of(call)
            return (Step("cast", dtype=dtype), receiver) if dtype else None
        if name in ("exp", "sigmoid") and not call.args and not call.keywords:
            return Step(name), receiver
        if name in TAKES_DIM and (not call.args or _number(call.args[0]) is not None):
            dim = _dim(call, 0)
            return (Step(name, dim=dim), receiver) if dim is not None else None
    # function form: torch.exp(x), F.softplus(x), torch.softmax(x, -1)
    if name in UNARY and len(call.args) >= 1 and not isinstance(call.args[0], ast.Starred):
        if name in TAKES_DIM:
            dim = _dim(call, 1)
            return (Step(name, dim=dim), call.args[0]) if dim is not None else None
        if len(call.args) == 1 and not call.keywords:  # softplus(beta=...) is not rebuilt
            return Step(name), call.args[0]
    return None


def _match_binop(node: ast.BinOp) -> Optional[Tuple[Step, ast.expr]]:
    left, right = _number(node.left), _number(node.right)
    if isinstance(node.op, ast.Mult):
        if left is not None and right is None:
            return Step("scale", constant=left), node.right
        if right is not None and left is None:
            return Step("scale", constant=right), node.left
    if isinstance(node.op, ast.Div) and right not in (None, 0.0) and left is None:
        return Step("scale", constant=1.0 / right), node.left
    if isinstance(node.op, ast.Add):
        if left is not None and right is None:
            return Step("shift", constant=left), node.right
        if right is not None and left is None:
            return Step("shift", constant=right), node.left
    if isinstance(node.op, ast.Sub) and right is not None and left is None:
        return Step("shift", constant=-right), node.left
    return None
