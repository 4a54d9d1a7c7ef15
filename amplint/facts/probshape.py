"""Hand-written probability math recognized once, for both trees: floors, probabilities, logs of them and
log-normalisers (`facts.sumshape` has the sums). `facts.probmath` reads LibCST's nodes and `facts.astprobmath`
CPython's, through a `Reader` that says what a node of its tree is, so the two cannot drift apart. Where the
trees differ (parentheses, an attribute's name, what counts as a call's arguments), the reader answers as its
tree did before the two were one.
"""
from __future__ import annotations

from typing import Any, List, Optional, Protocol, Sequence, Tuple

from amplint.facts.mathnames import (
    EXP_FUNCTIONS, FLOOR_FUNCTIONS, FLOOR_METHODS, KEEPS_PROB_FUNCTIONS, KEEPS_PROB_METHODS, LOG_FUNCTIONS,
    PROB_FUNCTIONS, PROB_METHODS, SCALE_FUNCTIONS, SCALE_METHODS, SUM_FUNCTIONS, SUM_METHODS, names_probability)
from amplint.facts.shapereader import Nodes, ShapeReader, number_value, unwrap
from amplint.screen import LGAMMA_FUNCTIONS, LGAMMA_METHODS, LOG_METHODS

DEPTH = 4  # how many assignments back a name is followed
_TENSOR = frozenset({"torch.tensor"})
_ONES_LIKE = frozenset({"torch.ones_like"})
_EXP = frozenset({"exp"})
_ROOT_METHODS = KEEPS_PROB_METHODS | FLOOR_METHODS

Floor = Tuple[Any, float]  # a floor's bound as written, and its value


class Reader(ShapeReader, Protocol):
    """What one tree's nodes are, as the recognizers below ask it, within one function's bindings (the questions
    every shape module asks are `ShapeReader`'s)."""

    by_name: bool  # a name like `probs` counts as probabilities (CPython's `Env.by_name`; always so for LibCST)
    memo: dict  # `sumshape.has` answers for this function's nodes, by node and test name (`Env.memo`)

    def subscript_value(self, node: Any) -> Optional[Any]:
        """`x` of `x[i]`, else None."""

    def is_string(self, node: Any) -> bool:
        """A string or bytes literal, an f-string."""

    def is_name_or_attribute(self, node: Any) -> bool:
        """A name or a dotted attribute, `self.x` included."""

    def unary_operand(self, node: Any) -> Optional[Any]:
        """The operand of any unary operation (`-x`, `not x`, `~x`), else None."""

    def same(self, left: Any, right: Any) -> bool:
        """The two are the same code (`u * u`)."""

    def children(self, node: Any) -> List[Any]:
        """The expressions under `node` as LibCST has them (an argument's value for a call's argument)."""

    def attribute_name(self, node: Any) -> Optional[str]:
        """An attribute's name where the tree has it as a string, which LibCST has as a `Name` among
        `children` (so None there): `has` follows it as a name."""

    def is_lambda(self, node: Any) -> bool:
        """A lambda: its body is another function's."""

    def names_pi(self, node: Any) -> bool:
        """`math.pi`, `np.pi`, a name imported as pi, or any `.pi`."""

    def imports_name(self, node: Any, names: frozenset) -> bool:
        """A name or attribute that is one of the qualified `names` by the file's imports."""

    def is_number_constant(self, name: str) -> bool:
        """A module constant bound to a number (`LOG_2PI`), no tensor."""

    def constant_value(self, name: str) -> Optional[float]:
        """A module constant's number (`EPS = 1e-10`), else None."""

    def calls_producer(self, node: Any) -> bool:
        """A call of a project function returning probabilities (`project.probreturns`; LibCST's only)."""

    def method_named(self, node: Any, names: frozenset) -> Optional[Any]:
        """`node` when it is `.name(...)` of one of `names` on anything, a module included, else None."""

    def is_call(self, node: Any) -> bool:
        """A call."""

    def is_cast(self, call: Any) -> bool:
        """A call that makes a wide float (`x.float()`, `x.to(torch.float32)`, `dtype=torch.float32`)."""

    def value_receiver(self, call: Any) -> Optional[Any]:
        """`x` of `x.name(...)` where `x` is a value, not an imported module, else None."""

    def imported_callee(self, call: Any) -> bool:
        """The call's function is a dotted name the file imported (`torch.exp`, `F.softmax`)."""

    def callee_name(self, node: Any) -> Optional[str]:
        """For a call of a function the file did not import, the name it is called by (`normal_cdf`,
        `self.likelihood`; "" when it has none, `f[0](x)`); None for anything else."""

    def has_positionals(self, call: Any) -> bool:
        """The call passes a positional argument (LibCST's: any argument at all, as `has_arguments`)."""

    def arguments(self, call: Any) -> Sequence[Tuple[Optional[str], str, Any]]:
        """(keyword, star, value) of each argument, in source order."""


