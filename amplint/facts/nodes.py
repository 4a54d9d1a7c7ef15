"""Small readings of LibCST nodes the collector needs: names read and bound, class attributes, literals.

Pure functions of the tree (and the import table): no scope state, no rule codes.
"""
from __future__ import annotations

from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

import libcst as cst

from amplint.cstwalk import inner_children, walk
from amplint.facts import frameworks
from amplint.facts.frameworks import FrameworkCall
from amplint.facts.model import AccelBinding, Scope
from amplint.facts.modulecalls import shortened_call
from amplint.facts.typedslots import NUMBER_ANNOTATIONS
from amplint.model import Precision
from amplint.names import ImportTable, dotted_name
from amplint.regions import RegionSpec, dtype_kinds, precision_of_kinds


def names_in(node: cst.CSTNode) -> Iterator[str]:
    """Variable names an expression reads (attribute names and keywords excluded)."""
    if isinstance(node, cst.Name):
        yield node.value
        return
    if isinstance(node, cst.Attribute):
        yield from names_in(node.value)
        return
    if isinstance(node, cst.Arg):
        yield from names_in(node.value)
        return
    for child in inner_children(node):
        yield from names_in(child)


def target_names(target: cst.BaseExpression) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def literal_pairs(
    targets: Sequence[cst.AssignTarget], value: cst.BaseExpression,
) -> Optional[List[Tuple[str, cst.BaseExpression]]]:
    """`a, b = x.float(), y`: each name with the element it gets, when both sides are flat and as long."""
    target = targets[0].target if len(targets) == 1 else None
    if not (isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))):
        return None
    names, values = target.elements, value.elements
    if len(names) != len(values) or not all(isinstance(e.value, cst.Name) for e in names) or any(
            isinstance(e, cst.StarredElement) for e in (*names, *values)):
        return None
    return [(n.value.value, v.value) for n, v in zip(names, values)]  # type: ignore[attr-defined]


def self_attribute(node: cst.BaseExpression) -> Optional[str]:
    """`x` for `self.x`, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        return node.attr.value
    return None


def literal(node: cst.BaseExpression, module: cst.Module) -> frameworks.LiteralArg:
    """A framework argument: its literal value when it is one (string, number, True/False/None)."""
    text = module.code_for_node(node)
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        value = node.evaluated_value
        if isinstance(value, str):
            return frameworks.LiteralArg(text, value, True)
    if isinstance(node, cst.Integer):
        return frameworks.LiteralArg(text, int(node.evaluated_value), True)
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return frameworks.LiteralArg(text, {"True": True, "False": False, "None": None}[node.value], True)
    return frameworks.LiteralArg(text)


def annotation_class(node: cst.BaseExpression) -> Optional[str]:
    """The class an annotation names: `Net`, `models.Net`, `"Net"`, `Optional[Net]`, `Net | None`."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        name = dotted_name(node)
        return None if name in ("None", "Any", "typing.Any") else name
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        if isinstance(value, str) and all(part.isidentifier() for part in value.strip().split(".")):
            return value.strip()
        return None
    if isinstance(node, cst.Subscript) and dotted_name(node.value) in ("Optional", "typing.Optional") and \
            len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return annotation_class(node.slice[0].slice.value)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(other, cst.Name) and other.value == "None":
                return annotation_class(side)
    return None


class _AttributeAssignments(cst.CSTVisitor):
    """Every value a class assigns to `self.<attr>` (or to `<attr>` in its body)."""

    def __init__(self, attr: str) -> None:
        super().__init__()
        self.attr = attr
        self.values: List[cst.BaseExpression] = []
        self.depth = 0

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.depth += 1
        return self.depth == 1  # not into nested classes

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self_attribute(target.target) == self.attr or (
                isinstance(target.target, cst.Name) and target.target.value == self.attr
            ):
                self.values.append(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and (self_attribute(node.target) == self.attr or (
                isinstance(node.target, cst.Name) and node.target.value == self.attr)):
            self.values.append(node.value)


def _dtype_kinds(node: cst.BaseExpression, imports: ImportTable) -> Optional[Set[Precision]]:
    """The dtypes an expression may be (IfExp branches included); None when one is not a dtype literal."""
    if isinstance(node, cst.IfExp):
        body, orelse = _dtype_kinds(node.body, imports), _dtype_kinds(node.orelse, imports)
        return None if body is None or orelse is None else body | orelse
    return dtype_kinds(imports.qualnames(node))


def attribute_values(cls: cst.ClassDef, attr: str) -> List[cst.BaseExpression]:
    """Every value the class (not a nested class) assigns to `self.<attr>` or to `<attr>`, in order."""
    visitor = _AttributeAssignments(attr)
    walk(cls, visitor)
    return visitor.values


def attribute_dtype(cls: cst.ClassDef, attr: str, imports: ImportTable) -> Optional[Precision]:
    """What `dtype=self.<attr>` computes in, from every assignment in the class; None when unknown.

    `self.amp_dtype = torch.bfloat16 if cfg.bf16 else torch.float32` is never
    float16, so its region is not a float16 region.
    """
    return precision_of_kinds(_dtype_kinds(value, imports) for value in attribute_values(cls, attr))


def trainer_model(node: cst.Call) -> Optional[cst.BaseExpression]:
    """The model a `Trainer(...)` construction is given: `model=` or the first positional argument."""
    model = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "model"), None)
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    return model if model is not None or not positional else positional[0]


