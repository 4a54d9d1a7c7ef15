"""Which values of a distribution site are inputs to cast: none of an index, a label or an integer count.

The value of `Categorical(...).log_prob(actions.long())` is an index: the
computation runs in the logits' dtype whatever the index's dtype is, so a
float32 cast protects nothing and `--fix` must not add one. The table of such
classes is `dtypes.DISCRETE_VALUE_CLASSES` (torch's own `support.is_discrete`).
The fixer casts `site.uncast` and nothing else, so leaving the value out of a
site's inputs here is what keeps the finding, its message and fix A in
agreement; `amplint verify` reads the same table (`verify/runner.py`).

One exception, measured: `Poisson`, `Binomial`, `NegativeBinomial` and
`Multinomial` take `lgamma(value + 1)`, which a float16 count computes in
float16 (`-inf` from a count of 8192), and `Bernoulli` returns a float16
log_prob for a float16 label once autocast is off (fix C). Their value stays
an input when it was made in a float16 region, unless it is cast to an
integer dtype first (`dtypes.FLOAT16_VALUE_CLASSES`).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import libcst as cst

from amplint import dtypes
from amplint.facts.model import DistRef, Scope
from amplint.facts.nodes import names_in
from amplint.names import ImportTable

# Methods whose argument is a point of the support (`icdf` takes a probability: continuous for every class).
SUPPORT_VALUE_METHODS = frozenset({"log_prob", "cdf"})


def value_class(ref: DistRef) -> Optional[str]:
    """The discrete class whose value `ref`'s `log_prob` takes (through `Independent` & co.), else None."""
    return dtypes.discrete_value_class(ref.qualname, [value_class(c) for c in ref.components])


def value_inputs(
    method: str, dists: Sequence[DistRef], values: Sequence[cst.BaseExpression], scope: Scope, table: ImportTable
) -> List[cst.BaseExpression]:
    """The values of a site that are tensor inputs: all of them, unless every receiver's value is discrete."""
    tensors = [v for v in values if not dtypes.is_number(v)]
    if method not in SUPPORT_VALUE_METHODS or not dists:
        return tensors
    classes = [value_class(ref) for ref in dists]
    if any(cls is None for cls in classes):
        return tensors
    if not any(cls in dtypes.FLOAT16_VALUE_CLASSES for cls in classes):
        return []
    return [v for v in tensors if _maybe_float16(v, scope, table)]


def _maybe_float16(value: cst.BaseExpression, scope: Scope, table: ImportTable) -> bool:
    """A value that may be float16: made in a float16 region of this function and not cast to an integer."""
    return not dtypes.is_integer_cast(value, table) and any(name in scope.tainted for name in names_in(value))
