"""`generate(seed, index)`: one random density expression as a function with an autocast region.

Expression `index` of `seed` is always the same text: its choices come from a
`random.Random` seeded with the string `mathgen:{seed}:{index}` (hashed with
SHA-512, so neither the process's hash seed nor the order of generation
matters). `render` writes the module amplint reads, with a CPU or a CUDA
float16 region; `runnable` writes the same statements under `with region():`,
so the truth runs exactly the lines amplint judged, with the region entered by
whoever runs them (CPU autocast, the CUDA policy's emulation, or nothing).
"""
from __future__ import annotations

import ast
import random
from dataclasses import asdict, dataclass
from typing import Dict, List, Optional, Tuple

from .code import CAST_MODES, CAST_WEIGHTS, VANISHING, Expr, Writer
from .families import FAMILIES

WIDTH = 8  # D: the head's Linear gives 2 * D columns (location, then raw scale); logits are the first D
REGIONS = {
    "cpu": 'torch.autocast("cpu", dtype=torch.float16)',
    "cuda": 'torch.autocast("cuda", dtype=torch.float16)',
}
HEADER = "import math\n\nimport torch\nimport torch.nn.functional as F\n\n\n"
SMALLEST_NORMAL = 2.0 ** -14
CASTING = ("float", "to", "double", "type")


@dataclass(frozen=True)
class MathCase:
    """One generated expression and what it is made of (the scorer's breakdown keys)."""

    seed: int
    index: int
    family: str            # the density shape (FAMILIES)
    top_op: str            # the outermost op of the returned value, casts and negation aside
    cast: str              # where a cast was written: none, head, leaf, inner or late
    eps: str               # the floor: none, vanishing (< 2**-24), subnormal or normal in float16
    bound: bool            # whether intermediate values are bound to local names
    ops: Tuple[str, ...]   # every op the expression uses, sorted
    params: str            # the function's parameters
    body: Tuple[str, ...]  # the statements inside the region

    def to_dict(self) -> Dict[str, object]:
        return asdict(self)


def _weighted(rng: random.Random, options: Dict[str, int]) -> str:
    return rng.choices(list(options), weights=list(options.values()))[0]


def generate(seed: int, index: int) -> MathCase:
    rng = random.Random(f"mathgen:{seed}:{index}")
    family = _weighted(rng, {name: weight for name, (_, weight) in FAMILIES.items()})
    cast_mode = _weighted(rng, dict(zip(CAST_MODES, CAST_WEIGHTS)))
    w = Writer(rng, cast_mode, WIDTH)
    result: Expr = FAMILIES[family][0](w)
    if cast_mode == "late":
        if w.chance(0.5):
            name = w.fresh(w.pick(("loss", "nll", "value")))
            w.lines.append(f"{name} = {result.code}")
            result = Expr(name)
        result = w.cast(result, "late")
    preamble, default = w.preamble(rng.randrange(6))
    params = "head, x, y, t, k" + (f", eps={default!r}" if default is not None else "")
    body = tuple(preamble + w.lines + [f"return {result.code}"])
    f = w.features
    return MathCase(seed=seed, index=index, family=family, top_op=top_op(body), cast=_cast_label(f.casts),
                    eps=_eps_label(f.floors), bound=f.bound > 0, ops=tuple(sorted(f.ops)), params=params, body=body)


def _cast_label(casts: List[str]) -> str:
    if not casts:
        return "none"
    if "head" in casts:
        return "head"
    if set(casts) == {"late"}:
        return "late"
    return "inner" if "inner" in casts else "leaf"


def _eps_label(floors: List[float]) -> str:
    if not floors:
        return "none"
    smallest = min(floors)
    if smallest < VANISHING:
        return "vanishing"
    return "subnormal" if smallest < SMALLEST_NORMAL else "normal"


def _function(case: MathCase, with_line: str) -> str:
    body = "".join(f"        {line}\n" for line in case.body)
    return f"def loss({case.params}):\n    with {with_line}:\n{body}"


def render(case: MathCase, device: str) -> str:
    """The module amplint checks: the function with a float16 region for `device` ("cpu" or "cuda")."""
    return HEADER + _function(case, REGIONS[device])


def runnable(case: MathCase) -> str:
    """The same statements under `with region():`; the runner binds `region` in the module's namespace."""
    return HEADER + _function(case, "region()")


def body_line(case: MathCase, line: int) -> Optional[int]:
    """Which statement of `case.body` a line of `render(case, ...)` holds (0-based), None outside the body."""
    first = HEADER.count("\n") + 3
    offset = line - first
    return offset if 0 <= offset < len(case.body) else None


def top_op(body: Tuple[str, ...]) -> str:
    """The returned value's outermost op, reading through names bound in the body, casts and negation."""
    tree = ast.parse("\n".join(body[:-1] + ("__result__ = " + body[-1][len("return "):],)))
    bound: Dict[str, ast.expr] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            bound[stmt.targets[0].id] = stmt.value
    node = bound["__result__"]
    for _ in range(20):
        if isinstance(node, ast.Name) and node.id in bound:
            node = bound.pop(node.id)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            node = node.operand
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in CASTING):
            node = node.func.value
        else:
            break
    if isinstance(node, ast.BinOp):
        return {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}.get(
            type(node.op), type(node.op).__name__.lower())
    if isinstance(node, ast.Call):
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "call")
    return type(node).__name__.lower()


def handwritten(body: Tuple[str, ...], params: str = "head, x, y, t, k", family: str = "hand") -> MathCase:
    """A case from statements written by hand (the tests' pinned expressions), described as the generator would."""
    return MathCase(seed=-1, index=0, family=family, top_op=top_op(body), cast="none", eps="none", bound=False,
                    ops=(), params=params, body=tuple(body))
