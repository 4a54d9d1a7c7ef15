"""Numbers a hand-written expression computes on probe activations, in float16 where the device runs it so.

Why: whether `torch.exp(0.5 * s)` or `loc ** 2` loses range in float16 is a
question of magnitudes, not of shape: `exp` overflows float16 above 11.1, a
square above 255, a sigmoid rounds to 0 below -17. `amplint.facts.devicemath`
knows in which dtype each op runs on the region's device; this module gives
each value numbers too, so a site whose float16 ops stay in range on every
probe is told apart from one that overflows.

The probes are the analysis's stated assumption about activations, not
measurements of the user's model: every float16 value the analysis cannot
compute (a module's output, a name it cannot follow) is an activation of
magnitude up to `ENVELOPE` (20: logits of a confident classifier, a
log-scale clamped at -20 as SAC's policies clamp it). Each probe row is one
state of the network, every activation in it drawn up to that row's
magnitude (`LADDER`, stratified, the bounds themselves included; some rows
held at one end). Data the
function is handed (targets, labels, counts) is float32, drawn from
[0, ENVELOPE] in every row (it is no state of the network), not negative,
so `torch.log(k + 1)` of counts is no NaN of the reference's own.

Pure Python: the linter must not need torch or NumPy. float16 rounding is
`struct`'s IEEE half format (round to nearest even, subnormals, overflow to
inf); the reference is float64 on the same inputs, as the float16 run's
inputs are (the rounding of the activations themselves is no op's fault).
A value is hazardous when, in any row, float16 gives a non-finite value
where the reference is finite, or an error |f16 - ref| / max(|ref|, 1) above
`amplint.model.PROBE_TOLERANCE` (1e-2), the rule `tests/mathgen` measures truth
by. Ops this module
does not know give no numbers, and then nothing is proved. A value that holds with
an error within a factor `NEAR` of the tolerance is drawn again on `REFINE` times
as many rows (`devicemath.on_device`): a loss by cancellation hides in narrow bands.
"""
from __future__ import annotations

import functools
import math
import random
import struct
import zlib
from dataclasses import dataclass
from itertools import repeat
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from amplint.model import Probed

ENVELOPE = 20.0
# (magnitude, rows): each probe row's bound, calm to saturated; the wide steps get more rows, since float16
# loses range in narrow bands there (a sigmoid rounds to 1 between 8.3 and 9, `1 - p` then to 0).
LADDER = ((0.5, 2), (2.0, 4), (6.0, 8), (12.0, 16), (ENVELOPE, 16))
WIDTH = 8  # entries per row; reductions run over a row
# Math whose largest error on the probes comes within `NEAR` of the tolerance is evaluated again on `REFINE`
# times as many rows: a loss of digits by cancellation (`rate - k * log(rate)` near its root) lives in bands
# too narrow for the first draw to hit reliably, and only such borderline math pays for the second.
NEAR = 5
REFINE = 8
_HUGE = 3.4e38  # float32's range: a reference beyond it says nothing about float16

Row = Tuple[float, ...]


@dataclass(frozen=True)
class Probe:
    """A tensor's values on every probe row: as the device computes them, and exactly (float64)."""

    device: Tuple[Row, ...]
    reference: Tuple[Row, ...]


Value = Union[Probe, float]  # a float: a Python number


def half(x: float) -> float:
    """`x` rounded to float16 (inf beyond 65504)."""
    if x != x or math.isinf(x):
        return x
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


