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

from amplint.facts.entry import ReturnedDist
from amplint.facts.typedslots import names_distribution, typed_slots
from amplint.names import ImportTable, dotted_name


def distribution_arguments(
    call: cst.Call, dist_refs: Callable[[cst.BaseExpression], list], wide: Callable[[cst.BaseExpression], bool],
    code: Callable[[cst.CSTNode], str], line_of: Callable[[cst.CSTNode], int], owner: str,
) -> Tuple[Tuple[str, ...], Tuple[Tuple[str, ReturnedDist], ...]]:
    """The argument slots of `call` given a distribution (a constructor, or a name bound to one), and, for
    those built here, what the callee's parameter then holds (its tensors not cast to float32 there)."""
    slots: List[str] = []
    given: List[Tuple[str, ReturnedDist]] = []
    positional = [a for a in call.args if a.keyword is None and not a.star]
    named = [(str(i), a) for i, a in enumerate(positional)] + [
        (a.keyword.value, a) for a in call.args if a.keyword is not None]
    for slot, arg in named:
        refs = dist_refs(arg.value)
        if not refs:
            continue
        slots.append(slot)
        ref = refs[0]
        uncast = [code(i) for i in ref.all_inputs() if not wide(i)]
        if not ref.remote:  # one cast where it is built is given too: the callee's parameter holds float32
            given.append((slot, ReturnedDist(-1, ref.qualname, code(ref.ctor), line_of(ref.ctor), tuple(uncast),
                                             ref.built_in[0] if ref.built_in is not None else owner,
                                             ref.castable())))
    return tuple(slots), tuple(given)


def parameter_names(function: Optional[cst.CSTNode]) -> Tuple[str, ...]:
    """Positional parameters (`self`/`cls` left out), then keyword-only ones: how a call's slots map to names."""
    if not isinstance(function, cst.FunctionDef):
        return ()
    params = [p.name.value for p in list(function.params.posonly_params) + list(function.params.params)]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    return tuple(params) + tuple(p.name.value for p in function.params.kwonly_params)


def distribution_params(function: Optional[cst.CSTNode], imports: ImportTable) -> Tuple[str, ...]:
    """Slots of `function`'s parameters annotated as a distribution: both the position and the name."""
    if not isinstance(function, cst.FunctionDef):
        return ()
    params = function.params
    return typed_slots([(p.name.value, p.annotation) for p in [*params.posonly_params, *params.params]],
                       [(p.name.value, p.annotation) for p in params.kwonly_params],
                       lambda annotation: is_distribution_annotation(annotation, imports))


def is_distribution_annotation(annotation: Optional[cst.Annotation], imports: ImportTable) -> bool:
    """`Distribution`, `D.Normal`, `torch.distributions.Distribution`, `Optional[Distribution]`, `X | None`."""
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
        if dotted is not None and names_distribution(dotted, imports):
            return True
    return False
