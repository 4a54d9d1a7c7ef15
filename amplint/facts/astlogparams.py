"""`logparams` over CPython's tree: a sum in which a tensor is a term and, in another term, the exponent of an
`exp` or the argument of a log (a log-variance Gaussian, its KL, a Poisson NLL), read as LibCST's reader reads
it."""
from __future__ import annotations

import ast
from typing import Iterator, List, Optional, Set, Tuple

from amplint.facts.astmathenv import Env
from amplint.facts.astnodes import is_cast_call, self_attribute
from amplint.facts.astprobmath import additive_terms, is_additive, leaves, strip_floor
from amplint.facts.mathnames import EXP_FUNCTIONS, LOG_FUNCTIONS, SCALE_FUNCTIONS, SCALE_METHODS, python_math
from amplint.names import ast_dotted, ast_qualnames
from amplint.screen import LOG_METHODS

_SCALING = (ast.Mult, ast.Div)
_DEPTH = 4  # `logparams._DEPTH`
_OF_EXPONENT = EXP_FUNCTIONS | LOG_FUNCTIONS  # `logparams._OF_EXPONENT`
_EXPONENT_METHODS = frozenset({"exp"}) | LOG_METHODS


def log_parameter_form(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ...]]:
    """`logparams.log_parameter_form`: the sum's tensor operands, else None."""
    if not is_additive(node):
        return None
    terms = _terms(node)
    if len(terms) < 2:
        return None
    exponents = {name for term in terms for name in _exponents(term, env, 1)}
    if not exponents or not exponents & {name for term in terms for name in _linear(term)}:
        return None
    return tuple(op for term in additive_terms(node, env) for op in leaves(term, env))


def is_positive_transform(node: ast.expr, env: Env, depth: int = _DEPTH) -> bool:
    """`logparams.is_positive_transform`: a scale or rate made from an activation (`exp`, `softplus`)."""
    node = _floorless(node, env)
    if isinstance(node, ast.Call) and (ast_qualnames(node.func, env.imports) & SCALE_FUNCTIONS or (
            isinstance(node.func, ast.Attribute) and node.func.attr in SCALE_METHODS
            and not _imported(node.func.value, env))):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_cast_call(node, env.imports):
        return is_positive_transform(node.func.value, env, depth)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return (_is_constant_factor(node.left, env) and is_positive_transform(node.right, env, depth)) or (
            _is_constant_factor(node.right, env) and is_positive_transform(node.left, env, depth))
    if isinstance(node, ast.Name) and depth > 0 and env.is_local(node.id):
        return any(is_positive_transform(value, env, depth - 1) for value in env.values(node.id))
    attr = self_attribute(node)
    return attr is not None and depth > 0 and any(
        is_positive_transform(value, env, depth - 1) for value in env.attribute_values(attr))


def _is_constant_factor(node: ast.expr, env: Env) -> bool:
    node = _bare(node)
    name = ast_dotted(node) if isinstance(node, ast.Attribute) else None
    return _is_number(node) or (name is not None and python_math(name, env.imports))


def _terms(node: ast.expr) -> List[ast.expr]:
    found: List[ast.expr] = []
    pending = [node]
    while pending:
        current = _bare(pending.pop())
        if isinstance(current, ast.BinOp) and is_additive(current):
            pending += [current.right, current.left]
        else:
            found.append(current)
    return found


def _exp_argument(node: ast.expr, env: Env) -> Optional[ast.expr]:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in _EXPONENT_METHODS and not node.args and not node.keywords \
            and not _imported(func.value, env):
        return _floorless(func.value, env)
    if ast_qualnames(func, env.imports) & _OF_EXPONENT and node.args and not isinstance(node.args[0], ast.Starred):
        return _floorless(node.args[0], env)
    return None


def _floorless(node: ast.expr, env: Env) -> ast.expr:
    """`logparams._floorless`: the tensor under the floors on it."""
    node = _bare(node)
    inner, _ = strip_floor(node, env)
    while inner is not node:
        node = _bare(inner)
        inner, _ = strip_floor(node, env)
    return node


def _imported(node: ast.expr, env: Env) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in env.imports.bindings


def _exponents(term: ast.expr, env: Env, depth: int) -> Iterator[str]:
    pending: List[ast.expr] = [term]
    while pending:
        node = _bare(pending.pop())
        argument = _exp_argument(node, env)
        if argument is not None:
            name = _tensor_name(argument)
            if name is not None:
                yield name
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _SCALING):
            if not _entropy_term(node, env):
                pending += [node.left, node.right]
        elif isinstance(node, ast.Name) and depth > 0 and env.is_local(node.id):
            values = env.values(node.id)
            if len(values) == 1:
                yield from _exponents(values[0], env, depth - 1)


def _entropy_term(node: ast.BinOp, env: Env) -> bool:
    """`logparams._entropy_term`: `p * torch.log(p + eps)`."""
    if not isinstance(node.op, ast.Mult):
        return False
    return any(name is not None and name in set(_exponents(factor, env, 0))
               for factor, name in ((node.left, _tensor_name(node.right)), (node.right, _tensor_name(node.left))))


def _linear(term: ast.expr) -> Set[str]:
    node = _bare(term)
    name = _tensor_name(node)
    if name is not None:
        return {name}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return {n for side in (node.left, node.right) for n in [_tensor_name(side)] if n is not None}
    return set()


def _tensor_name(node: ast.expr) -> Optional[str]:
    node = _bare(node)
    if isinstance(node, ast.BinOp) and isinstance(node.op, _SCALING):
        if _is_number(node.right):
            return _tensor_name(node.left)
        if isinstance(node.op, ast.Mult) and _is_number(node.left):
            return _tensor_name(node.right)
        return None
    if isinstance(node, (ast.Name, ast.Attribute)):
        return ast_dotted(node)
    if isinstance(node, ast.Call):
        return "".join(ast.unparse(node).split())
    return None


def _is_number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _bare(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return node
