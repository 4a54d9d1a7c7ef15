"""Which files may lead to a probability computation: the walk enters only those (text only, no parse).

A mixin of `Loader`: it reads the loader's text pass (`info`: each file's flags and class lines; the
subclass and `def` indexes) and its import graph (`FlowQuestions.imports`/`importers`). Entering any other
file cannot produce a finding, so the walk skips it unparsed; on a large project most files are skipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from amplint.project.configured import may_build_by_string, target_modules

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.modules import ModuleIndex
    from amplint.project.textpass import FileInfo

LEAD_HOPS = 3  # a file is worth entering when a candidate file is this many import/subclass steps away


@dataclass
class LeadAnswers:
    """The answers of one run (the text pass does not change after it ran)."""

    worth: Dict[str, bool] = field(default_factory=dict)
    running: Optional[Set[str]] = None  # files whose code runs a candidate's, at any depth
    useful: Dict[str, bool] = field(default_factory=dict)  # `may_define_usefully`, by name
    defining: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # `defining_files`, by name
    edges: Dict[str, Tuple[str, ...]] = field(default_factory=dict)  # `_neighbours`, by path
    builders: Optional[Dict[str, Set[str]]] = None  # `_builders`


class LeadQuestions:
    """May a file, or a `def` of some name, lead to a probability computation?"""

    known: set
    info: "Dict[str, FileInfo]"
    leads: LeadAnswers
    _subclass_index: Dict[str, Set[str]]
    _def_index: Dict[str, Set[str]]

    imports: Callable[[str], Tuple[str, ...]]  # `FlowQuestions.imports`: project files a file imports
    importers: Callable[[str], Tuple[str, ...]]  # and those that import it
    modules: "ModuleIndex"
    # (section, dotted name) of the classes the project's config files build (`Loader.know_configured`)
    configured: Callable[[], FrozenSet[Tuple[str, str]]] = frozenset

    def worth_entering(self, path: str) -> bool:
        """May a function of this file lead to a probability computation?

        True for a candidate file; for one whose code runs a candidate's, at any depth, through imports (its
        calls may run the candidate's code however long the chain of modules: `run.py` -> `agent` -> `steps`
        -> `losses`) and overrides (a base class's `self.compute(...)` runs a subclass's, whose file imports
        the chain: `heads` -> `factory` -> `common` -> `steps` -> `critics`); and for one within LEAD_HOPS steps
        of a candidate file, a step being an import either way or a subclass line naming one of its classes
        (code handed a model calls it without importing its module).
        """
        answers = self.leads.worth
        if path not in answers:
            answers[path] = path in self._running_candidates() or self._near_candidate(path)
        return answers[path]

    def may_define_usefully(self, name: str) -> bool:
        """Is `def name` written in some file worth entering? If not, no call to `name` can lead to a finding.

        Kept by name: the walk asks it for every method it resolves, and `forward` is defined in hundreds of
        files (the index and the answers do not change after the text pass).
        """
        useful = self.leads.useful.get(name)
        if useful is None:
            useful = self.leads.useful[name] = any(self.worth_entering(path)
                                                   for path in sorted(self._def_index.get(name, ())))
        return useful

    def defining_files(self, name: str) -> List[str]:
        """Files worth entering with a `def name` line (text only): where an inferred call may go."""
        found = self.leads.defining.get(name)
        if found is None:
            found = self.leads.defining[name] = tuple(
                path for path in sorted(self._def_index.get(name, ())) if self.worth_entering(path))
        return list(found)

    # --- the searches ------------------------------------------------------------------------------------

    def _near_candidate(self, path: str) -> bool:
        frontier, seen = [path], {path}
        for _ in range(LEAD_HOPS + 1):
            if any(p in self.info and self.info[p].candidate for p in frontier):
                return True
            nxt = [n for p in frontier for n in self._neighbours(p) if n not in seen]
            seen.update(nxt)
            frontier = sorted(set(nxt))
        return False

    def _running_candidates(self) -> Set[str]:
        """The files whose code runs a candidate file's, at any depth: one search back from every candidate,
        once per run, over the importers index (an importer calls what it imports) and the base classes a
        found file's class lines name (a base class's method calls the override: `self.compute(...)`)."""
        if self.leads.running is None:
            pending = [p for p in sorted(self.info) if self.info[p].candidate]
            found = set(pending)
            bases = _bases_by_file(self._subclass_index)
            definers: Dict[str, Set[str]] = {}
            for path in sorted(self.info):
                for cls in self.info[path].classes:
                    definers.setdefault(cls, set()).add(path)
            builders = self._builders()
            while pending:
                path = pending.pop()
                callers = set(self.importers(path)) | builders.get(path, set())
                for base in bases.get(path, ()):
                    callers.update(definers.get(base, ()))
                for caller in sorted(callers - found):
                    found.add(caller)
                    pending.append(caller)
            self.leads.running = found
        return self.leads.running

    def _neighbours(self, path: str) -> Tuple[str, ...]:
        """Project files `path` imports or is imported by (code handed a model calls it without importing its
        module: `self.policy.loss(x)`), and files with a class line naming one of its classes as a base; a file
        that may build a class from a string and the files of the classes the config files name
        (`_builders`)."""
        edges = self.leads.edges
        if path not in edges:
            info = self.info.get(path)  # the text pass read it (a file it could not read has no edges)
            found: Set[str] = set()
            if info is not None:
                found.update(self.imports(path))
                for cls in info.classes:
                    found.update(self._subclass_index.get(cls, ()))
                found.update(self.importers(path))
                found.update(self._builders().get(path, ()))
                found.update(p for p, built in self._builders().items() if path in built)
            found.discard(path)
            edges[path] = tuple(sorted(found & self.known))
        return edges[path]

    def _builders(self) -> Dict[str, Set[str]]:
        """Per file defining a class the project's config files name, the files that may build one from a string
        (they import `importlib`, `pydoc` or Hydra: `configured.may_build_by_string`): code built from
        configuration runs the class's code without importing its module."""
        if self.leads.builders is None:
            builders: Dict[str, Set[str]] = {}
            targets = self.configured()
            for path in sorted(self.info) if targets else ():
                if may_build_by_string(self.info[path].imported):
                    for built, _ in target_modules(self.modules, path, targets):
                        if built != path:
                            builders.setdefault(built, set()).add(path)
            self.leads.builders = builders
        return self.leads.builders


def _bases_by_file(subclasses: Dict[str, Set[str]]) -> Dict[str, Set[str]]:
    """The base names each file's class lines name (the subclass index, inverted)."""
    out: Dict[str, Set[str]] = {}
    for base, paths in subclasses.items():
        for path in paths:
            out.setdefault(path, set()).add(base)
    return out
