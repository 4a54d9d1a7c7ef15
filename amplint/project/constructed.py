"""Which project classes the project may make an instance of: rapid type analysis, read from the text.

Why: a call on a receiver whose class the analysis does not know (`self.head.nll(x)` on a base typed
`Head`, `model.compute_loss(b)` on a model from a config) runs a method of some class that defines it,
but only of a class the program constructs. Counting every class that defines the name drops nothing
and buries the answer under classes that never run; capping the count drops the true one. Keeping the
classes the project constructs bounds neither.

A class counts as constructed when some project file, outside `class` lines, calls it
(`Sub3(...)`), holds it as a value (`{"a": Sub3}`, `[Sub3, Sub4]`, `build(Sub3)`, `= Sub3`), names
it in a string (`getattr(mod, "Sub3")`, `"pkg.Sub3"`), or a config file builds it (`target:`). An
import line alone does not: `__init__.py` re-exports would make every class live. Text only: one scan
of each file per question, however many classes it asks about.
"""
from __future__ import annotations

import re
from functools import partial
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Sequence

from amplint.project.symbols import ClassRef

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.loader import Loader


class Constructed:
    """The per-run answer to "does the project construct class C?" (by its last name)."""

    def __init__(self, loader: "Loader", built: Callable[[], FrozenSet[str]]) -> None:
        self._loader = loader
        self._built = built  # the classes the project's config files build
        self._known: Dict[str, bool] = {}

    def _found(self, path: str, pattern: "re.Pattern[str]") -> FrozenSet[str]:
        return self._loader.answer(path, ("uses", pattern), partial(matched_names, pattern), frozenset())

    def classes(self, classes: Sequence[ClassRef]) -> List[ClassRef]:
        """The classes of `classes` the project constructs, in their order."""
        names = {cls.name.rsplit(".", 1)[-1] for cls in classes}
        asked = sorted(name for name in names if name not in self._known)
        if asked:
            live = self._built() & set(asked)
            rest = set(asked) - live
            if rest:
                pattern = use_pattern(sorted(rest))
                for path in sorted(self._loader.info):
                    live |= self._found(path, pattern) & rest
                    if live >= rest:
                        break
            self._known.update((name, name in live) for name in asked)
        return [cls for cls in classes if self._known[cls.name.rsplit(".", 1)[-1]]]


_CLASS_LINE = re.compile(r"[ \t]*class[ \t]")


def use_pattern(names: Sequence[str]) -> "re.Pattern[str]":
    """A use of one of `names` that may construct it: a call, a value in a container or an argument, a string."""
    alternatives = "|".join(map(re.escape, sorted(names)))
    return re.compile(r"\b(%s)[ \t]*\(|[\[(:=,][ \t]*(?:\w+\.)*(%s)[ \t]*(?=[,\])}]|$)|['\".](%s)['\"]"
                      % (alternatives, alternatives, alternatives), re.M)


def matched_names(pattern: "re.Pattern[str]", text: str) -> FrozenSet[str]:
    """The names `use_pattern` finds in `text`, `class` lines left out (`class Sub(Base):` makes no `Base`)."""
    found = set()
    for match in pattern.finditer(text):
        if not _CLASS_LINE.match(text, text.rfind("\n", 0, match.start()) + 1):
            found.update(group for group in match.groups() if group)
    return frozenset(found)
