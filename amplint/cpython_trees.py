"""CPython's trees of the texts one project run reads more than once, with their import tables.

A cold project run parses a file with CPython up to five times: for the
project's autocast spellings (every file that spells `autocast`), for the
text pass's single-file screen (`pipeline.will_parse`), for its summary
(`summarize.read_summary`), for its shape (`Loader.shape`) and for the value
flow (`FlowQuestions.file_tree`). On the real-code corpus 92 of 279 parses
were repeats, about 6% of a run's instructions with their import tables
(benchmarks/RESULTS.md). Nothing changes these trees or tables once built, so
each reader can share them, and what a reader builds from a tree
(`derived`: the flow's index of its scopes, which the summary reads too).

A memo is owned by one run and handed to its readers. A reader keeps a tree
only when a later one may want it, and the last reader takes it out, so the
memo holds the files between their readers, within its budget, not every
file the passes parse. It crosses a process boundary empty (`__reduce__`): a
pool worker keeps its own (`worker_trees`), which the summaries sent to that
worker read (`kept_trees`).
"""
from __future__ import annotations

import ast
from collections import OrderedDict
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union

from amplint.deep import python_parse
from amplint.files import Stamp, file_stamp
from amplint.names import ImportTable, import_table

# Source bytes whose trees are kept; the least recently read go first. A tree takes 25-45 bytes of memory
# per byte of source, so this bounds them near 2.5 GB. The project walk's readers (shapes, summaries, the value
# flow) read the same files, and the flow keeps as much (`flowtrees.FLOW_TREE_BYTES` is this): with 4 MB here a
# cold `-j 1` run on transformers parsed its 2,872 files 5,479 times, each reader again, and took 105.6 s
# against 87.8 s, at the same peak memory (2.6 GB: the flow held the trees anyway).
KEEP_SOURCE_BYTES = 64_000_000
# A pool worker's memo, shared among the workers (`share`): a worker reads a file's summary and keeps its tree
# for the file's findings, soon after. With 1 MB a third were gone, and the real-code corpus took 17.2 s of CPU
# against 13.9 s with 4 MB.
WORKER_SOURCE_BYTES = 4_000_000

_MEMORY_KEY = "cpython_trees"  # where a pool worker's memory holds its memo
Parsed = Union[Tuple[ast.Module, ImportTable], str]  # the tree and its imports, or CPython's refusal
T = TypeVar("T")


class CPythonTrees:
    """`python_parse` and `import_table` of texts, remembered by text within a budget of source bytes.

    It also remembers, by path, the digest of the bytes the first pass over every file read, with the file's
    stamp (`files.file_stamp`): the next pass finds a file whose stamp is unchanged in its cache entry without
    reading it again (`digest_unchanged`).
    """

    def __init__(self, budget: int = KEEP_SOURCE_BYTES) -> None:
        self._budget = budget
        self._size = 0
        self._kept: "OrderedDict[str, Tuple[ast.Module, ImportTable]]" = OrderedDict()
        self._reads: Dict[str, Tuple[Stamp, str]] = {}  # path -> (stamp, digest of the bytes a pass read)
        self._derived: Dict[str, Dict[str, Any]] = {}  # text -> what readers built from its kept tree, by kind

    def __reduce__(self) -> Tuple[type, Tuple[int]]:
        return type(self), (self._budget,)  # a copy in another process starts empty

    def share(self, count: int) -> "CPythonTrees":
        """An empty memo with a `count`-th of a worker's budget (at most this one's): each of `count` workers keeps
        one."""
        return CPythonTrees(min(self._budget, WORKER_SOURCE_BYTES) // max(1, count))

    def parse(self, text: str, keep: bool = True) -> Parsed:
        """(CPython's tree of `text`, its import table), or why CPython refuses the text.

        `keep`: a later reader in this run may want the tree. A reader that knows it is the last
        (the summary, LibCST's analysis) passes False, and the tree leaves the memo.
        """
        kept = self._kept.get(text)
        if kept is not None:
            if keep:
                self._kept.move_to_end(text)
            else:
                self.forget(text)
            return kept
        parsed = _parse(text)
        if keep and not isinstance(parsed, str):
            self.keep(text, parsed)
        return parsed

    def keep(self, text: str, parsed: Tuple[ast.Module, ImportTable]) -> None:
        """Keep a tree a reader parsed as the last, when it learned that a later one may want it after all."""
        if len(text) > self._budget or text in self._kept:
            return
        self._kept[text] = parsed
        self._size += len(text)
        while self._size > self._budget:
            self.forget(next(iter(self._kept)))

    def derived(self, text: str, kind: str, make: Callable[[], T]) -> T:
        """`make()`, built from the tree of `text`, kept with the tree while the tree is kept: one index of a file
        serves every reader that builds it (a file's summary and the value flow index its scopes alike)."""
        if text not in self._kept:
            return make()
        found = self._derived.setdefault(text, {})
        if kind not in found:
            found[kind] = make()
        return found[kind]  # type: ignore[no-any-return]

    def note_read(self, path: str, stamp: Stamp, content: str) -> None:
        """`path`, as `stamp` shows it, held the bytes whose digest is `content`."""
        self._reads[path] = (stamp, content)

    def kept(self, text: str) -> Optional[Tuple[ast.Module, ImportTable]]:
        """The tree of `text` if the memo keeps it; never parses."""
        return self._kept.get(text)

    def digest_unchanged(self, path: str) -> Optional[str]:
        """The digest `note_read` kept for `path`, if the file still shows the same stamp; else None."""
        noted = self._reads.get(path)
        return noted[1] if noted is not None and file_stamp(path) == noted[0] else None

    def forget(self, text: str) -> None:
        """Drop the tree of `text`, if kept: the run will not read it again."""
        if self._kept.pop(text, None) is not None:
            self._size -= len(text)
            self._derived.pop(text, None)


def worker_trees(memory: Optional[Dict[str, Any]], sent: CPythonTrees) -> CPythonTrees:
    """The memo a job reads: `sent` in this process (`memory` None), else its pool worker's memo for the run.

    A worker's memo is the first one a job sent it (a copy, empty, with the budget the caller gave it), so
    the trees the spellings pass parses there are read by the text pass's jobs on that worker, and the
    trees the text pass keeps by the summaries sent there (`parallel.RunPool`).
    """
    return sent if memory is None else memory.setdefault(_MEMORY_KEY, sent)


def kept_trees(memory: Optional[Dict[str, Any]]) -> Optional[CPythonTrees]:
    """The memo the passes over every file left in this pool worker's `memory` (None: none ran here)."""
    return None if memory is None else memory.get(_MEMORY_KEY)


def parse(text: str, trees: Optional[CPythonTrees] = None, keep: bool = True) -> Parsed:
    """`trees.parse(text, keep)`, or a parse of its own when no memo is at hand."""
    return _parse(text) if trees is None else trees.parse(text, keep)


def _parse(text: str) -> Parsed:
    tree = python_parse(text)
    return tree if isinstance(tree, str) else (tree, import_table(tree))
