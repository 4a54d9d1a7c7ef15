"""Module names of the project's files, and where a dotted name lives.

Python finds `pkg.model` through `sys.path`, which a linter cannot know. So a
file gets one name per plausible import root: every directory from its own up
to the project top (the nearest `pyproject.toml`/`setup.py`/`setup.cfg`/`.git`
above the checked path, else the checked path), plus the first directory
above its package (`__init__.py`) chain. `train.py` next to `models/vae.py`
thus finds `from models.vae import VAE` (namespace packages, scripts) and
`src/pkg/...` finds `pkg.x` (src layout). When a name matches several files,
the ones whose import root is a directory above the importing file win, the
deepest first (as when a script's directory is `sys.path[0]`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from amplint.witness import Witness

MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


@dataclass(frozen=True)
class ModuleName:
    name: str
    root: str  # absolute directory the name is relative to


def project_top(path: str) -> str:
    """The nearest directory at or above `path` holding a project marker, else `path`'s directory."""
    start = os.path.abspath(path if os.path.isdir(path) else os.path.dirname(path) or ".")
    return marked_directory(start) or start


def marked_directory(start: str) -> Optional[str]:
    """The nearest directory at or above `start` (a directory) holding a project marker; None when none does."""
    current = start
    while True:
        if any(os.path.exists(os.path.join(current, marker)) for marker in MARKERS):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def display_root(paths: Sequence[str]) -> str:
    """The directory paths in messages are shown relative to: the checked directory (or their common one)."""
    dirs = [os.path.abspath(p if os.path.isdir(p) else os.path.dirname(p) or ".") for p in paths] or [os.getcwd()]
    try:
        return os.path.commonpath(dirs)
    except ValueError:  # different drives
        return dirs[0]


def _under(directory: str, root: str) -> bool:
    return directory == root or directory.startswith(root.rstrip(os.sep) + os.sep)


def _package_root(directory: str, memo: Dict[str, str], witness: Optional[Witness] = None) -> str:
    """The first directory at or above `directory` without an `__init__.py` (`witness` notes each one asked)."""
    if directory not in memo:
        parent = os.path.dirname(directory)
        init = os.path.join(directory, "__init__.py")
        if witness is not None and parent != directory:
            witness.kind(init)
        is_package = parent != directory and os.path.exists(init)
        memo[directory] = _package_root(parent, memo, witness) if is_package else directory
    return memo[directory]


def _names(path: str, tops: Sequence[str], memo: Dict[str, str],
           chains: Dict[str, List[Tuple[str, str]]], witness: Optional[Witness] = None) -> List[ModuleName]:
    """Every (dotted name, import root) of a file, from its own directory up to the project top."""
    directory, filename = os.path.split(os.path.abspath(path))
    if filename.endswith(".ipynb"):  # a notebook is not importable
        return []
    stem = os.path.splitext(filename)[0]
    chain = chains.get(directory)
    if chain is None:
        chain = chains[directory] = _directory_chain(directory, tops, memo, witness)
    names: List[ModuleName] = []
    for prefix, root in chain:
        name = stem if not prefix else prefix if stem == "__init__" else f"{prefix}.{stem}"
        if name != "__init__":
            names.append(ModuleName(name, root))
    return names


def _directory_chain(directory: str, tops: Sequence[str], memo: Dict[str, str],
                     witness: Optional[Witness] = None) -> List[Tuple[str, str]]:
    """(dotted package prefix, import root) per level above `directory`; shared by the files in it.

    Computed once per directory, not per file: a repository has ~10x fewer directories than files.
    """
    package_root = _package_root(directory, memo, witness)
    containing = [top for top in tops if _under(directory, top)]
    limit = max(containing, key=len) if containing else directory
    if len(package_root) < len(limit):
        limit = package_root
    chain: List[Tuple[str, str]] = []
    parts: List[str] = []
    current = directory
    while True:
        chain.append((".".join(parts), current))
        parent = os.path.dirname(current)
        if current == limit or parent == current:
            return chain
        parts.insert(0, os.path.basename(current))
        current = parent


