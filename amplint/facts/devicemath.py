"""Which range-losing ops of a hand-written computation run in float16 under its region's device policy.

Why: the same written-out Gaussian NLL overflows under CPU float16 autocast
and holds under CUDA's, which runs `exp`, `pow`, `log`, `softmax` and `sum`
in float32 (`amplint.policies`); a `sigmoid`, a product of two tensors or a
division runs in its inputs' dtype on both. So whether a site loses range on
a device is a question about each op on the way to its value: in which dtype
does it run there, and does float16 lose range in it?

Each expression is evaluated once, bottom up, to a `Computed`: the dtype it
has on the device (float16, float32, or a Python number) and the ops that
lost range on the way (`lossy`). An op loses range when it runs in float16
and overflows or underflows there (`RANGE_OPS`: `exp`, `pow`, `sigmoid`, a
product or quotient of tensors, ...), or when it reads a float16 value in
which a zero is fatal (`log`, `lgamma`, a denominator: `ZERO_FATAL`), since
that value may already have underflowed. A cast keeps the losses below it: a
sigmoid that saturated in float16 stays saturated after `.float()`.

Conservative where it cannot see: a value that is not a number, not proved
float32 (`is_wide`) and not computed here is float16; a call of a project
function is a value of its own (its body is judged where it is written).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

import libcst as cst

from amplint import dtypes
from amplint.facts import probes
from amplint.facts.mathcalls import imported, number_value
from amplint.facts.mathenv import Env, self_attribute
from amplint.facts.mathnames import python_math
from amplint.model import PROBE_TOLERANCE, OnDevice
from amplint.names import dotted_name
from amplint.policies import FLOAT32, LOWER, AutocastPolicy

F16, F32, NUMBER = "float16", "float32", "number"

# Ops that overflow, underflow or saturate when they run in float16.
RANGE_OPS = frozenset({
    "exp", "expm1", "exp2", "pow", "square", "softmax", "logsumexp", "sum", "nansum", "prod", "cumsum",
    "cumprod", "lgamma", "digamma", "log", "log2", "log10", "log1p", "sigmoid", "softplus", "reciprocal",
    "rsqrt", "sinh", "cosh", "erfc", "div", "mul",
})
# Ops whose result is non-finite when the value they read is a zero float16 produced by rounding.
ZERO_FATAL = frozenset({"log", "log2", "log10", "lgamma", "digamma", "reciprocal", "rsqrt"})
# Ops of two tensors that lose range only when both are tensors (`0.5 * x` is no product of tensors).
PRODUCTS = frozenset({"mul", "div"})
_OPERATORS = {cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.Power: "pow",
              cst.MatrixMultiply: "matmul", cst.FloorDivide: "floor_divide", cst.Modulo: "remainder"}
_BINARY_FUNCTIONS = frozenset({"add", "sub", "mul", "div", "pow", "maximum", "minimum", "where", "atan2", "xlogy"})
# Spellings autocast sees as another op: `torch.square` dispatches `pow` (float32 on CUDA), `divide` is `div`.
_SAME_OP = {"square": "pow", "float_power": "pow", "divide": "div", "true_divide": "div", "multiply": "mul",
            "subtract": "sub", "expit": "sigmoid"}
_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_DEPTH = 8  # how many bindings back a name is followed


@dataclass(frozen=True)
class Computed:
    """A value's dtype on the device, and the ops that lost range on the way to it."""

    dtype: str
    lossy: Tuple[str, ...] = ()
    # The float16 operands of the first ops that lost range: where a cast would have saved it.
    sources: Tuple[cst.BaseExpression, ...] = ()
    # Its numbers on the probe activations (`amplint.facts.probes`); None where they are not known.
    values: Optional[probes.Value] = None
    leaf: bool = False  # an activation or data the analysis does not compute: a slice of it is another one


Numbers = Callable[[List[Computed], bool], Optional[probes.Value]]  # an op's numbers from its operands'
UNREAD = "an expression the analysis does not read"
OPAQUE = Computed(F16, (UNREAD,))


