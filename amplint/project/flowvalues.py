"""The values the flow (`flow.py`) joins: instances, functions, classes, modules, containers, bound methods.

Plain frozen data, so that a set of them is an answer the memo keeps, and every module that reads the flow's
answers (the call sites, the prepared models, the dtypes across calls) can name them without the flow itself.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, FrozenSet, Iterable, Optional, Sequence, Set, Tuple, Union

from amplint.project.accelvalues import Accelerated, Prepared
from amplint.project.symbols import ClassRef, _Func, _Instance, _Module

ELEMENT_READS = frozenset({"get", "pop", "setdefault"})  # a container's methods that return one of its elements

# The resolver's own symbols serve as values: an instance of a class, a function, a module.
Instance, Function, Module = _Instance, _Func, _Module


@dataclass(frozen=True)
class ClassValue:
    """A class object itself (a registry's value, a class passed as a parameter): calling it makes an instance."""

    cls: "ClassRef"


@dataclass(frozen=True)
class Container:
    """A dict, list, tuple, `nn.ModuleDict`: its elements, joined, and for a dict whose keys are all string
    literals (`{"policy": NormalHead(), "critic": LaplaceHead()}`) what each key holds (`keyed`, sorted); for a
    tuple or list display with no starred element, what each position holds (`positions`: `return model, filt`
    unpacked as `model, filt = load()`)."""

    elements: FrozenSet["Value"]
    keyed: Optional[Tuple[Tuple[str, FrozenSet["Value"]], ...]] = None
    positions: Optional[Tuple[FrozenSet["Value"], ...]] = None


@dataclass(frozen=True)
class Filled:
    """The container that element stores fill (`heads[k] = head`, `layers.append(block)`), found only where it is
    read by element (`Flow.expand`): most stores are tensors' (`outputs.append(h)`), and following them for every
    question on the name cost more than the rest. `owner`: (path, binding scope, name) of a name, or the class and
    attribute of a `self.` attribute."""

    owner: Tuple[object, ...]


@dataclass(frozen=True)
class Fanout:
    """A collection whose method calls run on each member (`FANOUT_CALLS`); indexed, it is one of them."""

    elements: FrozenSet["Value"]


@dataclass(frozen=True)
class Namespace:
    """An object whose attributes are the keywords it was made with (`types.SimpleNamespace(policy=p)`,
    `argparse.Namespace`, `EasyDict`): `attrs` by name (sorted), `rest` what `**more` may give any other name."""

    attrs: Tuple[Tuple[str, FrozenSet["Value"]], ...]
    rest: FrozenSet["Value"] = frozenset()

    def read(self, name: str) -> FrozenSet["Value"]:
        return dict(self.attrs).get(name, self.rest)


@dataclass(frozen=True)
class BoundMethod:
    """`model.loss` read, not called (`fn = model.loss; fn(x)`): calling it calls the method."""

    owner: Instance
    name: str


@dataclass(frozen=True)
class MethodOf:
    """`getattr(obj, name)` with `name` not fully known: a method of `owner` whose name fits `patterns` (sorted
    prefixes ending in `*`). One value per owner, expanded to the methods only where it is called
    (`Flow.method_targets`): a `BoundMethod` per method made transformers' `get_input_embeddings` return 70,880
    values, which every caller joined and sorted again."""

    owner: Instance
    patterns: Tuple[str, ...]


Value = Union[Instance, Function, ClassValue, Module, Container, Filled, Fanout, Namespace, BoundMethod, MethodOf,
              Accelerated, Prepared]
Values = FrozenSet[Value]
NONE: Values = frozenset()


def elements(values: Values) -> Values:
    return frozenset(e for v in values if isinstance(v, (Container, Fanout)) for e in v.elements)


def unpacked(values: Values, at: int, targets: Sequence[ast.expr]) -> Tuple[Values, Values]:
    """Unpacking `values` into `targets` (`model, critic = load()`): what target `at` gets from the tuples and
    lists whose length the targets fit (none starred), and the other values, whose elements any target may get."""
    size = None if any(isinstance(t, ast.Starred) for t in targets) else len(targets)
    fitting = [v for v in values if isinstance(v, Container) and v.positions is not None and len(v.positions) == size]
    return frozenset().union(*(v.positions[at] for v in fitting)), values.difference(fitting)  # type: ignore


def keyed(pairs: Iterable[Tuple[Optional[str], Values]]) -> Container:
    """The container a dict display (or `dict(k=v)`) builds from its (key, values) pairs, a key None where it is
    not a string literal (`**more`, `{name: head}`): then it is read by element only."""
    held: Dict[str, Set[Value]] = {}
    loose: Set[Value] = set()
    whole = True
    for key, values in pairs:
        whole = whole and key is not None
        (held.setdefault(key, set()) if key is not None else loose).update(values)
    by_key = tuple((key, frozenset(held[key])) for key in sorted(held))
    return Container(frozenset(loose).union(*held.values()), by_key if whole else None)


def items(values: Values, keys: Optional[FrozenSet[str]]) -> Values:
    """What `container[key]` may be, for a key that may be any of `keys` (None: not known): a keyed container's
    values under those keys where it has every one of them (a key it lacks may have been stored later, by a
    subscript the flow does not read), otherwise every element."""
    found: Set[Value] = set()
    for value in values:
        if not isinstance(value, (Container, Fanout)):
            continue
        by_key = dict(value.keyed) if isinstance(value, Container) and value.keyed is not None else None
        if by_key is not None and keys is not None and keys <= by_key.keys():
            found.update(v for key in keys for v in by_key[key])
        else:
            found.update(value.elements)
    return frozenset(found)


def any_keyed(values: Values) -> bool:
    return any(isinstance(v, Container) and v.keyed is not None for v in values)


def unprepared(values: Values) -> Values:
    """The values as modules: a prepared model is its module for everything but where its `forward` runs."""
    return frozenset(v.module if isinstance(v, Prepared) else v for v in values)


def modules_of(values: Values) -> Values:
    """The modules among `values`, prepared or not (what `.to(device)`, `DDP(model)` return)."""
    return frozenset(v for v in values if isinstance(v, (Instance, Prepared)))
