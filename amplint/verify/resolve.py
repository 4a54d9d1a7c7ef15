"""Turn the analysis's `SiteSpec` into a plan the runner can build: classes, bound arguments.

Only names under `torch.distributions` / `pyro.distributions` are imported,
and only classes deriving from `torch.distributions.Distribution` are used:
this is the allowlist that keeps verify from running anything of the user's.
Argument text is parsed (transforms.py) but never evaluated, except number
literals through `ast.literal_eval`.
"""
from __future__ import annotations

import ast
import importlib
import inspect
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Tuple, Union

from amplint import dtypes
from amplint.model import ArgSpec, DistSpec, SiteSpec
from amplint.risk import UNSEEN, measured_as
from amplint.transforms import Chain, parse_chain

ALLOWED_ROOTS = ("torch.distributions", "pyro.distributions")
VALUE_METHODS = ("log_prob", "cdf", "icdf")
METHODS = VALUE_METHODS + ("entropy", "kl_divergence")
DISCRETE_VALUE_METHODS = ("log_prob", "cdf")  # a point of the support (`icdf` takes a probability)


@dataclass(frozen=True)
class Unverifiable:
    """Why a finding cannot be run: an error as a value, printed by the report."""

    reason: str


@dataclass(frozen=True)
class TensorArg:
    """A tensor input: which parameter it feeds, as written, and its transform chain."""

    param: str
    spec: ArgSpec
    chain: Chain


@dataclass(frozen=True)
class DistPlan:
    """A constructor call the runner can rebuild."""

    cls: type
    qualname: str
    tensors: Tuple[TensorArg, ...]
    literals: Tuple[Tuple[str, object], ...]
    components: Tuple[Tuple[str, "DistPlan"], ...]
    notes: Tuple[str, ...] = ()

    @property
    def label(self) -> str:
        inner = ", ".join(plan.label for _, plan in self.components)
        return f"{self.cls.__name__}({inner})" if inner else self.cls.__name__

    def all_notes(self) -> Tuple[str, ...]:
        notes = list(self.notes)
        for _, plan in self.components:
            notes.extend(n for n in plan.all_notes() if n not in notes)
        return tuple(notes)


@dataclass(frozen=True)
class SitePlan:
    """A whole computation: the method, its distribution(s) and its value."""

    method: str
    dists: Tuple[DistPlan, ...]
    value: Optional[TensorArg]

    @property
    def label(self) -> str:
        if self.method == "kl_divergence":
            return f"kl_divergence({', '.join(d.label for d in self.dists)})"
        return f"{self.dists[0].label}.{self.method}"

    @property
    def discrete_value(self) -> bool:
        """The value is an index, a label or a count (`dtypes.DISCRETE_VALUE_CLASSES`): the codemod never casts it."""
        return self.value is not None and self.method in DISCRETE_VALUE_METHODS and all(
            value_class(dist) is not None for dist in self.dists)

    @property
    def notes(self) -> Tuple[str, ...]:
        notes: List[str] = []
        for dist in self.dists:
            notes.extend(n for n in dist.all_notes() if n not in notes)
        return tuple(notes)


def spec_label(spec: DistSpec) -> str:
    """`Independent(Normal)` for a spec as `DistPlan.label` names a plan, before (or without) a plan."""
    name = spec.qualname.rsplit(".", 1)[-1]
    inner = ", ".join(spec_label(component) for component in spec.components)
    return f"{name}({inner})" if inner else name


def qualnames_in(spec: DistSpec) -> Tuple[str, ...]:
    """The classes a spec names, its components' included, outermost first."""
    return (spec.qualname,) + tuple(name for component in spec.components for name in qualnames_in(component))


def value_class(plan: DistPlan) -> Optional[str]:
    """The discrete class whose value `plan`'s `log_prob` takes (through `Independent` & co.), else None."""
    return dtypes.discrete_value_class(plan.qualname, [value_class(c) for _, c in plan.components])


def plan_site(site: Optional[SiteSpec]) -> Union[SitePlan, Unverifiable]:
    """The runnable plan for `site`, or the reason there is none."""
    if site is None:
        return Unverifiable("the analysis recorded no computation for this finding")
    if site.method not in METHODS:  # hand-written math (AMP003/AMP004): the user's own code
        return Unverifiable(
            f"`{site.method}` is not a torch.distributions computation verify can rebuild, and verify never runs "
            "your own code unless asked: --run-user-code runs a slice of it (docs/verify.md)")
    expected = 2 if site.method == "kl_divergence" else 1
    if len(site.dists) != expected:
        return Unverifiable(f"{UNSEEN}, as check says: verify rebuilds what check reads, so its class is unknown")
    dists = []
    for spec in site.dists:
        measured = _as_measured(spec, site.method)
        if isinstance(measured, Unverifiable):
            return measured
        plan = plan_dist(measured[0])
        if isinstance(plan, Unverifiable):
            return plan
        dists.append(replace(plan, notes=plan.notes + measured[1]))
    value: Optional[TensorArg] = None
    if site.method in VALUE_METHODS:
        if len(site.values) != 1 or site.values[0].name not in (None, "value"):
            return Unverifiable(f"`{site.method}` needs exactly one value argument; the call has {len(site.values)}")
        spec = site.values[0]
        if spec.literal:
            return Unverifiable(f"the value `{spec.code}` is a Python number, not a tensor")
        value = _tensor_arg("value", spec)
    return SitePlan(site.method, tuple(dists), value)


