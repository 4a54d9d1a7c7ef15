"""Cache values to JSON and back, with no code in between.

The disk cache used to be pickled, and anyone who could write to
`.amplint_cache` (a pull request that commits one, in CI) could run code as
the user running amplint. Values are now plain JSON, and reading builds
only the dataclasses and enums of an allow-list (amplint's own data
modules), by calling their constructors with the stored fields. An object
of any other kind, or a field a class does not have, makes the entry a miss.
Reading is JSON's own parser with an `object_hook` (`_Decoding`): the parser
builds the arrays and calls the hook for each object, innermost first, so no
Python code walks the values a second time (a warm run on real code executes
7% fewer instructions than with a walk of the parsed JSON).

Shapes: JSON scalars as themselves, lists as arrays, and objects tagged by
their single key: `{"t": [...]}` a tuple, `{"s": [...]}` a frozenset, `{"d": [[k, v], ...]}` a dict,
`{"e": "Precision", "v": "float16"}` an enum, `{"c": "Finding", "p": [...]}`
a dataclass, its constructor's arguments in order, the trailing ones left at
their defaults left out. By position, the decoder reads no field names (a warm
run on real code executes 8.5% fewer instructions than with them), and an entry
cannot outlive the order of its fields: every key holds amplint's code
fingerprint (`cache.code_fingerprint`), so a class whose fields change gets
new keys.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import json
import typing
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Type

SCHEMA = 2  # 2: a data class's fields by position (1: by name)
# The modules whose dataclasses and enums the cache may hold: summaries, findings, what the passes over every
# file read, the project's solution.
DATA_MODULES = ("amplint.model", "amplint.project.summary", "amplint.project.frameworks", "amplint.facts.frameworks",
                "amplint.facts.entry", "amplint.project.spellings", "amplint.project.prefilter",
                "amplint.project.shape", "amplint.project.budget", "amplint.project.solution",
                "amplint.project.answer")


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


# The types JSON stores as themselves, and `json.loads` gives back: exactly these (an enum may subclass one).
_PLAIN = frozenset({str, int, bool, float, type(None)})


class _Encoding:
    """`value` as JSON-ready data; CodecError for anything outside the allow-list.

    What it learns of a data class (its name, checked against the allow-list, and `_stored_fields`) is kept
    by type: a cold run stores some 200,000 values of a few classes, most of them scalars and tuples, which
    are found by their exact type first.
    """

    def __init__(self, classes: Dict[str, Type[Any]]) -> None:
        self.classes = classes
        self._layouts: Dict[type, Tuple[str, Tuple[Tuple[str, Any], ...]]] = {}

    def __call__(self, value: Any) -> Any:
        kind = type(value)
        if kind in _PLAIN:
            return value
        if kind is tuple:
            return {"t": [item if type(item) in _PLAIN else self(item) for item in value]}
        layout = self._layouts.get(kind)
        if layout is None:
            return self._other(value)
        name, fields = layout
        given = [getattr(value, field) for field, _ in fields]
        stored = len(given)
        while stored and _is_default(given[stored - 1], fields[stored - 1][1]):
            stored -= 1
        return {"c": name, "p": [item if type(item) in _PLAIN else self(item) for item in given[:stored]]}

    def _other(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, str, int, float)) and not isinstance(value, enum.Enum):
            return value
        if isinstance(value, enum.Enum):
            _check(type(value), self.classes)
            return {"e": type(value).__name__, "v": value.value}
        if isinstance(value, tuple):
            return {"t": [self(item) for item in value]}
        if isinstance(value, frozenset):  # in a stable order: the same value is the same bytes
            return {"s": sorted((self(item) for item in value), key=repr)}
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, dict):
            return {"d": [[self(k), self(v)] for k, v in value.items()]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            _check(type(value), self.classes)
            self._layouts[type(value)] = (type(value).__name__, _stored_fields(type(value)))
            return self(value)
        raise CodecError(f"cannot store a {type(value).__name__}")


_NO_DEFAULT = object()


@functools.lru_cache(maxsize=None)
def _stored_fields(cls: Type[Any]) -> Tuple[Tuple[str, Any], ...]:
    """(name, default) of each field the constructor takes, in its order; `_NO_DEFAULT` for one that has none.

    The fields are stored by position, which spares the decoder a name per field. The trailing fields left at
    their defaults are not stored: the constructor gives them back (`density`, `dist_args` and `given` of most
    calls are their defaults).
    """
    found = []
    for each in dataclasses.fields(cls):
        if each.init:
            if each.default is not dataclasses.MISSING:
                found.append((each.name, each.default))
            elif each.default_factory is not dataclasses.MISSING:
                found.append((each.name, each.default_factory()))
            else:
                found.append((each.name, _NO_DEFAULT))
    return tuple(found)


def _is_default(value: Any, default: Any) -> bool:
    """Is `value` the default itself, of its very type (`0` is not a default `False`)?"""
    return default is not _NO_DEFAULT and type(value) is type(default) and value == default


def _check(cls: Type[Any], classes: Dict[str, Type[Any]]) -> None:
    if classes.get(cls.__name__) is not cls:
        raise CodecError(f"{cls.__name__} is not cache data")


class _Document:
    """An entry's outer object, as the decoding met it: only the outermost one may be one."""

    __slots__ = ("schema", "kind", "value")

    def __init__(self, schema: Any, kind: Any, value: Any) -> None:
        self.schema, self.kind, self.value = schema, kind, value


