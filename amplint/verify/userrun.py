"""Inside the child: load the slice, call the density on synthesized inputs, before and after the fix.

The slice's modules are made here from their text (`types.ModuleType` plus
`exec`), registered in `sys.modules` under their project names, so the slice's
own imports between them find them there and never on disk. Each input is
drawn for its role (`userinputs.py`), made a float16 head by an identity
`nn.Linear` under the region's autocast (as verify makes a distribution's
parameters), then put through the argument's own steps (`log_std.exp()`), or,
for a bare name, through the steps that make a value of its role in real code
(`userroles.role_steps`: a softmax for probabilities). Three versions, as for a
distribution: the original; fix A, every input cast to float32 where the
codemod casts it (before the argument's own steps, after the role's); fix C,
the same with autocast disabled around the call. The float64 reference is the slice on the same (rounded) inputs in
float64, and it decides the shape: the first of `SHAPES` on which it runs.
"""
from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import torch
import torch.nn.functional as F

from amplint.transforms import Chain, Step
from amplint.verify.chains import apply_chain, invert_chain
from amplint.verify.devices import CPU, CUDA, CUDA_EMULATED, Device, to_host
from amplint.verify.measure import grads_finite, measure
from amplint.verify.userinputs import RECIPES, SHAPES, UserRecipe, draw, rows_for
from amplint.verify.userroles import role_steps

DEVICES = {device.name: device for device in (CPU, CUDA, CUDA_EMULATED)}
LOW = {"float16": torch.float16, "bfloat16": torch.bfloat16}
VERSIONS = (("original", False, False), ("fix_cast", True, False), ("fix_disable", True, True))


class SliceFailure(Exception):
    """The slice could not be run at all: not a measurement, the finding's `unverifiable` reason."""


@dataclass(frozen=True)
class Run:
    """One job's settings, as the parent wrote them."""

    entry: Dict[str, Any]
    inputs: Tuple[Tuple[str, str, Chain], ...]  # key, role, chain
    device: Device
    low: torch.dtype
    disabled: bool
    batch: int
    seed: int
    groups: Tuple[Tuple[str, Tuple[Tuple[str, str], ...]], ...] = ()  # a dict input: its (item, input key) pairs

    def values(self, tensors: Dict[str, Any]) -> Dict[str, Any]:
        """The arguments by key: each tensor, and each dict input assembled from its items' tensors."""
        out = dict(tensors)
        for key, items in self.groups:
            out[key] = {item: tensors[flat] for item, flat in items}
        return out


def load_slice(modules: List[Dict[str, Any]]) -> Dict[str, types.ModuleType]:
    """Each module from its text, registered under its name; parent packages as empty packages."""
    made: Dict[str, types.ModuleType] = {}
    for spec in modules:
        name = spec["name"]
        if name in sys.modules:
            raise SliceFailure(f"the project's module {name} has the name of a module torch already imported")
        module = types.ModuleType(name)
        module.__file__ = spec["path"]
        module.__package__ = name if spec["package"] else name.rpartition(".")[0]
        if spec["package"]:
            module.__path__ = []  # type: ignore[attr-defined] # a package, but nothing on disk to import from
        made[name] = module
    for name in list(made):
        parts = name.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            if parent not in made and parent not in sys.modules:
                made[parent] = types.ModuleType(parent)
                made[parent].__path__ = []  # type: ignore[attr-defined]
    sys.modules.update(made)
    for name, module in made.items():
        if "." in name:
            parent, _, leaf = name.rpartition(".")
            setattr(sys.modules[parent], leaf, module)
    for spec in modules:
        code = compile(spec["source"], spec["path"], "exec")
        try:
            exec(code, made[spec["name"]].__dict__)  # noqa: S102 - the slice the user asked to run
        except MemoryError:
            raise
        except Exception as exc:
            raise SliceFailure(f"the slice of {spec['name']} failed to load: {_error(exc)}") from exc
    return made


def _error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200]}" if text else type(exc).__name__


def _out_of_memory(exc: BaseException) -> bool:
    text = str(exc)
    return isinstance(exc, MemoryError) or "can't allocate memory" in text or "out of memory" in text.lower()


def callee(modules: Dict[str, types.ModuleType], entry: Dict[str, Any]) -> Any:
    target: Any = modules[entry["module"]]
    for part in entry["callee"]:
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise SliceFailure(f"the slice has no `{'.'.join(entry['callee'])}`: {_error(exc)}") from exc
    return target