def strip_floor(node: Any, tree: Reader) -> Tuple[Any, Optional[Floor]]:
    """`p + eps`, `eps + p`, `p.clamp(min=eps)`, `torch.clamp(p, eps)`, `torch.maximum(p, tensor(eps))`:
    (p, (eps as written, its value)). The floor is None unless it is certainly a small positive number."""
    node = unwrap(node, tree)
    operation = tree.operation(node)
    if operation is not None and operation[0] == "+":
        _, left, right = operation
        value = literal_value(right, tree)
        if value is not None:
            return left, (right, value)
        value = literal_value(left, tree)
        if value is not None:
            return right, (left, value)
        return node, None
    call = tree.function_call(node, FLOOR_FUNCTIONS)
    if call is not None:
        operand = tree.first_arg(call)
        bound = _floor_bound(call, 1, tree)
        if bound is not None and tree.function_call(bound, _TENSOR) is not None:
            bound = tree.first_arg(bound)
        value = None if bound is None else literal_value(bound, tree)
        if operand is not None:
            return operand, None if value is None or bound is None else (bound, value)
    call = tree.method_call(node, FLOOR_METHODS)
    if call is not None:
        bound = _floor_bound(call, 0, tree)
        value = None if bound is None else literal_value(bound, tree)
        return tree.receiver(call), None if value is None or bound is None else (bound, value)
    return node, None


def _floor_bound(call: Any, position: int, tree: Reader) -> Optional[Any]:
    """`min=`/`other=`, else the `position`th positional argument: what a clamp or maximum floors at."""
    arguments = tree.arguments(call)
    for keyword, _, value in arguments:
        if keyword in ("min", "other"):
            return value
    positional = [value for keyword, star, value in arguments if keyword is None and not star]
    return positional[position] if len(positional) > position else None


def literal_value(node: Any, tree: Reader, depth: int = DEPTH) -> Optional[float]:
    """A small positive float the expression certainly is: a literal, or a name/attribute bound only to one."""
    node = unwrap(node, tree)
    if tree.is_literal(node):
        value = tree.literal_number(node)
        return value if value is not None and 0 < value < 1 else None
    if depth == 0:
        return None
    bound: Sequence[Any] = ()
    name = tree.name(node)
    if name is not None:
        bound = tree.values(name)
        constant = tree.constant_value(name)  # a module constant: `EPS = 1e-10`
        if constant is not None:
            return constant if 0 < constant < 1 else None
    else:
        attr = tree.self_attribute(node)
        if attr is not None:
            bound = tree.attribute_values(attr)
    values = {literal_value(value, tree, depth - 1) for value in bound}
    if len(values) == 1:
        return values.pop()
    return None


def log_operand(node: Any, tree: Reader) -> Optional[Any]:
    """`x` of a tensor log: `torch.log(x)`, `x.log()`, `torch.log2(x)`. `math.log` is not a tensor log."""
    call = tree.function_call(node, LOG_FUNCTIONS)
    if call is not None:
        return tree.first_arg(call)
    call = tree.method_call(node, LOG_METHODS)
    if call is not None and not tree.has_arguments(call):  # `math.log(x)` and `np.log(x)` take an argument
        return tree.receiver(call)
    return None


def lgamma_operand(node: Any, tree: Reader) -> Optional[Any]:
    """`x` of `torch.lgamma(x)`, `x.lgamma()`, `torch.special.gammaln(x)`: a Gamma, Beta, Dirichlet or Poisson
    normaliser written out. float16 holds its argument to 3 digits and its value to 65504."""
    call = tree.function_call(node, LGAMMA_FUNCTIONS)
    if call is not None:
        return tree.first_arg(call)
    call = tree.method_call(node, LGAMMA_METHODS)
    return tree.receiver(call) if call is not None and not tree.has_positionals(call) else None


def _bound_once(node: Any, tree: Reader) -> Optional[Any]:
    """The value a local name is bound to, when the function binds it once."""
    name = tree.name(node)
    values = tree.values(name) if name is not None and tree.is_local(name) else ()
    return values[0] if len(values) == 1 else None


