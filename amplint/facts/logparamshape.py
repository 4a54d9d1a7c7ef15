"""A density in log-parameter form: a tensor that is a term of a sum and, in another term, the exponent of an
`exp` or the argument of a log.

That is how a log-variance Gaussian is written (`s + (x - mu) ** 2 * torch.exp(-s)`), its KL
(`1 + logvar - mu ** 2 - logvar.exp()`), a log-rate Poisson NLL (`eta.exp() - k * eta`) and a rate one
(`rate - k * torch.log(rate)`). float16's `exp` overflows above 11.1 (65504): a log-variance of 12 is `inf`, and
the loss with it; a rate's log keeps 3 digits. Also a log of a scale made from an activation
(`torch.log(F.softplus(s))`, `torch.log(std)` of `std = torch.exp(0.5 * s)`): a log-normaliser, a Gaussian's
entropy, which float16 sends to -inf once the scale rounds to 0 (below -17). Terms are read through
parentheses (`(1 + s) - mu ** 2`).

One recognizer for both trees: a `Reader` says what a node of its tree is (`facts.cstreader` for LibCST's,
`facts.astreader` for CPython's; `facts.logparams` and `facts.astlogparams` ask), so the two cannot drift apart.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Protocol, Set, Tuple

from amplint.facts import probshape
from amplint.facts.mathnames import SCALE_FUNCTIONS, SCALE_METHODS
from amplint.facts.shapereader import local_values, self_attribute_values

SCALE_DEPTH = 4  # how many bindings back a scale is followed


class Reader(probshape.Reader, Protocol):
    """What one tree's nodes are, as the form below asks it, within one function's bindings: `probshape`'s
    questions, and how the tree writes a math constant, a tensor's name and an exponent."""

    def math_constant(self, node: Any) -> bool:
        """An attribute of Python's or NumPy's math (`math.pi`)."""

    def written(self, node: Any) -> Optional[str]:
        """A name's or attribute's dotted name, a call's text without whitespace; else None."""

    def exponent_argument(self, node: Any) -> Optional[Any]:
        """`x` of `torch.exp(x)`, `x.exp()`, `torch.log(x)` or `x.log()`, else None."""


def is_log_parameter_form(node: Any, tree: Reader) -> bool:
    """Is `node` a sum in log-parameter form (module doc)?"""
    operation = tree.operation(node)
    if operation is None or operation[0] not in ("+", "-"):
        return False
    terms = _terms(node, tree)
    if len(terms) < 2:
        return False
    exponents = {name for term in terms for name in _exponents(term, tree, 1)}
    if not exponents:
        return False
    return bool(exponents & {name for term in terms for name in _linear(term, tree)})


def is_positive_transform(node: Any, tree: Reader, depth: int = SCALE_DEPTH) -> bool:
    """A scale or rate made from an activation: `torch.exp(s)`, `F.softplus(s)`, `s.exp()`, a number times one,
    a cast of one, or a local or `self.` attribute bound to one. float16 rounds it to 0 or to inf, and its log
    (a log-normaliser, a Gaussian's entropy) follows. Floors on it are looked through (`torch.exp(s) + eps`)."""
    node = _floorless(node, tree)
    if tree.function_call(node, SCALE_FUNCTIONS) is not None or tree.method_call(node, SCALE_METHODS) is not None:
        return True
    operand = tree.cast_operand(node)
    if operand is not None:
        return is_positive_transform(operand, tree, depth)
    operation = tree.operation(node)
    if operation is not None and operation[0] == "*":
        _, left, right = operation
        return (_is_constant_factor(left, tree) and is_positive_transform(right, tree, depth)) or (
            _is_constant_factor(right, tree) and is_positive_transform(left, tree, depth))
    if depth <= 0:
        return False
    values = local_values(node, tree)
    if values is None:
        values = self_attribute_values(node, tree)
    return any(is_positive_transform(value, tree, depth - 1) for value in values)


