"""Sums of hand-written probability math, recognized once for both trees over `probshape.Reader`: a sum's
terms, a Gaussian or Laplace log-density or KL written term by term (a deviation beside a log), and the tensors
an expression reads. `facts.probmath` (LibCST) and `facts.astprobmath` (CPython) are its readers.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Tuple

from amplint.facts.mathnames import (
    ABS_FUNCTIONS, ABS_METHODS, LOG_2PI, LOG_FUNCTIONS, PI_NAMES, POW_FUNCTIONS, POW_METHODS, SCALAR_LOG_FUNCTIONS,
    SQUARE_FUNCTIONS, SQUARE_METHODS)
from amplint.facts.probshape import Reader, last_factor, log_operand
from amplint.facts.shapereader import Nodes, number_value, unwrap
from amplint.screen import LOG_METHODS

_LOG_2PI_VALUES = (LOG_2PI, LOG_2PI / 2, -LOG_2PI, -LOG_2PI / 2)
_LOG_CALLS = SCALAR_LOG_FUNCTIONS | LOG_FUNCTIONS
_SQUARE_CALLS = SQUARE_FUNCTIONS | POW_FUNCTIONS


def is_additive(node: Any, tree: Nodes) -> bool:
    operation = tree.operation(node)
    return operation is not None and operation[0] in ("+", "-")


def additive_terms(node: Any, tree: Nodes, root: bool = True) -> Iterator[Any]:
    """The terms of `(a - b + c)`, with unary minus dropped: a, b, c. Inner parentheses make one term.

    Iterative: a generated sum of hundreds of terms is a chain that deep.
    """
    stack = [(node, root)]
    while stack:
        current, outer = stack.pop()
        current = unwrap(current, tree)
        operand = tree.minus_operand(current)
        if operand is not None:
            current = operand
        operation = tree.operation(current)
        if operation is not None and operation[0] in ("+", "-") and (outer or not tree.parenthesized(current)):
            stack.append((operation[2], False))
            stack.append((operation[1], False))
        else:
            yield current


def first_sum(node: Any, tree: Nodes) -> Any:
    """The innermost left sum of a chain, without parentheses: it starts where the written math starts.

    `(a - b - 0.5 + c)` starts at its `(`; `a - b` starts at `a`. Only sums
    have positions in the collector, so the anchor is a sum, not the term.
    """
    inner = unwrap(node, tree)
    while True:
        operation = tree.operation(inner)
        if operation is None or not is_additive(operation[1], tree) or tree.parenthesized(operation[1]):
            break
        inner = operation[1]
    if tree.operation(inner) is not None and tree.parenthesized(inner):
        return next(additive_terms(inner, tree))  # a parenthesised sum whose first term is not a sum
    return inner


def density_sum(node: Any, tree: Reader, deviation: Callable[[Any, Reader], bool]) -> Optional[Tuple[Any, ...]]:
    """A deviation term (`deviation`: squared, or a magnitude) beside a log term (a tensor log or the
    log(2*pi) constant) in one sum: its tensor operands, else None."""
    terms = list(additive_terms(node, tree)) if is_additive(node, tree) else []
    squares = [t for t in terms if has(t, tree, deviation)] if len(terms) > 1 else []
    logs = [t for t in terms if has(t, tree, _is_log_term)] if squares else []  # most sums: no search
    if not any(square is not log for square in squares for log in logs):
        return None
    return tuple(op for term in terms for op in leaves(term, tree))


def quadratic_sum(node: Any, tree: Reader) -> Optional[Tuple[Any, ...]]:
    """A Gaussian's quadratic form (`is_quadratic_form`) beside another tensor term in one sum, with no log
    written: a flow's NLL `sum(z * z) / (2 * sigma * sigma) - log_det`, a Gaussian in log-scale form whose
    log-scale is a tensor of its own. Its tensor operands, else None."""
    terms = list(additive_terms(node, tree)) if is_additive(node, tree) else []
    quadratic = [t for t in terms if has(t, tree, is_quadratic_form, 0) and _halves(t, tree)] if len(
        terms) > 1 else []
    if not quadratic or not any(t not in quadratic and next(leaves(t, tree), None) is not None for t in terms):
        return None
    return tuple(op for term in terms for op in leaves(term, tree))


def _halves(node: Any, tree: Reader) -> bool:
    """A literal 2 or 0.5 written in the term: a Gaussian's quadratic form is half a square over a variance
    (`z * z / (2 * sigma * sigma)`, `0.5 * ((y - mu) / s) ** 2`); a ratio of squares with no half in it is a
    schedule's or a kernel's (`sigma_to ** 2 / sigma_from ** 2`)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if number_value(current, tree) in (2, 0.5) and tree.is_literal(unwrap(current, tree)):
            return True
        operation = tree.operation(current)
        if operation is not None and operation[0] == "**":
            stack.append(operation[1])  # an exponent 2 is the square, not the half
        else:
            stack.extend(tree.children(current))
    return False


