"""The value flow keeps its files' trees within a budget of source bytes (`flowtrees.TreeShelf`).

It kept every tree it read for the run: on transformers 3.5 million nodes (2.3 GB) after the seeds, and a run
over 24,000 files ran out of memory. A tree let go is read again as a new tree, so nothing may depend on a
node's identity across questions: with a budget of one byte (each tree let go as the next is read) every
project here gives what it gives with the default budget.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path
from typing import List, Optional, Tuple

import pytest

from amplint.config import Config
from amplint.project import flowtrees
from amplint.project.flowtrees import FileTree, TreeShelf, index_tree
from amplint.project.cache import DiskCache
from amplint.project.loader import Loader
from amplint.project.modules import ModuleIndex
from amplint.project.preparedflow import PreparedCalls
from amplint.project.resolve import Resolver
from amplint.project.run import run_project
from conftest import ROOT
from test_accelerate_prepared_flow import LOOP, MODEL, TRAIN


def _tree(text: str) -> FileTree:
    found = index_tree(ast.parse(text))
    found.size = len(text)
    return found


def test_the_least_recently_read_tree_goes_first_and_is_read_again_as_a_new_tree() -> None:
    texts = {"a.py": "x = 1\n" * 10, "b.py": "y = 2\n" * 10, "c.py": "z = 3\n" * 10}  # 60 bytes each
    reads: List[str] = []

    def read(path: str) -> Optional[FileTree]:
        reads.append(path)
        return _tree(texts[path]) if path in texts else None

    shelf = TreeShelf(read, budget=130)
    first = shelf.get("a.py")
    assert shelf.get("b.py") is not None and shelf.get("a.py") is first  # both fit; a.py is now the newest
    shelf.get("c.py")  # 180 bytes: b.py, the least recently read, goes
    assert shelf.get("a.py") is first and reads == ["a.py", "b.py", "c.py"]
    again = shelf.get("b.py")
    assert reads[-1] == "b.py" and again is not None and again.tree is not first.tree
    assert shelf.get("missing.py") is None and shelf.get("missing.py") is None
    assert reads.count("missing.py") == 1  # a file that cannot be read is asked once
    one = TreeShelf(read, budget=1)  # smaller than any tree: the newest is still kept
    kept = one.get("a.py")
    assert one.get("a.py") is kept


def _found(root: Path) -> List[Tuple[str, int, int, str, Tuple[str, ...]]]:
    run = run_project([str(root)], Config(jobs=1), use_cache=False)
    return [(Path(r.path).relative_to(root).as_posix(), f.line, f.column, f.code,
             tuple(hop.name for hop in f.chain)) for r in run.results for f in r.findings]


def _prepared(root: Path) -> Path:
    for name, text in {"model.py": MODEL, "train.py": TRAIN.format(precision="fp16"), "loop.py": LOOP}.items():
        (root / name).write_text(text)
    (root / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    return root


@pytest.mark.parametrize("project", ["fixtures/project", "fixtures/reach", "fixtures/wrappers", "prepared"])
def test_a_project_gives_the_same_findings_when_every_tree_is_let_go(
        project: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _prepared(tmp_path) if project == "prepared" else ROOT / project
    reads: List[str] = []
    original = Loader.file_tree

    def fresh(self: Loader, path: str) -> Optional[FileTree]:
        """Each read a new tree, as after the run's CPython trees let it go too (on a small project they
        still hold it, and the flow's second read would be the first's tree)."""
        reads.append(path)
        return copy.deepcopy(original(self, path))

    kept = _found(root)
    monkeypatch.setattr(Loader, "file_tree", fresh)
    assert _found(root) == kept and kept
    kept_reads = len(reads)
    monkeypatch.setattr(flowtrees, "FLOW_TREE_BYTES", 1)
    reads.clear()
    assert _found(root) == kept
    assert len(reads) > kept_reads  # trees were let go and read again


def test_the_prepared_model_search_keeps_one_tree_of_each_file_throughout(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`PreparedCalls` finds a node's parent by the node's identity: a tree read again mid-search would not
    know `fit`'s `accelerator.prepare(model)`, and its call `model(x, y)` was lost."""
    files = sorted(str(p) for p in _prepared(tmp_path).glob("*.py"))

    def search() -> List[Tuple[str, int, bool]]:
        loader = Loader(files, Config(jobs=1), DiskCache(None), ModuleIndex.build(files, [str(tmp_path)]), "t")
        loader.scan()
        return [(Path(c.path).name, c.node.lineno, c.forward)
                for c in PreparedCalls(Resolver(loader, frozenset).flow).search(files)]

    assert search() == [("loop.py", 3, False), ("loop.py", 5, False)]
    original = Loader.file_tree
    monkeypatch.setattr(Loader, "file_tree", lambda self, path: copy.deepcopy(original(self, path)))
    monkeypatch.setattr(flowtrees, "FLOW_TREE_BYTES", 1)
    assert search() == [("loop.py", 3, False), ("loop.py", 5, False)]


def test_the_call_site_search_reads_no_tree_of_a_file_that_only_mentions_getattr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A method's call sites through `getattr(obj, name)(...)` are looked for in the files that may make such a
    call (`flowtrees.may_call_getattr`, read by the text pass); a file that only reads an attribute with
    `getattr(obj, "x", None)` is not parsed for them. The call `runner.py` makes is still found."""
    (tmp_path / "models.py").write_text(
        "class Net:\n    def score(self, x):\n        return x\n\n    def other(self, x):\n        return x\n")
    (tmp_path / "runner.py").write_text(
        "from models import Net\n\n\ndef run(name, x):\n    net = Net()\n    return getattr(net, name)(x)\n")
    (tmp_path / "plain.py").write_text(
        "from models import Net\n\n\ndef size(net: Net):\n    return getattr(net, 'size', None)\n")
    files = sorted(str(p) for p in tmp_path.glob("*.py"))
    read: List[str] = []
    original = Loader.file_tree
    monkeypatch.setattr(Loader, "file_tree", lambda self, path: read.append(Path(path).name) or original(self, path))
    loader = Loader(files, Config(jobs=1), DiskCache(None), ModuleIndex.build(files, [str(tmp_path)]), "t")
    loader.scan()
    assert (loader.calls_getattr(str(tmp_path / "runner.py")), loader.calls_getattr(str(tmp_path / "plain.py"))) \
        == (True, False)
    sites = Resolver(loader, frozenset).flow.call_sites(str(tmp_path / "models.py"), "Net.score")
    assert {(Path(s.path).name, s.call.lineno) for s in sites} == {("runner.py", 6)}
    assert "plain.py" not in read and "runner.py" in read
