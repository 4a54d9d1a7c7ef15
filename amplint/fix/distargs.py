"""Which of a site's inputs are tensors to cast, and which are distributions that must not be.

`.float()` exists on tensors only: `Independent(Normal(a, b).float(), 1)` raises
`AttributeError: 'Normal' object has no attribute 'float'` when it runs. The
analysis lists the arguments of a wrapper it could not resolve to a
constructor (`Independent(dist, 1)` with `dist` a parameter, an attribute, a
tuple-assigned name, or `Normal(a, b).expand(shape)`) among the tensor
inputs. Here each input is sorted:

- a distribution built in place (`Normal(a, b)`, or a method of one such as
  `.expand(...)`): its own tensor arguments are cast instead, recursively;
- any other expression in a wrapper's distribution slot (`Independent(dist, 1)`
  with `dist` a parameter or an attribute): its constructor is not visible
  here, nothing can be cast safely, so the finding is left unfixed, with a reason;
- anything else: a tensor, cast as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterable, List, Optional, Tuple

import libcst as cst

from amplint import dtypes
from amplint.names import ImportTable


@dataclass
class SortedInputs:
    """The tensors to cast, and the distribution arguments that block the fix (empty when none)."""

    tensors: List[cst.BaseExpression] = field(default_factory=list)
    blocked: List[cst.BaseExpression] = field(default_factory=list)
    stars: Dict[int, str] = field(default_factory=dict)  # id(tensor) -> "*"/"**" when it is a starred argument


def sort_inputs(
    inputs: Iterable[cst.BaseExpression],
    ctors: Iterable[Tuple[str, cst.Call]],
    table: ImportTable,
    extra: FrozenSet[str] = frozenset(),
) -> SortedInputs:
    """Split `inputs` (the site's uncast inputs) using the constructors they were read from.

    `ctors`: (qualified class, constructor call) of each distribution of the site, components included.
    """
    ctors = list(ctors)
    slots = {id(arg.value) for qualname, call in ctors for arg in dtypes.slot_args(qualname, call)}
    result = SortedInputs()
    for node in inputs:
        built = _constructor_in(node, table, extra)
        if built is not None:
            result.tensors.extend(_tensor_args(built[0], built[1], table, extra))
        elif id(node) in slots:
            result.blocked.append(node)
        else:
            result.tensors.append(node)
    starred = {id(arg.value): str(arg.star) for _, call in ctors for arg in call.args if arg.star in ("*", "**")}
    result.stars = {id(node): starred[id(node)] for node in result.tensors if id(node) in starred}
    return result


def _constructor_in(
    node: cst.BaseExpression, table: ImportTable, extra: FrozenSet[str]
) -> Optional[Tuple[str, cst.Call]]:
    """The distribution constructor `node` builds, directly or under distribution methods, else None."""
    while isinstance(node, cst.Call):
        qualname = dtypes.distribution_class(node.func, table, extra)
        if qualname is not None:
            return qualname, node
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value in dtypes.DISTRIBUTION_METHODS):
            return None
        node = node.func.value
    return None


def _tensor_args(
    qualname: str, call: cst.Call, table: ImportTable, extra: FrozenSet[str]
) -> List[cst.BaseExpression]:
    """The tensor arguments of one constructor, with nested constructors' arguments in place of them."""
    out: List[cst.BaseExpression] = []
    for value in dtypes.constructor_arguments(qualname, call, table)[0]:
        inner = _constructor_in(value, table, extra)
        if inner is not None:
            out.extend(_tensor_args(inner[0], inner[1], table, extra))
        elif not isinstance(value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
            out.append(value)
    return out
