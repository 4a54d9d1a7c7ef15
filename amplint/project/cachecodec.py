"""Cache values to JSON and back, with no code in between.

The disk cache used to be pickled, and anyone who could write to
`.amplint_cache` (a pull request that commits one, in CI) could run code as
the user running amplint. Values are now plain JSON, and reading builds
only the dataclasses and enums of an allow-list (amplint's own data
modules), by calling their constructors with the stored fields. An object
of any other kind, or a field a class does not have, makes the entry a miss.

Shapes: JSON scalars as themselves, lists as arrays, and objects tagged by
their single key: `{"t": [...]}` a tuple, `{"d": [[k, v], ...]}` a dict,
`{"e": "Precision", "v": "float16"}` an enum, `{"c": "Finding", "f": {...}}`
a dataclass.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import typing
from typing import Any, Dict, Type

SCHEMA = 1
# The modules whose dataclasses and enums the cache may hold (summaries and findings).
DATA_MODULES = ("amplint.model", "amplint.project.summary", "amplint.project.frameworks", "amplint.facts.frameworks",
                "amplint.facts.entry")


class CodecError(ValueError):
    """A value that cannot be stored, or stored data that is not a value: a cache miss."""


def _allowed() -> Dict[str, Type[Any]]:
    classes: Dict[str, Type[Any]] = {}
    for name in DATA_MODULES:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, type) and value.__module__ == name and (
                dataclasses.is_dataclass(value) or issubclass(value, enum.Enum)
            ):
                classes[value.__name__] = value
    return classes


def encode(value: Any, classes: Dict[str, Type[Any]]) -> Any:
    """`value` as JSON-ready data; CodecError for anything outside the allow-list."""
    if value is None or isinstance(value, (bool, str, int, float)) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, enum.Enum):
        _check(type(value), classes)
        return {"e": type(value).__name__, "v": value.value}
    if isinstance(value, tuple):
        return {"t": [encode(item, classes) for item in value]}
    if isinstance(value, list):
        return [encode(item, classes) for item in value]
    if isinstance(value, dict):
        return {"d": [[encode(k, classes), encode(v, classes)] for k, v in value.items()]}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        _check(type(value), classes)
        fields = {f.name: encode(getattr(value, f.name), classes) for f in dataclasses.fields(value) if f.init}
        return {"c": type(value).__name__, "f": fields}
    raise CodecError(f"cannot store a {type(value).__name__}")


def _check(cls: Type[Any], classes: Dict[str, Type[Any]]) -> None:
    if classes.get(cls.__name__) is not cls:
        raise CodecError(f"{cls.__name__} is not cache data")


def decode(data: Any, classes: Dict[str, Type[Any]]) -> Any:
    """The value `encode` made; CodecError for data it cannot have made."""
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(item, classes) for item in data]
    if not isinstance(data, dict):
        raise CodecError("not cache data")
    keys = set(data)
    if keys == {"t"} and isinstance(data["t"], list):
        return tuple(decode(item, classes) for item in data["t"])
    if keys == {"d"} and isinstance(data["d"], list):
        pairs = [_pair(item) for item in data["d"]]
        return {decode(k, classes): decode(v, classes) for k, v in pairs}
    if keys == {"e", "v"}:
        cls = classes.get(data["e"]) if isinstance(data["e"], str) else None
        if cls is None or not issubclass(cls, enum.Enum):
            raise CodecError("unknown enum")
        return cls(data["v"])
    if keys == {"c", "f"} and isinstance(data["f"], dict):
        cls = classes.get(data["c"]) if isinstance(data["c"], str) else None
        if cls is None or not dataclasses.is_dataclass(cls):
            raise CodecError("unknown class")
        names = {f.name for f in dataclasses.fields(cls) if f.init}
        if not set(data["f"]) <= names:
            raise CodecError(f"unknown fields for {cls.__name__}")
        fields = {name: decode(value, classes) for name, value in data["f"].items()}
        hints = _hints(cls)
        for name, value in fields.items():
            if not conforms(value, hints.get(name, Any)):
                raise CodecError(f"{cls.__name__}.{name} has the wrong type")
        return cls(**fields)
    raise CodecError("not cache data")


@functools.lru_cache(maxsize=None)
def _hints(cls: Type[Any]) -> Dict[str, Any]:
    """The class's resolved annotations, once per class: resolving them costs ~0.4 ms, and a warm run
    decodes tens of thousands of cached objects (a single-file run on a large project is mostly that)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: check nothing rather than fail every entry
        return {}


def conforms(value: Any, hint: Any) -> bool:
    """Does `value` have the annotated type (as deep as tuples, dicts and unions go)?

    A wrongly typed field would not fail here but later, far from the cache
    (comparing a str line with an int one): an entry must be a miss instead.
    """
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    if hint is type(None) or hint is None:
        return value is None
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        return any(conforms(value, arg) for arg in args)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(item, args[0]) for item in value)
        return not args or (len(args) == len(value) and all(conforms(v, a) for v, a in zip(value, args)))
    if origin in (list, dict):
        if not isinstance(value, origin):
            return False
        if origin is list:
            return not args or all(conforms(item, args[0]) for item in value)
        return not args or all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True  # a hint this check does not know: trust the constructor


def _pair(item: Any) -> Any:
    if not (isinstance(item, list) and len(item) == 2):
        raise CodecError("not a key/value pair")
    return item


class Codec:
    """Encode and decode with the allow-list built once."""

    def __init__(self) -> None:
        self.classes = _allowed()

    def dump(self, kind: str, value: Any) -> Dict[str, Any]:
        return {"schema": SCHEMA, "kind": kind, "value": encode(value, self.classes)}

    def load(self, kind: str, document: Any) -> Any:
        if not (isinstance(document, dict) and document.get("schema") == SCHEMA and document.get("kind") == kind):
            raise CodecError("another schema or kind")
        if "value" not in document:
            raise CodecError("no value")
        return decode(document["value"], self.classes)
