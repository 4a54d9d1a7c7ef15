"""What the hand-written-math recogniser may look up in one function: its bindings and its class's attributes.

Flow-insensitive on purpose: every assignment of a name counts, so a branch
never hides a binding, and a floor literal is trusted only when all of a
name's bindings agree on it.
"""
from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from amplint.cstwalk import descendants, type_test
from amplint.facts.nodes import every_param, literal_pairs
from amplint.names import ImportTable, dotted_name

Bindings = Dict[str, List[cst.BaseExpression]]


class Env:
    """What the recogniser may look up: imports, a function's bindings and its class's attributes.

    `values(name)` gives the expressions assigned to a local name (and a
    parameter's default); `attribute_values(attr)` those assigned to
    `self.attr` anywhere in the class. `is_local(name)` says the function
    computed the name itself, so its name alone proves nothing. The bindings
    are read on first use: most functions hold no probability math at all.
    """

    def __init__(self, imports: ImportTable, function: Optional[cst.FunctionDef] = None,
                 attributes: Callable[[], Bindings] = dict, statements: Optional["Statements"] = None,
                 producers: FrozenSet[str] = frozenset()) -> None:
        self.imports = imports
        self.producers = producers  # callees, as written, that return probabilities (`entry.ProbabilityCallees`)
        self._function = function
        self._local: Optional[Bindings] = None
        self._attributes = attributes
        self._statements = statements or Statements()
        self.memo: Dict[tuple, bool] = {}  # `probmath.has` answers for this function's nodes

    def _bindings(self) -> Bindings:
        if self._local is None:
            self._local = _bindings(self._function, self._statements) if self._function is not None else {}
        return self._local

    def calls_producer(self, node: cst.BaseExpression) -> bool:
        """Is `node` a call of a project function that returns probabilities (`entry.ProbabilityCallees`)?"""
        return bool(self.producers) and isinstance(node, cst.Call) and dotted_name(node.func) in self.producers

    def values(self, name: str) -> Sequence[cst.BaseExpression]:
        return self._bindings().get(name, ())

    def attribute_values(self, attr: str) -> Sequence[cst.BaseExpression]:
        return self._attributes().get(attr, ())

    def is_local(self, name: str) -> bool:
        return self._function is not None and name in self._bindings() and not _is_param(self._function, name)

    def is_number_constant(self, name: str) -> bool:
        """A module constant that is a Python number (`ImportTable.number_constants`) the function does not
        rebind: never a tensor, so never an input to cast."""
        return name in self.imports.number_constants and name not in self._bindings() and not (
            self._function is not None and _is_param(self._function, name))

    def constant_value(self, name: str) -> Optional[float]:
        """The value of such a constant, where the table could compute it."""
        return self.imports.number_constants.get(name) if self.is_number_constant(name) else None


def function_env(function: cst.FunctionDef, imports: ImportTable,
                 class_node: Optional[cst.ClassDef] = None, statements: Optional["Statements"] = None) -> Env:
    """An `Env` over one function: its assignments and parameter defaults, and its class's `self.` attributes.

    Flow-insensitive on purpose: every assignment of a name counts, so a
    branch never hides a binding (a floor literal needs all of them to agree).
    """
    statements = statements or Statements()
    return Env(imports, function, class_bindings(class_node, statements), statements)


def class_bindings(class_node: Optional[cst.ClassDef], statements: "Statements") -> Callable[[], Bindings]:
    """The class's `self.` attribute bindings, read on first use (every method of the class shares them)."""
    if class_node is None:
        return dict
    return lambda: statements.attributes(class_node)


def scope_env(node: Optional[cst.CSTNode], imports: ImportTable, attributes: Callable[[], Bindings],
              statements: "Statements", producers: FrozenSet[str] = frozenset()) -> Env:
    """An `Env` for a scope: a function's own bindings; the module scope binds nothing the recogniser follows."""
    return Env(imports, node if isinstance(node, cst.FunctionDef) else None, attributes, statements, producers)


