"""Which expressions are distributions, and which are already float32.

"Float32" here means: cast to float32/float64 before any op that could
underflow in float16, or a Python number. An elementwise transform of a cast
tensor stays wide, which is what lets fix A cast *before* `exp`/`sigmoid`
(measured: casting after `exp(head)` still leaves 2,444 NaN in a Poisson rate).
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from amplint.names import ImportTable, dotted_name as dotted_name_of
from amplint.policies import FLOAT32, AutocastPolicy
from amplint.screen import KL_NAMES  # noqa: F401 - the analysis reads it here
from amplint.torchnames import (
    ARITHMETIC_METHODS, CAST_METHODS, DISTRIBUTION_PACKAGES, DTYPE_CAST_METHODS, ELEMENTWISE_METHODS,
    FACTORY_FUNCTIONS, SELECT_FUNCTIONS, TRANSFORM_FUNCTIONS, WIDE_DTYPES, distribution_name,
)

# Constructor parameters that are counts or shapes, never tensors to cast.
NON_TENSOR_KEYWORDS = frozenset(
    {"validate_args", "reinterpreted_batch_ndims", "total_count", "event_dim", "cache_size", "transforms"}
)
NON_TENSOR_POSITIONS = {
    "Independent": frozenset({1}),
    "Multinomial": frozenset({0}),
    "Binomial": frozenset({0}),
    "NegativeBinomial": frozenset({0}),
    "TransformedDistribution": frozenset({1}),
}

# Distributions whose value is an index, a 0/1 label or a count: torch's `support.is_discrete`
# (tests/test_discrete_values.py checks this table against the installed torch). Casting such a value to
# float32 protects nothing: `Categorical`/`OneHotCategorical` turn it into an index, and a `Geometric` count
# only multiplies float32 logs. Measured under CPU float16 autocast and with autocast off: the same log_prob
# for long, float32 and float16 values. `ContinuousBernoulli`, `RelaxedBernoulli` and
# `RelaxedOneHotCategorical` have continuous supports: not here.
DISCRETE_VALUE_CLASSES = frozenset(
    {"Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial", "NegativeBinomial", "OneHotCategorical",
     "OneHotCategoricalStraightThrough", "Poisson"}
)
# The discrete ones whose log_prob changes when the value itself is float16 (measured on torch 2.13 CPU):
# `Poisson`/`Binomial`/`NegativeBinomial`/`Multinomial` take `lgamma(value + 1)` in the value's dtype (-inf from
# a float16 count of 8192; off by 1.5 nats at 2000), and `Bernoulli`'s `binary_cross_entropy_with_logits`
# returns the label's dtype when autocast is off (fix C, a disabled region): a float16 0/1 label gives a
# float16 log_prob (off by 0.05 at |logit| <= 100, inf from 65504). A `.float()` of the same value gives the
# float32 result, so their value needs a cast when it was made in a float16 region; an integer or float32
# value is exact (a long Bernoulli label makes torch raise, cast or not).
FLOAT16_VALUE_CLASSES = frozenset({"Bernoulli", "Binomial", "Multinomial", "NegativeBinomial", "Poisson"})
# Wrappers whose value is their one base distribution's value.
VALUE_WRAPPERS = frozenset({"Independent", "ExpandedDistribution", "MaskedDistribution"})
INTEGER_DTYPES = frozenset(
    {"torch.long", "torch.int64", "torch.int", "torch.int32", "torch.int16", "torch.short", "torch.int8",
     "torch.uint8", "torch.bool"}
)
INTEGER_CAST_METHODS = frozenset({"long", "int", "short", "byte", "char", "bool"})
_NUMBERS = frozenset({cst.Integer, cst.Float, cst.Imaginary})
_SIGNS = frozenset({cst.Minus, cst.Plus})


def is_number(node: cst.BaseExpression) -> bool:
    kind = type(node)  # not `isinstance`: on LibCST's ABCs a failing one is slow, and most fail here
    if kind in _NUMBERS:
        return True
    if kind is cst.UnaryOperation and type(node.operator) in _SIGNS:
        return is_number(node.expression)
    if kind is cst.Name and node.value in ("True", "False", "None"):
        return True
    return False


# Parameters of wrapper distributions that hold another distribution: (positions, keywords).
DISTRIBUTION_SLOTS: Dict[str, Tuple[FrozenSet[int], FrozenSet[str]]] = {
    "Independent": (frozenset({0}), frozenset({"base_distribution"})),
    "TransformedDistribution": (frozenset({0}), frozenset({"base_distribution"})),
    "MixtureSameFamily": (frozenset({0, 1}), frozenset({"mixture_distribution", "component_distribution"})),
    "ExpandedDistribution": (frozenset({0}), frozenset({"base_dist"})),
    "MaskedDistribution": (frozenset({0}), frozenset({"base_dist"})),
    "FoldedDistribution": (frozenset({0}), frozenset({"base_dist"})),
}

# Methods that return a distribution made from the one they are called on.
DISTRIBUTION_METHODS = frozenset({"expand", "expand_by", "to_event", "mask", "independent"})


def slot_args(qualname: str, call: cst.Call) -> Iterator[cst.Arg]:
    """The arguments of `call` (a constructor of `qualname`) that hold a distribution."""
    positions, keywords = DISTRIBUTION_SLOTS.get(qualname.rsplit(".", 1)[-1], (frozenset(), frozenset()))
    position = 0
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is None:
            if position in positions:
                yield arg
            position += 1
        elif arg.keyword.value in keywords:
            yield arg


def distribution_class(func: cst.BaseExpression, table: ImportTable, extra: FrozenSet[str]) -> Optional[str]:
    """The qualified class name if `func` names a distribution class, else None."""
    return distribution_name(table.qualnames(func), extra)


def is_non_tensor_arg(class_name: str, arg: cst.Arg, position: Optional[int]) -> bool:
    if arg.keyword is not None:
        return arg.keyword.value in NON_TENSOR_KEYWORDS
    short = class_name.rsplit(".", 1)[-1]
    return position is not None and position in NON_TENSOR_POSITIONS.get(short, frozenset())


def discrete_value_class(qualname: str, components: Sequence[Optional[str]]) -> Optional[str]:
    """The discrete class (`"Categorical"`) whose value `qualname`'s `log_prob` takes, or None when it is continuous.

    `components`: the same answer for each distribution argument, in order: a wrapper such as
    `Independent(Bernoulli(logits=l), 1)` takes its base's value. Only torch/pyro classes count (a configured
    class of the same short name may be anything).
    """
    if not qualname.startswith(DISTRIBUTION_PACKAGES):
        return None
    short = qualname.rsplit(".", 1)[-1]
    if short in DISCRETE_VALUE_CLASSES:
        return short
    if short in VALUE_WRAPPERS and len(components) == 1:
        return components[0]
    return None


def is_integer_cast(node: cst.BaseExpression, table: ImportTable) -> bool:
    """`x.long()`, `x.int()`, `x.to(torch.int64)`, `x.type(torch.long)`: an integer tensor, exact whatever it was."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return False
    method = node.func.attr.value
    if method in INTEGER_CAST_METHODS:
        return not node.args
    return method in DTYPE_CAST_METHODS and any(
        (arg.keyword is None or arg.keyword.value == "dtype") and table.matches(arg.value, INTEGER_DTYPES)
        for arg in node.args)


