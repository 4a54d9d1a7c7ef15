"""`project.shape`: what a file defines, from CPython's tree, in place of a LibCST parse.

A shape must answer every question the resolver asks it exactly as the file's
summary does, or say that only the summary can answer (`bound`, `mentions`).
"""
from __future__ import annotations

from pathlib import Path
from typing import List

import pytest

from amplint.config import Config
from amplint.deep import python_parse
from amplint.names import import_table
from amplint.pipeline import analyze_source
from amplint.project.loader import Loader
from amplint.project.cache import DiskCache
from amplint.project.modules import ModuleIndex
from amplint.project.resolve import ClassRef, Resolver, _Instance
from amplint.project.run import run_project
from amplint.project.shape import FileShape, file_shape
from amplint.project.summarize import summarize
from conftest import chain_names

ROOT = Path(__file__).resolve().parent.parent

TRICKY = '''
import torch
import torch.nn as nn
from .util import *
from pkg import helpers as h

Alias = nn.Module
mixins = (object,)
registry = {}


class Outer(nn.Module, *mixins, metaclass=type):
    table = build_table()

    class Inner(Alias):
        def forward(self, x):
            return x

    def __init__(self):
        super().__init__()
        self.head = Head()
        self.layers = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, x):
        def helper(y):
            class Local(torch.nn.Module):
                def run(self):
                    self.seen = 1
            return Local, y
        return helper(x)

    @property
    def size(self):
        return 1

    @size.setter
    def size(self, value):
        self.stored = value


async def fetch(url):
    async def inner():
        return url
    return await inner()


def fetch(url):  # a second definition of the same name
    def again():
        return url
    return again


if (cached := registry.get("x")) is None:
    model = Outer()
for index, (key, value) in enumerate(registry.items()):
    pass
with open("f") as handle:
    pass
squares = [n * n for n in range(3)]
'''