def producer_operand(node: Any, tree: Reader) -> Optional[Any]:
    """`logits` for a local `p` bound once to `torch.softmax(logits, -1)`, `logits.sigmoid()` (or a scale's
    `F.softplus(s)`): where they are made. A cast of `p` comes too late once float16 rounded them to 0."""
    value = _bound_once(node, tree)
    function = None if value is None else tree.function_call(value, PROB_FUNCTIONS | SCALE_FUNCTIONS)
    if function is None and value is not None and tree.calls_producer(value):
        function = value  # a project helper returning probabilities: cast its input
    if function is not None:
        return tree.first_arg(function)
    method = None if value is None else tree.method_call(value, PROB_METHODS | SCALE_METHODS)
    return None if method is None else tree.receiver(method)


def straight_from_producer(node: Any, tree: Reader) -> bool:
    """`softmax(x)`, `x.sigmoid()`, or a local name bound once to one: probabilities float16 may round to 0 but
    holds otherwise, also through a mean, a view or a gather of them. Not `1 - p` (which float16 cancels near
    1) nor `e / e.sum()` (whose `exp` overflows)."""
    node = _kept_prob(unwrap(node, tree), tree)
    value = _bound_once(node, tree)
    node = node if value is None else _kept_prob(unwrap(value, tree), tree)
    return tree.function_call(node, PROB_FUNCTIONS) is not None or tree.method_call(node, PROB_METHODS) is not None


def _kept_prob(node: Any, tree: Reader) -> Any:
    """What `p.mean(0)`, `p.view(...)`, `torch.gather(p, ...)` read: they keep probabilities probabilities."""
    while True:
        method = tree.method_call(node, KEEPS_PROB_METHODS)
        function = None if method is not None else tree.function_call(node, KEEPS_PROB_FUNCTIONS)
        inner = tree.receiver(method) if method is not None else (
            tree.first_arg(function) if function is not None else None)
        if inner is None:
            return node
        node = unwrap(inner, tree)


def is_prob(node: Any, tree: Reader, depth: int = DEPTH) -> bool:
    """Does `node` hold probabilities: a softmax or sigmoid, a normalisation, or a reduction of one?"""
    node = unwrap(node, tree)
    if tree.function_call(node, PROB_FUNCTIONS) is not None or tree.method_call(node, PROB_METHODS) is not None:
        return True
    inner = tree.cast_operand(node)
    if inner is None:
        inner = tree.subscript_value(node)
    if inner is not None:  # `p.float()`: still probabilities, now float32 (a cast site); `p[i]`
        return is_prob(inner, tree, depth)
    call = tree.method_call(node, KEEPS_PROB_METHODS)
    if call is not None:
        return is_prob(tree.receiver(call), tree, depth)
    call = tree.function_call(node, KEEPS_PROB_FUNCTIONS)
    if call is not None:
        first = tree.first_arg(call)
        return first is not None and is_prob(first, tree, depth)
    inner, _ = strip_floor(node, tree)
    if inner is not node:
        return is_prob(inner, tree, depth)
    operation = tree.operation(node)
    if operation is not None:
        return _is_prob_operation(operation, tree, depth)
    name = tree.name(node)
    if name is not None:
        if depth > 0 and any(is_prob(value, tree, depth - 1) for value in tree.values(name)):
            return True
        return not tree.is_local(name) and tree.by_name and names_probability(name)
    if tree.calls_producer(node):
        return True  # a project function whose body returns probabilities (`project.probreturns`)
    callee = tree.callee_name(node)
    if callee is not None:
        return tree.by_name and names_probability(callee)  # normal_cdf(x), self.likelihood(y)
    attr = tree.self_attribute(node)
    if attr is None:
        return False
    return tree.by_name and names_probability(attr) or depth > 0 and any(  # `self.p`: its values, else its name
        is_prob(value, tree, depth - 1) for value in tree.attribute_values(attr))


def _is_prob_operation(operation: Tuple[str, Any, Any], tree: Reader, depth: int) -> bool:
    """A normalisation `x / x.sum()`, a ratio of probabilities, a scaled one, a complement `1 - p`, a difference
    of two (`torch.sigmoid(a) - torch.sigmoid(b)`: a discretized logistic's mass, a CDF difference)."""
    operator, left, right = operation
    if operator == "/":
        return _normalises(left, right, tree) or (is_prob(left, tree, depth) and is_prob(right, tree, depth))
    if operator == "*":
        return (is_prob(left, tree, depth) and _is_scale(right, tree)) or (
            is_prob(right, tree, depth) and _is_scale(left, tree))
    if operator == "-":  # a complement `1 - p`, or a CDF difference (the mass between two quantiles)
        return (_is_one(left, tree) or is_prob(left, tree, depth)) and is_prob(right, tree, depth)
    return False


def _is_scale(node: Any, tree: Reader) -> bool:
    """A number or a mask: multiplying probabilities by it keeps them probabilities (or zero)."""
    node = unwrap(node, tree)
    if tree.is_literal(node):
        return True
    name = tree.name(node)
    return name is not None and "mask" in name.lower()


