"""What the hand-written-math recogniser may look up in one function: its bindings and its class's attributes.

Flow-insensitive on purpose: every assignment of a name counts, so a branch
never hides a binding, and a floor literal is trusted only when all of a
name's bindings agree on it.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Sequence

import libcst as cst

from amplint.cstwalk import children
from amplint.names import ImportTable

Bindings = Dict[str, List[cst.BaseExpression]]


class Env:
    """What the recogniser may look up: imports, a function's bindings and its class's attributes.

    `values(name)` gives the expressions assigned to a local name (and a
    parameter's default); `attribute_values(attr)` those assigned to
    `self.attr` anywhere in the class. `is_local(name)` says the function
    computed the name itself, so its name alone proves nothing.
    """

    def __init__(
        self,
        imports: ImportTable,
        values: Callable[[str], Sequence[cst.BaseExpression]] = lambda name: (),
        attribute_values: Callable[[str], Sequence[cst.BaseExpression]] = lambda attr: (),
        is_local: Callable[[str], bool] = lambda name: False,
    ) -> None:
        self.imports = imports
        self.values = values
        self.attribute_values = attribute_values
        self.is_local = is_local


def function_env(function: cst.FunctionDef, imports: ImportTable,
                 class_node: Optional[cst.ClassDef] = None) -> Env:
    """An `Env` over one function: its assignments and parameter defaults, and its class's `self.` attributes.

    Flow-insensitive on purpose: every assignment of a name counts, so a
    branch never hides a binding (a floor literal needs all of them to agree).
    """
    local = _bindings(function)
    attributes = _attribute_bindings(class_node) if class_node is not None else {}
    return Env(imports, lambda name: local.get(name, ()), lambda attr: attributes.get(attr, ()),
               lambda name: name in local and not _is_param(function, name))


def scope_env(node: Optional[cst.CSTNode], imports: ImportTable, class_node: Optional[cst.ClassDef]) -> Env:
    """`function_env` for a function scope; the module scope binds nothing the recogniser follows."""
    return function_env(node, imports, class_node) if isinstance(node, cst.FunctionDef) else Env(imports)


def _is_param(function: cst.FunctionDef, name: str) -> bool:
    return any(param.name.value == name for param in _params(function))


def _params(function: cst.FunctionDef) -> Iterator[cst.Param]:
    params = function.params
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params


def _bindings(function: cst.FunctionDef) -> dict:
    found: dict = {}
    for param in _params(function):
        if param.default is not None:
            found.setdefault(param.name.value, []).append(param.default)
    for node in statements_of(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(node.value)
        elif isinstance(node, cst.AnnAssign) and node.value is not None and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, []).append(node.value)
        elif isinstance(node, (cst.For, cst.CompFor)) and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, []).append(node.iter)  # an element of the iterable
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
            found.setdefault(node.target.value, []).append(
                cst.BinaryOperation(node.target, _AUG_TO_BINARY.get(type(node.operator), cst.Add)(), node.value))
    return found


_AUG_TO_BINARY = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide, cst.PowerAssign: cst.Power,
}


def _attribute_bindings(class_node: cst.ClassDef) -> dict:
    """`self.attr = value` in any method; a parameter assigned as is stands for its default."""
    found: dict = {}
    for method in class_node.body.body:
        if not isinstance(method, cst.FunctionDef):
            continue
        defaults = {p.name.value: p.default for p in _params(method)}
        for node in statements_of(method.body):
            if not isinstance(node, cst.Assign):
                continue
            for target in node.targets:
                attr = self_attribute(target.target)
                if attr is None:
                    continue
                value = node.value
                if isinstance(value, cst.Name) and value.value in defaults:
                    default = defaults[value.value]
                    if default is None:
                        found.setdefault(attr, []).append(value)  # no default: unknown, keeps values apart
                        continue
                    value = default
                found.setdefault(attr, []).append(value)
    return found


def statements_of(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Small statements, `for` headers and comprehension clauses under `node`, nested scopes excluded.

    A `for` or a comprehension binds its target to an element of the iterable,
    which is what the recogniser follows (`for lkl in likelihoods.values()`).
    """
    for child in children(node):
        if isinstance(child, cst.BaseSmallStatement):
            yield child
            yield from statements_of(child)
        elif isinstance(child, (cst.For, cst.CompFor)):
            yield child
            yield from statements_of(child)
        elif not isinstance(child, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            yield from statements_of(child)


def self_attribute(node: cst.BaseExpression) -> Optional[str]:
    """`x` of `self.x`, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None
