"""Find and read `[tool.amplint]` (pyproject.toml) or `amplint.toml` into a `Config`.

The CLI, `amplint config` and the flake8 plugin all come through here, so a
project's settings mean the same thing in every front end. Problems come back
as `ConfigError` values naming the file and the key; only the CLI prints them.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from amplint.config import STRATEGIES, Config

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
AMPLINT_TOML = "amplint.toml"
# Searched in this order in each directory, like ruff.toml before pyproject.toml.
CONFIG_NAMES = (AMPLINT_TOML, PYPROJECT)

CODE = re.compile(r"^[A-Z]+[0-9]*$")
QUALNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class ConfigError:
    """A configuration file amplint cannot use: which file, which key, and why."""

    path: str
    key: Optional[str]
    message: str

    def __str__(self) -> str:
        # `nope.toml: cannot read`, `pyproject.toml: [tool.amplint] key 'x': ...`: no empty label between colons.
        label = " ".join(part for part in (_table_label(self.path), "" if self.key is None else f"key {self.key!r}")
                         if part)
        return f"{self.path}: {label}: {self.message}" if label else f"{self.path}: {self.message}"


@dataclass(frozen=True)
class LoadedConfig:
    """The resolved settings and where they came from (None: built-in defaults)."""

    config: Config
    source: Optional[str] = None
    keys: Tuple[str, ...] = ()  # keys the file set; every other key is a default

    @property
    def origin(self) -> str:
        if self.source is None:
            return "defaults (no amplint.toml or pyproject.toml with [tool.amplint] found)"
        return f"{self.source} {_table_label(self.source)}".rstrip()


def _table_label(path: str) -> str:
    return "[tool.amplint]" if os.path.basename(path) == PYPROJECT else ""


# ---------------------------------------------------------------------------
# Key parsers: each takes the raw TOML value and returns (value, error message).

Parsed = Tuple[Any, Optional[str]]


def _strings(value: Any) -> Optional[List[str]]:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    return None


def _codes(value: Any) -> Parsed:
    items = _strings(value)
    if items is None:
        return None, 'expected a list of rule codes or prefixes, e.g. ["AMP001"]'
    from amplint.rules import BY_CODE

    for item in items:
        if not CODE.match(item):
            return None, f"{item!r} is not a rule code or prefix (upper-case letters then digits, e.g. AMP001)"
        if not any(code.startswith(item) for code in BY_CODE):
            return None, f"{item!r} matches no rule; known rules: {', '.join(BY_CODE)}"
    return tuple(items), None


def _globs(value: Any) -> Parsed:
    items = _strings(value)
    if items is None or any(not item for item in items):
        return None, 'expected a list of non-empty glob strings, e.g. ["tests/*"]'
    return tuple(items), None


def _per_file_ignores(value: Any) -> Parsed:
    if not isinstance(value, dict):
        return None, 'expected a table of glob = [codes], e.g. {"tests/*" = ["AMP001"]}'
    pairs = []
    for glob, codes in value.items():
        parsed, error = _codes(codes)
        if error is not None:
            return None, f"{glob!r}: {error}"
        pairs.append((glob, parsed))
    return tuple(pairs), None


def _strategy(value: Any) -> Parsed:
    if value not in STRATEGIES:
        return None, f"expected one of {', '.join(repr(s) for s in STRATEGIES)}, got {value!r}"
    return value, None


def _qualnames(value: Any) -> Parsed:
    items = _strings(value)
    if items is None:
        return None, 'expected a list of qualified names, e.g. ["mypkg.amp.autocast"]'
    for item in items:
        if not QUALNAME.match(item):
            return None, f"{item!r} is not a dotted qualified name"
    return tuple(items), None


def _distributions(value: Any) -> Parsed:
    """Classes stay exact names; modules (lower-case last part, or a trailing `.`/`.*`) become prefixes."""
    items = _strings(value)
    if items is None:
        return None, 'expected a list of modules or classes, e.g. ["mypkg.dists", "mypkg.flows.Flow"]'
    out = []
    for item in items:
        name = item[:-2] if item.endswith(".*") else item.rstrip(".")
        if not QUALNAME.match(name):
            return None, f"{item!r} is not a dotted module or class name"
        is_module = item.endswith(".") or item.endswith(".*") or not name.rsplit(".", 1)[-1][:1].isupper()
        out.append(name + "." if is_module else name)
    return tuple(out), None


def _directories(value: Any) -> Parsed:
    """Relative paths are resolved against the config file's directory in `parse_table`."""
    items = _strings(value)
    if items is None or any(not item for item in items):
        return None, 'expected a list of directories, e.g. ["."] or ["src", "scripts"]'
    return tuple(items), None