def is_transform(node: cst.BaseExpression, table: ImportTable) -> bool:
    """Transforms (and lists of them) passed to a constructor are not tensors."""
    if isinstance(node, (cst.List, cst.Tuple)):
        return all(is_transform(element.value, table) for element in node.elements)
    if isinstance(node, cst.Call):
        return any(name.startswith("torch.distributions.transforms.") for name in table.qualnames(node.func))
    return False


def constructor_arguments(qualname: str, call: cst.Call, table: ImportTable) -> Tuple[List[cst.BaseExpression], bool]:
    """What a distribution constructor is given that may be a tensor or a nested distribution, in order,
    and whether a `*args`/`**kwargs` may pass others: counts, shapes, numbers and transforms left out.

    The analysis reads its inputs from it and the fixer its casts, so both agree on what is a tensor.
    """
    values: List[cst.BaseExpression] = []
    star = False
    position = 0
    for arg in call.args:
        if arg.star:
            star = True
            continue
        index = position if arg.keyword is None else None
        if arg.keyword is None:
            position += 1
        if is_non_tensor_arg(qualname, arg, index) or is_number(arg.value) or is_transform(arg.value, table):
            continue
        values.append(arg.value)
    return values, star


def is_cast_call(node: cst.BaseExpression, table: ImportTable) -> bool:
    """`x.float()`, `x.to(torch.float32)`, `x.type(dtype=torch.float64)`, `torch.zeros(n, dtype=torch.float32)`."""
    if not isinstance(node, cst.Call):
        return False
    if any(arg.keyword is not None and arg.keyword.value == "dtype" and table.matches(arg.value, WIDE_DTYPES)
           for arg in node.args):
        return True
    if not isinstance(node.func, cst.Attribute):
        return False
    method = node.func.attr.value
    if method in CAST_METHODS and not node.args:
        return True
    if method in DTYPE_CAST_METHODS:
        return any(
            (arg.keyword is None or arg.keyword.value == "dtype") and table.matches(arg.value, WIDE_DTYPES)
            for arg in node.args
        )
    return False


def is_wide(
    node: cst.BaseExpression, table: ImportTable, wide_name: Callable[[str], bool],
    promoted: Optional[Callable[[cst.BaseExpression], bool]] = None,
) -> bool:
    """True when `node` is a float32/float64 tensor or a Python number.

    `wide_name` says whether a local name was assigned from a wide expression; `promoted`, whether the
    region's autocast policy runs an op in float32 (`runs_in_float32`: CUDA's `softmax`, `exp`, `pow`...).
    """
    if is_number(node):
        return True
    kind = type(node)
    if kind is cst.Name:
        return wide_name(node.value)
    if is_cast_call(node, table) or is_float32_factory(node, table):
        return True
    if promoted is not None and promoted(node):
        return True
    if kind is cst.Subscript:
        return is_wide(node.value, table, wide_name, promoted)
    if kind is cst.BinaryOperation:
        left = is_wide(node.left, table, wide_name, promoted)
        right = is_wide(node.right, table, wide_name, promoted)
        return left and right and not (is_number(node.left) and is_number(node.right))
    if kind is cst.UnaryOperation:
        return is_wide(node.expression, table, wide_name, promoted)
    if kind is cst.Call:
        operands = transform_operands(node, table)
        return bool(operands) and all(is_wide(op, table, wide_name, promoted) for op in operands)
    if isinstance(node, (cst.DictComp, cst.ListComp, cst.GeneratorExp)):  # `**{k: v.float() ... for ...}`
        element = node.value if isinstance(node, cst.DictComp) else node.elt
        return is_cast_call(element, table) or _casts_tensors(element, table)
    return False


