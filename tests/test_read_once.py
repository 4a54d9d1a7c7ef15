"""Facts read once per run or per tree: the collector's thresholds and the per-tree statement memo.

Both exist for speed only (issue 12), so each is checked to change no answer:
the memo gives what a fresh read gives, and the thresholds are the caller's
again after a command, however it ended.
"""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from amplint import cli
from amplint.collection import BATCH_THRESHOLDS, batch_collection
from amplint.facts.mathenv import Statements, _attribute_bindings, statements_of

CHECK = Path(__file__).resolve().parent.parent / "fixtures" / "check"

SOURCE = """\
class Head:
    def __init__(self, scale=None, floor=1e-6):
        self.scale = scale
        self.floor = floor
        for name in ("a", "b"):
            self.last = name

    def forward(self, x):
        y = x * 2
        def inner():
            z = 1  # a nested scope: not the method's
        return [w for w in y if w]
"""


def _tree():
    module = cst.parse_module(SOURCE)
    head = module.body[0]
    return head, [m for m in head.body.body if isinstance(m, cst.FunctionDef)]


def test_statements_memo_gives_what_a_fresh_read_gives_and_reads_once() -> None:
    head, (init, forward) = _tree()
    memo = Statements()
    first = memo.of(forward.body)
    assert first == tuple(statements_of(forward.body))
    assert [cst.Module([]).code_for_node(n).strip() for n in first] == [
        "y = x * 2", "return [w for w in y if w]", "for w in y if w"]
    assert memo.of(forward.body) is first  # the second read is the first's answer
    assert memo.attributes(head) is memo.attributes(head)
    assert {k: [cst.Module([]).code_for_node(v) for v in vs] for k, vs in memo.attributes(head).items()} == {
        # A parameter stands for its default, a local of the method for what the method binds it to (a `for`
        # target: its iterable, which the recognizers read as one of its elements).
        "scale": ["None"], "floor": ["1e-6"], "last": ['("a", "b")']}
    assert memo.attributes(head).keys() == _attribute_bindings(head, Statements()).keys()


def test_statements_memo_never_answers_for_a_node_that_reused_an_id() -> None:
    memo = Statements()
    _, (init, _forward) = _tree()
    memo.of(init.body)
    key = id(init.body)
    other = cst.parse_module("def g():\n    q = 1\n").body[0].body
    memo._bodies[id(other)] = memo._bodies.pop(key)  # as if `other` were made where `init.body` was
    assert [type(n).__name__ for n in memo.of(other)] == ["Assign"]


def test_batch_thresholds_hold_inside_and_the_callers_come_back_after_an_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with batch_collection():
            assert gc.get_threshold() == BATCH_THRESHOLDS
            raise RuntimeError("a command that fails")
    assert gc.get_threshold() == before


def test_a_command_runs_with_the_batch_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    monkeypatch.setattr(cli, "run_config", lambda args: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    assert cli.main(["config"]) == 0
    assert seen == [BATCH_THRESHOLDS] and gc.get_threshold() == before


def test_a_block_that_ends_the_process_leaves_its_objects_frozen_not_collected() -> None:
    before = gc.get_threshold()
    kept = [[index] for index in range(1000)]
    try:
        with batch_collection(ending=True):
            kept.append([])
        assert gc.get_freeze_count() >= len(kept) and gc.get_threshold() == before
    finally:
        gc.unfreeze()


def test_only_the_real_command_line_freezes(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    frozen = gc.get_freeze_count()
    assert cli.main(["check", "--no-project", str(CHECK)]) == 1  # an in-process caller
    assert gc.get_freeze_count() == frozen
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    script = ("import gc, sys\nfresh = gc.get_threshold()\nfrom amplint.cli import main\n"
              f"sys.argv = ['amplint', 'check', '--no-project', {str(CHECK)!r}]\n"
              "code = main()\nprint(code, gc.get_freeze_count(), gc.get_threshold() == fresh, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          env=dict(os.environ, AMPLINT_NO_CACHE="1"), timeout=300)
    code, count, restored = done.stderr.strip().splitlines()[-1].split(" ", 2)
    # The thresholds are the fresh interpreter's own again: (700, 10, 10) up to Python 3.12, (2000, 10, 10) on 3.13.
    assert code == "1" and int(count) > 10_000 and restored == "True"
    assert done.stdout.strip().splitlines()[-1] == summary
