"""Autocast spellings a file defines (`amplint.project.spellings.file_spellings`), exactly."""
from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from amplint.astwalk import statements
from amplint.names import import_table
from amplint.project import spellings
from amplint.project.spellings import file_spellings

ROOT = Path(__file__).resolve().parent.parent

SOURCE = '''\
import torch
from contextlib import nullcontext
from torch.cuda.amp import autocast


def forward_decorator(fn):
    def wrapper(self, *args):
        with torch.cuda.amp.autocast():
            return fn(self, *args)
    return wrapper


def no_grad_decorator(fn):
    def wrapper(*args):
        with torch.no_grad():
            return fn(*args)
    return wrapper


def after(fn):  # below a function that holds an autocast `with`: its lines hold none
    return fn()


with autocast():
    pass


class Trainer:
    def __init__(self, amp):
        self.amp_cm = autocast if amp else nullcontext

    async def step(self, fn):
        with autocast(dtype=torch.bfloat16):
            fn()
'''


def test_file_spellings_finds_decorators_by_the_autocast_with_they_hold_and_self_held_aliases() -> None:
    tree = ast.parse(SOURCE)
    found = [(s.name, s.wraps, s.line) for s in file_spellings(tree, import_table(tree))]
    assert found == [
        ("forward_decorator", "torch.cuda.amp.autocast", 6),
        ("self.amp_cm", "torch.cuda.amp.autocast", 30),
    ]  # `step` holds one too, but calls `fn`, not its first parameter


@pytest.mark.parametrize("path", sorted(ROOT.glob("fixtures/**/*.py")) + [Path(spellings.__file__)],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_statements_come_in_the_order_ast_walk_gives(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    expected = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    assert list(statements(tree)) == expected


NESTED = '''\
try:
    x = 1
except ValueError:
    class A:
        def f(self):
            match y:
                case 1:
                    self.amp = torch.autocast
                case _:
                    if z:
                        pass
                    else:
                        self.amp = nullcontext
finally:
    self.amp = torch.cuda.amp.autocast
'''


@pytest.mark.skipif(sys.version_info < (3, 10), reason="`match` is Python 3.10 syntax")
def test_the_first_definition_is_the_one_nearest_the_top_of_the_tree() -> None:
    tree = ast.parse("import torch\nfrom contextlib import nullcontext\n" + NESTED)
    found = list(statements(tree))
    assert found == [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    assert len(found) == 12
    # The `finally` alias is shallower than the one in the match case, though later in the file.
    assert [(s.name, s.wraps, s.line) for s in file_spellings(tree, import_table(tree))] == [
        ("self.amp", "torch.cuda.amp.autocast", 17)]