def _call_with(function: Any, arguments: List[Dict[str, Any]], tensors: Dict[str, torch.Tensor]) -> Any:
    positional, keywords = [], {}
    for argument in arguments:
        value = tensors[argument["tensor"]] if argument["tensor"] is not None else argument["literal"]
        if argument["keyword"] is None:
            positional.append(value)
        else:
            keywords[argument["keyword"]] = value
    return function(*positional, **keywords)


def invoke(target: Any, entry: Dict[str, Any], tensors: Dict[str, torch.Tensor], reference: bool) -> Any:
    """Call the density: the function, or a method of an instance built as the code builds it."""
    function = target
    if entry["construct"] is not None:
        instance = _call_with(target, entry["construct"], tensors)
        if reference and isinstance(instance, torch.nn.Module):
            instance = instance.double()  # its own parameters in float64 too, as the reference computes
        function = getattr(instance, entry["method"])
    elif entry["method"] is not None:
        function = getattr(target, entry["method"])
    return _call_with(function, entry["args"], tensors)


def flatten(value: Any) -> Optional[Tuple[List[torch.Tensor], str]]:
    """Every floating tensor (or number) the density returned, in order, and the first one's dtype."""
    found: List[torch.Tensor] = []

    def walk(item: Any) -> None:
        if isinstance(item, torch.Tensor):
            if item.is_floating_point():
                found.append(item)
        elif isinstance(item, (tuple, list)):
            for element in item:
                walk(element)
        elif isinstance(item, dict):
            for element in item.values():
                walk(element)
        elif isinstance(item, float) or (isinstance(item, int) and not isinstance(item, bool)):
            found.append(torch.tensor(float(item), dtype=torch.float64))

    walk(value)
    if not found:
        return None
    return found, str(found[0].dtype).replace("torch.", "")


def _joined(tensors: List[torch.Tensor], host: bool) -> torch.Tensor:
    parts = [to_host(t) if host else t for t in tensors]
    return torch.cat([part.reshape(-1).to(torch.float64) for part in parts])


def run(job: Dict[str, Any]) -> Dict[str, Any]:
    """The measurements the parent turns into a verdict, or `{"unverifiable": reason}`.

    The job's candidates are tried in order (narrowest first); the first whose float64 reference runs is
    measured.
    """
    torch.set_num_threads(1)
    try:
        modules = load_slice(job["modules"])
        reasons: List[str] = []
        for index, candidate in enumerate(job["candidates"]):
            target = callee(modules, candidate["entry"])
            settings = _settings(job, candidate)
            try:
                with settings.device.session():
                    first = _first_shape(target, settings, RECIPES[0])
            except SliceFailure as exc:
                reasons.append(str(exc))
                continue
            return dict(_measure_all(target, settings, first), candidate=index)
        wider = f" (and so did {len(reasons) - 1} wider version(s) of the slice)" if len(reasons) > 1 else ""
        raise SliceFailure(reasons[0] + wider)
    except SliceFailure as exc:
        return {"unverifiable": str(exc)}


def _settings(job: Dict[str, Any], candidate: Dict[str, Any]) -> Run:
    """The candidate's inputs, a dict input (`lkl["y"]`) as one tensor input per item."""
    inputs: List[Tuple[str, str, Chain]] = []
    groups: List[Tuple[str, Tuple[Tuple[str, str], ...]]] = []
    for spec in candidate["inputs"]:
        chain = Chain(tuple(Step(**step) for step in spec["steps"]), spec["key"])
        items = tuple((item, f"{spec['key']}[{item!r}]") for item in spec.get("items", ()))
        inputs.extend((flat, spec["role"], chain) for _, flat in items)
        if items:
            groups.append((spec["key"], items))
        else:
            inputs.append((spec["key"], spec["role"], chain))
    return Run(candidate["entry"], tuple(inputs), DEVICES[job["device"]], LOW[job["low"]], job["disabled"],
               job["batch"], job["seed"], tuple(groups))


def _measure_all(target: Any, run_: Run, first: Tuple[Tuple[int, ...], "Drawn", Any]) -> Dict[str, Any]:
    chosen: Optional[Tuple[UserRecipe, Drawn, Any, Dict[str, Any]]] = None
    shape = first[0]
    with run_.device.session():
        for recipe in RECIPES:
            if recipe is RECIPES[0]:
                heads, reference = first[1], first[2]
            else:
                heads = _heads(run_, recipe, shape)
                reference = _reference(target, run_, heads)
            original = _version(target, run_, heads, reference, casts=False, disable=False)
            if chosen is None or original["failed"]:
                chosen = (recipe, heads, reference, original)
            if original["failed"]:
                break
        assert chosen is not None
        recipe, heads, reference, original = chosen
        fixes = [_version(target, run_, heads, reference, casts=True, disable=disable) for disable in (False, True)]
    versions = [original] + fixes
    return {"recipe": recipe.name, "shape": [rows_for(shape, run_.batch), *shape],
            "reference": None if isinstance(reference, torch.Tensor) else reference,
            "versions": {name: version["result"] for (name, _, _), version in zip(VERSIONS, versions)}}