def promoted_by(policy: Optional[AutocastPolicy], table: ImportTable) -> Optional[Callable[[cst.BaseExpression], bool]]:
    """`is_wide`'s `promoted` for a region with `policy` (None: no autocast, or a device not known)."""
    return None if policy is None else partial(runs_in_float32, table=table, policy=policy)


def runs_in_float32(node: cst.BaseExpression, table: ImportTable, policy: AutocastPolicy) -> bool:
    """`torch.softmax(x, 1)`, `x.exp()`, `x ** 2`, `F.softplus(x)`: an op `policy` runs in float32 whatever its
    inputs (CUDA's list; CPU's holds none of these). A function of another module is not a torch op."""
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, cst.Power) and policy.policy_of("pow") == FLOAT32
    op = torch_op(node.func, table) if isinstance(node, cst.Call) else None
    return op is not None and policy.policy_of(op) == FLOAT32


def torch_op(func: cst.BaseExpression, table: ImportTable) -> Optional[str]:
    """The op a call's function names, as autocast's lists name it: `exp` of `torch.exp(x)`, `x.exp()`,
    `from torch import exp as e; e(x)`, `softplus` of `F.softplus(x)`. None for a function of another module
    (`np.exp`, `math.log`) or of the project (`exp(x)` with no torch import)."""
    if isinstance(func, cst.Attribute):
        root = dotted_name_of(func.value)
        if root is not None and root.split(".")[0] in table.bindings and not any(
                q.split(".")[0] == "torch" for q in table.qualnames_of(root.split(".")[0])):
            return None  # `np.exp(x)`, `self.log(...)` of a module that is not torch's
        return func.attr.value
    if isinstance(func, cst.Name):
        names = sorted(q for q in table.qualnames_of(func.value) if q.split(".")[0] == "torch")
        return names[0].rsplit(".", 1)[-1] if names else None
    return None


def _casts_tensors(node: cst.BaseExpression, table: ImportTable) -> bool:
    """`v.float() if torch.is_tensor(v) else v`: every tensor cast, anything else left as it is."""
    if not (isinstance(node, cst.IfExp) and isinstance(node.orelse, cst.Name) and is_cast_call(node.body, table)):
        return False
    cast, test = node.body, node.test
    guard = dotted_name_of(test.func) if isinstance(test, cst.Call) else None
    casts_name = isinstance(cast, cst.Call) and isinstance(cast.func, cst.Attribute) and isinstance(
        cast.func.value, cst.Name) and cast.func.value.value == node.orelse.value
    return (casts_name
            and guard is not None and guard.rsplit(".", 1)[-1] in ("is_tensor", "isinstance", "hasattr"))


def is_float32_factory(node: cst.BaseExpression, table: ImportTable) -> bool:
    """`torch.randn(n)`, `torch.zeros(shape, device=d)`, `torch.tensor(0.5)`: float32 by construction.

    A `dtype=` argument decides instead: a wide one is a cast (`is_cast_call`),
    any other (float16, or a name we cannot read) is not float32.
    """
    if not (isinstance(node, cst.Call) and table.matches(node.func, FACTORY_FUNCTIONS)):
        return False
    return not any(arg.keyword is not None and arg.keyword.value == "dtype" for arg in node.args)


def transform_operands(node: cst.Call, table: ImportTable) -> list:
    """The tensor operands of an elementwise transform call, or [] if it is not one.

    Shape arguments, dims and clamp bounds are not operands: the result keeps
    the input's dtype whatever they are. Arithmetic methods (`x.add(y)`) also
    take their first argument, which must be wide too.
    """
    args = [arg.value for arg in node.args if not arg.star]
    if table.matches(node.func, SELECT_FUNCTIONS) and len(args) == 3 and not any(a.keyword for a in node.args):
        return [a for a in args[1:] if not is_number(a)] or args[1:2]
    if table.matches(node.func, TRANSFORM_FUNCTIONS):
        if any(arg.keyword is not None and arg.keyword.value == "dtype" for arg in node.args):
            return []  # `zeros_like(x, dtype=...)`: the dtype decides (a wide one is a cast)
        return args[:1]
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in ELEMENTWISE_METHODS:
        receiver = [node.func.value]
        if node.func.attr.value in ARITHMETIC_METHODS:
            return receiver + [a for a in args[:1] if not is_number(a)]
        return receiver
    return []