def _is_one(node: Any, tree: Reader) -> bool:
    """`1`, `1.0` or `torch.ones_like(x)`."""
    return number_value(node, tree) == 1 or tree.function_call(unwrap(node, tree), _ONES_LIKE) is not None


def _root_name(node: Any, tree: Reader) -> Optional[str]:
    """`p` of `p`, `p[:, 1]`, `p.detach()`, `p.clip(eps)`: the value a view or floor is taken of."""
    node = unwrap(node, tree)
    while True:
        inner = tree.subscript_value(node)
        if inner is None:
            call = tree.method_named(node, _ROOT_METHODS)
            inner = None if call is None else tree.receiver(call)
        if inner is None:
            operation = tree.operation(node)
            if operation is not None and operation[0] == "+" and number_value(operation[2], tree):
                inner = operation[1]
        if inner is None:
            return tree.name(node)
        node = inner


def entropy_operand(node: Any, tree: Reader) -> Optional[Any]:
    """`p * log(p)` or `log(p) * p` (an entropy or KL term): the log, whose operand is then a probability."""
    operation = tree.operation(node)
    if operation is None or operation[0] != "*":
        return None
    _, left, right = operation
    for factor, other in ((right, left), (left, right)):
        operand = log_operand(unwrap(factor, tree), tree)
        if operand is None:
            continue
        inner, _ = strip_floor(operand, tree)
        root = _root_name(inner, tree)
        if root is not None and root == _root_name(last_factor(other, tree), tree):
            return unwrap(factor, tree)
    return None


def last_factor(node: Any, tree: Nodes) -> Any:
    """`y` of `a * b * y`: the factor next to the log in a product chain."""
    node = unwrap(node, tree)
    operand = tree.minus_operand(node)
    if operand is not None:
        node = operand
    while True:
        operation = tree.operation(node)
        if operation is None or operation[0] != "*" or tree.parenthesized(node):
            return node
        node = operation[2]


def _normalises(left: Any, right: Any, tree: Reader) -> bool:
    """`x / x.sum(-1, keepdim=True)`, `e[i] / torch.sum(e)`: `right` is a sum (floored or not) of what `left`
    is, or of what it is a part of. A ratio of two sums of different things (`(t ** 2).sum() / (r ** 2).sum()`,
    a signal-to-noise ratio; intersection over union) is no normalisation."""
    right, _ = strip_floor(unwrap(right, tree), tree)
    call = tree.method_call(right, SUM_METHODS)
    summed = tree.receiver(call) if call is not None else None
    if summed is None:
        call = tree.function_call(right, SUM_FUNCTIONS)
        summed = None if call is None else tree.first_arg(call)
    if summed is None:
        return False
    root = _root_name(summed, tree)
    return tree.same(unwrap(left, tree), unwrap(summed, tree)) or (
        root is not None and root == _root_name(left, tree))


def is_sum_of_exp(node: Any, tree: Reader, depth: int = DEPTH) -> bool:
    """`exp(x).sum(...)`, `torch.sum(torch.exp(x))`, or a name bound to one: a log-normaliser's argument."""
    node = _through_casts(node, tree)
    call = tree.method_call(node, SUM_METHODS)
    summed = tree.receiver(call) if call is not None else None
    if summed is None:
        call = tree.function_call(node, SUM_FUNCTIONS)
        summed = None if call is None else tree.first_arg(call)
    if summed is not None:
        return _is_exp(summed, tree, depth)
    name = tree.name(node)
    if name is not None and depth > 0:
        return any(is_sum_of_exp(value, tree, depth - 1) for value in tree.values(name))
    return False


def _is_exp(node: Any, tree: Reader, depth: int) -> bool:
    node = _through_casts(node, tree)
    if tree.function_call(node, EXP_FUNCTIONS) is not None or tree.method_call(node, _EXP) is not None:
        return True
    operation = tree.operation(node)
    if operation is not None and operation[0] == "*":
        return _is_exp(operation[1], tree, depth) or _is_exp(operation[2], tree, depth)  # exp(x) * mask
    name = tree.name(node)
    if name is not None and depth > 0:
        return any(_is_exp(value, tree, depth - 1) for value in tree.values(name))
    return False


def _through_casts(node: Any, tree: Reader) -> Any:
    """What `x.exp().float()` casts: a cast changes no shape (whether it came in time is `devicemath`'s)."""
    node = unwrap(node, tree)
    inner = tree.cast_operand(node)
    while inner is not None:
        node = unwrap(inner, tree)
        inner = tree.cast_operand(node)
    return node
