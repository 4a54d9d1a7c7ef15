"""Which modules a slice of user code may import, and where a project module's file is.

`amplint verify --run-user-code` runs a *slice* of the user's code: the density
and the project definitions it uses. The slice may import only `torch` (with
its submodules), `math` and `numpy`; every other import it needs makes the
finding `unverifiable`, named. Project modules are not imported at all: their
files are read here, sliced, and the child process is handed the sliced text.

A module is a project module when its file lies inside one of the folders
verify was given (a file given counts with its folder), so a slice never reads
code from outside what the user asked to verify.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, List, Optional, Sequence, Tuple

ALLOWED = ("torch", "math", "numpy")


# Parts of torch and numpy that start processes, load compiled code or reach the network: a density needs none.
REFUSED = ("torch.multiprocessing", "torch.distributed", "torch.utils.data", "torch.utils.cpp_extension", "torch.hub",
           "torch.ops", "torch.library", "torch.cuda.nvtx", "numpy.ctypeslib", "numpy.f2py", "numpy.distutils",
           "numpy.lib.npyio", "numpy.load", "numpy.save", "numpy.savez", "numpy.loadtxt", "numpy.savetxt",
           "numpy.genfromtxt", "numpy.fromfile", "numpy.fromregex", "numpy.memmap", "torch.load", "torch.save",
           "torch.from_file")


def allowed(module: str) -> bool:
    """`torch`, `torch.nn.functional`, `math`, `numpy.linalg`...: what a slice may import."""
    return module.split(".", 1)[0] in ALLOWED


def refused(dotted: str) -> Optional[str]:
    """The part of torch or numpy in `REFUSED` that `dotted` (`torch.hub.load`) reaches, if any."""
    for prefix in REFUSED:
        if dotted == prefix or dotted.startswith(prefix + "."):
            return prefix
    return None


@dataclass(frozen=True)
class ModuleFile:
    """A project module: its dotted name (as the slice imports it) and its file."""

    name: str
    path: str
    package: bool  # an `__init__.py`: relative imports start at the module itself

    @property
    def package_name(self) -> str:
        """`__package__`, the base of its relative imports."""
        return self.name if self.package else self.name.rpartition(".")[0]


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def bases_of(paths: Iterable[str]) -> Tuple[str, ...]:
    """The folders a slice may read from: each folder given, and the folder of each file given."""
    out: List[str] = []
    for path in paths:
        base = _real(path if os.path.isdir(path) else os.path.dirname(path) or os.curdir)
        if base not in out:
            out.append(base)
    return tuple(out)


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip(os.sep) + os.sep)


class Finder:
    """Finds project modules by dotted name, under the roots a file's own imports would use."""

    def __init__(self, bases: Sequence[str]) -> None:
        self.bases = tuple(bases)

    def within(self, path: str) -> bool:
        real = _real(path)
        return any(_inside(real, base) for base in self.bases)

    def module_of(self, path: str) -> ModuleFile:
        """The module a file is, named from the topmost package folder (with `__init__.py`) above it."""
        real = _real(path)
        folder, stem = os.path.split(real)
        package = stem == "__init__.py"
        parts = [] if package else [os.path.splitext(stem)[0]]
        while os.path.isfile(os.path.join(folder, "__init__.py")):
            folder, name = os.path.split(folder)
            parts.insert(0, name)
            if not name:
                break
        return ModuleFile(".".join(parts) or "__main__", real, package)

    def root_of(self, module: ModuleFile) -> str:
        """The folder the module's dotted name starts in (a `sys.path` entry for it)."""
        folder = os.path.dirname(module.path)
        for _ in range(module.name.count(".") + (1 if module.package else 0)):
            folder = os.path.dirname(folder)
        return folder

    def roots(self, importer: ModuleFile) -> List[str]:
        out: List[str] = []
        for root in (self.root_of(importer), os.path.dirname(importer.path), *self.bases,
                     *(os.path.join(base, "src") for base in self.bases)):
            if root not in out and os.path.isdir(root):
                out.append(root)
        return out

    def find(self, dotted: str, importer: ModuleFile) -> Optional[ModuleFile]:
        """The project file of module `dotted` (absolute), or None when no root inside the bases holds it."""
        parts = dotted.split(".")
        if not all(part.isidentifier() for part in parts):
            return None
        for root in self.roots(importer):
            stem = os.path.join(root, *parts)
            for candidate, package in ((os.path.join(stem, "__init__.py"), True), (stem + ".py", False)):
                if os.path.isfile(candidate) and self.within(candidate):
                    return ModuleFile(dotted, _real(candidate), package)
        return None


def absolute_name(importer: ModuleFile, level: int, module: Optional[str]) -> Optional[str]:
    """The absolute module a `from ...x import y` in `importer` means; None when it climbs above the top."""
    if level == 0:
        return module
    base = importer.package_name.split(".") if importer.package_name else []
    if level - 1 > len(base) or (level - 1 == len(base) and not module):
        return None
    kept = base[: len(base) - (level - 1)]
    return ".".join(kept + ([module] if module else [])) or None
