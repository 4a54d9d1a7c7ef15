"""The questions the value flow (`flow.py`) asks of the project's files, answered by the loader.

A mixin of `Loader`: it reads the loader's text pass (`info`, the `def` index), its file reader and its
cache of answers about texts, and its CPython trees.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from amplint.project.flowtrees import INDEX, index_tree

if TYPE_CHECKING:  # pragma: no cover
    from amplint.cpython_trees import CPythonTrees
    from amplint.project.flowtrees import FileTree
    from amplint.project.modules import ModuleIndex
    from amplint.project.textpass import FileInfo


class FlowQuestions:
    """Who imports a file, does its text name something, its CPython tree; which names a `def` defines."""

    known: set
    info: "Dict[str, FileInfo]"
    modules: "ModuleIndex"
    _parsed: "CPythonTrees"
    _def_index: Dict[str, set]
    _store_index: Dict[str, set]
    _importers: Optional[Dict[str, Tuple[str, ...]]] = None
    _imports: Dict[str, Tuple[str, ...]]

    def storing(self, attr: str) -> List[str]:
        """The files whose text assigns `attr` on an owner other than `self` (text index), in order."""
        return sorted(self._store_index.get(attr, ()))

    def defines(self, name: str) -> bool:
        """Does any project file have a `def name` line (text index)?"""
        return bool(self._def_index.get(name))

    def imports(self, path: str) -> Tuple[str, ...]:
        """Project files `path` imports (text pass; each file's answered once)."""
        found = self._imports.get(path)
        if found is None:
            info = self.info.get(path)
            found = self._imports[path] = tuple(
                p for p in self.modules.imported_files(path, info.imported) if p != path) if info else ()
        return found

    def importers(self, path: str) -> Tuple[str, ...]:
        """Project files that import `path` (built once, from every file's `imports`): where its callers may be."""
        if self._importers is None:
            index: Dict[str, List[str]] = {}
            for other in sorted(self.info):
                for imported in dict.fromkeys(self.imports(other)):
                    index.setdefault(imported, []).append(other)
            self._importers = {p: tuple(files) for p, files in index.items()}
        return self._importers.get(path, ())

    def mentions(self, path: str, name: str) -> bool:
        """Does the file's text hold `name` as a word? Its words are read once: cheaper than parsing it."""
        words = self.answer(path, "words", lambda text: self._words(path, text), frozenset())  # type: ignore
        return name in words

    def _words(self, path: str, text: str) -> frozenset:
        self.stats.flow_read(path)  # type: ignore[attr-defined]
        return frozenset(re.findall(r"\w+", text))

    def file_tree(self, path: str) -> "Optional[FileTree]":
        """CPython's tree of a project file, indexed (`flowtrees.index_tree`), or None if it cannot be read or
        parsed. The tree and its index are those the file's summary read, when it was read here and still kept."""
        if path not in self.known:
            return None
        self.stats.flow_read(path)  # type: ignore[attr-defined]
        text = self._read(path)  # type: ignore[attr-defined]
        parsed = None if text is None else self._parsed.parse(text)
        if parsed is None or isinstance(parsed, str):
            return None
        tree = parsed[0]
        found = self._parsed.derived(text, INDEX, lambda: index_tree(tree))
        found.size = len(text)
        return found
