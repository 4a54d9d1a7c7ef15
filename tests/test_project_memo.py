"""Resolver answers kept across the walk's speculative passes (`amplint.project.memo`).

A sure answer (no speculative None and no unsure answer went into it) is
computed once per run; an unsure one once per pass. The runs at the end show
that keeping them changes nothing: a pooled run equals `-j 1`, cycles included.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

import pytest

from amplint.config import Config
from amplint.files import discover
from amplint.project.cache import DiskCache
from amplint.project.loader import Loader
from amplint.project.memo import Doubts, Memo, UnionMemo
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


GRAPH = {"a": ["b"], "b": ["a", "c"], "c": ["d"], "d": ["c"], "e": []}  # two cycles: a-b, c-d
OWN = {"a": "A", "b": "B", "c": "C", "d": "D", "e": "E"}


def _union_answers(order: Sequence[str]) -> Tuple[Dict[str, List[str]], Dict[str, List[str]], List[str]]:
    """Each key's answer (its own symbol and its successors' answers) asked in `order`; what the memo keeps;
    which keys were computed, in turn."""
    _, doubts, memo = _memo()
    unions: UnionMemo = UnionMemo(memo)
    computed: List[str] = []

    def ask(key: str) -> Tuple[str, ...]:
        def compute() -> List[str]:
            computed.append(key)
            return [OWN[key], *(symbol for successor in GRAPH[key] for symbol in ask(successor))]
        return unions.get(key, compute)

    answers = {key: sorted(ask(key)) for key in order}
    return answers, {key: sorted(value) for key, value in memo.sure.items()}, computed


@pytest.mark.parametrize("order", ["abcde", "badce", "dcbae", "cdeab"])
def test_a_union_cut_by_a_cycle_is_whole_whichever_key_is_asked_first(order: str) -> None:
    """A question asked inside its own answer answers nothing there, so an answer in the cycle is partial
    until the question it cut is answered: it is not kept, and asked again it is answered whole. A plain
    memo with a guard kept `a` as ["A"] when `b` was asked first."""
    answers, kept, computed = _union_answers(order)
    assert answers == {"a": ["A", "B", "C", "D"], "b": ["A", "B", "C", "D"], "c": ["C", "D"], "d": ["C", "D"],
                       "e": ["E"]}
    assert kept == answers  # every answer kept is whole, and sure: no summary was missing
    assert len(computed) <= 2 * len(GRAPH)  # a partial answer is computed again once, no more


def test_a_union_memo_keeps_no_partial_answer_past_its_cycle() -> None:
    _, doubts, memo = _memo()
    unions: UnionMemo = UnionMemo(memo)

    def ask(key: str) -> Tuple[str, ...]:
        return unions.get(key, lambda: [OWN[key], *(s for successor in GRAPH[key] for s in ask(successor))])

    assert sorted(ask("b")) == ["A", "B", "C", "D"]
    assert sorted(memo.sure) == ["b", "c"]  # `a` and `d` read a question still being answered: dropped
    assert sorted(ask("a")) == ["A", "B", "C", "D"] and sorted(memo.sure) == ["a", "b", "c"]


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
