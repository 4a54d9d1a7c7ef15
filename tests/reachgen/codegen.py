"""Modules of a generated project: their imports, their definitions, and references across them.

A module may import only modules created before it (`level`), so a project
never has an import cycle whatever order the hops are composed in. Lines of
the probability computation carry a marker while they are built; `render`
strips it and records where each marked line landed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

SITE = "  #<<site>>"
DECOY = "  #<<decoy>>"

MODULE_POOL = (
    "models", "heads", "losses", "agent", "trainer", "registry", "utils", "nets",
    "layers", "objectives", "runner", "builders", "critics", "policies", "modules", "common",
)
PACKAGE_POOL = ("pkg", "proj", "mlcore", "labkit", "stoch", "policyzoo", "deepfit", "lightrl")
# Preferred file names for what a module holds; any free name of MODULE_POOL when they are taken.
ROLE_NAMES = {
    "dists": ("distributions", "densities", "dists"),
    "heads": ("heads", "models", "nets", "modules"),
    "wrapper": ("wrappers", "modules", "utils"),
    "unit": ("losses", "objectives", "critics"),
    "sub": ("objectives", "losses", "criteria"),
    "layer": ("runner", "agent", "utils", "common", "steps", "engine"),
    "lookup": ("registry", "catalog", "zoo"),
    "builder": ("builders", "factory", "utils"),
    "trainer": ("trainer", "training", "loop"),
}
MAX_MODULES = 6
MIN_MODULES = 3

# name used in code -> the import that provides it
STD_IMPORTS = {
    "torch": "import torch",
    "nn": "from torch import nn",
    "F": "import torch.nn.functional as F",
    "math": "import math",
    "nullcontext": "from contextlib import nullcontext",
    "importlib": "import importlib",
    "D": "import torch.distributions as D",
}


@dataclass
class Module:
    """One generated file: imports and top-level blocks, in the order they were added."""

    name: str
    path: str
    level: int
    imports: Set[str] = field(default_factory=set)
    blocks: List[str] = field(default_factory=list)
    docstring: str = ""

    def need(self, *names: str) -> None:
        for name in names:
            self.imports.add(STD_IMPORTS.get(name, name))

    def add(self, lines: List[str]) -> None:
        self.blocks.append("\n".join(lines))

    def text(self) -> str:
        head = [f'"""{self.docstring}"""'] if self.docstring else []
        plain = sorted(line for line in self.imports if line.startswith("import "))
        froms = sorted(line for line in self.imports if line.startswith("from "))
        parts = ["\n".join(head + plain + froms)] if (head or plain or froms) else []
        parts += self.blocks
        return "\n\n\n".join(parts).strip("\n") + "\n"


class Project:
    """The package being generated, its modules, and the names already taken."""

    def __init__(self, rng: random.Random, dist_style: str) -> None:
        self.rng = rng
        self.package = rng.choice(PACKAGE_POOL)
        pool = list(MODULE_POOL)
        rng.shuffle(pool)
        self.pool = pool
        self.modules: List[Module] = []
        self.run = Module("run", "run.py", level=10**6)
        self.dist_style = dist_style          # "from", "alias" or "full"
        self.relative = rng.random() < 0.35   # package modules import each other relatively
        self.taken: Set[str] = set()
        self.counter = 0
        self.extra: Dict[str, str] = {}  # files outside the modules (a sub-package's), by relative path

    # -- modules -------------------------------------------------------------------------------------
    def new_module(self, docstring: str = "", name: str = "", role: str = "") -> Module:
        if not name:
            used = {m.name for m in self.modules}
            free = [n for n in ROLE_NAMES.get(role, ()) if n not in used]
            name = self.rng.choice(free) if free else next(n for n in self.pool if n not in used)
        if name in self.pool:
            self.pool.remove(name)
        module = Module(name, f"{self.package}/{name}.py", level=len(self.modules), docstring=docstring)
        self.modules.append(module)
        return module

    def place(self, above: Optional[Module] = None, fresh: float = 0.5, docstring: str = "",
              strict: bool = False, role: str = "") -> Module:
        """A module at or above `above` (strictly above with `strict`), so it may import `above`:
        a new one, or one already there."""
        if above is self.run:
            return self.run
        floor = -1 if above is None else above.level + (1 if strict else 0)
        candidates = [m for m in self.modules if m.level >= floor]
        if not candidates or (len(self.modules) < MAX_MODULES and (
                len(self.modules) < MIN_MODULES or self.rng.random() < fresh)):
            return self.new_module(docstring, role=role)
        return self.rng.choice(candidates)

    def above(self, *modules: Module) -> Module:
        """The highest of `modules`: whatever imports them all must sit at or above it."""
        return max(modules, key=lambda m: m.level)

    # -- names ---------------------------------------------------------------------------------------
    def name(self, *choices: str) -> str:
        """A fresh identifier: one of `choices`, numbered when all are taken."""
        options = [c for c in choices if c not in self.taken]
        if options:
            chosen = self.rng.choice(options)
        else:
            self.counter += 1
            chosen = f"{self.rng.choice(choices)}{self.counter}"
        self.taken.add(chosen)
        return chosen

    # -- references ----------------------------------------------------------------------------------
    def ref(self, caller: Module, target: Module, name: str) -> str:
        """The expression that names `target.name` inside `caller`, adding the import it needs."""
        if caller is target:
            return name
        assert caller.level > target.level, (caller.name, target.name)
        if caller is not self.run and self.relative:
            caller.need(f"from .{target.name} import {name}")
        else:
            caller.need(f"from {self.package}.{target.name} import {name}")
        return name

    def module_ref(self, caller: Module, target: Module) -> str:
        """An expression for the module object `target` inside `caller` (for getattr)."""
        assert caller.level > target.level
        if caller is not self.run and self.relative:
            caller.need(f"from . import {target.name}")
        else:
            caller.need(f"from {self.package} import {target.name}")
        return target.name

    def dist(self, caller: Module, cls: str) -> str:
        """`cls` (a torch.distributions name, or kl_divergence) as this project spells it."""
        if self.dist_style == "alias":
            caller.need("D")
            return f"D.{cls}"
        if self.dist_style == "full":
            caller.need("torch")
            return f"torch.distributions.{cls}"
        caller.need(f"from torch.distributions import {cls}")
        return cls

    # -- output --------------------------------------------------------------------------------------
    def render(self) -> Tuple[Dict[str, str], List[Tuple[str, int]], List[Tuple[str, int]]]:
        """File texts with the markers removed, and the (path, line) of each marked line."""
        files: Dict[str, str] = {f"{self.package}/__init__.py": "", **self.extra}
        sites: List[Tuple[str, int]] = []
        decoys: List[Tuple[str, int]] = []
        for module in self.modules + [self.run]:
            lines = module.text().split("\n")
            for number, line in enumerate(lines, 1):
                if line.endswith(SITE):
                    sites.append((module.path, number))
                    lines[number - 1] = line[: -len(SITE)]
                elif line.endswith(DECOY):
                    decoys.append((module.path, number))
                    lines[number - 1] = line[: -len(DECOY)]
            files[module.path] = "\n".join(lines)
        return files, sites, decoys


def indent(lines: List[str], by: int = 1) -> List[str]:
    return [("    " * by + line) if line else line for line in lines]