def _bool(value: Any) -> Parsed:
    return (value, None) if isinstance(value, bool) else (None, f"expected true or false, got {value!r}")


def _depth(value: Any) -> Parsed:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None, f"expected a non-negative integer, got {value!r}"
    return value, None


def _jobs(value: Any) -> Parsed:
    if value == "auto":
        return 0, None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None, f"expected 'auto' or a non-negative integer (0: one worker per CPU, 1: no pool), got {value!r}"
    return value, None


# TOML key -> (Config field, parser). The Config field names are the keys with `_`.
KEYS: Dict[str, Tuple[str, Callable[[Any], Parsed]]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "exclude": ("exclude", _globs),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "strategy": ("strategy", _strategy),
    "extend-autocast": ("extend_autocast", _qualnames),
    "extend-distributions": ("extend_distributions", _distributions),
    "project": ("project", _bool),
    "src": ("src", _directories),
    "project-root": ("project_root", _bool),
    "respect-gitignore": ("respect_gitignore", _bool),
    "max-depth": ("max_depth", _depth),
    "max-file-size": ("max_file_size", _depth),
    "flow-budget": ("flow_budget", _depth),
    "jobs": ("jobs", _jobs),
}


def parse_table(table: Mapping[str, Any], source: str, base: Config = Config()) -> Union[LoadedConfig, ConfigError]:
    """Validate every key of an amplint table and apply it over `base`."""
    changes: Dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            hint = ""
            if key == "tool" and os.path.basename(source) == AMPLINT_TOML:
                hint = " (amplint.toml takes the keys at top level, without [tool.amplint])"
            elif key.replace("_", "-") in KEYS:
                hint = f" (did you mean {key.replace('_', '-')!r}?)"
            return ConfigError(source, key, f"unknown key{hint}; known keys: {', '.join(KEYS)}")
        field_name, parser = KEYS[key]
        parsed, error = parser(value)
        if error is not None:
            return ConfigError(source, key, error)
        if field_name == "src":
            parsed, error = _resolve_directories(parsed, source)
            if error is not None:
                return ConfigError(source, key, error)
        changes[field_name] = parsed
    return LoadedConfig(replace(base, **changes), source, tuple(table))


def _resolve_directories(items: Sequence[str], source: str) -> Parsed:
    """`src` entries as absolute directories, relative ones taken from the config file's directory.

    A missing directory is an error rather than silently nothing: it would make every single-file run
    fall back to the marker search without saying why. An entry outside the config file's directory (`..`,
    `/`, `~`, or a link that leads out) is refused: a checked-out repository is untrusted input, and such an
    entry once made `/` the project, read all of it and wrote its cache at `/.amplint_cache`.
    """
    base = os.path.dirname(os.path.abspath(source))
    resolved = tuple(os.path.normpath(os.path.join(base, os.path.expanduser(item))) for item in items)
    for item, full in zip(items, resolved):
        if not (_inside(full, base) and _inside(os.path.realpath(full), os.path.realpath(base))):
            return None, f"{item!r} resolves to {full}, outside {base} (the directory of this file); refused"
        if not os.path.isdir(full):
            return None, f"{item!r} is not a directory (resolved to {full})"
    return resolved, None


def _inside(path: str, directory: str) -> bool:
    """`path` is `directory` or below it (both absolute and normalised)."""
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def _read_toml(path: str) -> Union[Dict[str, Any], ConfigError]:
    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except OSError as exc:
        return ConfigError(path, None, f"cannot read: {exc.strerror or exc}")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return ConfigError(path, None, f"invalid TOML: {exc}")


def _amplint_table(path: str, data: Dict[str, Any]) -> Union[Dict[str, Any], None, ConfigError]:
    """The amplint settings in a parsed file; None when a pyproject.toml has no [tool.amplint]."""
    if os.path.basename(path) != PYPROJECT:
        return data
    tool = data.get("tool")
    if not isinstance(tool, dict) or "amplint" not in tool:
        return None
    table = tool["amplint"]
    if not isinstance(table, dict):
        return ConfigError(path, None, "expected a table")
    return table


