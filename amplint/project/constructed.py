"""Which project classes the project may make an instance of: rapid type analysis, read from the text.

Why: a call on a receiver whose class the analysis does not know (`self.head.nll(x)` on a base typed
`Head`, `model.compute_loss(b)` on a model from a config) runs a method of some class that defines it,
but only of a class the program constructs. Counting every class that defines the name drops nothing
and buries the answer under classes that never run; capping the count drops the true one. Keeping the
classes the project constructs bounds neither.

A class counts as constructed when some project file, outside `class` lines, calls it
(`Sub3(...)`), holds it as a value (`{"a": Sub3}`, `[Sub3, Sub4]`, `build(Sub3)`, `= Sub3`), names
it in a string (`getattr(mod, "Sub3")`, `"pkg.Sub3"`), or a config file builds it (`target:`). An
import line alone does not: `__init__.py` re-exports would make every class live. Text only: the text pass
reads every name each file uses so (`prefilter.used_names`, kept in its disk cache); an answer is a lookup,
and does not depend on which classes were asked about together.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, FrozenSet, List, Optional, Sequence

from amplint.project.symbols import ClassRef

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.loader import Loader


class Constructed:
    """The per-run answer to "does the project construct class C?" (by its last name)."""

    def __init__(self, loader: "Loader", built: Callable[[], FrozenSet[str]]) -> None:
        self._loader = loader
        self._built = built  # the classes the project's config files build
        self._configured: Optional[FrozenSet[str]] = None  # `built()`, read on the first question

    def classes(self, classes: Sequence[ClassRef]) -> List[ClassRef]:
        """The classes of `classes` the project constructs, in their order."""
        if self._configured is None:
            self._configured = self._built()
        return [cls for cls in classes if self._made(cls.name.rsplit(".", 1)[-1])]

    def _made(self, name: str) -> bool:
        return name in self._loader.used_names or name in self._configured  # type: ignore[operator]
