"""Which hand-written probability math is a site, recognized once for both trees over one `Reader`.

A tensor log of probabilities, of a sum of exps or of a scale, a log-gamma normaliser, a floor float16 drops
under probabilities, an entropy term (`p * log(p)`), a density written out term by term (a Gaussian's or a
Laplace's, or in log-parameter form), and the inner sums a whole sum claims. `facts.mathsites` (LibCST) makes
the collector's `Site`s from these answers and judges them per device; `facts.astmathsites` (CPython) counts
them for the project summary, behind its text prefilter. The shapes themselves are `probshape`'s, `sumshape`'s,
`logparamshape`'s and `kernelshape`'s; the readers are `facts.cstreader` and `facts.astreader`.

Where the two trees' site recognizers differ, each keeps its own way (making them agree is a later step):

- what is asked: LibCST's collector asks every call and binary operation; CPython's asks only what its text
  prefilter lets through (`astmathsites._Triggers`: a floor only where a literal float16 rounds to zero is
  written in the function, its class or a module constant it names; a density sum only where a log, an `exp`
  or log(2*pi) is written; an entropy term only beside a call named as a log; a floor call only one named as a
  floor; a kernel only at `*`, `/` and `**`);
- which sums are claimed: LibCST claims the inner sums of every binary operation it judges
  (`mathsites._gaussian_site`); CPython only of a sum that passed its prefilter;
- which written-out density is taken (`density_sums`): LibCST the first whose answer is not None (a Gaussian
  whose operands are all constants is a site with no inputs); CPython the first with operands, else the last
  answer (`astmathsites.MathSites.operation`);
- what a site reads: LibCST a float32 value itself, or the tensors a late cast came from, and where each site
  is reported (`mathsites._inputs`, `_in_time`, the anchors); CPython the value's tensors (`leaves`), whose
  float32 the summary judges;
- CPython's reader may find the text unsure of LibCST's parentheses (`astmathenv.Unsure`): the file then goes
  to LibCST.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Protocol, Tuple

from amplint.facts import kernelshape, logparamshape
from amplint.facts.logparamshape import is_log_parameter_form, is_positive_transform
from amplint.facts.probshape import (
    Floor, entropy_operand, is_prob, is_sum_of_exp, lgamma_operand, log_operand, straight_from_producer, strip_floor,
)
from amplint.facts.shapereader import Nodes
from amplint.facts.sumshape import (
    additive_terms, density_sum, is_abs_of_tensor, is_additive, is_square_of_tensor, leaves, quadratic_sum,
)
from amplint.screen import FLOAT16_SUBNORMAL

INLINE = "inline-math"
EPSILON = "epsilon"
LGAMMA = "lgamma"  # an INLINE site's method: `torch.lgamma(alpha)` of a Gamma, Beta, Dirichlet or Poisson normaliser
LOG_SCALE = "log-of-scale"  # an INLINE site's method: `torch.log(F.softplus(s))`, a log of a scale (`logparamshape`)
LOG_PARAMETER = "log-parameter"  # an INLINE site's method: `s + d ** 2 * torch.exp(-s)` (`logparamshape`)
KERNEL = "density-kernel"  # an INLINE site's method: `(1 + z ** 2 / nu) ** -2`, a density with no log (`kernelshape`)
GUARDED = "guarded"  # a log of probabilities under a floor float16 keeps: finite, no site


class Reader(kernelshape.Reader, logparamshape.Reader, Protocol):
    """What the site recognizers ask of a tree: every shape module's questions."""


def vanishes(floor: Optional[Floor]) -> bool:
    """float16 rounds the floor to 0: it does nothing (`probmath.Epsilon.vanishes`)."""
    return floor is not None and 0 < floor[1] < FLOAT16_SUBNORMAL