def _as_measured(spec: DistSpec, method: str) -> Union[Tuple[DistSpec, Tuple[str, ...]], Unverifiable]:
    """The spec to rebuild, and the note that says what stands for it: a project subclass that keeps its
    library base's `method` and `__init__` computes what the base does, so it is rebuilt as the base
    (`risk.measured_as`); one that redefines either is the user's code, not rebuilt."""
    qualname, why = measured_as(spec, method)
    if not qualname:
        return Unverifiable(
            f"{why}: verify rebuilds library classes, and runs no code of yours unless asked (--run-user-code)")
    if qualname == spec.qualname:
        return spec, ()
    name, base = (each.rsplit(".", 1)[-1] for each in (spec.qualname, qualname))
    return replace(spec, qualname=qualname), (f"{name} rebuilt as {base}, whose `{method}` and `__init__` it keeps",)


def resolve_class(qualname: str) -> Union[Tuple[type, Tuple[str, ...]], Unverifiable]:
    """Import `qualname` if, and only if, it names a distribution class under an allowed root."""
    import torch.distributions as td

    parts = qualname.split(".")
    root = ".".join(parts[:2])
    if root not in ALLOWED_ROOTS or len(parts) < 3 or not all(p.isidentifier() for p in parts):
        return Unverifiable(f"`{qualname}` is not a torch.distributions or pyro.distributions class")
    notes: Tuple[str, ...] = ()
    try:
        module = importlib.import_module(".".join(parts[:-1]))
    except ImportError:
        if root != "pyro.distributions":
            return Unverifiable(f"module `{'.'.join(parts[:-1])}` does not exist in this torch")
        # pyro's distributions subclass torch's with the same arithmetic.
        module = td
        notes = (f"pyro is not installed: ran torch.distributions.{parts[-1]}, the class pyro wraps",)
    cls = getattr(module, parts[-1], None)
    if not (inspect.isclass(cls) and issubclass(cls, td.Distribution)):
        return Unverifiable(f"`{qualname}` does not resolve to a distribution class in this installation")
    return cls, notes


def _tensor_arg(param: str, spec: ArgSpec) -> TensorArg:
    chain = parse_chain(spec.code)
    if spec.cast and not chain.has_cast:
        chain = chain.with_outer_cast()
    return TensorArg(param, spec, chain)


def _is_dist_param(name: str) -> bool:
    return name.endswith("distribution") or name == "base_dist"


def arg_constraints_of(cls: type) -> Dict[str, object]:
    constraints = inspect.getattr_static(cls, "arg_constraints", {})
    return constraints if isinstance(constraints, dict) else {}


def plan_dist(spec: DistSpec) -> Union[DistPlan, Unverifiable]:
    """Bind every argument of a constructor to a parameter name, or say why not."""
    resolved = resolve_class(spec.qualname)
    if isinstance(resolved, Unverifiable):
        return resolved
    cls, notes = resolved
    params = [
        p for p in inspect.signature(cls.__init__).parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = {p.name for p in params}
    constraints = arg_constraints_of(cls)
    tensors: List[TensorArg] = []
    literals: List[Tuple[str, object]] = []
    bound: List[str] = []
    extra_notes: List[str] = []
    for arg in spec.args:
        if arg.name is not None:
            param = arg.name
        elif arg.position is not None and arg.position < len(positional):
            param = positional[arg.position]
        else:
            return Unverifiable(f"{cls.__name__}() has no parameter for argument `{arg.code}`")
        if param not in names:
            return Unverifiable(f"{cls.__name__}() has no parameter `{param}`")
        bound.append(param)
        if arg.literal:
            try:
                literals.append((param, ast.literal_eval(arg.code.strip())))
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return Unverifiable(f"`{arg.code}` for {cls.__name__}({param}=...) is not a plain number literal")
        elif param in constraints:
            tensors.append(_tensor_arg(param, arg))
        elif param == "validate_args":
            extra_notes.append(f"validate_args=`{arg.code}` is not a literal: ran with torch's default")
        elif _is_dist_param(param):
            return Unverifiable(f"the `{param}` argument `{arg.code}` is a distribution the analysis could not resolve")
        else:
            return Unverifiable(
                f"`{arg.code}` for {cls.__name__}({param}=...) is neither a number literal nor a tensor "
                "parameter; verify does not guess its value"
            )
    if spec.mapping is not None:
        fed = _mapped(constraints, names, bound)
        tensors.extend(_tensor_arg(param, spec.mapping) for param in fed)
        bound.extend(fed)
        extra_notes.append(f"`**{spec.mapping.code}` (its keys are not in the code) fed {cls.__name__}'s tensor "
                           f"parameters: {', '.join(fed) or 'none'}")
    free = [name for name in positional + sorted(names - set(positional)) if _is_dist_param(name) and name not in bound]
    if len(spec.components) > len(free):
        return Unverifiable(f"{cls.__name__}() takes fewer distributions than the call passes")
    components = []
    for name, component in zip(free, spec.components):
        plan = plan_dist(component)
        if isinstance(plan, Unverifiable):
            return plan
        components.append((name, plan))
    missing = [name for name in free[len(spec.components):] if _required(cls, name)]
    if missing:
        return Unverifiable(f"{cls.__name__}() is missing its `{missing[0]}` argument")
    return DistPlan(cls, spec.qualname, tuple(tensors), tuple(literals), tuple(components), notes + tuple(extra_notes))


def _mapped(constraints: Dict[str, object], names: set, bound: List[str]) -> List[str]:
    """The tensor parameters a `**mapping` fills: each the call does not pass, `logits` for `probs`/`logits`
    (a model's head gives logits; the two exclude each other)."""
    fed = [name for name in constraints if name in names and name not in bound]
    return [name for name in fed if not (name == "probs" and "logits" in fed)]


def _required(cls: type, name: str) -> bool:
    parameter = inspect.signature(cls.__init__).parameters[name]
    return parameter.default is inspect.Parameter.empty
