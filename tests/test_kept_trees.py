"""Parse trees kept for the walk's contexts (`amplint.project.kept`).

A file parsed for its summary is not parsed again for its findings with the
walk's contexts: entries are added to its analysis, and contexts that change
the facts (a distribution passed in, a call returning another file's
distribution) are collected again from the same tree. Either way the findings
must be what a second parse gives, which the runs here compare.
"""
from __future__ import annotations

import collections
from pathlib import Path
from typing import List

import pytest

from amplint.config import Config
from amplint.pipeline import analyze_source
from amplint.project.kept import KeptTrees
from amplint.project.run import ProjectRun, run_project

ROOT = Path(__file__).resolve().parent.parent
REACH = ROOT / "fixtures" / "reach"


def _as_data(run: ProjectRun) -> list:
    return [(r.path, [f.to_json() for f in r.findings], r.error) for r in run.results]


def _twice(run: ProjectRun) -> List[str]:
    return sorted(Path(p).name for p, n in collections.Counter(run.stats.parsed).items() if n > 1)


@pytest.mark.parametrize("jobs", [1, 2])
def test_contexts_that_change_the_facts_are_collected_from_the_kept_tree(
        forced: None, monkeypatch: pytest.MonkeyPatch, jobs: int) -> None:
    kept = run_project([str(REACH)], Config(jobs=jobs), use_cache=False)
    entries = {Path(p).name: sorted({type(e).__name__ for e in found}) for p, found in kept.entries.items()}
    assert entries["losses.py"] == ["DistArgument", "EntryContext"] and entries["train.py"] == ["CallReturn"]
    assert _twice(kept) == [] and len(kept.stats.parsed) == 8

    monkeypatch.setattr(KeptTrees, "keep", lambda *args: False)
    parsed_again = run_project([str(REACH)], Config(jobs=jobs), use_cache=False)
    # Each file the walk enters or gives a context is parsed again: three of them with facts-changing contexts.
    # Not `encoders.py`: its sites are hand-written math, so its summary comes from CPython's tree.
    assert _twice(parsed_again) == ["losses.py", "regularizers.py", "scorer.py", "terms.py", "train.py"]
    assert str(REACH / "reachpkg" / "encoders.py") in kept.stats.from_ast
    assert _as_data(kept) == _as_data(parsed_again)
    assert sum(len(r.findings) for r in kept.results) == 11


def _analysis(text: str):
    return analyze_source(text, "module.py", Config(), project=True)


def test_over_the_budget_the_trees_not_worth_keeping_go_first() -> None:
    text = "x = 1\n" * 10  # 60 characters
    trees = KeptTrees(budget=150)
    assert trees.keep("a.py", _analysis(text), True)
    assert trees.keep("b.py", _analysis(text), False)
    assert trees.keep("c.py", _analysis(text), True)  # 180 > 150: b goes, though a is older
    assert ("a.py" in trees, "b.py" in trees, "c.py" in trees) == (True, False, True)
    assert not trees.keep("d.py", _analysis(text), False)  # the newest, but the only one not worth keeping
    assert trees.keep("e.py", _analysis(text), True)  # then the oldest
    assert ("a.py" in trees, "c.py" in trees, "e.py" in trees) == (False, True, True)
    assert not trees.keep("big.py", _analysis("y = 2\n" * 30), True) and "c.py" in trees  # alone over the budget


MAIN = '''\
import torch
from dens import nll


def train(model, x):
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(x)
        loss = nll(out, x)
    return loss
'''
# Tabs and spaces mixed as CPython allows and LibCST's tokenizer does not: analysed on a tab-expanded copy.
DENS = ("import torch\n\n\ndef nll(mu, x):\n\tif mu is not None:\n        \ty = 2\n"
        "\treturn -torch.distributions.Normal(mu, torch.ones_like(mu)).log_prob(x).sum()\n")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_tree_of_a_tab_expanded_copy_is_not_kept(forced: None, tmp_path: Path, jobs: int) -> None:
    (tmp_path / "main.py").write_text(MAIN)
    (tmp_path / "dens.py").write_text(DENS)
    run = run_project([str(tmp_path)], Config(jobs=jobs), use_cache=False)
    found = [(Path(f.path).name, f.line, f.column, f.code) for r in run.results for f in r.findings]
    # The tab counts as one column, as in the file: the copy's tree would say 17 (the tab expanded to 8).
    assert found == [("dens.py", 7, 10, "AMP001")]
    assert _twice(run) == ["dens.py"]


def test_only_the_contexts_with_entries_applies_reuse_an_analysis() -> None:
    """`with_entries` adds entries and drops covered calls; every other context changes the facts. A context
    type added later is refused until `with_entries` learns it, rather than silently ignored."""
    import dataclasses
    import typing

    from amplint.analysis import can_reuse
    from amplint.facts.entry import Constructor, CoveredCall, EntryContext, WalkContext

    def instance(kind: type) -> object:  # the fields' values do not matter to `can_reuse`
        return kind(**{f.name: None for f in dataclasses.fields(kind)})

    walk_types = typing.get_args(WalkContext)
    assert {kind for kind in walk_types if can_reuse([instance(kind)])} == {EntryContext, CoveredCall}
    assert not can_reuse([instance(Constructor)])
    assert not can_reuse([instance(EntryContext), object()])  # anything unknown
    assert can_reuse([]) and can_reuse([instance(EntryContext), instance(CoveredCall)])