def _python_files(*roots: Path) -> List[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py"))


def _compare(text: str, path: str) -> List[object]:
    """Every difference between the file's shape and what its summary says (empty when they agree)."""
    tree = python_parse(text)
    if isinstance(tree, str):
        return []
    analysed = analyze_source(text, path, Config(), project=True)
    if getattr(analysed, "analysis", None) is None:
        return []
    summary = summarize(analysed.analysis, analysed.parsed_text)
    shape = file_shape(tree, import_table(tree))
    found: List[object] = []
    if (summary.imports, summary.star_modules) != (shape.imports, shape.star_modules):
        found.append("imports")
    if list(summary.functions) != list(shape.functions):
        found.append(("function keys", list(summary.functions), list(shape.functions)))
    for key, function in summary.functions.items():
        other = shape.functions.get(key)
        if other is None or (function.display, function.class_name, function.parent, function.nested) != (
                other.display, other.class_name, other.parent, other.nested):
            found.append(("function", key, function, other))
    if list(summary.classes) != list(shape.classes):
        found.append(("class names", list(summary.classes), list(shape.classes)))
    for name, info in summary.classes.items():
        other_class = shape.classes.get(name)
        if other_class is None or (info.bases, info.methods) != (other_class.bases, other_class.methods):
            found.append(("class", name, info, other_class))
        found.extend(("attribute not mentioned", name, attr) for attr, _, _ in info.attrs
                     if attr.rstrip("[]") not in shape.mentions.get(name, ()))
    found.extend(("instance not bound", name) for name, _, _ in summary.instances if name not in shape.bound)
    return found


def test_a_shape_names_scopes_and_classes_as_the_collector_does() -> None:
    assert _compare(TRICKY, "tricky.py") == []
    shape = file_shape(python_parse(TRICKY), import_table(python_parse(TRICKY)))  # type: ignore[arg-type]
    assert list(shape.classes) == ["Outer", "Outer.Inner", "Local"]
    assert shape.classes["Outer"].bases == ("nn.Module", "mixins")
    assert shape.classes["Outer"].methods == ("__init__", "forward", "size")
    assert shape.functions["Outer.forward.<locals>.helper"].display == "Outer.forward.helper"
    assert shape.functions["Local.run"].parent == "Outer.forward.<locals>.helper"
    assert shape.functions["fetch"].nested == (("inner", "fetch.<locals>.inner"),)  # the first `def` is kept
    assert shape.mentions["Outer"] >= {"head", "layers", "stored", "seen"}
    assert {"model", "cached", "index", "key", "value", "handle", "table", "Alias"} <= shape.bound
    assert "torch" not in shape.bound and "Outer" not in shape.bound


@pytest.mark.parametrize("path", _python_files(ROOT / "fixtures"), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture_shape_agrees_with_its_summary(path: Path) -> None:
    assert _compare(path.read_text(encoding="utf-8"), str(path)) == []


def _project(root: Path) -> None:
    (root / "nets.py").write_text(
        "import torch\n\n\n"
        "class Block(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x\n\n\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.body = Block()\n\n"
        "    def forward(self, x):\n"
        "        return self.body(x)\n\n\n"
        "model = Net()\n"
    )
    (root / "heads.py").write_text(
        "import torch.distributions as D\n\n\n"
        "def nll(mu, sigma, y):\n"
        "    return -D.Normal(mu, sigma).log_prob(y)\n"
    )
    # `Net` comes through three re-exports: a file imported by one that leads to probability code is worth
    # entering (code handed a model calls it without importing it), so `nets.py` is kept four steps away.
    (root / "factory.py").write_text("from registry import Net\n")
    (root / "registry.py").write_text("from layers import Net\n")
    (root / "layers.py").write_text("from nets import Net\n")
    (root / "train.py").write_text(
        "import torch\n\nfrom heads import nll\nfrom factory import Net\n\n\n"
        "def step(x, sigma, y):\n"
        "    net = Net()\n"
        "    with torch.autocast('cuda'):\n"
        "        mu = net(x)\n"
        "        return nll(mu, sigma, y)\n"
    )


def test_a_file_the_walk_cannot_enter_is_read_for_its_shape_not_parsed(tmp_path: Path) -> None:
    """`Net` is resolved to learn what `net(x)` runs; `nets.py` leads to no probability code, so the
    walk never enters it, and CPython's tree answers the question (it used to be a LibCST parse)."""
    _project(tmp_path)
    run = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    found = [(Path(r.path).name, f.line, f.column, f.code, tuple(chain_names(f.chain)))
             for r in run.results for f in r.findings]
    assert found == [("heads.py", 5, 13, "AMP001", ("nll(mu, sigma, y)", "heads.nll"))]
    assert sorted(Path(p).name for p in run.stats.parsed) == ["heads.py", "train.py"]
    # Every file resolution reads is shaped until the walk enters it: `heads.py` is shaped, then summarized.
    assert sorted(Path(p).name for p in run.stats.shaped) == ["factory.py", "heads.py", "layers.py", "nets.py",
                                                              "registry.py"]


def test_questions_a_shape_cannot_answer_read_the_summary(tmp_path: Path) -> None:
    """A module-level name bound by an assignment, and an attribute the class writes, need the summary:
    it is read then, and only then (from CPython's tree: `nets.py` holds no site, region or distribution)."""
    _project(tmp_path)
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    loader = Loader(files, Config(jobs=1), DiskCache(None), ModuleIndex.build(files, [str(tmp_path)]), "test")
    loader.scan()
    resolver = Resolver(loader, frozenset)
    nets = str(tmp_path / "nets.py")
    assert not loader.worth_entering(nets)
    assert resolver.lookup(nets, ["Net"]) == [ClassRef(nets, "Net")]
    assert resolver._self_attr(ClassRef(nets, "Net"), "head") == []  # never written: no parse
    assert isinstance(loader.shape(nets), FileShape) and loader.stats.parsed == []
    assert resolver._self_attr(ClassRef(nets, "Net"), "body") == [_Instance(ClassRef(nets, "Block"), True)]
    assert loader.stats.from_ast == [nets] and loader.stats.parsed == []
    assert resolver.lookup(nets, ["model"]) == [_Instance(ClassRef(nets, "Net"), True)]
    assert loader.stats.from_ast == [nets] and loader.stats.shaped == [nets]


def test_a_warm_run_parses_nothing_and_takes_the_shape_from_the_cache(tmp_path: Path) -> None:
    """A warm run takes `nets.py`'s shape, every summary and every finding from the cache, reports the same,
    and reads the shape with `ast` again only once the file changed."""
    _project(tmp_path)
    cache = str(tmp_path / "cache")
    nets = tmp_path / "nets.py"
    cold = run_project([str(tmp_path)], Config(jobs=1), cache_dir=cache, use_cache=True)
    assert str(nets) in cold.stats.shaped and str(nets) not in cold.stats.parsed
    assert cold.stats.shapes_cached == 0
    warm = run_project([str(tmp_path)], Config(jobs=1), cache_dir=cache, use_cache=True)
    only_shaped = [p for p in cold.stats.shaped if p not in cold.stats.parsed]  # a summarized file's summary serves
    assert warm.stats.parsed == [] and warm.stats.shaped == [] and warm.stats.shapes_cached == len(only_shaped)
    assert [f.sort_key() for r in warm.results for f in r.findings] == [
        f.sort_key() for r in cold.results for f in r.findings] != []
    nets.write_text(nets.read_text() + "# an edit\n")
    edited = run_project([str(tmp_path)], Config(jobs=1), cache_dir=cache, use_cache=True)
    assert edited.stats.shaped == [str(nets)] and edited.stats.shapes_cached == len(only_shaped) - 1


def test_a_cached_shape_is_the_shape_read_from_the_tree() -> None:
    """Every field survives the cache, the sets of names included, on a file with classes, nesting and
    module-level names."""
    import ast
    import json

    from amplint.project.cachecodec import Codec

    tree = ast.parse(TRICKY)
    shape = file_shape(tree, import_table(tree))
    assert shape.bound and shape.mentions and shape.classes
    codec = Codec()
    assert codec.loads("shape", json.dumps(codec.dump("shape", shape))) == shape