def log_shape(log: Any, tree: Reader) -> Tuple[Optional[str], Any]:
    """What a tensor log takes the log of: ("log-sum-exp" | "log-of-prob" | GUARDED | LOG_SCALE | None, the value
    under any floor). A floor float16 holds (`p + 1e-6`, `p.clamp_min(1e-3)`) keeps the log of a softmax's or
    sigmoid's zero finite; one it rounds to 0 is AMP004's. It guards nothing else: a sum of exps, or
    probabilities normalised by hand, still overflow, and `1 - p` loses its digits near 1
    (`probshape.straight_from_producer`)."""
    operand = log_operand(log, tree)
    if operand is None:
        return None, log
    inner, floor = strip_floor(operand, tree)
    if is_sum_of_exp(inner, tree):
        return "log-sum-exp", inner
    if not is_prob(inner, tree):
        return (LOG_SCALE if is_positive_transform(inner, tree) else None), inner
    guarded = floor is not None and floor[1] > 0 and not vanishes(floor)
    return (GUARDED if guarded and straight_from_producer(inner, tree) else "log-of-prob"), inner


def log_site(node: Any, tree: Reader, inside: Callable[[Any], bool]) -> Optional[Tuple[str, Any]]:
    """A log-gamma normaliser, or a tensor log of probabilities, of a sum of exps or of a scale: (its method,
    the value whose tensors it reads), else None. `inside`: does a node lie inside a site already made (a log
    of a scale in a written-out Gaussian is a term of that site)?"""
    operand = lgamma_operand(node, tree)
    if operand is not None:  # a log-normaliser: float16 rounds its argument and overflows its value
        return LGAMMA, operand
    shape, inner = log_shape(node, tree)
    if shape is None or shape == GUARDED or (shape == LOG_SCALE and inside(node)):
        return None
    return shape, inner


def floor_site(node: Any, tree: Reader) -> Optional[Tuple[Any, Floor]]:
    """`p + 1e-10`, `p.clamp(min=1e-12)`, `torch.clamp(p, eps)` under probabilities, a floor float16 drops:
    (the probabilities, the floor), else None."""
    inner, floor = strip_floor(node, tree)
    if floor is None or not vanishes(floor) or inner is node or not is_prob(inner, tree):
        return None
    return inner, floor


def entropy_site(node: Any, tree: Reader) -> Optional[Tuple[Any, Any]]:
    """`p * log(p)`: an entropy term says `p` is a probability even when nothing else does. (The log, the value
    it takes the log of), else None; None too where the log is a site of its own."""
    log = entropy_operand(node, tree)
    if log is None:
        return None
    shape, inner = log_shape(log, tree)
    return None if shape is not None else (log, inner)


def density_sums(node: Any, tree: Reader) -> Iterator[Tuple[str, Optional[Tuple[Any, ...]]]]:
    """(method, its tensor operands or None) for a sum read as a Gaussian's, a Laplace's (a squared tensor, or a
    magnitude, beside a log term), a density in log-parameter form, and a Gaussian's quadratic form beside another
    tensor term (`sumshape.quadratic_sum`), in that order, each read only when asked: which answer makes the site
    is the tree's (module doc)."""
    yield "gaussian", density_sum(node, tree, is_square_of_tensor)
    yield "laplace", density_sum(node, tree, is_abs_of_tensor)
    yield LOG_PARAMETER, _log_parameter_operands(node, tree)
    yield "gaussian", quadratic_sum(node, tree)


def _log_parameter_operands(node: Any, tree: Reader) -> Optional[Tuple[Any, ...]]:
    if not is_log_parameter_form(node, tree):
        return None
    return tuple(op for term in additive_terms(node, tree) for op in leaves(term, tree))


def inner_sums(node: Any, tree: Nodes) -> Iterator[Any]:
    """The sums a sum judged whole claims: each side of `node` that is a sum with no parentheses of its own, and
    theirs, transitively. The walk reaches them next, and a sum is judged once: without it a sum of n terms is
    judged at each of its n - 1 inner nodes, each time over all the terms below (quadratic, minutes on generated
    code)."""
    stack = [node]
    while stack:
        operation = tree.operation(stack.pop())
        for side in operation[1:] if operation is not None else ():
            if is_additive(side, tree) and not tree.parenthesized(side):
                yield side
                stack.append(side)