class DeviceMath:
    """Evaluates expressions of one function under one policy; answers are memoized per node."""

    def __init__(self, env: Env, policy: AutocastPolicy, is_wide: Callable[[cst.BaseExpression], bool],
                 data: FrozenSet[str] = frozenset(), density: int = 1) -> None:
        self.env = env
        self.density = density  # probe rows per leaf, as a multiple of `probes.LADDER`'s
        self.data = data  # parameters that hold the caller's values (`Site.data`): float32 data, not float16
        self.policy = policy
        self.is_wide = is_wide
        self._memo: Dict[int, Tuple[cst.CSTNode, Computed]] = {}
        self._following: List[str] = []

    def of(self, node: cst.BaseExpression) -> Computed:
        entry = self._memo.get(id(node))
        if entry is not None and entry[0] is node:
            return entry[1]
        result = self._compute(node)
        self._memo[id(node)] = (node, result)
        return result

    # --- leaves ----------------------------------------------------------------------------------------
    def _compute(self, node: cst.BaseExpression) -> Computed:
        if dtypes.is_number(node) or isinstance(node, _STRINGS):
            return Computed(NUMBER, values=_literal(node))
        if isinstance(node, (cst.Name, cst.Attribute)) and self._is_constant(node):
            return Computed(NUMBER, values=_MATH_CONSTANTS.get(node.attr.value) if isinstance(
                node, cst.Attribute) else None)
        if isinstance(node, cst.Name):
            return self._name(node)
        if isinstance(node, cst.Attribute):
            attr = self_attribute(node)
            if attr is not None:
                return self._bound(f"self.{attr}", self.env.attribute_values(attr), node)
            return self._leaf(node) if self.is_wide(node) else self.of(node.value)  # `x.T`, `x.data`
        if isinstance(node, cst.Subscript):  # a view or an element keeps its dtype
            inner = self.of(node.value)
            return self._leaf(node, inner.dtype) if inner.leaf else inner  # a slice of an activation is one
        if isinstance(node, cst.UnaryOperation):
            inner = self.of(node.expression)
            if isinstance(node.operator, cst.Plus):
                return inner
            negated = probes.apply("neg", [inner.values], inner.dtype == F16) if isinstance(
                node.operator, cst.Minus) else None  # `not x`, `~x`: no numbers
            return Computed(inner.dtype, inner.lossy, inner.sources, negated)
        if isinstance(node, cst.BinaryOperation):
            op = _OPERATORS.get(type(node.operator), "add")
            return self._op(op, [node.left, node.right], denominator=node.right if op == "div" else None)
        if isinstance(node, cst.IfExp):
            return _either([self.of(node.body), self.of(node.orelse)])
        if isinstance(node, cst.Call):
            return self._call(node)
        return OPAQUE

    def _is_constant(self, node: cst.BaseExpression) -> bool:
        """`math.pi`, `np.log(2 * np.pi)`: Python or NumPy math, a number."""
        name = dotted_name(node)
        return name is not None and python_math(name, self.env.imports)

    def _leaf(self, node: cst.BaseExpression, dtype: Optional[str] = None, data: bool = False) -> Computed:
        """A value the analysis does not compute: float16 unless proved float32; its numbers are probes (an
        activation's, or `data`'s: the caller's targets and counts)."""
        dtype = dtype or (F32 if self.is_wide(node) else F16)
        return Computed(dtype, values=probes.leaf(_code(node), dtype == F16, data, self.density), leaf=True)

    def _name(self, node: cst.Name) -> Computed:
        """A local is its bindings (a cast among them keeps what was lost before it); a parameter the function
        rebinds is what it was given or any of those; anything else a leaf."""
        local = self.env.is_local(node.value) or self._default(node)
        values = self.env.values(node.value) if local else ()
        if not values and node.value in self.data:
            return self._leaf(node, F32, data=True)
        rebound = () if local else self.env.values(node.value)
        if rebound and node.value not in self._following:
            return _either([self._leaf(node), self._bound(node.value, rebound, node)])
        return self._bound(node.value, values, node)

    def _default(self, node: cst.Name) -> bool:
        """A parameter with a number default (`eps=1e-6`) is that number."""
        return all(dtypes.is_number(value) for value in self.env.values(node.value)) and bool(
            self.env.values(node.value))

    def _bound(self, key: str, values: Sequence[cst.BaseExpression], node: cst.BaseExpression) -> Computed:
        """The join of a name's bindings (every binding counts: the mathenv is flow-insensitive)."""
        if not values or key in self._following or len(self._following) >= _DEPTH:
            return self._leaf(node)
        self._following.append(key)
        try:
            return _either([self.of(value) for value in values])
        finally:
            self._following.pop()

    # --- ops -------------------------------------------------------------------------------------------
    def _call(self, node: cst.Call) -> Computed:
        table = self.env.imports
        if dtypes.is_float32_factory(node, table):
            return Computed(F32)
        func = node.func
        receiver = func.value if isinstance(func, cst.Attribute) and not imported(func.value, self.env) else None
        if dtypes.is_cast_call(node, table):
            inner = self.of(receiver) if receiver is not None else Computed(F32)
            return Computed(F32, inner.lossy, inner.sources, inner.values if receiver is not None else None)
        args = [arg.value for arg in node.args if not arg.star and arg.keyword is None]
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            return self._leaf(node)  # `self.fc(x)`: a module's output, an activation
        if receiver is not None:
            op = func.attr.value  # type: ignore[union-attr]
            if op == "half":
                inner = self.of(receiver)
                return Computed(F16, inner.lossy, inner.sources, probes.to_half(inner.values))
            if op in ("to", "type", "detach", "clone", "contiguous", "cpu", "cuda"):
                return self.of(receiver)
            named, op = op, _SAME_OP.get(op, op)
            operands = [receiver] + [a for a in args[:1] if op in _BINARY_FUNCTIONS]
            return self._op(op, operands, denominator=args[0] if op == "div" and args else None,
                            numbers=self._numbers(named, node, args, 0))
        op = dtypes.torch_op(func, table)  # `torch.exp(x)`, `F.softplus(x)`: a module's function
        if op is None:
            if self._is_constant(func):  # `math.log(2 * math.pi)`
                name = func.attr.value if isinstance(func, cst.Attribute) else ""
                inputs = [self.of(a).values for a in args[:2]]
                return Computed(NUMBER, values=probes.apply(name, inputs, False) if probes.known(name) else None)
            return self._leaf(node)
        named, op = op, _SAME_OP.get(op, op)
        operands = args[1:3] if op == "where" else args[:2] if op in _BINARY_FUNCTIONS else args[:1]
        return self._op(op, operands, denominator=args[1] if op == "div" and len(args) > 1 else None,
                        numbers=self._numbers(named, node, args, 1))

    def _numbers(self, named: str, call: cst.Call, args: Sequence[cst.BaseExpression], first: int) -> Numbers:
        """How `call`'s numbers follow from its operands'. `first`: the position of the first argument after the
        tensor (0 for `x.clamp(lo)`, 1 for `torch.clamp(x, lo)`). Unknown keywords give no numbers."""
        op = _VALUE_OP.get(named, _SAME_OP.get(named, named))
        keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword is not None}
        rest = list(args[first:])
        if op in probes.CLAMPS:
            low = keywords.get("min", rest[0] if rest and op != "clamp_max" else None)
            high = keywords.get("max", rest[1] if len(rest) > 1 else rest[0] if rest and op == "clamp_max" else None)

            def clamped(inputs: List[Computed], float16: bool) -> Optional[probes.Value]:
                bounds = [self.of(b).values if b is not None else None for b in (low, high)]
                known = all(v is not None for b, v in zip((low, high), bounds) if b is not None)
                return probes.clamp(inputs[0].values, bounds[0], bounds[1], float16, known)
            return clamped
        if op in probes.REDUCE:
            dim = keywords.get("dim", rest[0] if rest else None)
            if dim is None or _literal(dim) not in (-1, 1) or set(keywords) - {"dim", "keepdim"}:
                return _unknown  # over every dimension, or another: the rows say nothing
        elif set(keywords) - ({"input", "other"} if op in probes.BINARY else {"input"}):
            return _unknown  # `softplus(x, beta=2)`, `pow(x, exponent=...)`: not read
        return _applying(op)

    def _op(self, op: str, operands: Sequence[cst.BaseExpression],
            denominator: Optional[cst.BaseExpression] = None,
            numbers: Optional[Numbers] = None) -> Computed:
        inputs = [self.of(each) for each in operands]
        numbers = numbers or _applying(op)
        tensors = [each for each in inputs if each.dtype != NUMBER]
        lossy = tuple(dict.fromkeys(name for each in inputs for name in each.lossy))
        sources = _union(each.sources for each in inputs)
        if not tensors:
            return Computed(NUMBER, lossy, sources, numbers(inputs, False))
        policy = self.policy.policy_of(op)
        if policy == FLOAT32:
            runs = F32
        elif policy == LOWER:
            runs = F16
        else:
            runs = F32 if any(each.dtype == F32 for each in tensors) else F16
        read_float16 = any(each.dtype == F16 for each in tensors)
        loses = op in RANGE_OPS and runs == F16 and (op not in PRODUCTS or len(tensors) == 2)
        if denominator is not None and self.of(denominator).dtype == F16:
            loses = True  # a float16 denominator may have rounded to 0
        if op in ZERO_FATAL and read_float16:
            loses = True
        if loses:
            lossy += (op,) if op not in lossy else ()
            sources = _union([sources, tuple(node for node, each in zip(operands, inputs)
                                             if each.dtype == F16 and not each.lossy)])
        return Computed(runs, lossy, sources, numbers(inputs, runs == F16))


