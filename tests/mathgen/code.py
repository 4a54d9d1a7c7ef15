"""The pieces generated expressions are written with: operands, spellings of each op, names, casts.

An `Expr` is source text plus whether it can stand as an operand or a method's
receiver without parentheses. `Writer` holds what one expression's function is
made of so far: the statements that bind intermediate values (real code names
them, and amplint follows names a few steps back), the leaves it read from the
head, the eps it chose, and the `Features` the scorer breaks its tables down by.
Every choice is drawn from the writer's own `random.Random`, in program order,
so the same seed always writes the same text.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple, TypeVar

T = TypeVar("T")

# Floors as real code writes them: 1e-12/1e-10/1e-8 vanish in float16 (below 2**-24, about 6.0e-8),
# 1e-6 survives as a coarse subnormal, 1e-3 as a normal number.
EPS_VALUES = (1e-12, 1e-10, 1e-8, 1e-6, 1e-3)
VANISHING = 2.0 ** -24
CASTS = (".float()", ".to(torch.float32)", ".double()", ".to(dtype=torch.float32)", ".type(torch.float32)")
CAST_MODES = ("none", "head", "leaf", "inner", "late")
CAST_WEIGHTS = (40, 10, 15, 20, 15)
BIND_SHARE = 0.45


@dataclass(frozen=True)
class Expr:
    """Source text; `atom` when it needs no parentheses as an operand (a name, a call, an attribute)."""

    code: str
    atom: bool = True


def operand(e: Expr) -> str:
    """`e` as the operand of a binary operator or the receiver of a method."""
    return e.code if e.atom else f"({e.code})"


def binary(left: Expr, op: str, right: Expr) -> Expr:
    return Expr(f"{operand(left)} {op} {operand(right)}", atom=False)


def literal(value: float) -> Expr:
    return Expr(repr(value))


@dataclass
class Features:
    """What one expression is made of, for the scorer's breakdowns."""

    ops: Set[str] = field(default_factory=set)       # op names: log, exp, softmax, lgamma, clamp, eps, ...
    casts: List[str] = field(default_factory=list)   # where a cast was written: head, leaf, inner, late
    floors: List[float] = field(default_factory=list)  # eps values added or clamped under a value
    bound: int = 0                                   # intermediate values bound to a local name
    eps_spelling: str = "literal"                    # literal, local or default (a parameter's default)


LEAVES = ("loc", "scale", "logits")
LEAF_NAMES = {"loc": ("mu", "loc", "mean"), "scale": ("s", "log_var", "log_std", "raw_scale", "rho"),
              "logits": ("logits", "scores", "z")}


class Writer:
    """Builds one expression's statements; every random choice goes through `self.rng`."""

    def __init__(self, rng: random.Random, cast_mode: str, width: int) -> None:
        self.rng = rng
        self.cast_mode = cast_mode
        self.width = width  # D: the head gives 2 * D columns, location then scale
        self.lines: List[str] = []
        self.features = Features()
        self.leaf_names: Dict[str, str] = {}
        self.taken: Set[str] = {"out", "head", "x", "y", "t", "k", "eps", "math", "torch", "F"}
        self.eps_value: float = rng.choice(EPS_VALUES)
        self.features.eps_spelling = rng.choice(("literal", "literal", "literal", "local", "default"))

    # --- choices -------------------------------------------------------------------------------
    def pick(self, options: Sequence[T]) -> T:
        return self.rng.choice(list(options))

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # --- names ---------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        name, n = hint, 2
        while name in self.taken:
            name, n = f"{hint}{n}", n + 1
        self.taken.add(name)
        return name

    def bind(self, e: Expr, hint: str, share: float = BIND_SHARE) -> Expr:
        """With probability `share`, `hint = <e>` becomes a statement and the name stands for it."""
        if e.atom and "(" not in e.code:
            return e
        if not self.chance(share):
            return e
        name = self.fresh(hint)
        self.lines.append(f"{name} = {e.code}")
        self.features.bound += 1
        return Expr(name)

    def must_bind(self, e: Expr, hint: str) -> Expr:
        """A value read twice (`e / e.sum(...)`) is named, as real code names it."""
        return self.bind(e, hint, share=1.0)

    # --- leaves and casts ----------------------------------------------------------------------
    def leaf(self, role: str) -> Expr:
        """The head's location, raw scale or logits block; cast at its use in the `leaf` mode."""
        if role not in self.leaf_names:
            self.leaf_names[role] = self.fresh(self.pick(LEAF_NAMES[role]))
        e = Expr(self.leaf_names[role])
        if self.cast_mode == "leaf" and self.chance(0.75):
            return self.cast(e, "leaf")
        return e

    def cast(self, e: Expr, where: str) -> Expr:
        self.features.casts.append(where)
        return Expr(operand(e) + self.pick(CASTS))

    def maybe_cast(self, e: Expr) -> Expr:
        """In the `inner` mode, any intermediate value may be the one cast."""
        if self.cast_mode == "inner" and self.chance(0.3):
            return self.cast(e, "inner")
        return e

    # --- eps -----------------------------------------------------------------------------------
    def eps(self) -> Expr:
        """The expression's floor, as a literal, a local `eps = ...` or the parameter `eps`."""
        self.features.floors.append(self.eps_value)
        spelling = self.features.eps_spelling
        if spelling == "literal":
            return literal(self.eps_value)
        if spelling == "local" and not any(line.startswith("eps = ") for line in self.lines):
            self.lines.insert(0, f"eps = {self.eps_value!r}")
        return Expr("eps")

    def floor(self, p: Expr) -> Expr:
        """`p + eps`, `eps + p` or a clamp under `p`: how real code keeps a log away from 0."""
        kind = "clamp" if self.chance(0.4) else "+eps"
        self.features.ops.add(kind)
        eps = self.eps()
        if kind == "+eps":
            return binary(p, "+", eps) if self.chance(0.8) else binary(eps, "+", p)
        form = self.rng.randrange(4)
        if form == 0:
            return Expr(f"{operand(p)}.clamp(min={eps.code})")
        if form == 1:
            return Expr(f"torch.clamp({p.code}, min={eps.code})")
        if form == 2:
            return Expr(f"{operand(p)}.clamp_min({eps.code})")
        return Expr(f"torch.clamp({p.code}, {eps.code})")

    def preamble(self, spelling: int) -> Tuple[List[str], Optional[float]]:
        """The head's output and the leaves read from it, and the parameter default for `eps` if any."""
        d = self.width
        lines = ["out = " + ("head(x)" + self.pick(CASTS) if self.cast_mode == "head" else "head(x)")]
        if self.cast_mode == "head":
            self.features.casts.append("head")
        names = self.leaf_names
        if "loc" in names and "scale" in names:
            mu, s = names["loc"], names["scale"]
            lines.append((f"{mu}, {s} = out.chunk(2, dim=-1)", f"{mu}, {s} = torch.chunk(out, 2, dim=-1)",
                          f"{mu}, {s} = out[:, :{d}], out[:, {d}:]")[spelling % 3])
        else:
            for role, cols in (("loc", f":{d}"), ("scale", f"{d}:")):
                if role in names:
                    lines.append(f"{names[role]} = out[{'...' if spelling % 2 else ':'}, {cols}]")
        if "logits" in names:
            z = names["logits"]
            forms = (f"{z} = out[:, :{d}]", f"{z}, _ = out.chunk(2, dim=-1)", f"{z} = out[..., :{d}]")
            lines.append(forms[spelling % 3])
        default = self.eps_value if self.features.eps_spelling == "default" and self.features.floors else None
        return lines, default
