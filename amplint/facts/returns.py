"""Distributions that the functions of this file return, followed into their callers.

Real code builds a distribution in `forward` or in a `get_dist(...)` helper and
computes with it in the caller: `policy(x).log_prob(a)`, `d = self.head(h)`,
`preds, dist = self.evaluation_forward(x)`, `out = model(h); out["dist"]`,
`model(h).dist` (a data class or a `ModelOutput`). The caller's site then reads the
constructor's parameters, which were computed in the callee: a cast of the
value alone leaves them float16 (issue 13, item 4), and fix A casts them where
the distribution is built.

Only this file's functions are followed (module functions, methods called on
`self`, and instances of this file's classes held in a local name or a `self.`
attribute), through `return` statements and the callee's own local names. A
function may return distributions built in several places (`return` statements,
a name bound in each branch of an `if`): each element (a tuple position, a dict
key, a data class field: `Element`) holds the join of them, as a parameter
holds the join of its callers' arguments (`given_ref`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.metadata import CodePosition

from amplint import dtypes
from amplint.facts.classfields import declared_fields
from amplint.facts.cstflow import is_none
from amplint.facts.distrefs import PICKED, split_components
from amplint.facts.entry import CallReturn, Constructor, DistArgument, Element, ReturnedDist
from amplint.facts.mathenv import Env, Statements, function_env, self_attribute, unrebound_parameters
from amplint.facts.model import DistRef, Scope
from amplint.facts.samemodule import same_module
from amplint.names import ImportTable, dotted_name

_DEPTH = 4


@dataclass(frozen=True)
class Returned:
    """A distribution constructor in a callee: its `DistRef` (inputs: tensors not float32 there) and where."""

    ref: DistRef
    owner: str  # the function that builds it: "Policy.forward", "make_dist"


class ReturnIndex:
    """What each function of one module returns, computed on first use (most files never ask)."""

    def __init__(self, module: cst.Module, imports: ImportTable,
                 dist_class: Callable[[cst.BaseExpression], Optional[str]],
                 line_of: Callable[[cst.CSTNode], int], statements: Statements, builds: bool = True) -> None:
        self.module = module
        self.statements = statements
        self.builds = builds  # False: no function of this file can construct a distribution (the text says so)
        self.imports = imports
        self.dist_class = dist_class
        self.line_of = line_of
        self._functions: Optional[Dict[str, Tuple[cst.FunctionDef, Optional[cst.ClassDef]]]] = None
        self._returns: Dict[str, Dict[Element, List[Returned]]] = {}
        self._attributes: Dict[Tuple[str, str], Optional[Returned]] = {}  # (class, attr) -> what `attribute` found

    def ref(self, call: cst.Call, env: Env, class_name: Optional[str], index: Element,
            remote: Sequence[CallReturn], start: CodePosition) -> Optional[DistRef]:
        """The distribution `call` returns: built by a function of this file, else by one of another (`remote`)."""
        found = self.for_call(call, env, class_name, index) if self.builds else None
        if found is None:
            return remote_ref(remote, start, index)
        return self._placed(found)

    def for_call(self, call: cst.Call, env: Env, class_name: Optional[str],
                 index: Element = None) -> Optional[Returned]:
        """What `call` returns (its element `index`: a tuple position, a dict key or a data class field), if a
        function of this file builds it: of
        several constructors, the first whose inputs are not all float32 stands for all (fix A casts it, and a
        second run the next)."""
        key = self._callee(call.func, env, class_name)
        return _standing_for(self._returned(key).get(index, []) if key is not None else [])

    def attribute(self, node: cst.BaseExpression, class_name: Optional[str],
                  given: Sequence[DistArgument] = ()) -> Optional[DistRef]:
        """`self.dist` in a method: the constructors its class's methods assign it (`self.dist = Normal(...)` in
        `forward`), joined as `for_call` joins returns; else, where every assignment stores a parameter its
        method never rebinds (`def __init__(self, dist): self._dist = dist`), what callers give those parameters
        (`given`, the walk's `DistArgument`s, joined as `given_ref` joins them); None otherwise."""
        attr = self_attribute(node)
        if attr is None or class_name is None:
            return None
        if self.builds and (class_name, attr) not in self._attributes:
            self._attributes[(class_name, attr)] = self._assigned(class_name, attr)
        found = self._attributes.get((class_name, attr)) if self.builds else None
        if found is not None:
            return self._placed(found)
        return self._stored_parameters(class_name, attr, given) if given else None

    def _stored_parameters(self, class_name: str, attr: str, given: Sequence[DistArgument]) -> Optional[DistRef]:
        """What callers give the parameters the methods of `class_name` store in `self.<attr>`, when each store
        is of such a parameter (`self.x = None` left out)."""
        stored: List[Tuple[str, str]] = []  # (method key, parameter)
        for key, function, env, value in self._stores(class_name, attr):
            if not (isinstance(value, cst.Name) and value.value in unrebound_parameters(function, env)):
                return None
            stored.append((key, value.value))
        return _joined([(each.dist, each.where, each.file) for each in given
                        if (each.function, each.param) in stored]) if stored else None

    def _placed(self, found: Returned) -> DistRef:
        """The ref, named where it is built (messages: "built in `Head.forward` at line 13")."""
        return replace(found.ref, built_in=(found.owner, f"line {self.line_of(found.ref.ctor)}"))

    def _assigned(self, class_name: str, attr: str) -> Optional[Returned]:
        """Of the constructors the methods of `class_name` assign to `self.<attr>`, the first with uncast inputs."""
        built: List[Returned] = []
        for key, function, env, value in self._stores(class_name, attr):
            ctors = self._ctors(value, env, _DEPTH)
            if ctors is None:
                return None
            built.extend(Returned(self._ref(*ctor, env), key) for ctor in ctors)
        return _standing_for(built)

    def _stores(self, class_name: str, attr: str) -> Iterator[Tuple[str, cst.FunctionDef, Env, cst.BaseExpression]]:
        """(method key, method, its bindings, value) of each `self.<attr> = value` in the methods of `class_name`,
        `self.dist = None` left out (no receiver of a method call until a method builds it)."""
        for key, (function, cls) in self._table().items():
            if cls is None or key.rpartition(".")[0] != class_name:
                continue
            env = function_env(function, self.imports, cls, self.statements)
            for statement in self.statements.of(function.body):
                if isinstance(statement, cst.Assign) and not is_none(statement.value) and any(
                        self_attribute(target.target) == attr for target in statement.targets):
                    yield key, function, env, statement.value

    # --- which function a call runs ----------------------------------------
    def _table(self) -> Dict[str, Tuple[cst.FunctionDef, Optional[cst.ClassDef]]]:
        if self._functions is None:
            table: Dict[str, Tuple[cst.FunctionDef, Optional[cst.ClassDef]]] = {}
            for statement in self.module.body:
                if isinstance(statement, cst.FunctionDef):
                    table.setdefault(statement.name.value, (statement, None))
                elif isinstance(statement, cst.ClassDef):
                    for member in statement.body.body:
                        if isinstance(member, cst.FunctionDef):
                            table.setdefault(f"{statement.name.value}.{member.name.value}", (member, statement))
            self._functions = table
        return self._functions

    def _callee(self, func: cst.BaseExpression, env: Env, class_name: Optional[str]) -> Optional[str]:
        table = self._table()
        if isinstance(func, cst.Name):
            if func.value in table:
                return func.value
            return self._instance_method(self._class_of(env.values(func.value)), "forward")
        if isinstance(func, cst.Call):  # `Policy(8)(x)`
            return self._instance_method(self._constructed(func), "forward")
        if not isinstance(func, cst.Attribute):
            return None
        method = func.attr.value
        receiver = func.value
        if isinstance(receiver, cst.Name) and receiver.value == "self" and class_name is not None:
            key = f"{class_name}.{method}"
            if key in table:
                return key
            return self._instance_method(self._class_of(env.attribute_values(method)), "forward")
        attr = self_attribute(receiver)
        values = env.attribute_values(attr) if attr is not None else (
            env.values(receiver.value) if isinstance(receiver, cst.Name) else ())
        return self._instance_method(self._class_of(values), method)

    def _instance_method(self, cls: Optional[str], method: str) -> Optional[str]:
        if cls is None:
            return None
        table = self._table()
        for name in ((method, "__call__") if method == "forward" else (method,)):
            if f"{cls}.{name}" in table:
                return f"{cls}.{name}"
        return None

    def _class_of(self, values) -> Optional[str]:
        """The class of this file every binding constructs (`Policy(8)`, `Policy(8).to(device)`), if one."""
        found = {self._constructed(value) for value in values}
        if len(found) != 1:
            return None
        return found.pop()

    def _constructed(self, value: cst.BaseExpression) -> Optional[str]:
        value = same_module(value, self.imports)[0]  # `Policy(8).to(device)`, `DDP(Policy(8))`
        if not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
            return None
        name = value.func.value
        return name if any(key.startswith(f"{name}.") for key in self._table()) else None

    def summaries(self) -> Dict[str, Tuple[ReturnedDist, ...]]:
        """Plain data for the project summaries: per function key, the distributions it returns and their inputs."""
        code = self.module.code_for_node
        found: Dict[str, Tuple[ReturnedDist, ...]] = {}
        for key in self._table() if self.builds else ():
            returned = self._returned(key)
            if returned:
                found[key] = tuple(
                    ReturnedDist(index if isinstance(index, int) else -1, r.ref.qualname, code(r.ref.ctor),
                                 self.line_of(r.ref.ctor), tuple(code(i) for i in r.ref.all_inputs()), r.owner,
                                 r.ref.castable(), index if isinstance(index, str) else "")
                    for index, built in sorted(returned.items(), key=lambda item: _element_order(item[0]))
                    for r in built)
        return found

    # --- what a function returns -------------------------------------------
    def _returned(self, key: str) -> Dict[Element, List[Returned]]:
        """Per element (None: the value itself), every constructor it may come from, in order."""
        if key not in self._returns:
            self._returns[key] = {}  # a recursive function ends here
            function, cls = self._table()[key]
            env = function_env(function, self.imports, cls, self.statements)
            found: Dict[Element, List[Returned]] = {}
            for value in _return_values(function, self.statements):
                for index, expr in self._elements(value):
                    built = found.setdefault(index, [])
                    for ctor in self._ctors(expr, env, _DEPTH) or ():
                        if all(ctor[0] is not each.ref.ctor for each in built):
                            built.append(Returned(self._ref(*ctor, env), key))
            self._returns[key] = {index: built for index, built in found.items() if built}
        return self._returns[key]

    def _elements(self, value: cst.BaseExpression) -> List[Tuple[Element, cst.BaseExpression]]:
        """What a `return` holds, by element: a tuple's positions, a dict's literal keys (`{"dist": d}`,
        `dict(dist=d)`), the fields a data class or named tuple of this file is built with (`Output(d, loc)`), the
        keywords any other class is (`ModelOutput(dist=d)`); and a call, whatever it builds, as the value itself."""
        if isinstance(value, cst.Tuple):
            return [(i, e.value) for i, e in enumerate(value.elements)]
        if isinstance(value, cst.Dict):
            return [(k.evaluated_value, e.value) for e in value.elements if isinstance(e, cst.DictElement)
                    for k in [e.key] if isinstance(k, cst.SimpleString) and isinstance(k.evaluated_value, str)]
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            fields = self._fields(value.func.value)
            if fields is not None and not any(a.star for a in value.args):
                positional = [a for a in value.args if a.keyword is None]
                return [(None, value)] + [(f, a.value) for f, a in zip(fields, positional)] + [
                    (a.keyword.value, a.value) for a in value.args if a.keyword is not None]
        return [(None, value)]

    def _fields(self, name: str) -> Optional[Tuple[str, ...]]:
        """The fields a call of `name` sets, in order: `dict` none but its keywords, a data class or named tuple of
        this file its annotated fields; a class of another file (capitalised) only its keywords; None: no such."""
        if name == "dict":
            return ()
        for statement in self.module.body:
            if isinstance(statement, cst.ClassDef) and statement.name.value == name:
                return _declared_fields(statement)
        return () if name[:1].isupper() else None

    def _ctors(self, expr: cst.BaseExpression, env: Env, depth: int) -> Optional[List[Tuple[cst.Call, str]]]:
        """The constructors `expr` may come from: one call, or a name every binding of which is one (an
        `if`/`else` that builds `Normal` or `Laplace`); None when any binding is something else."""
        if isinstance(expr, cst.Call):
            qualname = self.dist_class(expr.func)
            return [(expr, qualname)] if qualname is not None else None
        if isinstance(expr, cst.Name) and depth > 0:
            values = env.values(expr.value)
            found = [self._ctors(value, env, depth - 1) for value in values]
            if values and all(each is not None for each in found):
                return [ctor for each in found for ctor in each]  # type: ignore[union-attr]
        return None

    def _ctor(self, expr: cst.BaseExpression, env: Env, depth: int) -> Optional[Tuple[cst.Call, str]]:
        """A component's constructor: one call, or a name with a single binding that is one."""
        found = self._ctors(expr, env, depth)
        return found[0] if found is not None and len(found) == 1 else None

    def _ref(self, call: cst.Call, qualname: str, env: Env) -> DistRef:
        """The callee's constructor as the caller reads it: nested constructors are components."""
        ref = DistRef(call, qualname, None)
        values, ref.has_star = dtypes.constructor_arguments(qualname, call, self.imports)

        def component(value: cst.BaseExpression) -> Optional[DistRef]:
            inner = self._ctor(value, env, _DEPTH)
            return self._ref(*inner, env) if inner is not None else None

        ref.components, inputs = split_components(qualname, call, values, component)
        ref.inputs = [value for value in inputs if not self._wide(value, env, _DEPTH)]
        for picked in (c for c in ref.components if c.qualname == PICKED):
            picked.inputs = [value for value in picked.inputs if not self._wide(value, env, _DEPTH)]
        return ref

    def _wide(self, node: cst.BaseExpression, env: Env, depth: int) -> bool:
        """Float32 in the callee: a cast, a factory, or a local name every binding of which is one."""
        def wide_name(name: str) -> bool:
            values = env.values(name) if depth > 0 else ()
            return bool(values) and env.is_local(name) and all(self._wide(v, env, depth - 1) for v in values)
        return dtypes.is_wide(node, self.imports, wide_name)


def _element_order(element: Element) -> Tuple[int, str]:
    """The value itself, then tuple positions, then keys and fields by name."""
    if element is None:
        return (-1, "")
    return (element, "") if isinstance(element, int) else (1 << 30, element)


def _declared_fields(cls: cst.ClassDef) -> Optional[Tuple[str, ...]]:
    """A `@dataclass` or `NamedTuple` class's fields in order (`facts.classfields`); None for another class,
    whose `__init__` may store what it is given under any name."""
    def last(node: cst.BaseExpression) -> str:
        return (dotted_name(node) or "").rsplit(".", 1)[-1]

    def outer(annotation: cst.BaseExpression) -> str:
        return last(annotation.value if isinstance(annotation, cst.Subscript) else annotation)

    return declared_fields(
        [last(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) for d in cls.decorators],
        [last(b.value) for b in cls.bases],
        [(s.body[0].target.value, outer(s.body[0].annotation.annotation)) for s in cls.body.body
         if isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.AnnAssign)
         and isinstance(s.body[0].target, cst.Name)])


