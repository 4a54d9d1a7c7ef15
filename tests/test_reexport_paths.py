"""A name re-exported along many import paths is one symbol (`Resolver.lookup`).

Packages re-export through `__init__` files and star imports that import each other, so the same function
is reached by many paths: on transformers one name came back 42,048 times from one lookup, every caller's
answer held each copy, and a run over 24,000 files filled its memory before it could finish. Here each layer
star-imports the two below it, so `nll` is reached along 21 paths (a Fibonacci number of them).
"""
from __future__ import annotations

from pathlib import Path
from typing import List

from amplint.config import Config
from amplint.project.cache import DiskCache
from amplint.project.loader import Loader
from amplint.project.modules import ModuleIndex
from amplint.project.resolve import Resolver
from amplint.project.run import run_project
from amplint.project.symbols import _Func

LAYERS = 8
BASE = '''import torch


def nll(mu, sigma, y):
    return -torch.distributions.Laplace(mu, sigma).log_prob(y)
'''
TRAIN = '''import torch
from torch import nn

from pkg.l{top} import nll


def step(x, y):
    net = nn.Linear(4, 2)
    with torch.autocast("cpu", dtype=torch.float16):
        out = net(x)
        return nll(out[:, 0], torch.sigmoid(out[:, 1]), y)
'''


def _project(root: Path) -> List[str]:
    package = root / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "l0.py").write_text(BASE)
    (package / "l1.py").write_text("from .l0 import *\n")
    for layer in range(2, LAYERS):
        (package / f"l{layer}.py").write_text(f"from .l{layer - 1} import *\nfrom .l{layer - 2} import *\n")
    (root / "train.py").write_text(TRAIN.format(top=LAYERS - 1))
    return sorted(str(p) for p in root.rglob("*.py"))


def test_a_function_reached_along_many_import_paths_is_one_symbol(tmp_path: Path) -> None:
    files = _project(tmp_path)
    loader = Loader(files, Config(jobs=1), DiskCache(None), ModuleIndex.build(files, [str(tmp_path)]), "test")
    loader.scan()
    resolver = Resolver(loader, frozenset)
    base = str(tmp_path / "pkg" / "l0.py")
    assert resolver.lookup(str(tmp_path / "train.py"), ["nll"]) == [_Func(base, "nll")]
    assert resolver.lookup(str(tmp_path / "pkg" / f"l{LAYERS - 1}.py"), ["nll"], 1) == [_Func(base, "nll")]


def test_the_walk_reaches_it_and_reports_it_once(tmp_path: Path) -> None:
    _project(tmp_path)
    run = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    found = [(Path(r.path).relative_to(tmp_path).as_posix(), f.line, f.column, f.code)
             for r in run.results for f in r.findings]
    assert found == [("pkg/l0.py", 5, 13, "AMP001")]
