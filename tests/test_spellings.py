"""Autocast spellings a file defines (`amplint.project.spellings.file_spellings`), exactly."""
from __future__ import annotations

import ast

from amplint.names import import_table
from amplint.project.spellings import file_spellings

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
