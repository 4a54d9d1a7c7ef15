"""Parameters typed as distributions, as slots (a position, self not counted, or a keyword name), or as numbers.

Both trees' readers of a signature give their parameters here: LibCST's
(`facts.signatures`) and CPython's (`facts.astnodes`), which builds project
summaries without importing LibCST.
"""
from __future__ import annotations

from typing import Callable, List, Sequence, Tuple, TypeVar

from amplint.names import ImportTable

DISTRIBUTION_MODULES = ("torch.distributions", "pyro.distributions")
# A parameter annotated with one of these holds a Python number, never a float16 tensor.
NUMBER_ANNOTATIONS = frozenset({"float", "int", "bool"})
A = TypeVar("A")  # an annotation node, of either tree


def typed_slots(positional: Sequence[Tuple[str, A]], keyword_only: Sequence[Tuple[str, A]],
                typed: Callable[[A], bool]) -> Tuple[str, ...]:
    """The slots (position, then name) of the (name, annotation) parameters `typed` holds; `self`/`cls` not
    counted. Either tree's reader of a signature gives its parameters here."""
    if positional and positional[0][0] in ("self", "cls"):
        positional = positional[1:]
    slots: List[str] = []
    for position, (name, annotation) in enumerate(positional):
        if typed(annotation):
            slots.extend((str(position), name))
    slots.extend(name for name, annotation in keyword_only if typed(annotation))
    return tuple(slots)


def names_distribution(dotted: str, imports: ImportTable) -> bool:
    """An annotation's name that says distribution: `...Distribution`, or a class of a distributions module."""
    return dotted.rsplit(".", 1)[-1].endswith("Distribution") or any(
        q.startswith(DISTRIBUTION_MODULES) for q in imports.qualnames_of(dotted))
