"""Which arguments of a call carry distributions, and which parameters of a function are typed as one.

Real code hands distributions to objects picked by configuration:
`self.loss(dists, targets)` with `loss: nn.Module` from a YAML file, or
`self.val_metrics.update(dist, targets)` on a metric collection. Nothing says
which class runs. The callee's own annotation does: `def forward(self, dist:
Distribution, targets)`. The project walk matches the two (`Resolver.typed`).
A slot is a position ("0", self not counted) or a keyword name.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Tuple

import libcst as cst

from amplint.names import ImportTable, dotted_name

DISTRIBUTION_MODULES = ("torch.distributions", "pyro.distributions")


def distribution_slots(call: cst.Call, dist_refs: Callable[[cst.BaseExpression], list]) -> Tuple[str, ...]:
    """The argument slots of `call` given a distribution (a constructor, or a name bound to one)."""
    slots: List[str] = []
    for position, arg in enumerate(a for a in call.args if a.keyword is None and not a.star):
        if dist_refs(arg.value):
            slots.append(str(position))
    slots.extend(a.keyword.value for a in call.args if a.keyword is not None and dist_refs(a.value))
    return tuple(slots)


def distribution_params(function: Optional[cst.CSTNode], imports: ImportTable) -> Tuple[str, ...]:
    """Slots of `function`'s parameters annotated as a distribution: both the position and the name."""
    if not isinstance(function, cst.FunctionDef):
        return ()
    params = list(function.params.posonly_params) + list(function.params.params)
    if params and params[0].name.value in ("self", "cls"):
        params = params[1:]
    slots: List[str] = []
    for position, param in enumerate(params):
        if is_distribution_annotation(param.annotation, imports):
            slots.extend((str(position), param.name.value))
    slots.extend(p.name.value for p in function.params.kwonly_params
                 if is_distribution_annotation(p.annotation, imports))
    return tuple(slots)


def is_distribution_annotation(annotation: Optional[cst.Annotation], imports: ImportTable) -> bool:
    """`Distribution`, `D.Normal`, `torch.distributions.Distribution`, `Optional[Distribution]`, `Distribution | None`."""
    if annotation is None:
        return False
    stack: List[cst.BaseExpression] = [annotation.annotation]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BinaryOperation):  # `Distribution | None`
            stack.extend((node.left, node.right))
            continue
        if isinstance(node, cst.Subscript):  # `Optional[Distribution]`
            stack.extend(e.slice.value for e in node.slice if isinstance(e.slice, cst.Index))
            continue
        dotted = dotted_name(node)
        if dotted is None:
            continue
        if dotted.rsplit(".", 1)[-1].endswith("Distribution"):
            return True
        if any(q.startswith(DISTRIBUTION_MODULES) for q in imports.qualnames_of(dotted)):
            return True
    return False
