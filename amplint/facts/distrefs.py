"""What a distribution constructor is made of: its components, its tensor inputs, and whether fix A can cast them.

Wrappers hold other distributions in known slots (`Independent(base, 1)`,
`MixtureSameFamily(mix, comp)`). Real code often fills a slot with a class it
picks at run time: `Independent(get_dist_class(name)(**params), 1)`,
`Independent(DISTS[name](loc, scale), 1)`. The picked class is unknown, but
the slot says it is a distribution, and its arguments, `**params` included,
are its parameters: they are its inputs, and fix A casts them (a mapping or
a sequence element by element, tensors only).

A constructor is *castable* (`DistRef.castable`) when fix A can reach every
tensor it is built from: no `*args`/`**kwargs` of a known class may pass
others, and no slot holds an expression whose constructor is out of sight (a
parameter, an attribute). The project summaries carry this
(`ReturnedDist.castable`), so a file that uses a distribution built in
another file knows whether the fix there can be made.
"""
from __future__ import annotations

from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import libcst as cst

from amplint import dtypes
from amplint.facts.entry import Constructor
from amplint.facts.model import DistRef

PICKED = "<picked at run time>"  # the qualname of a distribution whose class is chosen when the code runs


def picked_ref(node: cst.BaseExpression) -> Optional[DistRef]:
    """A slot's `get_dist_class(name)(**params)` or `DISTS[name](loc, scale)` as a DistRef of a picked class."""
    if not isinstance(node, cst.Call) or not isinstance(node.func, (cst.Call, cst.Subscript)):
        return None
    inputs = [arg.value for arg in node.args
              if not dtypes.is_non_tensor_arg(PICKED, arg, None) and not dtypes.is_number(arg.value)
              and not isinstance(arg.value, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString))]
    return DistRef(node, PICKED, None, [], inputs, False)


def star_values(call: cst.Call) -> Dict[int, str]:
    """`id(value)` of each `*value`/`**value` argument of `call`, with its star."""
    return {id(arg.value): arg.star for arg in call.args if arg.star in ("*", "**")}


def constructors(ref: DistRef) -> Iterator[Tuple[str, cst.Call]]:
    """(qualname, call) of `ref` and of each of its components, outermost first."""
    yield ref.qualname, ref.ctor
    for component in ref.components:
        yield from constructors(component)


def split_components(qualname: str, call: cst.Call, values: List[cst.BaseExpression],
                     component_of) -> Tuple[List[DistRef], List[cst.BaseExpression]]:
    """`values` (a constructor's arguments) split into components and other inputs.

    `component_of(value)` reads a nested constructor; a slot's picked class (`picked_ref`) is one too.
    """
    held = {id(arg.value) for arg in dtypes.slot_args(qualname, call)}
    components: List[DistRef] = []
    inputs: List[cst.BaseExpression] = []
    for value in values:
        component = component_of(value)
        if component is None and id(value) in held:
            component = picked_ref(value)
        if component is not None:
            components.append(component)
        else:
            inputs.append(value)
    return components, inputs


def requested_at(node: cst.Call, requests: Sequence[Constructor], line_of: Callable[[cst.CSTNode], int],
                 code: Callable[[cst.CSTNode], str]) -> List[Constructor]:
    """The requests (constructors another file's finding asks fix A to cast) that name `node`."""
    if not requests:
        return []
    line = line_of(node)
    return [wanted for wanted in requests if wanted.line == line and code(node) == wanted.ctor]