class _Decoding:
    """`json.loads`'s `object_hook` for one entry: each JSON object, its members already decoded (JSON's
    parser calls it innermost first, and builds the arrays itself), becomes the value `_Encoding` made of it;
    CodecError for an object `_Encoding` cannot have made."""

    def __init__(self, classes: Dict[str, Type[Any]], layouts: "Dict[str, Layout]") -> None:
        self.classes = classes
        self.layouts = layouts  # the codec's, filled as classes are met
        self.documents = 0  # outer objects met: more than one is an entry inside a value, which is no value

    def __call__(self, data: Dict[str, Any]) -> Any:
        size = len(data)
        if size == 1:
            ((tag, items),) = data.items()
            if type(items) is list:
                if tag == "t":
                    return tuple(items)
                if tag == "s":
                    return frozenset(items)  # an unhashable item raises TypeError: a miss
                if tag == "d":
                    return dict(map(_pair, items))  # an unhashable key too
        elif size == 2:
            if "c" in data:
                stored = data.get("p")
                if type(stored) is list:
                    return _instance(data["c"], stored, self.classes, self.layouts)
            elif "e" in data and "v" in data:
                cls = self.classes.get(data["e"]) if isinstance(data["e"], str) else None
                if cls is None or not issubclass(cls, enum.Enum):
                    raise CodecError("unknown enum")
                return cls(data["v"])
        elif size == 3 and "schema" in data and "kind" in data and "value" in data:
            self.documents += 1
            return _Document(data["schema"], data["kind"], data["value"])
        raise CodecError("not cache data")


Layout = Tuple[Type[Any], Tuple[Tuple[str, FrozenSet[type], "Check"], ...]]  # a data class and `_field_checks`


def _instance(name: Any, stored: List[Any], classes: Dict[str, Type[Any]], layouts: Dict[str, Layout]) -> Any:
    """The dataclass `name` built from its stored fields (decoded already), each checked against its annotation.

    `layouts` keeps each class's checks by name: a warm run builds some 17,000 objects of a few classes."""
    if not isinstance(name, str):
        raise CodecError("unknown class")
    layout = layouts.get(name)
    if layout is None:
        cls = classes.get(name)
        if cls is None or not dataclasses.is_dataclass(cls):
            raise CodecError("unknown class")
        layout = layouts[name] = (cls, _field_checks(cls))
    cls, checks = layout
    if len(stored) > len(checks):
        raise CodecError(f"too many fields for {cls.__name__}")
    for (field_name, plain, check), value in zip(checks, stored):
        if type(value) in _PLAIN:
            ok = type(value) in plain
        else:
            ok = check is None or check(value)
        if not ok:
            raise CodecError(f"{cls.__name__}.{field_name} has the wrong type")
    return cls(*stored)


Check = Optional[Callable[[Any], bool]]  # None: any value has the type
# One value of each type `json.loads` gives that decodes as itself: a check answers alike for every value of
# one of these types, so a field's answer for each is read once.
_SAMPLES = ("", 0, False, 0.0, None)