@dataclass
class ModuleIndex:
    """Files by module name, and each file's names."""

    by_name: Dict[str, List[Tuple[str, str]]] = field(default_factory=dict)  # name -> [(path, root)]
    names_of: Dict[str, List[ModuleName]] = field(default_factory=dict)
    # `locate`'s answers by (importer's directory, name, root): the files of a package ask the same few.
    _located: Dict[Tuple[str, str, Optional[str]], Tuple[Tuple[str, Tuple[str, ...]], ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _directories: Dict[str, str] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def build(cls, files: Iterable[str], tops: Sequence[str], witness: Optional[Witness] = None) -> "ModuleIndex":
        """`witness` notes the `__init__.py` files asked about (`amplint.witness`)."""
        index = cls()
        memo: Dict[str, str] = {}
        chains: Dict[str, List[Tuple[str, str]]] = {}
        for path in files:
            names = _names(path, tops, memo, chains, witness)
            index.names_of[path] = names
            for name in names:
                index.by_name.setdefault(name.name, []).append((path, name.root))
        return index

    def dotted_names(self, path: str, name: str) -> List[str]:
        """`name` defined at the top of `path`, under each of the file's module names: `pkg.dists.MyNormal`."""
        return [f"{module.name}.{name}" for module in self.names_of.get(path, [])]

    def short(self, path: str) -> str:
        """The last part of a file's module name, as chains show it (`utils` for pkg/utils.py)."""
        stem = os.path.splitext(os.path.basename(path))[0]
        return os.path.basename(os.path.dirname(os.path.abspath(path))) if stem == "__init__" else stem

    def absolute(self, importer: str, name: str) -> List[Tuple[str, Optional[str]]]:
        """(absolute dotted name, root it is relative to or None) for an imported name; relative ones resolved."""
        if not name.startswith("."):
            return [(name, None)]
        dots = len(name) - len(name.lstrip("."))
        rest = name[dots:]
        out: List[Tuple[str, Optional[str]]] = []
        is_init = os.path.basename(importer).startswith("__init__.")
        for module in self.names_of.get(importer, []):
            package = module.name.split(".") if is_init else module.name.split(".")[:-1]
            if dots - 1 > len(package):
                continue
            base = package[: len(package) - (dots - 1)]
            full = ".".join(base + ([rest] if rest else []))
            if full:
                out.append((full, module.root))
        return out

    def imported_files(self, importer: str, names: Sequence[str]) -> List[str]:
        """The project files `importer` imports, from its imported names (`prefilter.imported_names`)."""
        return [path for name in names for absolute, root in self.absolute(importer, name)
                for path, _ in self.locate(importer, absolute, root)]

    def locate(self, importer: str, dotted: str, root: Optional[str] = None) -> List[Tuple[str, Tuple[str, ...]]]:
        """(file, remaining attribute parts) for the longest module prefix of `dotted`; preferred files only."""
        here = self._directories.get(importer)
        if here is None:
            here = self._directories[importer] = os.path.dirname(os.path.abspath(importer))
        key = (here, dotted, root)
        found = self._located.get(key)
        if found is None:
            found = self._located[key] = self._locate(here, dotted, root)
        return list(found)

    def _locate(self, here: str, dotted: str, root: Optional[str]) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
        parts = dotted.split(".")
        for size in range(len(parts), 0, -1):
            found = self.by_name.get(".".join(parts[:size]))
            if not found:
                continue
            if root is not None:
                found = [(p, r) for p, r in found if r == root]
            chosen = self._prefer(here, found)
            if chosen:
                return tuple((path, tuple(parts[size:])) for path in chosen)
        return ()

    @staticmethod
    def _prefer(here: str, found: List[Tuple[str, str]]) -> List[str]:
        """The files under the deepest root above `here` (the importer's directory); all of them if none is."""
        above = [(p, r) for p, r in found if _under(here, r)]
        if not above:
            return sorted({p for p, _ in found})
        deepest = max(len(r) for _, r in above)
        return sorted({p for p, r in above if len(r) == deepest})
