"""Which classes the receiver of a `log_prob` call may be an instance of, when the file tells.

AMP001 reports `x.log_prob(v)` under float16 autocast even when `x`'s
constructor is not visible: a method named `log_prob` is assumed to be a
distribution's. That is wrong when every class `x` may be an instance of is
known and is not a distribution: a `torch.nn` module
(`nn.AdaptiveLogSoftmaxWithLoss.log_prob`), or a plain class of the same file
(pyro's `TraceEinsumEvaluator.log_prob(trace)`). `Receivers` answers that
question from the parsed module alone, so single-file and project mode agree.

Every answer is "the constructor callees, or None when any path is unknown":
a parameter, an imported helper, a loop variable, a tuple unpacking all give
None and the call stays reported. A `self.` attribute is typed, as a type
checker would, by what its class assigns; a visible construction assigned to
it from outside (`layer.proj = Normal(...)`) joins them. The scans run only
for the rare call that needs them, and are cached per file.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst

from amplint import dtypes
from amplint.cstwalk import walk
from amplint.facts.samemodule import same_module
from amplint.names import ImportTable, dotted_name
from amplint.torchnames import DISTRIBUTION_PACKAGES, is_torch_nn_class, never_a_distribution_base

Callees = Optional[List[cst.BaseExpression]]  # the constructor callees an expression may come from; None: unknown
Binding = Union[cst.BaseExpression, cst.Param]  # a value assigned to a name, or the parameter that binds it
Chain = Sequence[cst.CSTNode]  # the scopes a name is looked up in, innermost first (FunctionDef / Module)

MAX_DEPTH = 8  # names bound to names: `a = b`, `b = c`, ...


def _self_attribute(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def _target_parts(target: cst.BaseExpression) -> Iterable[cst.BaseExpression]:
    """The single targets of an assignment target: `a, (self.b, *c)` gives `a`, `self.b`, `c`."""
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _target_parts(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from _target_parts(target.value)
    else:
        yield target


def _binds(target: cst.BaseExpression, name: str) -> bool:
    return any(isinstance(part, cst.Name) and part.value == name for part in _target_parts(target))


class _NameBindings(cst.CSTVisitor):
    """Every binding of one name in one scope (a function or the module), nested scopes excluded.

    `values` gets `name = value` (and `name := value`); any other binding
    (tuple unpacking, loop and `with` targets, imports, `global`, a nested
    `def name`, a lambda or comprehension variable) sets `opaque`. Inside
    nested functions only `global`/`nonlocal` declarations count: they may
    rebind this scope's name from elsewhere.
    """

    def __init__(self, name: str, root: cst.CSTNode) -> None:
        super().__init__()
        self.name = name
        self.root = root
        self.depth = 0  # nested functions and classes
        self.values: List[Binding] = []
        self.opaque = False

    def _nested(self, node: Union[cst.FunctionDef, cst.ClassDef]) -> bool:
        if node is self.root:
            return True
        if self.depth == 0 and node.name.value == self.name:
            self.opaque = True
        self.depth += 1
        return True

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return self._nested(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        if original_node is not self.root:
            self.depth -= 1

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return self._nested(node)

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.depth -= 1

    def visit_Global(self, node: cst.Global) -> None:
        self.opaque = self.opaque or any(n.name.value == self.name for n in node.names)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        self.opaque = self.opaque or any(n.name.value == self.name for n in node.names)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self.depth:
            return
        for target in node.targets:
            if isinstance(target.target, cst.Name) and target.target.value == self.name:
                self.values.append(node.value)
            elif _binds(target.target, self.name):
                self.opaque = True

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if not self.depth and node.value is not None and _binds(node.target, self.name):
            self.values.append(node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if not self.depth and _binds(node.target, self.name):
            self.values.append(node.value)

    def _opaque_if(self, target: Optional[cst.BaseExpression]) -> None:
        if not self.depth and target is not None and _binds(target, self.name):
            self.opaque = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._opaque_if(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._opaque_if(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._opaque_if(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self._opaque_if(None if node.asname is None else node.asname.name)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._opaque_if(None if node.name is None else node.name.name)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._opaque_params(node.params)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        self._opaque_if(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        self._opaque_if(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        self._opaque_if(node.rest)

    def visit_Import(self, node: cst.Import) -> None:
        self._opaque_aliases(node.names)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self.opaque = self.opaque or not self.depth
        else:
            self._opaque_aliases(node.names)

    def _opaque_aliases(self, aliases: Sequence[cst.ImportAlias]) -> None:
        for alias in aliases:
            local = alias.asname.name if alias.asname is not None else alias.name
            name = dotted_name(local) if isinstance(local, (cst.Name, cst.Attribute)) else None
            if not self.depth and name is not None and name.split(".")[0] == self.name:
                self.opaque = True

    def _opaque_params(self, params: cst.Parameters) -> None:
        if not self.depth and any(p.name.value == self.name for p in _all_params(params)):
            self.opaque = True


def _all_params(params: cst.Parameters) -> List[cst.Param]:
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    return every + [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]


class _AttributeBindings(cst.CSTVisitor):
    """Every value one class assigns to `self.<attr>` (or to `<attr>` in its body), with the functions around it.

    Tuple unpacking, loop/`with` targets and augmented assignments of the
    attribute set `opaque`. Nested classes are not entered.
    """

    def __init__(self, attr: str) -> None:
        super().__init__()
        self.attr = attr
        self.classes = 0
        self.functions: List[cst.FunctionDef] = []  # innermost last
        self.values: List[Tuple[cst.BaseExpression, Tuple[cst.FunctionDef, ...]]] = []
        self.opaque = False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.classes += 1
        return self.classes == 1

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.classes -= 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def _is_attr(self, target: cst.BaseExpression) -> bool:
        if self.functions:
            return _self_attribute(target) == self.attr
        return isinstance(target, cst.Name) and target.value == self.attr

    def _record(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if value is not None and self._is_attr(target):
            self.values.append((value, tuple(reversed(self.functions))))
        elif any(self._is_attr(part) for part in _target_parts(target)):
            self.opaque = True

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._record(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._record(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._record(node.target, None)

    def visit_For(self, node: cst.For) -> None:
        self._record(node.target, None)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._record(node.asname.name, None)


class _References(cst.CSTVisitor):
    """One pass over the module, for what only the whole file tells.

    `calls`: each `Name(...)` call of a class of the file, with the scopes
    around it; `other`: class names also used some other way (passed,
    stored, aliased), whose constructions we therefore cannot all see;
    `foreign`: values assigned to an attribute of something other than
    `self` (`model.head = ...`), with the scopes around them. Annotations and
    `isinstance` checks construct nothing.
    """

    def __init__(self, module: cst.Module, classes: FrozenSet[str]) -> None:
        super().__init__()
        self.module = module
        self.classes = classes
        self.functions: List[cst.FunctionDef] = []  # innermost last
        self.calls: Dict[str, List[Tuple[cst.Call, Tuple[cst.CSTNode, ...]]]] = {}
        self.other: Set[str] = set()
        self.foreign: Dict[str, List[Tuple[cst.BaseExpression, Tuple[cst.CSTNode, ...]]]] = {}
        self.skip: Set[int] = set()  # ids of Name nodes that are not references
        self.annotations = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)
        self.skip.add(id(node.name))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self.skip.add(id(node.name))

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.annotations += 1

    def leave_Annotation(self, original_node: cst.Annotation) -> None:
        self.annotations -= 1

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.skip.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_Param(self, node: cst.Param) -> None:
        self.skip.add(id(node.name))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in self.classes:
            self.skip.add(id(func))
            chain = tuple(reversed(self.functions)) + (self.module,)
            self.calls.setdefault(func.value, []).append((node, chain))
        elif isinstance(func, cst.Name) and func.value in ("isinstance", "issubclass") and len(node.args) == 2:
            checked = node.args[1].value
            for each in checked.elements if isinstance(checked, cst.Tuple) else ():
                self.skip.add(id(each.value))
            self.skip.add(id(checked))

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.classes and id(node) not in self.skip and not self.annotations:
            self.other.add(node.value)

    def _foreign(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Attribute) and _self_attribute(target) is None:
            chain = tuple(reversed(self.functions)) + (self.module,)
            self.foreign.setdefault(target.attr.value, []).append((value, chain))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._foreign(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._foreign(node.target, node.value)


class Receivers:
    """Answers, for one file, whether a receiver is known not to be a distribution."""

    def __init__(
        self,
        module: cst.Module,
        imports: ImportTable,
        classes: Dict[str, List[cst.ClassDef]],
        extend_distributions: FrozenSet[str] = frozenset(),
    ) -> None:
        self.module = module
        self.imports = imports
        self.classes = classes  # as the collector names them: "C", "Outer.Inner"
        self.extra = extend_distributions
        self._names: Dict[Tuple[int, str], Optional[List[Binding]]] = {}
        self._attrs: Dict[Tuple[str, str], Callees] = {}
        self._safe: Dict[str, bool] = {}
        self._references: Optional[_References] = None

    # --- the question ------------------------------------------------------------
    def callees(self, receiver: cst.BaseExpression, chain: Chain, class_name: Optional[str]) -> Callees:
        """The constructor callees `receiver` may come from: a call, a local name, or `self.<attr>`."""
        attr = _self_attribute(receiver)
        if attr is not None:
            return None if class_name is None else self._attribute(class_name, attr)
        return self._value(receiver, chain, 0)

    def import_time_object(self, receiver: cst.BaseExpression) -> bool:
        """`scipy.stats.beta`, `priors.PRIOR`: an object an imported module holds, made when it was imported,
        outside any autocast region; not a float16 distribution unless a distributions package names it."""
        text = dotted_name(receiver)
        names = self.imports.qualnames_of(text) if text is not None else frozenset()
        return text is not None and text.split(".", 1)[0] in self.imports.bindings and not any(
            dtypes.distribution_class(receiver, self.imports, self.extra) or f"{n}.".startswith(DISTRIBUTION_PACKAGES)
            for n in names)

    def is_non_distribution_class(self, callee: cst.BaseExpression) -> bool:
        """A `torch.nn` class, or a class of this file with no base that may be a distribution."""
        if dtypes.distribution_class(callee, self.imports, self.extra) is not None:
            return False
        local = self.file_class(callee)
        if local is not None:
            return self._safe_class(local, frozenset())
        names = self.imports.qualnames(callee)
        return bool(names) and all(is_torch_nn_class(n) for n in names)

    def file_class(self, node: cst.BaseExpression) -> Optional[str]:
        """The class of this file `node` names (defined once, not shadowed by an import), else None."""
        text = dotted_name(node)
        if text is None or text.split(".")[0] in self.imports.bindings:
            return None
        return text if len(self.classes.get(text, ())) == 1 else None

    def method_owners(self, class_name: str) -> List[str]:
        """`class_name`, then its bases of this file, in lookup order: where a method call on it may land."""
        order: List[str] = []
        pending = [class_name]
        while pending:
            name = pending.pop(0)
            if name in order or name not in self.classes:
                continue
            order.append(name)
            pending.extend(b for b in (self.file_class(a.value) for a in self.classes[name][0].bases) if b)
        return order

    # --- classes -------------------------------------------------------------------
    def _safe_class(self, name: str, seen: FrozenSet[str]) -> bool:
        """No base of `name` (transitively, within the file) may be a distribution; cached."""
        if name in self._safe:
            return self._safe[name]
        if name in seen:
            return False
        safe = all(self._safe_base(arg, seen | {name}) for arg in self.classes[name][0].bases)
        self._safe[name] = safe
        return safe

    def _safe_base(self, arg: cst.Arg, seen: FrozenSet[str]) -> bool:
        if arg.star:
            return False
        base = arg.value.value if isinstance(arg.value, cst.Subscript) else arg.value  # Generic[T]
        if dtypes.distribution_class(base, self.imports, self.extra) is not None:
            return False
        local = self.file_class(base)
        if local is not None:
            return self._safe_class(local, seen)
        names = self.imports.qualnames(base)
        return bool(names) and all(never_a_distribution_base(n) for n in names)

    def _related(self, name: str) -> Optional[List[str]]:
        """`name`, its bases of this file and its subclasses of this file: every class that may set `self.x`."""
        if len(self.classes.get(name, ())) != 1:
            return None
        related = self.method_owners(name)
        grew = True
        while grew:
            grew = False
            for other, nodes in self.classes.items():
                if other not in related and any(
                    self.file_class(a.value) in related for node in nodes for a in node.bases
                ):
                    if len(nodes) != 1:
                        return None
                    related.append(other)
                    grew = True
        return related

    def _has_subclasses(self, name: str) -> bool:
        related = self._related(name)
        return related is None or len(related) != len(self.method_owners(name))

    # --- values ----------------------------------------------------------------------
    def _value(self, node: cst.BaseExpression, chain: Chain, depth: int) -> Callees:
        """The constructor callees of an expression: `C(...)`, `a if c else b`, or a name bound to those.

        `None` adds no class: a receiver that may be None is not a distribution on that path.
        """
        node = same_module(node, self.imports)[0]  # `nn.Linear(...).to(dev)`, `torch.compile(net)`: the same module
        if isinstance(node, cst.Call):
            return [node.func]
        if isinstance(node, cst.Name) and node.value == "None":
            return []
        if isinstance(node, cst.IfExp):
            body, orelse = self._value(node.body, chain, depth), self._value(node.orelse, chain, depth)
            return None if body is None or orelse is None else body + orelse
        if not isinstance(node, cst.Name) or depth >= MAX_DEPTH:
            return None
        found = self._lookup(node.value, chain)
        if found is None:
            return None
        index, bindings = found
        out: List[cst.BaseExpression] = []
        for binding in bindings:
            sub = None if isinstance(binding, cst.Param) else self._value(binding, chain[index:], depth + 1)
            if sub is None:
                return None
            out += sub
        return out

    def _lookup(self, name: str, chain: Chain) -> Optional[Tuple[int, List[Binding]]]:
        """The innermost scope of `chain` that binds `name`, with every binding there; None if unknown."""
        for index, scope in enumerate(chain):
            bindings = self._bindings(scope, name)
            if bindings is None:
                return None
            if bindings:
                return index, bindings
        return None

    def _bindings(self, scope: cst.CSTNode, name: str) -> Optional[List[Binding]]:
        key = (id(scope), name)
        if key not in self._names:
            visitor = _NameBindings(name, scope)
            walk(scope, visitor)
            params: List[Binding] = []
            if isinstance(scope, cst.FunctionDef):
                params = [p for p in _all_params(scope.params) if p.name.value == name]
            self._names[key] = None if visitor.opaque else params + visitor.values
        return self._names[key]

    # --- `self.<attr>` -----------------------------------------------------------------
    def _attribute(self, class_name: str, attr: str) -> Callees:
        """Every value the class, its bases or subclasses of this file assign to `self.<attr>`; cached."""
        key = (class_name, attr)
        if key not in self._attrs:
            self._attrs[key] = self._attribute_callees(class_name, attr)
        return self._attrs[key]

    def _attribute_callees(self, class_name: str, attr: str) -> Callees:
        related = self._related(class_name)
        if related is None:
            return None
        out: List[cst.BaseExpression] = []
        for name in related:
            visitor = _AttributeBindings(attr)
            walk(self.classes[name][0], visitor)
            if visitor.opaque:
                return None
            for value, functions in visitor.values:
                sub = self._init_argument(name, value, functions)
                if sub is None:
                    sub = self._value(value, functions, 0)
                if sub is None:
                    return None
                out += sub
        if not out:
            return None
        if all(self.is_non_distribution_class(c) for c in out):
            out += self._foreign_callees(attr)
        return out

    def _foreign_callees(self, attr: str) -> List[cst.BaseExpression]:
        """What the file visibly assigns to `<other>.<attr>` (`layer.proj = Normal(...)`).

        Like a type checker, the class's own assignments declare the attribute;
        an outside assignment of an unknown value (`self.pred_layer.proj =
        new_embeddings` in a setter) is assumed to respect them, and one of a
        visible class joins the union, so a distribution assigned there counts.
        """
        out: List[cst.BaseExpression] = []
        for value, chain in self.references().foreign.get(attr, []):
            out += self._value(value, chain, 0) or []
        return out

    def _init_argument(
        self, class_name: str, value: cst.BaseExpression, functions: Tuple[cst.FunctionDef, ...]
    ) -> Callees:
        """`self.x = x` in `__init__(self, x)`: what every construction of the class in this file passes as `x`."""
        if not (isinstance(value, cst.Name) and len(functions) == 1 and functions[0].name.value == "__init__"):
            return None
        init = functions[0]
        bindings = self._bindings(init, value.value)
        if bindings is None or len(bindings) != 1 or not isinstance(bindings[0], cst.Param):
            return None
        param = bindings[0]
        if "." in class_name or self._has_subclasses(class_name):
            return None  # a nested class, or one with subclasses here: their constructions are not all plain calls
        references = self.references()
        calls = references.calls.get(class_name, [])
        if not calls or class_name in references.other:
            return None
        out: List[cst.BaseExpression] = []
        for call, chain in calls:
            argument = _argument(call, init.params, param)
            sub = None if argument is None else self._value(argument, chain, 0)
            if sub is None:
                return None
            out += sub
        return out

    def references(self) -> _References:
        """The one whole-file pass, made the first time a question needs it."""
        if self._references is None:
            self._references = _References(self.module, frozenset(self.classes))
            walk(self.module, self._references)
        return self._references


def _argument(call: cst.Call, params: cst.Parameters, param: cst.Param) -> Optional[cst.BaseExpression]:
    """What `call` passes for `param` of an `__init__(self, ...)`: positional, keyword or default; None if unknown."""
    if any(arg.star for arg in call.args):
        return None
    positional = [*params.posonly_params, *params.params][1:]
    given = [arg.value for arg in call.args if arg.keyword is None]
    for index, each in enumerate(positional):
        if each is param and index < len(given):
            return given[index]
    if not any(each is param for each in params.posonly_params):
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == param.name.value:
                return arg.value
    return param.default