def _is_constant_factor(node: Any, tree: Reader) -> bool:
    """`2`, `0.5`, `math.pi`: a number a scale may be multiplied by."""
    node = _bare(node, tree)
    return tree.is_literal(node) or tree.math_constant(node)


def _terms(node: Any, tree: Reader) -> List[Any]:
    """Every term of the sum, parenthesised inner sums opened too: `(1 + s) - m` is 1, s, m."""
    found: List[Any] = []
    pending = [node]
    while pending:
        current = _bare(pending.pop(), tree)
        operation = tree.operation(current)
        if operation is not None and operation[0] in ("+", "-"):
            pending += [operation[2], operation[1]]
        else:
            found.append(current)
    return found


def _exponents(term: Any, tree: Reader, depth: int) -> Iterator[str]:
    """The tensors `term` takes `exp` of, through products, quotients and a local bound to an `exp`."""
    pending: List[Any] = [term]
    while pending:
        node = _bare(pending.pop(), tree)
        argument = tree.exponent_argument(node)
        if argument is not None:
            name = _tensor_name(_floorless(argument, tree), tree)
            if name is not None:
                yield name
            continue
        operation = tree.operation(node)
        if operation is not None and operation[0] in ("*", "/"):
            if not _entropy_term(operation, tree):
                pending += [operation[1], operation[2]]
        elif depth > 0:
            values = local_values(node, tree)
            if values is not None and len(values) == 1:
                yield from _exponents(values[0], tree, depth - 1)


def _entropy_term(operation: Tuple[str, Any, Any], tree: Reader) -> bool:
    """`p * torch.log(p + eps)`: an entropy term, whose log is a site of its own, not a log-parameter's."""
    operator, left, right = operation
    if operator != "*":
        return False
    return any(name is not None and name in set(_exponents(factor, tree, 0))
               for factor, name in ((left, _tensor_name(right, tree)), (right, _tensor_name(left, tree))))


def _linear(term: Any, tree: Reader) -> Set[str]:
    """The tensor a term is, scaled (`s`, `0.5 * s`, `-s`), or the tensors of a product (`k * eta`)."""
    node = _bare(term, tree)
    name = _tensor_name(node, tree)
    if name is not None:
        return {name}
    operation = tree.operation(node)
    if operation is not None and operation[0] == "*":
        return {n for side in operation[1:] for n in [_tensor_name(side, tree)] if n is not None}
    return set()


def _tensor_name(node: Any, tree: Reader) -> Optional[str]:
    """`s`, `self.logvar`, `-s`, `0.5 * s`, `s / 2`: the name; a call (`F.softplus(mu)`) as written, spaces
    aside; None for anything else."""
    node = _bare(node, tree)
    operation = tree.operation(node)
    if operation is not None and operation[0] in ("*", "/"):
        operator, left, right = operation
        if tree.is_literal(right):
            return _tensor_name(left, tree)
        if operator == "*" and tree.is_literal(left):
            return _tensor_name(right, tree)
        return None
    return tree.written(node)


def _floorless(node: Any, tree: Reader) -> Any:
    """`rate` of `rate + 1e-12`, `eps + rate`, `rate.clamp(min=eps)`: the tensor under the floors on it."""
    node = _bare(node, tree)
    inner = probshape.strip_floor(node, tree)[0]
    while inner is not node:
        node = _bare(inner, tree)
        inner = probshape.strip_floor(node, tree)[0]
    return node


def _bare(node: Any, tree: Reader) -> Any:
    """Without a unary sign: `-s` and `+s` name the tensor `s`."""
    operand = _signed(node, tree)
    while operand is not None:
        node = operand
        operand = _signed(node, tree)
    return node


def _signed(node: Any, tree: Reader) -> Optional[Any]:
    operand = tree.minus_operand(node)
    return operand if operand is not None else tree.plus_operand(node)