def _unknown(inputs: List[Computed], float16: bool) -> Optional[probes.Value]:
    return None


def _applying(op: str) -> Numbers:
    """`op`'s numbers, each operand's in order, where `amplint.facts.probes` knows the op."""
    if not probes.known(op):
        return _unknown
    return lambda inputs, float16: probes.apply(op, [each.values for each in inputs], float16)


def _either(results: Sequence[Computed]) -> Computed:
    """Alternatives (a name's bindings, an `if` expression's arms): float16 if any is, losses of all; numbers
    only when every alternative has the same."""
    if not results:
        return OPAQUE
    dtypes_seen = {each.dtype for each in results}
    dtype = F16 if F16 in dtypes_seen else F32 if F32 in dtypes_seen else NUMBER
    values = results[0].values if all(each.values == results[0].values for each in results[1:]) else None
    return Computed(dtype, tuple(dict.fromkeys(name for each in results for name in each.lossy)),
                    _union(each.sources for each in results), values,
                    leaf=len(results) == 1 and results[0].leaf)


_VALUE_OP = {"square": "square"}  # autocast sees `pow`; its numbers are a square's
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau, "inf": math.inf}


def _literal(node: cst.BaseExpression) -> Optional[float]:
    """A number literal's value (`-1`, `1e-10`, `True`), else None."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return float(node.value == "True")
    return number_value(node)


def _code(node: cst.BaseExpression) -> str:
    return cst.Module([]).code_for_node(node)


def _union(groups: Iterable[Tuple[cst.BaseExpression, ...]]) -> Tuple[cst.BaseExpression, ...]:
    seen: Dict[int, cst.BaseExpression] = {}
    for group in groups:
        for node in group:
            seen.setdefault(id(node), node)
    return tuple(seen.values())


def on_device(node: cst.BaseExpression, env: Env, policy: Optional[AutocastPolicy],
              is_wide: Callable[[cst.BaseExpression], bool], data: FrozenSet[str] = frozenset(),
              floor: bool = False, whole: Optional[cst.BaseExpression] = None) -> OnDevice:
    """How `policy` computes `node`. `whole`: the value of the statement holding `node`, since what the line
    computes is what the loss gets: the policy spares the site only when it spares the statement too (a
    float32 `log` divided by a float16 `sigmoid` is still lost), and the probes judge the statement where its
    numbers are known (`p * torch.log(p + 1e-6)` is exact where the log alone is not). `data`: parameters read
    as float32 data. `floor`: `node` is what a floor is added to, so it must also be float32 there (an add runs
    in its inputs' dtype, and float16 rounds the floor to 0); the probes do not judge a floor."""
    if policy is None:
        return OnDevice()
    evaluator = DeviceMath(env, policy, is_wide, data)
    computed = evaluator.of(node)
    if floor:
        return OnDevice(policy.device, spared=not computed.lossy and computed.dtype != F16)
    statement = _statement(evaluator, node, whole)
    if not computed.lossy and not statement.lossy:
        return OnDevice(policy.device, spared=True)
    probed = probes.judge(_judged(computed, statement))
    if probed is not None and probed.holds and probed.max_error * probes.NEAR > PROBE_TOLERANCE:
        denser = DeviceMath(env, policy, is_wide, data, probes.REFINE)
        probed = probes.worse(probed, probes.judge(_judged(denser.of(node), _statement(denser, node, whole))))
    return OnDevice(policy.device, probed=probed)


def _statement(evaluator: DeviceMath, node: cst.BaseExpression, whole: Optional[cst.BaseExpression]) -> Computed:
    """The statement's value, or the site's own where the walk cannot read the statement (several values, a
    comprehension) or there is none."""
    statement = evaluator.of(whole) if whole is not None and whole is not node else evaluator.of(node)
    return evaluator.of(node) if UNREAD in statement.lossy else statement


def _judged(computed: Computed, statement: Computed) -> Optional[probes.Value]:
    """The numbers the probes judge: the statement's where known, else the site's own."""
    return computed.values if statement.values is None else statement.values


def statement_sources(whole: cst.BaseExpression, env: Env, policy: AutocastPolicy,
                      is_wide: Callable[[cst.BaseExpression], bool], data: FrozenSet[str] = frozenset()
                      ) -> List[cst.BaseExpression]:
    """The float16 tensors a statement loses range from under `policy` (the operands of its first ops that lost
    it), or [] when it loses none or cannot be read whole: what a cast must reach there."""
    computed = DeviceMath(env, policy, is_wide, data).of(whole)
    return [] if UNREAD in computed.lossy else list(computed.sources)


def cast_too_late(node: cst.BaseExpression, env: Env, policy: Optional[AutocastPolicy],
                  is_wide: Callable[[cst.BaseExpression], bool]) -> List[cst.BaseExpression]:
    """The float16 tensors a float32 `node` was computed from with range lost first (`sigmoid(z).float()`,
    `torch.exp(s).float()` under CPU autocast): the cast comes after float16 saturated or overflowed, so it
    restores nothing, and these are what a cast must reach. [] when `node` lost nothing, or the device is not
    known."""
    if policy is None:
        return []
    computed = DeviceMath(env, policy, is_wide).of(node)
    return list(computed.sources) if computed.dtype == F32 and computed.lossy else []
