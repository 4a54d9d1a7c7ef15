"""The names of the math probability code is written with, for both collectors.

`facts.probmath` and `facts.densitycalls` read these shapes in LibCST's tree,
`facts.astscreen` and `facts.astsites` in CPython's; this module imports neither
parser, so project summaries are built without LibCST.
"""
from __future__ import annotations

import math
import re

from amplint.names import ImportTable

LOG_2PI = math.log(2 * math.pi)
LOG_FUNCTIONS = frozenset({"torch.log", "torch.log2", "torch.log10"})
EXP_FUNCTIONS = frozenset({"torch.exp"})
EXP_METHODS = frozenset({"exp"})
# A square root: a density's normaliser beside its kernel (`facts.kernelshape`).
SQRT_FUNCTIONS = frozenset({"math.sqrt", "torch.sqrt", "numpy.sqrt"})
SQRT_METHODS = frozenset({"sqrt"})
# Positive transforms that make a scale or a rate of an activation: float16 rounds them to 0 below -17 (`exp`
# below -17.3, `softplus` too) and `exp` to inf above 11.1. A log of one is a log-normaliser term.
SCALE_FUNCTIONS = EXP_FUNCTIONS | frozenset({"torch.nn.functional.softplus"})
SCALE_METHODS = frozenset({"exp"})
PROB_FUNCTIONS = frozenset(
    {
        "torch.softmax", "torch.sigmoid", "torch.nn.functional.softmax", "torch.nn.functional.sigmoid",
        "torch.special.softmax", "torch.special.expit",
    }
)
PROB_METHODS = frozenset({"softmax", "sigmoid"})
SUM_METHODS = frozenset({"sum"})
SUM_FUNCTIONS = frozenset({"torch.sum"})
# Reductions and views that keep a probability a probability.
KEEPS_PROB_METHODS = frozenset(
    {"mean", "detach", "clone", "contiguous", "squeeze", "unsqueeze", "view", "reshape", "transpose",
     "permute", "expand", "expand_as", "flatten", "gather", "index_select", "t", "values"}
)
KEEPS_PROB_FUNCTIONS = frozenset({"torch.mean", "torch.gather", "torch.index_select", "torch.squeeze",
                                  "torch.unsqueeze"})
FLOOR_METHODS = frozenset({"clamp", "clip", "clamp_min", "clamp_"})
FLOOR_FUNCTIONS = frozenset({"torch.clamp", "torch.clip", "torch.clamp_min", "torch.maximum", "torch.max"})
ABS_METHODS = frozenset({"abs"})
ABS_FUNCTIONS = frozenset({"torch.abs", "abs", "torch.absolute"})
SQUARE_METHODS = frozenset({"square"})
SQUARE_FUNCTIONS = frozenset({"torch.square"})
POW_METHODS = frozenset({"pow"})
POW_FUNCTIONS = frozenset({"torch.pow"})
PI_NAMES = frozenset({"math.pi", "numpy.pi", "torch.pi", "np.pi"})
SCALAR_LOG_FUNCTIONS = frozenset({"math.log", "numpy.log", "np.log"})
# Words that say a value holds probabilities (split on `_` and digits: `sim_probs`, `probs2`).
PROB_WORDS = frozenset({"prob", "probs", "probability", "probabilities", "likelihood", "likelihoods", "cdf"})
_WORD = re.compile(r"[A-Za-z]+")


def names_probability(name: str) -> bool:
    """`probs`, `sim_probs`, `student_prob`, `likelihoods`: the name says it holds probabilities."""
    return any(word.lower() in PROB_WORDS for word in _WORD.findall(name))


# Tensor ops whose float16 result can lose the range a density needs: a log of a value that underflowed,
# a sigmoid or erf CDF that rounds to 0 or 1, a power that overflows. A body built only from fused, stable
# primitives (`log_softmax`, `logsumexp`, `softmax`) has none and is not a density site.
UNSTABLE_OPS = frozenset({
    "log", "log2", "log10", "pow", "rsqrt", "reciprocal", "lgamma", "digamma", "erf", "erfc", "sigmoid",
})


def python_math(root: str, imports: ImportTable) -> bool:
    """`math.log(x)`, `np.exp(x)`: Python or NumPy math, not tensors."""
    quals = imports.qualnames_of(root.split(".")[0])
    return any(q.split(".", 1)[0] in ("math", "numpy", "statistics") for q in quals)