@functools.lru_cache(maxsize=None)
def _field_checks(cls: Type[Any]) -> Tuple[Tuple[str, FrozenSet[type], Check], ...]:
    """Per field the constructor takes, in its order: the name, the plain types it accepts and the check of
    its annotation, built once per class: a warm run decodes tens of thousands of cached objects (a
    single-file run on a large project is mostly that)."""
    hints = _hints(cls)
    checks: List[Tuple[str, FrozenSet[type], Check]] = []
    for each in dataclasses.fields(cls):
        if each.init:
            check = _check_of(hints.get(each.name, Any))
            checks.append((each.name, frozenset(type(v) for v in _SAMPLES if check is None or check(v)), check))
    return tuple(checks)


def _hints(cls: Type[Any]) -> Dict[str, Any]:
    """The class's resolved annotations (resolving them costs ~0.4 ms, once per class)."""
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: check nothing rather than fail every entry
        return {}


def _check_of(hint: Any) -> Check:
    try:
        return _compiled_check(hint)
    except TypeError:  # an unhashable hint: built each time
        return _build_check(hint)


@functools.lru_cache(maxsize=None)
def _compiled_check(hint: Any) -> Check:
    return _build_check(hint)


def _build_check(hint: Any) -> Check:
    """Does a value have the annotated type (as deep as tuples, dicts and unions go)? As a function of the
    value, so that the annotation is read once.

    A wrongly typed field would not fail here but later, far from the cache
    (comparing a str line with an int one): an entry must be a miss instead.
    """
    if hint is Any or isinstance(hint, typing.TypeVar):
        return None
    if hint is type(None) or hint is None:
        return _is_none
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union:
        options = [_check_of(arg) for arg in args]
        if any(option is None for option in options):
            return None
        return lambda value: any(option(value) for option in options)  # type: ignore[misc]
    if origin is tuple:
        return _tuple_check(args)
    if origin is list:
        return _items_check(list, _check_of(args[0]) if args else None)
    if origin is frozenset:
        return _items_check(frozenset, _check_of(args[0]) if args else None)
    if origin is dict:
        return _dict_check(_check_of(args[0]) if args else None, _check_of(args[1]) if args else None)
    if hint is float:
        return lambda value: isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return None  # a hint this check does not know: trust the constructor


def _is_none(value: Any) -> bool:
    return value is None


def _tuple_check(args: Tuple[Any, ...]) -> Check:
    if len(args) == 2 and args[1] is Ellipsis:
        return _items_check(tuple, _check_of(args[0]))
    if not args:
        return _items_check(tuple, None)
    each = [_check_of(arg) for arg in args]

    def check(value: Any) -> bool:
        return isinstance(value, tuple) and len(value) == len(each) and all(
            one is None or one(item) for one, item in zip(each, value))
    return check


def _items_check(kind: type, item: Check) -> Callable[[Any], bool]:
    if item is None:
        return lambda value: isinstance(value, kind)
    return lambda value: isinstance(value, kind) and all(item(each) for each in value)  # type: ignore[misc]


def _dict_check(key: Check, value_check: Check) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        return isinstance(value, dict) and all(
            (key is None or key(k)) and (value_check is None or value_check(v)) for k, v in value.items())
    return check


def _pair(item: Any) -> Any:
    if not (isinstance(item, list) and len(item) == 2):
        raise CodecError("not a key/value pair")
    return item


class Codec:
    """Encode and decode with the allow-list built once, and what each learns of a class kept."""

    def __init__(self) -> None:
        self.classes = _allowed()
        self._layouts: Dict[str, Layout] = {}
        self._encode = _Encoding(self.classes)

    def dump(self, kind: str, value: Any) -> Dict[str, Any]:
        return {"schema": SCHEMA, "kind": kind, "value": self._encode(value)}

    def loads(self, kind: str, text: str) -> Any:
        """The value of an entry's JSON text, decoded as JSON's parser reads it (`_Decoding`)."""
        decoding = _Decoding(self.classes, self._layouts)
        document = json.loads(text, object_hook=decoding)
        if type(document) is not _Document or decoding.documents != 1:
            raise CodecError("not an entry")
        if document.schema != SCHEMA or document.kind != kind:
            raise CodecError("another schema or kind")
        return document.value