def _standing_for(built: Sequence[Returned]) -> Optional[Returned]:
    """Of several constructors, the first whose inputs are not all float32 (fix A casts it, and a second run the
    next), else the first."""
    return next((each for each in built if each.ref.all_inputs()), built[0] if built else None)


def _return_values(function: cst.FunctionDef, statements: Statements) -> Iterator[cst.BaseExpression]:
    for node in statements.of(function.body):
        if isinstance(node, cst.Return) and node.value is not None:
            yield node.value


def remote_ref(returns: Sequence[CallReturn], start: CodePosition, index: Element) -> Optional[DistRef]:
    """The distribution a call returns from another file (`CallReturn`, from the project walk), as a DistRef.

    Its constructor and inputs are parsed from their text: they name what was
    built there for messages and the verifier, and `built_at` tells the fixer
    where to cast them. A callee that builds it in several places gives their join (`_joined`).
    """
    return _joined([(each.dist, each.where, each.file) for each in returns
                    if (each.line, each.column) == (start.line, start.column + 1) and each.dist.element == index])


def given_ref(arguments: Sequence[DistArgument], scope: Scope, name: str) -> Optional[DistRef]:
    """The distribution callers elsewhere give parameter `name` of this scope (`DistArgument`), as a DistRef."""
    if name not in scope.params or name in scope.assigned:
        return None
    return _joined([(each.dist, each.where, each.file) for each in arguments
                    if each.function == scope.key and each.param == name])


