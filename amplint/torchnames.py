"""The names of torch's tensor API that dtype provenance reads: casts, element-wise ops, factories.

Both collectors read them: LibCST's (`dtypes`) and CPython's (`facts.astnodes`),
which builds project summaries without importing LibCST.
"""
from __future__ import annotations

from typing import FrozenSet, Iterable, Iterator, Optional

DISTRIBUTION_PACKAGES = ("torch.distributions.", "pyro.distributions.")
# Bases that do not make a class a distribution (besides `torch.nn` classes and classes of the same file).
NOT_DISTRIBUTION_BASES = frozenset(
    {"object", "builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol", "typing.NamedTuple"}
)
# Submodules of torch.distributions whose capitalised names are not distributions.
NOT_DISTRIBUTION_MODULES = frozenset(
    {"transforms", "constraints", "constraint_registry", "utils", "kl", "transformed_distribution.Transform"}
)


def distribution_name(names: Iterable[str], extra: FrozenSet[str] = frozenset()) -> Optional[str]:
    """The first of `names` (qualified, sorted) that is a distribution class, else None; `extra`: the
    configured ones (`extend-distributions`, a trailing dot for a package)."""
    for name in sorted(names):
        if name in extra or extra and any(prefix in extra for prefix in _dotted_prefixes(name)):
            return name
        for package in DISTRIBUTION_PACKAGES:
            if not name.startswith(package):
                continue
            parts = name[len(package):].split(".")
            if parts[-1][:1].isupper() and not (set(parts[:-1]) & NOT_DISTRIBUTION_MODULES):
                return name
    return None


def _dotted_prefixes(name: str) -> Iterator[str]:
    """`a.`, `a.b.` of `a.b.C`: a configured package (`extend-distributions = ["pkg."]`) that `name` starts
    with is one of these, so a set lookup finds it (project mode configures thousands of names)."""
    at = name.find(".")
    while at >= 0:
        yield name[:at + 1]
        at = name.find(".", at + 1)


WIDE_DTYPES = frozenset({"torch.float32", "torch.float", "torch.float64", "torch.double"})
CAST_METHODS = frozenset({"float", "double"})
DTYPE_CAST_METHODS = frozenset({"to", "type"})
# Elementwise tensor methods and functions that keep their input's dtype.
ELEMENTWISE_METHODS = frozenset(
    {
        "exp", "sigmoid", "softmax", "log_softmax", "softplus", "tanh", "abs", "square", "sqrt",
        "clamp", "clamp_min", "clamp_max", "clip", "log", "log1p", "expm1", "neg", "reciprocal",
        "pow", "relu", "contiguous", "squeeze", "unsqueeze", "view", "reshape", "expand", "expand_as",
        "transpose", "permute", "detach", "clone", "chunk", "split", "flatten", "add", "mul", "sub", "div",
        "unbind", "tensor_split", "narrow", "select", "neg",
        # Reductions: float32 in, float32 out (CUDA autocast widens `sum`/`prod`, never narrows).
        "mean", "sum", "amax", "amin", "cumsum", "std", "var",
    }
)
ELEMENTWISE_FUNCTIONS = frozenset(
    {
        "torch.exp", "torch.sigmoid", "torch.softmax", "torch.log_softmax", "torch.tanh", "torch.abs",
        "torch.sqrt", "torch.square", "torch.clamp", "torch.clip", "torch.log", "torch.log1p", "torch.expm1",
        "torch.nn.functional.softplus", "torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
        "torch.nn.functional.sigmoid", "torch.nn.functional.elu", "torch.nn.functional.relu",
        "torch.nn.functional.tanh", "torch.squeeze", "torch.unsqueeze", "torch.reshape",
        # Views and splits: `loc, s = torch.chunk(out.float(), 2, dim=-1)` are float32 halves.
        "torch.chunk", "torch.split", "torch.tensor_split", "torch.unbind", "torch.flatten", "torch.transpose",
        "torch.permute", "torch.narrow", "torch.select", "torch.neg", "torch.mean", "torch.sum",
    }
)
ARITHMETIC_METHODS = frozenset({"add", "mul", "sub", "div"})
# `torch.where(cond, a, b)`: its dtype is `a`'s and `b`'s promoted, whatever the condition.
SELECT_FUNCTIONS = frozenset({"torch.where"})
# Factories make float32 tensors (torch's default dtype) even inside an autocast region: autocast casts the
# inputs of the ops on its lists, it does not change what a factory makes. `*_like` factories copy their
# argument's dtype instead, so they are elementwise transforms here. Data read back from disk (a checkpoint's
# tensors) keeps the dtype it was saved with, which no autocast op made: it counts as made here too.
FACTORY_FUNCTIONS = frozenset(
    {
        "torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.full", "torch.arange", "torch.linspace",
        "torch.logspace", "torch.tensor", "torch.empty", "torch.eye", "torch.normal", "torch.randint",
        "torch.load", "safetensors.torch.load_file",
    }
)
# Factories whose positional arguments are all sizes: integers, never a tensor's values.
SIZE_FACTORIES = frozenset({"torch.randn", "torch.rand", "torch.zeros", "torch.ones", "torch.empty", "torch.eye"})
LIKE_FACTORIES = frozenset(
    {"torch.randn_like", "torch.rand_like", "torch.zeros_like", "torch.ones_like", "torch.full_like",
     "torch.empty_like", "torch.logit", "torch.special.logit"}
)
# Functions whose result keeps the dtype of their first argument (`dtypes.transform_operands`).
TRANSFORM_FUNCTIONS = ELEMENTWISE_FUNCTIONS | LIKE_FACTORIES


def is_torch_nn_class(name: str) -> bool:
    """`torch.nn.Linear`, `torch.nn.modules.adaptive.AdaptiveLogSoftmaxWithLoss`: modules, never distributions."""
    parts = name.split(".")
    return len(parts) >= 3 and parts[:2] == ["torch", "nn"] and parts[-1][:1].isupper()


def never_a_distribution_base(name: str) -> bool:
    """A library base (qualified) that does not make a class a distribution: `object`, `abc.ABC`, `torch.nn`'s."""
    return name in NOT_DISTRIBUTION_BASES or is_torch_nn_class(name)
