"""Float16 precision set in a project's own config files (YAML, INI, TOML, CFG).

Real training code rarely writes `Trainer(precision="16-mixed")`: Hydra and
LightningCLI build the Trainer from YAML (`precision: 16-mixed`), scripts read
an INI of defaults (`precision = "16-mixed"`), Accelerate reads
`mixed_precision: fp16` and the HF Trainer `fp16: true`. A setting in such a
file is how the project asks for float16, so the framework rules of
`frameworks.py` read it as a literal.

The scan is line-based on purpose: no YAML or TOML parser (amplint needs only
LibCST), and a key is recognised only as a whole key with a literal value, so
a comment or a longer key (`val_precision`, `precision_plugin`) never counts.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.files import walk_other
from amplint.witness import Witness

CONFIG_SUFFIXES = (".yaml", ".yml", ".ini", ".toml", ".cfg")
SKIPPED_DIRECTORIES = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", "env", "node_modules", "__pycache__", ".tox", ".nox",
     ".amplint_cache", ".mypy_cache", ".pytest_cache", "site-packages", "build", "dist"}
)
MAX_CONFIG_BYTES = 256 * 1024  # config files are small; a big one is data, not settings

# Which key says what, and the values that mean float16 (compared lower-cased, quotes stripped).
FLOAT16_VALUES = {
    "lightning": ("precision", frozenset({"16", "16-mixed", "16-true", "half"})),
    "accelerate": ("mixed_precision", frozenset({"fp16"})),
    "hf": ("fp16", frozenset({"true"})),
}
_SETTING = re.compile(
    r"""^\s*(?:-\s+)?(?P<key>[A-Za-z_][A-Za-z0-9_.]*)\s*[:=]\s*(?P<value>"[^"]*"|'[^']*'|[^\s#;]+)\s*(?:[#;].*)?$"""
)


@dataclass(frozen=True)
class ConfigPrecision:
    """One float16 setting: where it is written and which framework reads it."""

    path: str
    line: int
    framework: str  # "lightning", "accelerate" or "hf"
    text: str  # the setting as written, e.g. 'precision: 16-mixed'

    def describe(self, shown_path: str) -> str:
        """How messages name the region: `precision: 16-mixed (configs/trainer/default.yaml:11)`."""
        return f"{self.text} ({shown_path}:{self.line})"


def read_settings(path: str, text: str) -> List[ConfigPrecision]:
    """The float16 settings of one config file's text."""
    found: List[ConfigPrecision] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = _SETTING.match(line)
        if match is None:
            continue
        key = match.group("key").rsplit(".", 1)[-1].lower()
        value = match.group("value").strip("\"'").lower()
        for framework, (wanted, values) in FLOAT16_VALUES.items():
            if key == wanted and value in values:
                found.append(ConfigPrecision(path, number, framework, " ".join(line.split("#")[0].split())))
    return found


def config_files(roots: Iterable[str], config: Config, witness: Optional[Witness] = None) -> Iterator[str]:
    """Config files under `roots`, in sorted order, walked as the sources are (`exclude`, git's ignore rules):
    Hydra's run folders (`outputs/`, `.hydra/`) and logs, which copy a run's settings, are what `.gitignore`
    lists. Hidden, tool and environment folders are skipped as well."""
    return walk_other(list(roots), CONFIG_SUFFIXES, config, _skipped, witness)


def _skipped(directory: str) -> bool:
    return directory in SKIPPED_DIRECTORIES or directory.startswith(".")


def _read(path: str) -> Optional[str]:
    try:
        if os.path.getsize(path) > MAX_CONFIG_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def scan(paths: Iterable[str]) -> Tuple[ConfigPrecision, ...]:
    """Every float16 setting in the config files `paths` (`config_files`), in path and line order."""
    found: List[ConfigPrecision] = []
    for path in paths:
        text = _read(path)
        if text is not None:
            found.extend(read_settings(path, text))
    return tuple(found)


def strongest(settings: Sequence[ConfigPrecision], framework: str) -> Optional[ConfigPrecision]:
    """The setting that names a framework's region: the first by path and line."""
    return next((s for s in settings if s.framework == framework), None)


# `target: pkg.mod.Class` (ldm/sgm), `_target_: pkg.mod.Class` (Hydra), `class_path: pkg.mod.Class` (LightningCLI).
_TARGET = re.compile(r"""^\s*(?:-\s+)?(?:target|_target_|class_path)\s*[:=]\s*["']?(?P<dotted>[A-Za-z_][\w.]*)""")


_KEY = re.compile(r"""^(?P<indent>\s*)(?:-\s+)?["']?(?P<key>[A-Za-z_][\w.-]*)["']?\s*:\s*(?:#.*)?$""")


def read_targets(text: str) -> List[Tuple[str, str]]:
    """(section, dotted name) of each class a config file's text asks to build: `("encoder_config",
    "pkg.models.Net")` for `encoder_config:` over `  target: pkg.models.Net`. The section is the nearest key
    above the target's line that opens a block indented less than it ("" at the top, or in a TOML or INI file),
    the name code usually gives what it builds from (`instantiate_from_config(encoder_config)`)."""
    found: List[Tuple[str, str]] = []
    opened: List[Tuple[int, str]] = []  # (indent, key) of the blocks the current line is in
    for line in text.splitlines():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        while opened and opened[-1][0] >= indent:
            opened.pop()
        target = _TARGET.match(line)
        if target is not None:
            found.append((opened[-1][1] if opened else "", target.group("dotted")))
            continue
        key = _KEY.match(line)
        if key is not None:
            opened.append((indent, key.group("key")))
    return found


def built_targets(paths: Iterable[str]) -> frozenset:
    """(section, dotted name) of the classes the config files `paths` build (`config_files`, `read_targets`): a
    receiver made from a config is one of them (`project.configured`)."""
    found: List[Tuple[str, str]] = []
    for path in paths:
        text = _read(path)
        if text is not None:
            found.extend(read_targets(text))
    return frozenset(found)


def built_classes(paths: Iterable[str]) -> frozenset:
    """The last names of `built_targets`: `Net` for `pkg.models.Net`."""
    return frozenset(dotted.rsplit(".", 1)[-1] for _, dotted in built_targets(paths))
