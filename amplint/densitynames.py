"""Names that say "density": the project functions and methods whose calls AMP003 treats as log-densities.

Real training code computes most log-densities with its own classes and helpers
(`posterior.kl()`, `self._likelihood(x)`, `normal_kl(...)`,
`discretized_gaussian_log_likelihood(...)`), not `torch.distributions`. Their
names are how they can be told apart from other calls without running them.
No LibCST here: the text prefilter and the CPython screen use these too.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Iterable

DENSITY_KIND = "density-call"  # `Site.kind` of a call of the project's own density

# One token of a snake_case name (leading underscores dropped): `_likelihood`, `normal_kl`, `log_p_x`...
_TOKEN = re.compile(
    r"(?:^|_)(?:log_?probs?|log_?p|log_?likelihoods?|likelihoods?|log_?density|log_?pdf|nll|kl|log_?posterior|"
    r"log_?prior|cdf|entropy)(?:_|$)"
)
# The same, as a call in source text: a superset for the prefilters (`F.nll_loss(` passes, harmlessly).
# Every branch starts with a letter, `kl`'s test of the letter before it included, so that `re` skips to
# an `l`, `n` or `k` before trying them: a third faster than a leading look-behind allows.
CALL_TEXT = re.compile(
    r"(?:l(?:og_?probs?|og_?p|ikelihoods?|og_?density|og_?pdf|og_?posterior|og_?prior)|nll|k(?<![A-Za-z]k)l)"
    r"(?:_\w*)?\s*\("
)
# Literals one of which every match of CALL_TEXT holds: a fast test before the regex. `log_p` and `logp`
# also stand for the pdf, posterior and prior spellings, which start with them.
_CALL_WORDS = ("log_p", "logp", "likelihood", "log_density", "logdensity", "nll", "kl")


def may_call_density(text: str) -> bool:
    """May `text` call a function named like a density? (`CALL_TEXT`, after a substring test)"""
    return any(word in text for word in _CALL_WORDS) and bool(CALL_TEXT.search(text))


# Top-level packages whose functions are not the project's own densities (their fused or distribution
# methods are sites of their own, or not sites at all: `F.nll_loss`, `F.kl_div`, `np.log`).
LIBRARY_PACKAGES = frozenset({
    "torch", "numpy", "scipy", "math", "jax", "tensorflow", "sklearn", "torchmetrics", "lightning",
    "pytorch_lightning", "transformers", "einops", "pyro", "statistics", "random",
})


@lru_cache(maxsize=8192)  # a fact about a name, asked for every call the screens and readers see
def is_density_name(name: str) -> bool:
    """`kl`, `_likelihood`, `normal_kl`, `log_prob`, `discretized_gaussian_log_likelihood`, `log_p`..."""
    lowered = name.lstrip("_").lower()
    return "cross_entropy" not in lowered and bool(_TOKEN.search(lowered))  # a fused loss, not a density


def from_library(qualified_names: Iterable[str]) -> bool:
    """Does a name imported as one of `qualified_names` come from a library (not the project)?"""
    return any(q.lstrip(".").split(".", 1)[0] in LIBRARY_PACKAGES and not q.startswith(".") for q in qualified_names)