def is_quadratic_form(node: Any, tree: Reader) -> bool:
    """`d ** 2 / (2 * s * s)`, `sum(z * z) / var ** 2`: a square over a square; `((y - mu) / s) ** 2`: the square
    of a quotient by a tensor, as written (no name followed). float16 overflows the square above 256 and
    underflows a squared scale below 2.4e-4."""
    operation = tree.operation(node)
    if operation is None:
        return False
    operator, left, right = operation
    if operator == "/":
        return has(left, tree, is_square_of_tensor, 0) and has(right, tree, is_square_of_tensor, 0)
    if operator == "**" and number_value(right, tree) == 2:
        inner = tree.operation(unwrap(left, tree))
        return inner is not None and inner[0] == "/" and number_value(inner[2], tree) is None
    return False


def has(node: Any, tree: Reader, test: Callable[[Any, Reader], bool], depth: int = 2) -> bool:
    """`test` holds for `node`, a sub-expression, or (`depth` steps back) a name's assigned value.

    Memoized per function (`Env.memo`, by the test's name): the terms of the sums in one function share
    their names' assigned values, which would otherwise be searched once per term.
    """
    key = (id(node), test.__name__, depth)
    memo = tree.memo
    if key not in memo:
        memo[key] = _search(node, tree, test, depth)
    return memo[key]


def _search(node: Any, tree: Reader, test: Callable[[Any, Reader], bool], depth: int) -> bool:
    node = unwrap(node, tree)
    if test(node, tree):
        return True
    name = tree.name(node)
    if name is not None:
        return depth > 0 and any(has(value, tree, test, depth - 1) for value in tree.values(name))
    if tree.is_lambda(node):
        return False
    attr = tree.attribute_name(node)
    if attr is not None and depth > 0 and any(has(value, tree, test, depth - 1) for value in tree.values(attr)):
        return True
    return any(has(child, tree, test, depth) for child in tree.children(node))


def is_square_of_tensor(node: Any, tree: Reader) -> bool:
    """`u ** 2`, `u * u`, `u.square()`, `u.pow(2)`, `torch.square(u)`, `torch.pow(u, 2)` of a tensor `u`."""
    base: Optional[Any] = None
    operation = tree.operation(node)
    operator = None if operation is None else operation[0]
    if operator == "**":
        if number_value(operation[2], tree) == 2:  # type: ignore[index]
            base = operation[1]  # type: ignore[index]
    elif operator == "*":  # `u * u`, also `-0.5 * u * u` and `-u * u`: a number or a sign before it
        _, left, right = operation  # type: ignore[misc]
        if tree.same(left, right) or tree.same(last_factor(left, tree), right):
            base = right
    elif tree.method_call(node, SQUARE_METHODS) is not None:
        base = tree.receiver(node)
    elif tree.is_call(node) and tree.method_call(node, POW_METHODS) is not None:
        exponent = tree.first_arg(node)
        base = tree.receiver(node) if exponent is not None and number_value(exponent, tree) == 2 else None
    else:
        call = tree.function_call(node, _SQUARE_CALLS)
        if call is not None:
            positional = [value for keyword, _, value in tree.arguments(call) if keyword is None]
            if tree.function_call(call, SQUARE_FUNCTIONS) is not None or (
                    len(positional) == 2 and number_value(positional[1], tree) == 2):
                base = positional[0] if positional else None
    return base is not None and number_value(base, tree) is None