class Statements:
    """`statements_of` and a class's `self.` bindings per node of one tree, each computed once.

    The collector, the return index and the density-call recognizer all read
    the same function bodies; on the real-code corpus 2,003 reads covered 810
    bodies (a class's attributes were read again for each method and call).
    Entries keep their node, so an id reused by a later node is never mistaken.
    """

    def __init__(self) -> None:
        self._bodies: Dict[int, Tuple[cst.CSTNode, Tuple[cst.CSTNode, ...]]] = {}
        self._classes: Dict[int, Tuple[cst.ClassDef, Bindings]] = {}

    def of(self, node: cst.CSTNode) -> Tuple[cst.CSTNode, ...]:
        entry = self._bodies.get(id(node))
        if entry is None or entry[0] is not node:
            entry = self._bodies[id(node)] = (node, tuple(statements_of(node)))
        return entry[1]

    def attributes(self, class_node: cst.ClassDef) -> Bindings:
        entry = self._classes.get(id(class_node))
        if entry is None or entry[0] is not class_node:
            entry = self._classes[id(class_node)] = (class_node, _attribute_bindings(class_node, self))
        return entry[1]


def unrebound_parameters(function: Optional[cst.CSTNode], env: Env) -> FrozenSet[str]:
    """The parameters of `function` its body never assigns (`env.values` holds only a default, if any): in a
    region of the function they hold what its caller gave, made outside the region (`Site.data`)."""
    if not isinstance(function, cst.FunctionDef):
        return frozenset()
    return frozenset(p.name.value for p in every_param(function.params)
                     if len(env.values(p.name.value)) == (p.default is not None))


def _is_param(function: cst.FunctionDef, name: str) -> bool:
    return any(param.name.value == name for param in _params(function))


def _params(function: cst.FunctionDef) -> Iterator[cst.Param]:
    params = function.params
    yield from params.posonly_params
    yield from params.params
    yield from params.kwonly_params


def _bindings(function: cst.FunctionDef, statements: Statements) -> dict:
    found: dict = {}
    for param in _params(function):
        if param.default is not None:
            found.setdefault(param.name.value, []).append(param.default)
    for node in statements.of(function.body):
        if isinstance(node, cst.Assign):
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    found.setdefault(target.target.value, []).append(node.value)
            for name, value in literal_pairs(node.targets, node.value) or ():  # `p, q = a.softmax(1), b`
                found.setdefault(name, []).append(value)
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


def _attribute_bindings(class_node: cst.ClassDef, statements: Statements) -> dict:
    """`self.attr = value` in any method; a parameter assigned as is stands for its default, and a local of the
    method for what the method binds it to (`p = probabilities(net(x)); self.p = p`: another method reads
    `self.p` where `p` means nothing)."""
    found: dict = {}
    for method in class_node.body.body:
        if not isinstance(method, cst.FunctionDef):
            continue
        defaults = {p.name.value: p.default for p in _params(method)}
        local: Optional[dict] = None
        for node in statements.of(method.body):
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
                elif isinstance(value, cst.Name):
                    local = _bindings(method, statements) if local is None else local
                    if local.get(value.value):
                        found.setdefault(attr, []).extend(local[value.value])
                        continue
                found.setdefault(attr, []).append(value)
    return found


def statements_of(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Small statements, `for` headers and comprehension clauses under `node`, nested scopes excluded.

    A `for` or a comprehension binds its target to an element of the iterable,
    which is what the recogniser follows (`for lkl in likelihoods.values()`).
    Iterative, in source order: generated code nests deep.
    """
    for child in descendants(node, _NESTED_SCOPE):
        if _BINDING(child):
            yield child


_NESTED_SCOPE = type_test(cst.FunctionDef, cst.ClassDef, cst.Lambda)
_BINDING = type_test(cst.BaseSmallStatement, cst.For, cst.CompFor)


def self_attribute(node: cst.BaseExpression) -> Optional[str]:
    """`x` of `self.x`, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None
