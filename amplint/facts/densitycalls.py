"""Site recognizer for calls of the project's own densities: `posterior.kl()`, `self._likelihood(x)`, `normal_kl(...)`.

A call is such a site when its name says density (`amplint.densitynames`) and
its target is the project's, not a library's:

- `self.m(...)`: a method of the current class that computes with tensors
  (or one it inherits from outside this file), never a module held in `self.m`;
- `f(...)`: a function of this file that computes with tensors, or one
  imported from the project;
- `obj.m(...)`: `obj` bound in this function to a project class's construction
  (its constructor's tensor arguments are inputs too: they run in the region),
  or `obj` a project module.

The inputs are the call's tensor arguments, plus those constructor arguments.
A receiver built elsewhere (`self.prior`, set in `__init__` from parameters)
adds nothing: what it holds was not made in the region.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Mapping, Optional, Protocol

import libcst as cst

from amplint import dtypes
from amplint.cstwalk import descendants
from amplint.densitynames import DENSITY_KIND, from_library, is_density_name
from amplint.facts.mathenv import Env, Statements
from amplint.facts.mathnames import UNSTABLE_OPS, python_math
from amplint.names import ImportTable, dotted_name

if TYPE_CHECKING:  # pragma: no cover
    from libcst.metadata import CodeRange

    from amplint.facts.model import AnalysisOptions, DistRef, Scope, Site

DENSITY = DENSITY_KIND
_CONSTANTS = frozenset({"True", "False", "None", "self", "cls"})


class SiteContext(Protocol):
    """The part of `amplint.facts.sites.SiteContext` this recognizer uses."""

    module: cst.Module
    imports: ImportTable
    scope: "Scope"
    options: "AnalysisOptions"
    positions: Mapping[cst.CSTNode, CodeRange]
    bodies: Statements

    def math_env(self) -> Env: ...

    def inside_site(self, node: cst.CSTNode) -> bool: ...

    def make_site(self, node: cst.CSTNode, method: str, dists: List["DistRef"], values: List[cst.BaseExpression],
                  inputs: List[cst.BaseExpression], kind: str, at: Optional[cst.CSTNode] = None) -> "Site": ...


def density_call(node: cst.CSTNode, ctx: "SiteContext") -> Optional["Site"]:
    """A call of a project density, with its tensor arguments (and a local receiver's constructor's) as inputs."""
    assert isinstance(node, cst.Call)
    func = node.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name is None or not is_density_name(name) or ctx.inside_site(node):
        return None
    extra = _project_target(func, ctx)
    if extra is None and _resolved_by_walk(node, ctx):  # `posterior = encoder(x); posterior.kl()`
        extra = [func.value] if isinstance(func, cst.Attribute) and not _is_self(func.value) else []
    if extra is None:
        return None
    inputs = [a.value for a in node.args if not a.star and _tensorish(a.value)] + extra
    return ctx.make_site(node, dotted_name(func) or name, [], [], inputs, DENSITY)


def _resolved_by_walk(node: cst.Call, ctx: "SiteContext") -> bool:
    start = ctx.positions[node].start if ctx.options.density_calls else None
    return start is not None and any((c.line, c.column) == (start.line, start.column + 1)
                                     for c in ctx.options.density_calls)


def _is_self(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value in ("self", "cls")


def _tensorish(node: cst.BaseExpression) -> bool:
    """May be a tensor: not a number, a string, True, False, None, `self` or a literal of those."""
    if dtypes.is_number(node) or isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return False
    if isinstance(node, (cst.List, cst.Tuple)):
        return any(_tensorish(element.value) for element in node.elements)
    return not (isinstance(node, cst.Name) and node.value in _CONSTANTS)


def _project_target(func: cst.BaseExpression, ctx: "SiteContext") -> Optional[List[cst.BaseExpression]]:
    """None when the callee is not a project density; else the extra inputs its receiver brings."""
    if isinstance(func, cst.Name):
        return _function(func.value, ctx)
    if not isinstance(func, cst.Attribute) or not isinstance(func.value, cst.Name):
        return None
    root, method = func.value.value, func.attr.value
    if root in ("self", "cls"):
        return _own_method(method, ctx)
    quals = ctx.imports.qualnames_of(root) if root in ctx.imports.bindings else frozenset()
    if quals:
        return None if from_library(quals) else []  # `utils.normal_kl(...)` of a project module
    return _constructed(root, ctx)


def _function(name: str, ctx: "SiteContext") -> Optional[List[cst.BaseExpression]]:
    for statement in ctx.module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
            return [] if loses_range(statement, ctx.imports) else None
    quals = ctx.imports.bindings.get(name)
    return [] if quals and not from_library(quals) else None


def _own_method(name: str, ctx: "SiteContext") -> Optional[List[cst.BaseExpression]]:
    """`self.m(...)`: m defined in a class of this file (its body decides), or inherited from another file."""
    cls = _class_def(ctx.module, ctx.scope.class_name) if ctx.scope.class_name is not None else None
    if cls is None or ctx.math_env().attribute_values(name):
        return None  # `self.m = LowerBound(...)`: a module held in an attribute, not a method
    classes = _classes(ctx.module)
    methods = [m for c in classes for m in c.body.body if isinstance(m, cst.FunctionDef) and m.name.value == name]
    if any(name in ctx.bodies.attributes(c) for c in classes):
        return None  # held in an attribute by a base class of this file
    if not methods:
        return [] if cls.bases else None  # inherited from a base in another file: trust the name
    return [] if any(loses_range(m, ctx.imports) for m in methods) else None


def _classes(module: cst.Module) -> List[cst.ClassDef]:
    return [s for s in module.body if isinstance(s, cst.ClassDef)]


def _constructed(root: str, ctx: "SiteContext") -> Optional[List[cst.BaseExpression]]:
    """`posterior = DiagonalGaussianDistribution(z)` in this function: the constructor's tensor arguments."""
    values = ctx.math_env().values(root)
    if len(values) != 1 or not isinstance(values[0], cst.Call):
        return None
    call = values[0]
    callee = dotted_name(call.func)
    if callee is None or not callee.rsplit(".", 1)[-1][:1].isupper():
        return None  # not a class construction
    if from_library(ctx.imports.qualnames_of(callee) if callee.split(".")[0] in ctx.imports.bindings else ()):
        return None  # a library class: `torch.distributions` sites are recognized on their own
    return [a.value for a in call.args if not a.star and _tensorish(a.value)]


def _class_def(module: cst.Module, dotted: str) -> Optional[cst.ClassDef]:
    body = module.body
    found: Optional[cst.ClassDef] = None
    for part in dotted.split("."):
        found = next((s for s in body if isinstance(s, cst.ClassDef) and s.name.value == part), None)
        if found is None:
            return None
        body = found.body.body  # type: ignore[assignment]
    return found


def loses_range(function: Optional[cst.CSTNode], imports: ImportTable) -> bool:
    """Does the body use a tensor op that float16 can push out of range (`UNSTABLE_OPS`, or `t ** k`)?

    `math.log(n)` and `np.log(n)` are Python or NumPy math: not tensors. The module's scope has no body.
    """
    if not isinstance(function, cst.FunctionDef):
        return False
    for node in descendants(function.body):  # without LibCST's rebuild of each node; operators are read below
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
                node.func.attr.value in UNSTABLE_OPS):
            root = dotted_name(node.func.value)
            if root is None or not python_math(root, imports):
                return True
        if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Power) and (
                not dtypes.is_number(node.left)):
            return True
    return False