def is_abs_of_tensor(node: Any, tree: Reader) -> bool:
    """`torch.abs(y - mu)`, `(y - mu).abs()`, `abs(d)`: a tensor's magnitude."""
    if not tree.is_call(node):
        return False
    if tree.method_call(node, ABS_METHODS) is not None:
        base: Optional[Any] = tree.receiver(node)
    else:
        call = tree.function_call(node, ABS_FUNCTIONS)
        base = tree.first_arg(call) if call is not None else None
    return base is not None and number_value(base, tree) is None


def _is_log_term(node: Any, tree: Reader) -> bool:
    return log_operand(node, tree) is not None or is_log_2pi(node, tree)


def is_log_2pi(node: Any, tree: Reader, attributes: bool = True) -> bool:
    """`math.log(2 * math.pi)`, `np.log(2 * np.pi)`, or the constant's value written out; a module constant or
    a `self.` attribute bound to one (`LOG_2PI`, `self.log_2pi`)."""
    value = number_value(node, tree)
    name = tree.name(node)
    if value is None and name is not None:
        value = tree.constant_value(name)
    attr = tree.self_attribute(node) if attributes else None
    if attr is not None:
        bound = tree.attribute_values(attr)
        return bool(bound) and all(is_log_2pi(each, tree, False) for each in bound)
    if value is not None:
        return any(abs(value - c) < 1e-6 for c in _LOG_2PI_VALUES)
    if tree.is_call(node) and (tree.function_call(node, _LOG_CALLS) is not None
                               or tree.method_call(node, LOG_METHODS) is not None):
        operand = tree.first_arg(node) if tree.has_arguments(node) else None
        return operand is not None and mentions_pi(operand, tree)
    return False


def mentions_pi(node: Any, tree: Reader) -> bool:
    """pi anywhere in the expression, a call read through its first argument (`torch.tensor(math.pi)`)."""
    if tree.names_pi(node):
        return True
    if tree.is_call(node):
        first = tree.first_arg(node)
        return first is not None and mentions_pi(first, tree)
    return any(mentions_pi(child, tree) for child in tree.children(node))


# --- operands -----------------------------------------------------------------------------------------
def leaves(node: Any, tree: Reader) -> Iterator[Any]:
    """The tensor values an expression reads: names, attributes and calls that are not math on them."""
    node = unwrap(node, tree)
    if number_value(node, tree) is not None or tree.is_string(node):
        return
    if tree.is_name_or_attribute(node):
        name = tree.name(node)
        if not tree.imports_name(node, PI_NAMES) and not (name is not None and tree.is_number_constant(name)):
            yield node
        return
    inner = tree.subscript_value(node)
    if inner is not None:
        yield from leaves(inner, tree)
        return
    operation = tree.operation(node)
    if operation is not None:
        yield from leaves(operation[1], tree)
        yield from leaves(operation[2], tree)
        return
    inner = tree.unary_operand(node)
    if inner is not None:
        yield from leaves(inner, tree)
        return
    if tree.is_call(node):
        if tree.function_call(node, SCALAR_LOG_FUNCTIONS) is not None:
            return
        if tree.is_cast(node):
            yield node  # `x.float()`: the analysis sees a wide input
            return
        inner = tree.value_receiver(node)
        if inner is not None:
            yield from leaves(inner, tree)  # x.softmax(...), x.sum(...): the receiver
            return
        first = tree.first_arg(node)
        if first is not None and tree.imported_callee(node):
            yield from leaves(first, tree)  # torch.exp(x), F.softmax(x)
            return
        yield node
        return
    yield node