def _joined(built: Sequence[Tuple[ReturnedDist, str, str]]) -> Optional[DistRef]:
    """One DistRef for distributions that may be built in several places, each (dist, where shown, file).

    One with uncast inputs stands for all (one fix A cannot cast first, else the first in file and line order);
    when every one is built from float32 tensors, the value is a float32 distribution and the ref has no
    inputs. `built_at` lists each uncast constructor: fix A casts them all.
    """
    ordered = sorted(built, key=lambda each: (each[0].castable, each[1], each[0].line))  # what blocks a fix first
    uncast = [each for each in ordered if each[0].uncast]
    if not ordered:
        return None
    dist, where, _ = (uncast or ordered)[0]
    ref = _parsed_ref(dist, (dist.owner, f"{where}:{dist.line}"),
                      tuple(dict.fromkeys(Constructor(file, each.line, each.ctor) for each, _, file in uncast)))
    if ref is not None:
        ref.remote_castable = all(each.castable for each, _, _ in uncast)
    return ref


def _parsed_ref(dist: ReturnedDist, built_in: Tuple[str, str], built_at: Tuple[Constructor, ...]) -> Optional[DistRef]:
    try:
        ctor = cst.parse_expression(dist.ctor)
        inputs = [cst.parse_expression(text) for text in dist.uncast]
    except cst.ParserSyntaxError:
        return None
    if not isinstance(ctor, cst.Call):
        return None
    return DistRef(ctor, dist.qualname, None, [], inputs, False, built_in, remote=True,
                   remote_castable=dist.castable, built_at=built_at)