@functools.lru_cache(maxsize=4096)  # a pure function of its key: the same names recur in every site of a file
def leaf(key: str, float16: bool, data: bool = False, density: int = 1) -> Probe:
    """An activation (signed) or the function's data (not negative) named `key`, rounded to float16 when it is
    float16: the same key gives the same numbers. Per step of `LADDER`, rows spread over the whole interval,
    and a quarter as many held at its low end and at its high end (every logit of a row very negative: a
    collapsed scale, a saturated classifier). `density` times as many rows, drawn afresh (`REFINE`)."""
    rng = random.Random(zlib.crc32(f"{key}#{density}".encode()) if density > 1 else zlib.crc32(key.encode()))
    rows: List[Row] = []
    for magnitude, count in LADDER:
        count *= density
        magnitude = ENVELOPE if data else magnitude  # data is no state of the network: any row holds any
        low = 0.0 if data else -magnitude
        middle = (low + magnitude) / 2
        for start, stop, n in ((low, magnitude, count), (low, middle, max(1, count // 4)),
                               (middle, magnitude, max(1, count // 4))):
            rows += _stratified(rng, start, stop, n, float16)
    values = tuple(rows)
    return Probe(values, values)


def _stratified(rng: random.Random, low: float, high: float, count: int, float16: bool) -> List[Row]:
    """`count` rows of `WIDTH`: one draw in each of as many equal slices of [low, high], the ends included."""
    n = count * WIDTH
    drawn = [low + (high - low) * (j + rng.random()) / n for j in range(n)]
    drawn[0], drawn[-1] = low, high
    rng.shuffle(drawn)
    return [half_row(tuple(drawn[i:i + WIDTH])) if float16 else tuple(drawn[i:i + WIDTH]) for i in range(0, n, WIDTH)]


def half_row(row: Row) -> Row:
    """Each of `row` rounded to float16, as `half` rounds it: one `struct` call for the row, element by element
    only where some value overflows float16 (`struct` raises there, `half` gives inf)."""
    form = f"<{len(row)}e"
    try:
        return struct.unpack(form, struct.pack(form, *row))
    except OverflowError:
        return tuple(half(v) for v in row)


def to_half(value: Optional[Value]) -> Optional[Value]:
    """`.half()`: the device's numbers rounded; the reference is untouched."""
    if not isinstance(value, Probe):
        return value
    return Probe(tuple(half_row(row) for row in value.device), value.reference)


# --- float64 math that returns inf/nan where Python raises -------------------------------------------------

def _exp(x: float) -> float:
    return math.exp(x) if x < 709 else math.inf


def _log(x: float) -> float:
    if x != x or x < 0:
        return math.nan
    return math.log(x) if x > 0 else -math.inf


def _sigmoid(x: float) -> float:
    return 1 / (1 + _exp(-x)) if x >= 0 else _exp(x) / (1 + _exp(x))


def _softplus(x: float) -> float:
    return x if x > 20 else math.log1p(_exp(x))  # torch's threshold=20


def _lgamma(x: float) -> float:
    if x != x:
        return x
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


def _guard(f: Callable[..., float]) -> Callable[..., float]:
    def safe(*args: float) -> float:
        for a in args:  # a loop, not `any(...)`: this runs for every probe value of every op
            if a != a:
                return math.nan
        try:
            return f(*args)
        except ZeroDivisionError:
            num = args[0] if args else 1.0
            return math.nan if num == 0 else math.copysign(math.inf, num)
        except (OverflowError, ValueError):
            return math.nan
    return safe


_multiply = _guard(lambda a, b: a * b)


def _pow(a: float, b: float) -> float:
    if a == 0 and b < 0:
        return math.inf
    try:
        out = a ** b
    except OverflowError:
        return math.inf
    return math.nan if isinstance(out, complex) else float(out)


UNARY: Dict[str, Callable[[float], float]] = {
    "exp": _exp, "expm1": _guard(lambda x: _exp(x) - 1), "exp2": _guard(lambda x: _pow(2.0, x)),
    "log": _log, "log2": _guard(lambda x: _log(x) / math.log(2)), "log10": _guard(lambda x: _log(x) / math.log(10)),
    "log1p": _guard(lambda x: _log(1 + x)), "sqrt": _guard(lambda x: math.sqrt(x) if x >= 0 else math.nan),
    "rsqrt": _guard(lambda x: 1 / math.sqrt(x) if x > 0 else (math.inf if x == 0 else math.nan)),
    "reciprocal": _guard(lambda x: 1 / x), "sigmoid": _sigmoid, "softplus": _softplus,
    "logsigmoid": _guard(lambda x: -_softplus(-x)), "tanh": math.tanh, "abs": abs, "neg": lambda x: -x,
    "negative": lambda x: -x, "relu": lambda x: max(x, 0.0), "square": _guard(lambda x: _pow(x, 2.0)),
    "lgamma": _lgamma, "erf": math.erf, "erfc": math.erfc, "sin": math.sin, "cos": math.cos,
    "sinh": _guard(math.sinh), "cosh": _guard(math.cosh), "atan": math.atan, "sign": lambda x: float((x > 0) - (x < 0)),
}
BINARY: Dict[str, Callable[[float, float], float]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": _multiply,
    "div": _guard(lambda a, b: a / b), "pow": _pow, "maximum": max, "minimum": min,
    "xlogy": _guard(lambda a, b: 0.0 if a == 0 else a * _log(b)), "atan2": math.atan2,
}
# Over the last dimension: each row to one value, or to a row (a softmax).
REDUCE: Dict[str, Callable[[Row], Row]] = {
    "sum": lambda r: (_sum(r),), "nansum": lambda r: (_sum([v for v in r if v == v]),),
    "mean": lambda r: (_sum(r) / len(r),), "prod": lambda r: (_product(r),),
    "logsumexp": lambda r: (_logsumexp(r),), "softmax": lambda r: tuple(_exp(v - _logsumexp(r)) for v in r),
    "log_softmax": lambda r: tuple(v - _logsumexp(r) for v in r),
    "cumsum": lambda r: tuple(_sum(r[:i + 1]) for i in range(len(r))),
}


def _sum(row: Sequence[float]) -> float:
    try:
        return math.fsum(row)
    except (ValueError, OverflowError):  # inf - inf, or finite terms past float64's range
        return sum(row)


def _product(row: Sequence[float]) -> float:
    out = 1.0
    for v in row:
        out = _multiply(out, v)
    return out


def _logsumexp(row: Row) -> float:
    top = max(row)
    if math.isinf(top) or top != top:
        return top
    return top + _log(_sum([_exp(v - top) for v in row]))


CLAMPS = frozenset({"clamp", "clip", "clamp_min", "clamp_max"})  # read by `clamp`, bounds and all


def known(op: str) -> bool:
    return op in UNARY or op in BINARY or op in REDUCE or op in CLAMPS


def _rows(value: Value, reference: bool) -> Tuple[Row, ...]:
    return (value.reference if reference else value.device) if isinstance(value, Probe) else ((value,),)


def _zip(a: Row, b: Row) -> Sequence[Tuple[float, float]]:
    if len(a) == len(b):
        return list(zip(a, b))
    if len(a) == 1:
        return [(a[0], v) for v in b]
    if len(b) == 1:
        return [(v, b[0]) for v in a]
    return []


def _broadcast(rows: Sequence[Tuple[Row, ...]]) -> int:
    return max(len(each) for each in rows)


def _compute(op: str, inputs: Sequence[Value], reference: bool) -> Optional[Tuple[Row, ...]]:
    rows = [_rows(each, reference) for each in inputs]
    n = _broadcast(rows)
    picked = [(r * n if len(r) == 1 else r) for r in rows]  # a single row (a number) broadcast to every row
    if op in UNARY:
        return tuple(tuple(map(UNARY[op], row)) for row in picked[0][:n])
    if op in REDUCE:
        return tuple(map(REDUCE[op], picked[0][:n]))
    if op in BINARY and len(inputs) == 2:
        f = BINARY[op]
        out = tuple(_pairwise(f, a, b) for a, b in zip(picked[0][:n], picked[1][:n]))
        return out if all(out) else None
    return None


def _pairwise(f: Callable[[float, float], float], a: Row, b: Row) -> Row:
    """`f` of two rows, entry by entry; a row of one entry broadcast; () where the lengths do not match."""
    if len(a) == len(b):
        return tuple(map(f, a, b))
    if len(a) == 1:
        return tuple(map(f, repeat(a[0], len(b)), b))
    if len(b) == 1:
        return tuple(map(f, a, repeat(b[0], len(a))))
    return ()


def apply(op: str, inputs: Sequence[Optional[Value]], float16: bool) -> Optional[Value]:
    """`op` of `inputs` (None: not known), its device numbers rounded to float16 when it runs in float16 there.
    None when an input or the op is not known."""
    if any(each is None for each in inputs) or not inputs:
        return None
    values = [each for each in inputs if each is not None]
    if not any(isinstance(each, Probe) for each in values):
        out = _compute(op, values, True)
        return out[0][0] if out and len(out[0]) == 1 else None
    device, reference = _compute(op, values, False), _compute(op, values, True)
    if device is None or reference is None:
        return None
    if float16:
        device = tuple(half_row(row) for row in device)
    return Probe(device, reference)


def clamp(value: Optional[Value], low: Optional[Value], high: Optional[Value], float16: bool,
          bounded: bool = True) -> Optional[Value]:
    """`clamp(value, low, high)`; `bounded` False when a bound is written but not known."""
    if value is None or not bounded:
        return None
    out: Optional[Value] = value
    if low is not None:
        out = apply("maximum", [out, low], float16)
    if high is not None:
        out = apply("minimum", [out, high], float16)
    return out


def worse(first: Optional[Probed], second: Optional[Probed]) -> Optional[Probed]:
    """Two draws' verdicts as one: every value compared, the largest error of either."""
    if first is None or second is None:
        return first or second
    return Probed(first.values + second.values, first.nonfinite + second.nonfinite,
                  max(first.max_error, second.max_error))


def judge(value: Optional[Value]) -> Optional[Probed]:
    """How float16 fares on `value` over every probe row; None when its numbers are not known or none compares
    (a Python number; every reference not finite). Values whose float64 reference is not finite are left out:
    those inputs say nothing about float16."""
    if not isinstance(value, Probe):
        return None
    compared = nonfinite = 0
    worst = 0.0
    for device, reference in zip(value.device, value.reference):
        for got, want in _zip(device, reference):
            if want != want or math.isinf(want) or abs(want) > _HUGE:
                continue
            compared += 1
            if got != got or math.isinf(got):
                nonfinite += 1
            else:
                worst = max(worst, abs(got - want) / max(abs(want), 1.0))
    return Probed(compared, nonfinite, worst) if compared else None
