"""LibCST's module parser, without the checks each new node runs on itself.

Every node LibCST's native parser builds runs `CSTNode.__post_init__`, which
calls the node's `_validate`: checks for trees built by hand ("a Name must not
be empty", "parentheses must balance"). A tree straight from the parser
satisfies them by construction; LibCST says so itself next to that hook
("PERF: ... would allow us to avoid validating the tree when parsing a file").
On the 158 files a cold run on the real-code corpus parses, the checks were
about a sixth of the parse (benchmarks/RESULTS.md).

The hook is switched off only around the parser call, under a lock. A node
another thread builds in that window is not checked, which loses a check but
never changes a tree. Nodes built later (`--fix`'s edits) are checked as usual.
If an installed LibCST overrides the hook in a node class, nothing is switched.
"""
from __future__ import annotations

import threading
from typing import Iterator

import libcst as cst
from libcst._nodes.base import CSTNode

_LOCK = threading.Lock()


def _subclasses(root: type) -> Iterator[type]:
    for sub in root.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _only_validates() -> bool:
    """Is `CSTNode.__post_init__` the one hook every node runs (no class has its own)?"""
    return "__post_init__" in vars(CSTNode) and not any("__post_init__" in vars(sub) for sub in _subclasses(CSTNode))


_SWITCHABLE = _only_validates()  # a fact about the installed LibCST, read once


def _unchecked(self: CSTNode) -> None:
    """The parser's nodes are valid as built."""


def parse_module(text: str) -> cst.Module:
    """`libcst.parse_module(text)`, the same tree, without per-node validation where that is safe."""
    if not _SWITCHABLE:
        return cst.parse_module(text)
    with _LOCK:
        checked = vars(CSTNode)["__post_init__"]
        CSTNode.__post_init__ = _unchecked  # type: ignore[method-assign]
        try:
            return cst.parse_module(text)
        finally:
            CSTNode.__post_init__ = checked  # type: ignore[method-assign]
