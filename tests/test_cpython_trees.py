"""CPython's trees shared by the passes of one project run (`amplint.cpython_trees`).

The spellings pass, the text pass's screen, the summaries and the shapes read
the same files. A run shares CPython's tree of a file between the readers
that follow one another, within a budget, and finds what a run that parses
every time finds.
"""
from __future__ import annotations

import collections
import pickle
from pathlib import Path
from typing import Counter, List

import pytest

from amplint import cpython_trees
from amplint.config import Config
from amplint.cpython_trees import CPythonTrees
from amplint.project.run import ProjectRun, run_project

ROOT = Path(__file__).resolve().parent.parent


def _as_data(run: ProjectRun) -> list:
    return [(r.path, [f.to_json() for f in r.findings], r.error) for r in run.results]


def _counted(monkeypatch: pytest.MonkeyPatch) -> "Counter[str]":
    parses: "Counter[str]" = collections.Counter()
    parse = cpython_trees.python_parse

    def counting(text: str):  # type: ignore[no-untyped-def]
        parses[text] += 1
        return parse(text)

    monkeypatch.setattr(cpython_trees, "python_parse", counting)
    return parses


@pytest.mark.parametrize("fixture", ["reach", "project", "integrations"])
def test_a_run_parses_fewer_times_and_finds_the_same(monkeypatch: pytest.MonkeyPatch, fixture: str) -> None:
    parses = _counted(monkeypatch)
    shared = run_project([str(ROOT / "fixtures" / fixture)], Config(jobs=1), use_cache=False)
    counts = dict(parses)

    parses.clear()
    monkeypatch.setattr(CPythonTrees, "parse", lambda self, text, keep=True: cpython_trees.parse(text))
    alone = run_project([str(ROOT / "fixtures" / fixture)], Config(jobs=1), use_cache=False)
    assert counts.keys() == parses.keys() and max(parses.values()) > 1  # the passes read the same files
    # A tree is kept only for the reader that probably comes next: a file the walk enters later is parsed again,
    # and one the value flow reads after its last reader once more (`project/flow.py` keeps its own).
    flowed = _flowed(shared)
    assert sum(counts.values()) < sum(parses.values())
    assert max(count - flowed[text] for text, count in counts.items()) <= 2
    assert _as_data(shared) == _as_data(alone)


def test_region_files_and_files_with_findings_are_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spellings pass, the text pass and the summary share a tree; a file that names no computation is parsed
    by the text pass too (CPython's verdict, kept in the run's memo for the shapes and the flow that read it)."""
    parses = _counted(monkeypatch)
    run = run_project([str(ROOT / "fixtures" / "reach")], Config(jobs=1), use_cache=False)
    flowed = _flowed(run)
    files = list((ROOT / "fixtures" / "reach").rglob("*.py"))
    assert len(parses) == len(files) == 12
    assert all(1 <= count <= 1 + flowed[text] for text, count in parses.items())
    assert all(count == 1 for text, count in parses.items() if not flowed[text])


def _flowed(run: ProjectRun) -> "Counter[str]":
    """Per text, how often the value flow asked for its tree (at most once a parse each)."""
    return collections.Counter(Path(path).read_text() for path in set(run.stats.flowed))


def test_a_text_is_parsed_once_and_its_tree_and_imports_shared() -> None:
    trees = CPythonTrees()
    text = "import torch as t\nx = t.zeros(1)\n"
    first = trees.parse(text)
    assert not isinstance(first, str)
    assert trees.parse("".join([text])) is first  # an equal text read again, not the same object
    tree, imports = first
    assert imports.qualnames_of("t.zeros") == frozenset({"torch.zeros"})
    assert [type(node).__name__ for node in tree.body] == ["Import", "Assign"]


def test_cpythons_refusal_is_returned_and_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _counted(monkeypatch)
    trees = CPythonTrees()
    assert trees.parse("def f(:\n") == "syntax error at line 1, column 7: invalid syntax"
    assert trees.parse("def f(:\n") == "syntax error at line 1, column 7: invalid syntax"
    assert parses["def f(:\n"] == 2


def test_over_the_budget_the_least_recently_read_go_first(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _counted(monkeypatch)
    texts: List[str] = [f"x{i} = {i}\n" for i in range(3)]  # 7 characters each
    trees = CPythonTrees(budget=15)
    trees.parse(texts[0])
    trees.parse(texts[1])
    trees.parse(texts[0])  # read again: now the most recent
    trees.parse(texts[2])  # 21 > 15: texts[1] goes
    trees.parse(texts[0])
    trees.parse(texts[2])
    trees.parse(texts[1])
    assert [parses[text] for text in texts] == [1, 2, 1]
    trees.parse("y = 1\n" * 3)  # 18 characters: above the budget on its own, parsed but not kept
    trees.parse("y = 1\n" * 3)
    assert parses["y = 1\n" * 3] == 2


def test_a_memo_crosses_a_process_boundary_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _counted(monkeypatch)
    trees = CPythonTrees(budget=100)
    trees.parse("x = 1\n")
    copy = pickle.loads(pickle.dumps(trees))
    copy.parse("x = 1\n")
    assert parses["x = 1\n"] == 2
    copy.parse("x = 1\n")
    assert parses["x = 1\n"] == 2


def test_the_last_reader_takes_the_tree_out_and_a_forgotten_text_is_parsed_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    parses = _counted(monkeypatch)
    trees = CPythonTrees(budget=100)
    first = trees.parse("x = 1\n")
    assert trees.parse("x = 1\n", keep=False) is first  # the summary: the last reader
    trees.parse("x = 1\n", keep=False)  # not kept by a reader that says it is the last
    trees.parse("x = 1\n")
    assert parses["x = 1\n"] == 3
    trees.forget("x = 1\n")
    trees.forget("never parsed\n")
    trees.parse("x = 1\n")
    assert parses["x = 1\n"] == 4
    trees.parse("y = 2\n" * 16)  # 96 characters: within the budget only if the forgotten ones left it
    trees.parse("x = 1\n")
    assert parses["y = 2\n" * 16] == 1 and parses["x = 1\n"] == 5  # x's 6 characters pushed the budget over
