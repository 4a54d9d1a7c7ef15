"""A density in log-parameter form, read from LibCST's tree: a tensor that is a term of a sum and, in another
term, the exponent of an `exp` or the argument of a log.

That is how a log-variance Gaussian is written (`s + (x - mu) ** 2 * torch.exp(-s)`), its KL
(`1 + logvar - mu ** 2 - logvar.exp()`), a log-rate Poisson NLL (`eta.exp() - k * eta`) and a rate one
(`rate - k * torch.log(rate)`). float16's `exp` overflows above 11.1 (65504): a log-variance of 12 is `inf`, and
the loss with it; a rate's log keeps 3 digits. Also a log of a scale made from an activation
(`torch.log(F.softplus(s))`, `torch.log(std)` of `std = torch.exp(0.5 * s)`): a log-normaliser, a Gaussian's
entropy, which float16 sends to -inf once the scale rounds to 0 (below -17). Terms are read through
parentheses (`(1 + s) - mu ** 2`).
`astlogparams` reads the same shape from CPython's tree.
"""
from __future__ import annotations

from typing import Iterator, List, Optional, Set, Tuple

import libcst as cst

from amplint.dtypes import is_cast_call
from amplint.facts.mathcalls import first_arg, function_call, method_call
from amplint.facts.mathenv import Env, self_attribute
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS, SCALE_FUNCTIONS, SCALE_METHODS, python_math
from amplint.facts.probmath import additive_terms, first_sum, is_additive, leaves, strip_floor
from amplint.names import dotted_name
from amplint.screen import LOG_METHODS

# The exp of a log-parameter, or the log of a rate: either ties the term's tensor to another term's.
_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS
_SCALING = (cst.Multiply, cst.Divide)
_DEPTH = 4  # how many bindings back a scale is followed


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


def is_positive_transform(node: cst.BaseExpression, env: Env, depth: int = _DEPTH) -> bool:
    """A scale or rate made from an activation: `torch.exp(s)`, `F.softplus(s)`, `s.exp()`, a number times one,
    a cast of one, or a local or `self.` attribute bound to one. float16 rounds it to 0 or to inf, and its log
    (a log-normaliser, a Gaussian's entropy) follows. Floors on it are looked through (`torch.exp(s) + eps`)."""
    node = _floorless(node, env)
    if function_call(node, SCALE_FUNCTIONS, env) is not None or method_call(node, SCALE_METHODS, env) is not None:
        return True
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and is_cast_call(node, env.imports):
        return is_positive_transform(node.func.value, env, depth)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Multiply):
        return (_is_constant_factor(node.left, env) and is_positive_transform(node.right, env, depth)) or (
            _is_constant_factor(node.right, env) and is_positive_transform(node.left, env, depth))
    if isinstance(node, cst.Name) and depth > 0 and env.is_local(node.value):
        return any(is_positive_transform(value, env, depth - 1) for value in env.values(node.value))
    attr = self_attribute(node)
    return attr is not None and depth > 0 and any(
        is_positive_transform(value, env, depth - 1) for value in env.attribute_values(attr))


def _is_constant_factor(node: cst.BaseExpression, env: Env) -> bool:
    """`2`, `0.5`, `math.pi`: a number a scale may be multiplied by."""
    node = _bare(node)
    name = dotted_name(node) if isinstance(node, cst.Attribute) else None
    return isinstance(node, (cst.Integer, cst.Float)) or (name is not None and python_math(name, env.imports))


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
            name = _tensor_name(_floorless(argument, env)) if argument is not None else None
            if name is not None:
                yield name
        elif isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SCALING):
            if not _entropy_term(node, env):
                pending += [node.left, node.right]
        elif isinstance(node, cst.Name) and depth > 0 and env.is_local(node.value):
            values = env.values(node.value)
            if len(values) == 1:
                yield from _exponents(values[0], env, depth - 1)


def _entropy_term(node: cst.BinaryOperation, env: Env) -> bool:
    """`p * torch.log(p + eps)`: an entropy term, whose log is a site of its own, not a log-parameter's."""
    if not isinstance(node.operator, cst.Multiply):
        return False
    return any(name is not None and name in set(_exponents(factor, env, 0))
               for factor, name in ((node.left, _tensor_name(node.right)), (node.right, _tensor_name(node.left))))


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
    """`s`, `self.logvar`, `-s`, `0.5 * s`, `s / 2`: the name; a call (`F.softplus(mu)`) as written, spaces
    aside; None for anything else."""
    node = _bare(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, _SCALING):
        if isinstance(node.right, (cst.Integer, cst.Float)):
            return _tensor_name(node.left)
        if isinstance(node.operator, cst.Multiply) and isinstance(node.left, (cst.Integer, cst.Float)):
            return _tensor_name(node.right)
        return None
    if isinstance(node, (cst.Name, cst.Attribute)):
        return dotted_name(node)
    if isinstance(node, cst.Call):
        return "".join(cst.Module([]).code_for_node(node.with_changes(lpar=(), rpar=())).split())
    return None


def _floorless(node: cst.BaseExpression, env: Env) -> cst.BaseExpression:
    """`rate` of `rate + 1e-12`, `eps + rate`, `rate.clamp(min=eps)`: the tensor under the floors on it."""
    node = _bare(node)
    inner, _ = strip_floor(node, env)
    while inner is not node:
        node = _bare(inner)
        inner, _ = strip_floor(node, env)
    return node


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    """Without a unary sign (LibCST keeps parentheses on the node itself)."""
    while isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return node