def framework_call(node: cst.Call, callee: str, where: Tuple[int, int], module: cst.Module, imports: ImportTable,
                   function: str, model: Optional[Tuple[str, bool]]) -> FrameworkCall:
    """A Trainer / TrainingArguments construction as rules L and H read it (`amplint.project.implied`)."""
    keywords = tuple(
        (a.keyword.value, literal(a.value, module)) for a in node.args
        if a.keyword is not None and a.keyword.value in frameworks.PRECISION_KEYWORDS
    )
    return FrameworkCall(
        qualnames=tuple(sorted(imports.qualnames(node.func))), callee=callee, line=where[0], column=where[1],
        keywords=keywords, double_star=any(a.star == "**" for a in node.args), function=function, model=model,
    )


def accelerator_binding(value: cst.Call, line: int, module: cst.Module) -> AccelBinding:
    """`Accelerator(mixed_precision=...)` (rule A): the region its `autocast()` and prepared models open."""
    mixed = next((a for a in value.args if a.keyword is not None and a.keyword.value == "mixed_precision"), None)
    arg = None if mixed is None else literal(mixed.value, module)
    double_star = any(a.star == "**" for a in value.args)
    precision = frameworks.accelerate_precision(arg, double_star)
    spec = None if precision is None else RegionSpec(precision, True, "cuda", '"cuda"')
    return AccelBinding(spec, line, value, frameworks.describe("Accelerator", "mixed_precision", arg, double_star))


def tainted_inputs(tainted: Dict[str, int], uncast: List[cst.BaseExpression]) -> List[Tuple[cst.BaseExpression, int]]:
    """Each uncast input that reads a name made in a float16 region, with that region's line (AMP002)."""
    found = []
    for expr in uncast if tainted else ():
        line = next((tainted[n] for n in names_in(expr) if n in tainted), None)
        if line is not None:
            found.append((expr, line))
    return found


def every_param(params: cst.Parameters) -> List[cst.Param]:
    """Positional-only, positional, keyword-only, then `*args` and `**kwargs` (`astnodes.every_param`)."""
    every = [*params.posonly_params, *params.params, *params.kwonly_params]
    return every + [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]


def param_names(params: cst.Parameters) -> List[str]:
    return [param.name.value for param in every_param(params)]


def record_params(scope: Scope, params: cst.Parameters, method: bool, project: bool = True) -> None:
    """Parameters annotated as Python numbers (`alpha: float = 1.0`: never a float16 tensor); in `project`
    mode also the names, and the project class a parameter's annotation names (not exact: a subclass fits)."""
    for index, param in enumerate(every_param(params)):
        name = param.name.value
        if project:
            scope.params.add(name)
        if method and index == 0:
            continue
        annotation = annotation_class(param.annotation.annotation) if param.annotation is not None else None
        if annotation in NUMBER_ANNOTATIONS:
            scope.wide_names.add(name)
        elif annotation is not None and project:
            scope.instances[name] = (annotation, False)


def call_text(module: cst.Module, node: cst.Call, callee: str) -> str:
    """A call as a chain shows it: as written, on one line, or `callee(...)` when longer than 40 characters."""
    return shortened_call(module.code_for_node(node), callee, lambda: module.code_for_node(node.func))


def declared_class(annotation: cst.BaseExpression, value: cst.BaseExpression) -> Optional[str]:
    """The class an annotated assignment declares, when its value does not say more.

    `x: Base = make_from_config(cfg)` holds some `Base` (a subclass, so not exact);
    `x: Base = Sub(...)` is known from its constructor, which stays the better fact.
    """
    declared = dotted_name(annotation)
    if declared is None or not declared.rsplit(".", 1)[-1][:1].isupper():
        return None
    if isinstance(value, cst.Call):
        callee = dotted_name(value.func)
        if callee is not None and callee.rsplit(".", 1)[-1][:1].isupper():
            return None
    return declared
