"""The subclasses of a project class, and per method name the subclasses that override it (`Resolver`'s).

Class-hierarchy questions are asked per class and per method name, and on real code a class may have
thousands of subclasses (transformers' `PreTrainedModel`: 3,910). Each answer is therefore built once per
run from the text index of class lines and the files' shapes, and memoized as the resolver's answers are.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional, Set, Tuple

from amplint.project.symbols import ClassRef

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.loader import Loader
    from amplint.project.memo import Doubts, Memo
    from amplint.project.shape import Shape


class Subclassing:
    """A mixin of `resolve.Resolver`, which owns the memos and the loader it reads."""

    loader: "Loader"
    _doubts: "Doubts"
    _subclasses: "Memo[ClassRef, List[ClassRef]]"
    _children: "Memo[str, Dict[ClassRef, Tuple[ClassRef, ...]]]"
    _overriding: "Memo[ClassRef, Dict[str, List[ClassRef]]]"

    if TYPE_CHECKING:  # pragma: no cover - what the resolver gives
        def _deferred(self, mark: int) -> bool: ...
        def _shape(self, path: str) -> "Optional[Shape]": ...
        def class_of(self, path: str, text: str, hops: int = 0) -> List[ClassRef]: ...
        def _methods(self, cls: ClassRef) -> Tuple[str, ...]: ...

    def subclasses(self, cls: ClassRef) -> List[ClassRef]:
        """Project subclasses of `cls`, transitively, found through the text index then checked."""
        return self._subclasses.get(cls, lambda: self._search_subclasses(cls))

    def _search_subclasses(self, cls: ClassRef) -> List[ClassRef]:
        found: List[ClassRef] = []
        members: Set[ClassRef] = {cls}  # found, and the class itself
        frontier = [cls]
        mark = self._doubts.mark()
        while frontier and not self._deferred(mark):  # each class once: bounded by the project's classes
            current = frontier.pop(0)
            short = current.name.rsplit(".", 1)[-1]
            for ref in self._subclass_lines(short).get(current, ()):
                if ref not in members:
                    found.append(ref)
                    members.add(ref)
                    frontier.append(ref)
        return sorted(found)

    def _subclass_lines(self, short: str) -> Dict[ClassRef, Tuple[ClassRef, ...]]:
        """Per project class, the classes whose class line names it as a base by `short` (file, then name order).

        Built once per short name and run: the files with such a line come from the
        text index, and each base is resolved once (`class_of`).
        """
        return self._children.get(short, lambda: self._index_subclass_lines(short))

    def _index_subclass_lines(self, short: str) -> Dict[ClassRef, Tuple[ClassRef, ...]]:
        building: Dict[ClassRef, List[ClassRef]] = {}
        for path in self.loader.subclass_files(short):
            summary = self._shape(path)
            for name in sorted(summary.classes) if summary is not None else ():
                ref = ClassRef(path, name)
                parents: List[ClassRef] = []
                for base in summary.classes[name].bases:  # type: ignore[union-attr]
                    if base.rsplit(".", 1)[-1] == short:
                        parents.extend(p for p in self.class_of(path, base) if p not in parents)
                for parent in parents:
                    building.setdefault(parent, []).append(ref)
        return {parent: tuple(refs) for parent, refs in building.items()}

    def overriding(self, cls: ClassRef) -> Dict[str, List[ClassRef]]:
        """Per method name, the subclasses of `cls` that define it, in `subclasses` order: read once per class
        (asked per name, transformers' 3,910 subclasses of `PreTrainedModel` were read again for each)."""
        return self._overriding.get(cls, lambda: self._index_overriding(cls))

    def _index_overriding(self, cls: ClassRef) -> Dict[str, List[ClassRef]]:
        found: Dict[str, List[ClassRef]] = {}
        for sub in self.subclasses(cls):
            for name in dict.fromkeys(self._methods(sub)):
                found.setdefault(name, []).append(sub)
        return found