@dataclass(frozen=True)
class Drawn:
    """The heads of one recipe and shape: float32 data, and the steps that make each role's value of its head."""

    data: Dict[str, torch.Tensor]
    made: Dict[str, Chain]  # `userroles.role_steps`, for an input passed as a bare name


def _heads(run_: Run, recipe: UserRecipe, shape: Tuple[int, ...]) -> Drawn:
    """float32 head data per input: the target drawn for its role, back through the argument's steps."""
    roles = {key: role for key, role, _ in run_.inputs}
    targets = draw(recipe, roles, shape, run_.batch, run_.seed)
    limit = 0.9 * float(torch.finfo(run_.low).max)
    made = {key: Chain(() if chain.steps else role_steps(role, bool(shape)), key) for key, role, chain in run_.inputs}
    data = {key: invert_chain(made[key], invert_chain(chain, targets[key])).clamp(-limit, limit).float()
            for key, _, chain in run_.inputs}
    return Drawn(data, made)


def _chains(run_: Run) -> Dict[str, Chain]:
    return {key: chain for key, _, chain in run_.inputs}


def _reference(target: Any, run_: Run, drawn: Drawn) -> Any:
    """The slice in float64 on the heads rounded as the run sees them: a tensor, or why it failed."""
    chains = _chains(run_)
    tensors = {key: apply_chain(chains[key], apply_chain(drawn.made[key], head.to(run_.low).double()), casts=False)
               for key, head in drawn.data.items()}
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(run_.seed)
            out = flatten(invoke(target, run_.entry, run_.values(tensors), reference=True))
    except Exception as exc:
        if _out_of_memory(exc):
            raise MemoryError(str(exc)) from exc
        return _error(exc)
    if out is None:
        return "the density returned no floating tensor"
    return _joined(out[0], host=False)


def _first_shape(target: Any, run_: Run, recipe: UserRecipe) -> Tuple[Tuple[int, ...], Drawn, Any]:
    tried, first = [], None
    for shape in SHAPES:
        heads = _heads(run_, recipe, shape)
        reference = _reference(target, run_, heads)
        if isinstance(reference, torch.Tensor):
            return shape, heads, reference
        tried.append(f"(B, {', '.join(map(str, shape))})" if shape else "(B,)")
        first = first or reference
    raise SliceFailure(f"the slice raised in float64 on every input shape verify tried ({', '.join(tried)}): "
                       f"{first}")


def _version(target: Any, run_: Run, drawn: Drawn, reference: Any, casts: bool, disable: bool) -> Dict[str, Any]:
    """One version under the region's autocast: the measured result, and whether it failed."""
    device, chains = run_.device, _chains(run_)
    heads: Dict[str, torch.Tensor] = {}
    with device.autocast(True, run_.low):
        for key, head in drawn.data.items():
            out = F.linear(device.put(head).reshape(-1, 1), device.put(torch.ones(1, 1)), device.put(torch.zeros(1)))
            out = out.reshape(head.shape)
            heads[key] = out.detach().requires_grad_(True) if device.measures_grads else out
    try:
        with torch.random.fork_rng(devices=[]), device.autocast(True, run_.low):
            torch.manual_seed(run_.seed)
            tensors = {key: apply_chain(chains[key].with_leaf_cast() if casts else chains[key],
                                        apply_chain(drawn.made[key], head)) for key, head in heads.items()}
            if disable or run_.disabled:
                with device.autocast(False):
                    value = invoke(target, run_.entry, run_.values(tensors), reference=False)
            else:
                value = invoke(target, run_.entry, run_.values(tensors), reference=False)
    except Exception as exc:  # the original raising is its failure, named in the report
        if _out_of_memory(exc):
            raise MemoryError(str(exc)) from exc
        return {"failed": True, "result": {"dtype": None, "error": _error(exc)}}
    out = flatten(value)
    if out is None:
        return {"failed": True, "result": {"dtype": None, "error": "the density returned no floating tensor"}}
    joined = _joined(out[0], host=True)
    grads = None
    if device.measures_grads:
        leaves = [tensor for tensor in heads.values() if tensor.requires_grad]
        grads = grads_finite(_joined(out[0], host=False), leaves)
    result = measure(joined, reference, grads, out[1])
    return {"failed": result.failed, "result": result.to_json()}