def returned_element(node: cst.BaseExpression, bound: Callable[[str], Optional[cst.Call]] = lambda name: None
                     ) -> Optional[Tuple[cst.Call, Element]]:
    """(the call, the element) for an element read of what a call returns: `f(x)[0]` (a literal non-negative
    index: `f(x)[-1]` is none), `f(x)["dist"]`, `f(x).dist`, or the same of a local name `bound` says holds a
    call (`out = f(x); out["dist"]`)."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        owner, key = node.value, node.slice[0].slice.value
        element: Element = int(key.evaluated_value) if isinstance(key, cst.Integer) else \
            key.evaluated_value if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str) else None
    elif isinstance(node, cst.Attribute):
        owner, element = node.value, node.attr.value
    else:
        return None
    call = owner if isinstance(owner, cst.Call) else bound(owner.value) if isinstance(owner, cst.Name) else None
    return None if call is None or element is None else (call, element)


def unpacked(target: cst.BaseExpression, value: cst.BaseExpression) -> List[Tuple[int, str]]:
    """`preds, dist = f(x)`: (tuple position, name) of each plain name of a tuple target bound to a call."""
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, cst.Call):
        return []
    return [(i, e.value.value) for i, e in enumerate(target.elements) if isinstance(e.value, cst.Name)]