def load_config_file(path: str) -> Union[LoadedConfig, ConfigError]:
    """Read one named file (`--config`); a pyproject.toml without [tool.amplint] gives defaults."""
    data = _read_toml(path)
    if isinstance(data, ConfigError):
        return data
    table = _amplint_table(path, data)
    if table is None:
        return LoadedConfig(Config(), path)
    if isinstance(table, ConfigError):
        return table
    return parse_table(table, path)


@lru_cache(maxsize=None)
def _config_in_dir(directory: str) -> Union[LoadedConfig, ConfigError, None]:
    """The config file in exactly this directory, if any; cached because flake8 asks per file."""
    for name in CONFIG_NAMES:
        candidate = os.path.join(directory, name)
        if not os.path.isfile(candidate):
            continue
        data = _read_toml(candidate)
        if isinstance(data, ConfigError):
            return data
        table = _amplint_table(candidate, data)
        if table is None:
            continue  # a pyproject.toml for other tools: keep looking upward
        if isinstance(table, ConfigError):
            return table
        return parse_table(table, candidate)
    return None


@lru_cache(maxsize=None)
def find_config(directory: str) -> Union[LoadedConfig, ConfigError]:
    """The nearest config at or above `directory` (an absolute, normalised path), else defaults."""
    found = _config_in_dir(directory)
    if found is not None:
        return found
    parent = os.path.dirname(directory)
    if parent == directory:
        return LoadedConfig(Config())
    return find_config(parent)


def _start_dir(path: str) -> str:
    full = os.path.abspath(path)
    return full if os.path.isdir(full) else os.path.dirname(full)


def common_directory(paths: Sequence[str]) -> str:
    """The deepest directory containing every path (like black's project root search)."""
    if not paths:
        return os.path.abspath(os.curdir)
    starts = [_start_dir(path) for path in paths]
    try:
        return os.path.commonpath(starts)
    except ValueError:  # different drives on Windows: fall back to the first
        return starts[0]


def resolve_config(paths: Sequence[str], explicit: Optional[str] = None) -> Union[LoadedConfig, ConfigError]:
    """The configuration for one run: `--config FILE` if given, else the nearest to the paths' common directory."""
    if explicit is not None:
        return load_config_file(explicit)
    return find_config(common_directory(paths))


def config_for_file(filename: str) -> Union[LoadedConfig, ConfigError]:
    """The nearest configuration to one file, for the flake8 plugin ("stdin" and "-" use the working directory)."""
    if filename in ("stdin", "-", ""):
        return find_config(os.path.abspath(os.curdir))
    return find_config(_start_dir(filename))


def clear_cache() -> None:
    """Forget cached lookups (tests write config files between runs in one process)."""
    _config_in_dir.cache_clear()
    find_config.cache_clear()


# ---------------------------------------------------------------------------
# `amplint config`: print what a run would use, as TOML that loads back.


def _toml_value(value: Any) -> str:
    import json

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    return json.dumps(value)  # strings and ints: JSON escapes are valid TOML basic strings


def to_toml(loaded: LoadedConfig) -> str:
    """Every key with its resolved value; keys the file did not set are marked `# default`."""
    config = loaded.config
    lines = [f"# amplint configuration from {loaded.origin}"]
    table_keys = []
    for key, (field_name, _) in KEYS.items():
        value = getattr(config, field_name)
        if field_name == "per_file_ignores":
            table_keys.append((key, value))
            continue
        note = "" if key in loaded.keys else "  # default"
        if value is None:  # TOML has no null: the key left out is the default (`max-depth`: no bound)
            lines.append(f"# {key}: no bound (default)")
            continue
        lines.append(f"{key} = {_toml_value(value)}{note}")
    for key, value in table_keys:
        note = "" if key in loaded.keys else "  # default"
        lines.append("")
        lines.append(f"[{key}]{note}")
        lines.extend(f"{_toml_value(glob)} = {_toml_value(codes)}" for glob, codes in value)
    return "\n".join(lines)


def to_json(loaded: LoadedConfig) -> Dict[str, Any]:
    settings: Dict[str, Any] = {}
    for key, (field_name, _) in KEYS.items():
        value = getattr(loaded.config, field_name)
        if field_name == "per_file_ignores":
            value = {glob: list(codes) for glob, codes in value}
        elif isinstance(value, tuple):
            value = list(value)
        settings[key] = value
    return {"source": loaded.source, "set": list(loaded.keys), "config": settings}
