"""Resolver answers kept across the walk's speculative passes (`amplint.project.memo`).

A sure answer (no speculative None and no unsure answer went into it) is
computed once per run; an unsure one once per pass. The runs at the end show
that keeping them changes nothing: a pooled run equals `-j 1`, cycles included.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, List

import pytest

from amplint.config import Config
from amplint.files import discover
from amplint.project.cache import DiskCache
from amplint.project.loader import Loader
from amplint.project.memo import Doubts, Memo
from amplint.project.modules import ModuleIndex
from amplint.project.resolve import ClassRef, Resolver
from amplint.project.symbols import _Instance
from amplint.project.run import run_project


class _Misses:
    def __init__(self) -> None:
        self.count = 0


def _memo() -> "tuple[_Misses, Doubts, Memo]":
    misses = _Misses()
    doubts = Doubts(lambda: misses.count)
    return misses, doubts, doubts.memo()


def _counting(value: object, calls: List[int], then: Callable[[], None] = lambda: None) -> Callable[[], object]:
    def compute() -> object:
        calls.append(1)
        then()
        return value
    return compute


def test_a_sure_answer_is_computed_once_per_run() -> None:
    _, doubts, memo = _memo()
    calls: List[int] = []
    assert memo.get("k", _counting(None, calls)) is None  # None is an answer too
    doubts.new_pass()
    assert memo.get("k", _counting(1, calls)) is None
    assert calls == [1]


def test_an_answer_given_while_a_summary_was_missing_lasts_one_pass() -> None:
    misses, doubts, memo = _memo()
    calls: List[int] = []

    def miss() -> None:
        misses.count += 1

    assert memo.get("k", _counting("stale", calls, miss)) == "stale"
    assert memo.get("k", _counting("other", calls)) == "stale"  # the rest of the pass: as a fresh memo did
    doubts.new_pass()
    assert memo.get("k", _counting("known", calls)) == "known"
    doubts.new_pass()
    assert memo.get("k", _counting("again", calls)) == "known"  # now sure
    assert calls == [1, 1]


def test_reading_an_unsure_answer_makes_the_reader_unsure() -> None:
    misses, doubts, memo = _memo()
    other: Memo = doubts.memo()

    def miss() -> None:
        misses.count += 1

    memo.get("inner", lambda: miss() or "stale")
    memo.get("sure", lambda: "fine")
    assert other.get("outer", lambda: memo.get("inner", lambda: "unused") + "!") == "stale!"  # no miss of its own
    assert other.get("both", lambda: memo.get("sure", lambda: "unused") + "?") == "fine?"
    doubts.new_pass()
    assert other.get("outer", lambda: "recomputed") == "recomputed"
    assert other.get("both", lambda: "recomputed") == "fine?"


def test_a_cycle_guard_that_is_read_makes_the_answer_unsure() -> None:
    _, doubts, memo = _memo()

    def cyclic() -> List[str]:
        memo.guard("a", ["a"])
        return ["a"] + [c for c in memo.get("b", lambda: ["b"] + memo.get("a", lambda: ["never"])) if c != "a"]

    def plain() -> List[str]:
        memo.guard("c", ["c"])
        return ["c", "d"]

    assert memo.get("a", cyclic) == ["a", "b"]
    assert memo.get("c", plain) == ["c", "d"]
    assert memo.unsure == {"a": ["a", "b"], "b": ["b", "a"]} and memo.sure == {"c": ["c", "d"]}
    doubts.new_pass()
    assert memo.unsure == {} and memo.sure == {"c": ["c", "d"]}


def _project(root: Path) -> Path:
    (root / "main.py").write_text(
        "import torch\nfrom models import Net\n\n\ndef train(x):\n    net = Net()\n"
        "    with torch.autocast(\"cuda\"):\n        return net(x)\n")
    (root / "models.py").write_text(
        "from torch import nn\nfrom heads import Head\n\n\nclass Net(Head, nn.Module):\n"
        "    def forward(self, x):\n        return self.head(x)\n\n\nnet = Net()\n")
    (root / "heads.py").write_text(  # a base cycle with models.py: broken code, resolved as -j 1 resolves it
        "from torch import distributions as D\nfrom models import Net\n\n\nclass Head(Net):\n"
        "    def head(self, x):\n        return D.Normal(x, 1.0).log_prob(x)\n")
    return root


def test_the_resolver_keeps_sure_answers_and_redoes_the_rest(forced: None, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path)
    files, _ = discover([str(root)])
    loader = Loader(files, Config(jobs=2), DiskCache(None), ModuleIndex.build(files, [str(root)]), "f")
    loader.scan()
    main, models = str(root / "main.py"), str(root / "models.py")
    assert loader.summary(main) is not None
    asked: List[str] = []
    shape = loader.shape
    monkeypatch.setattr(loader, "shape", lambda path: asked.append(path) or shape(path))
    resolver = Resolver(loader)

    loader.speculate(True)
    resolver.new_pass()
    assert resolver.lookup(main, ["train"]) != []
    assert resolver.class_of(main, "Net") == [ClassRef(models, "Net")]  # models.py's shape: sure at once
    assert resolver.lookup(models, ["net"]) == []  # a name bound by an assignment needs the summary: not yet
    assert loader.speculate(False) == [models]
    assert loader.parse_ahead([models])

    asked.clear()
    loader.speculate(True)
    resolver.new_pass()
    assert resolver.lookup(main, ["train"]) != [] and resolver.class_of(main, "Net") == [ClassRef(models, "Net")]
    assert asked == []  # sure: kept, nothing asked
    assert resolver.lookup(models, ["net"]) == [_Instance(ClassRef(models, "Net"), True)] and models in asked
    loader.speculate(False)
    loader.end_ahead()


def test_runs_with_a_base_cycle_across_passes_equal_jobs_1(forced: None, tmp_path: Path) -> None:
    root = _project(tmp_path)
    alone = run_project([str(root)], Config(jobs=1), use_cache=False)
    pooled = run_project([str(root)], Config(jobs=2), use_cache=False)
    assert pooled.stats.waves >= 2 and alone.stats.waves == 0
    assert pooled.entries == alone.entries
    found = [(Path(r.path).name, f.line, f.column, f.code) for r in pooled.results for f in r.findings]
    assert found == [("heads.py", 7, 16, "AMP001")]
    assert found == [(Path(r.path).name, f.line, f.column, f.code) for r in alone.results for f in r.findings]


def test_questions_about_a_files_text_read_it_once_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk's passes ask the loader the same text questions again (`matches`, `method_definitions`): each is
    answered from one read of the file, and a new question reads it again (the text itself is not kept)."""
    import re

    from amplint.project import loader as loader_module

    root = _project(tmp_path)
    files, _ = discover([str(root)])
    loader = Loader(files, Config(jobs=1), DiskCache(None), ModuleIndex.build(files, [str(root)]), "f")
    reads: List[str] = []
    read = loader_module.read_source
    monkeypatch.setattr(loader_module, "read_source", lambda path: reads.append(Path(path).name) or read(path))
    heads, missing = str(root / "heads.py"), str(root / "gone.py")
    for _ in range(3):
        assert loader.matches(heads, re.compile(r"\.log_prob\(")) is True
        assert loader.matches(heads, re.compile(r"\bkl_divergence\b")) is False
        assert loader.method_definitions(heads, "head") == 1
        assert loader.method_definitions(heads, "forward") == 0
    assert reads == ["heads.py"] * 4
    assert loader.matches(missing, re.compile("x")) is False and loader.method_definitions(missing, "f") == 0
    assert missing in loader.errors and "cannot read" in loader.errors[missing].message
