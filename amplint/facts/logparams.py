"""A density in log-parameter form, read from LibCST's tree: a tensor that is a term of a sum and, in another
term, the exponent of an `exp` or the argument of a log.

That is how a log-variance Gaussian is written (`s + (x - mu) ** 2 * torch.exp(-s)`), its KL
(`1 + logvar - mu ** 2 - logvar.exp()`), a log-rate Poisson NLL (`eta.exp() - k * eta`) and a rate one
(`rate - k * torch.log(rate)`). float16's `exp` overflows above 11.1 (65504): a log-variance of 12 is `inf`, and
the loss with it; a rate's log keeps 3 digits. Terms are read through parentheses (`(1 + s) - mu ** 2`).
`astlogparams` reads the same shape from CPython's tree.
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from amplint.facts.mathcalls import first_arg, function_call, method_call
from amplint.facts.mathenv import Env
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS
from amplint.facts.probmath import additive_terms, first_sum, is_additive, leaves
from amplint.names import dotted_name
from amplint.screen import LOG_METHODS

# The exp of a log-parameter, or the log of a rate: either ties the term's tensor to another term's.
_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS
_SCALING = (cst.Multiply, cst.Divide)


def log_parameter_form(node: cst.BaseExpression, env: Env
                       ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """(its tensor operands, where it starts) for a sum in log-parameter form (module doc), else None."""
    if not is_additive(node):
        return None
    terms = _terms(node)
    if len(terms) < 2:
        return None
    exponents = {name for term in terms for name in _exponents(term, env, 1)}
    if not exponents or not exponents & {name for term in terms for name in _linear(term)}:
        return None
    return tuple(op for term in additive_terms(node) for op in leaves(term, env)), first_sum(node)


def _terms(node: cst.BaseExpression) -> List[cst.BaseExpression]:
    """Every term of the sum, parenthesised inner sums opened too: `(1 + s) - m` is 1, s, m."""
    found: List[cst.BaseExpression] = []
    pending = [node]
    while pending:
        current = _bare(pending.pop())
        if is_additive(current):
            pending += [current.right, current.left]  # type: ignore[attr-defined]
        else:
            found.append(current)
    return found


def _exponents(term: cst.BaseExpression, env: Env, depth: int) -> Iterator[str]:
    """The tensors `term` takes `exp` of, through products, quotients and a local bound to an `exp`."""
    pending: List[cst.BaseExpression] = [term]
    while pending:
        node = _bare(pending.pop())
        call = function_call(node, _OF_EXPONENT, env) or method_call(node, _EXPONENT_METHODS, env)
        if call is not None:
            argument = first_arg(call) if function_call(call, _OF_EXPONENT, env) else call.func.value  # type: ignore
            name = _tensor_name(_floorless(argument)) if argument is not None else None
            if name is not None:
                yield name
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SCALING):
            pending += [node.left, node.right]
        elif isinstance(node, cst.Name) and depth > 0 and env.is_local(node.value):
            values = env.values(node.value)
            if len(values) == 1:
                yield from _exponents(values[0], env, depth - 1)


def _linear(term: cst.BaseExpression) -> Set[str]:
    """The tensor a term is, scaled (`s`, `0.5 * s`, `-s`), or the tensors of a product (`k * eta`)."""
    node = _bare(term)
    name = _tensor_name(node)
    if name is not None:
        return {name}
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return {n for side in (node.left, node.right) for n in [_tensor_name(side)] if n is not None}
    return set()


def _tensor_name(node: cst.BaseExpression) -> Optional[str]:
    """`s`, `self.logvar`, `-s`, `0.5 * s`, `s / 2`: the name; None for anything else."""
    node = _bare(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SCALING):
        if isinstance(node.right, (cst.Integer, cst.Float)):
            return _tensor_name(node.left)
        if isinstance(node.operator, cst.Multiply) and isinstance(node.left, (cst.Integer, cst.Float)):
            return _tensor_name(node.right)
        return None
    if isinstance(node, (cst.Name, cst.Attribute)):
        return dotted_name(node)
    return None


def _floorless(node: cst.BaseExpression) -> cst.BaseExpression:
    """`rate` of `rate + 1e-12`: the tensor under a floor added to it."""
    node = _bare(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add) and \
            isinstance(node.right, (cst.Integer, cst.Float)):
        return node.left
    return node


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    """Without a unary sign (LibCST keeps parentheses on the node itself)."""
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return node
