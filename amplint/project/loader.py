"""Read the project's files once, and produce summaries and findings on demand.

The loader owns everything per run: which files exist, the cheap text flags
(region file, candidate file), the textual subclass index, the disk cache,
and a small bounded memory of parse trees (so a file parsed for its summary
is not parsed again for its entry findings in the same run). Files are read
again when needed rather than kept: memory stays flat with the repo's size.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple, Union

from amplint.config import Config
from amplint.engine import may_have_findings
from amplint.files import read_source
from amplint.model import FileError, Finding
from amplint.project import prefilter
from amplint.project.cache import DiskCache, digest
from amplint.project.modules import ModuleIndex
from amplint.project.summary import EntryContext, FileSummary

if TYPE_CHECKING:  # pragma: no cover
    from amplint.analysis import ModuleAnalysis

KEEP_TREES = 16  # parse trees kept for the entry pass; more are parsed again
LEAD_HOPS = 3  # a file is worth entering when a candidate file is this many import/subclass steps away


@dataclass
class _FileInfo:
    flags: prefilter.Flags
    single: bool  # single-file mode would parse it (`engine.may_have_findings`)
    content: str = ""  # sha256 of the decoded text, computed when a cache key needs it

    @property
    def candidate(self) -> bool:
        return self.flags.candidate


@dataclass
class Stats:
    """What a run did, for tests and for the benchmark notes."""

    parsed: List[str] = field(default_factory=list)  # files parsed with LibCST (a path twice: parsed twice)
    summaries_cached: int = 0
    findings_cached: int = 0


class Loader:
    def __init__(self, files: Sequence[str], config: Config, cache: DiskCache, modules: ModuleIndex,
                 fingerprint: str) -> None:
        self.files = list(files)
        self.known = set(files)
        self.config = config
        self.cache = cache
        self.modules = modules
        self.fingerprint = fingerprint
        self.info: Dict[str, _FileInfo] = {}
        self.errors: Dict[str, FileError] = {}
        self.stats = Stats()
        self._subclass_index: Dict[str, Set[str]] = {}
        self._def_index: Dict[str, Set[str]] = {}
        self._region_files: Optional[List[str]] = None
        self._attr_index: Set[str] = set()
        self._summaries: Dict[str, Optional[FileSummary]] = {}
        self._own: Dict[str, Tuple[Finding, ...]] = {}  # findings without entries, of files parsed this run
        self._trees: "OrderedDict[str, ModuleAnalysis]" = OrderedDict()
        self._edges: Dict[str, Tuple[str, ...]] = {}
        self._worth: Dict[str, bool] = {}
        self._config_key = repr(config)
        self._options_key = repr((config.extend_autocast, config.extend_distributions))

    # --- the text pass -------------------------------------------------------
    def scan(self) -> None:
        """Read every file once for the text tests and the subclass/def/attribute indexes (no parsing)."""
        for path in self.files:
            text = self._read(path)
            if text is None:
                continue
            self.info[path] = _FileInfo(
                prefilter.flags(text, self.config.extend_autocast, self.config.extend_distributions),
                may_have_findings(text, self.config),
            )
            if "class" in text:
                for _, bases in prefilter.class_bases(text):
                    for base in bases:
                        self._subclass_index.setdefault(base, set()).add(path)
            for name in prefilter.defined_names(text):
                self._def_index.setdefault(name, set()).add(path)
            if "self." in text:
                self._attr_index.update(prefilter.assigned_attributes(text))

    def _read(self, path: str) -> Optional[str]:
        source = read_source(path)
        if isinstance(source, FileError):
            self.errors[path] = source
            return None
        return source.text

    def _content(self, path: str, info: _FileInfo) -> Optional[str]:
        """The file's content digest (read again: texts are not kept between the passes)."""
        if not info.content:
            text = self._read(path)
            if text is None:
                return None
            info.content = digest(text.encode("utf-8", "surrogatepass"))
        return info.content

    def region_files(self) -> List[str]:
        """The files parsed up front: see `prefilter` for the rule (memoized)."""
        if self._region_files is None:
            lightning = bool(self._subclass_index.get("LightningModule"))
            self._region_files = [p for p in self.files if p in self.info and self._eager(p, lightning)]
        return self._region_files

    def _eager(self, path: str, lightning: bool) -> bool:
        info = self.info[path]
        flags = info.flags
        if info.single or flags.hf or (flags.lightning and lightning):
            return True
        return (flags.autocast or flags.accelerate) and self.worth_entering(path)

    def subclass_files(self, base: str) -> List[str]:
        """Files with a `class X(... base ...)` line (by the base's last name)."""
        return sorted(self._subclass_index.get(base, ()))

    def worth_entering(self, path: str) -> bool:
        """May a function of this file lead to a probability computation? (text only, no parse)

        True for a candidate file, or one within LEAD_HOPS steps of a candidate
        file, a step being an import or a subclass line naming one of its
        classes. Entering other files cannot produce a finding, so the walk
        skips them unparsed.
        """
        if path not in self._worth:
            self._worth[path] = self._reaches_candidate(path)
        return self._worth[path]

    def may_define_usefully(self, name: str) -> bool:
        """Is `def name` written in some file worth entering? If not, no call to `name` can lead to a finding."""
        return any(self.worth_entering(path) for path in sorted(self._def_index.get(name, ())))

    def may_assign(self, attr: str) -> bool:
        """Does any file write `self.<attr> = ...`? If not, no class holds an instance there."""
        return attr in self._attr_index

    def _reaches_candidate(self, path: str) -> bool:
        frontier, seen = [path], {path}
        for _ in range(LEAD_HOPS + 1):
            if any(p in self.info and self.info[p].candidate for p in frontier):
                return True
            nxt = [n for p in frontier for n in self._neighbours(p) if n not in seen]
            seen.update(nxt)
            frontier = sorted(set(nxt))
        return False

    def _neighbours(self, path: str) -> Tuple[str, ...]:
        """Project files `path` imports, and files with a class line naming one of its classes as a base."""
        if path not in self._edges:
            text = self._read(path) or ""
            found: Set[str] = set()
            for name in prefilter.imported_names(text):
                for absolute, root in self.modules.absolute(path, name):
                    found.update(p for p, _ in self.modules.locate(path, absolute, root))
            for cls, _ in prefilter.class_bases(text):
                found.update(self._subclass_index.get(cls, ()))
            found.discard(path)
            self._edges[path] = tuple(sorted(found & self.known))
        return self._edges[path]

    # --- summaries -----------------------------------------------------------
    def summary(self, path: str) -> Optional[FileSummary]:
        """The file's summary, from memory, the disk cache, or one parse; None if not a readable project file."""
        if path in self._summaries:
            return self._summaries[path]
        self._summaries[path] = None  # a re-entrant request (import cycle) sees "not yet"
        info = self.info.get(path)
        if info is None or path not in self.known or self._content(path, info) is None:
            return None
        key = digest(self.fingerprint, "summary", self._options_key, info.content)
        cached = self.cache.get("summary", key)
        if isinstance(cached, FileSummary):
            self.stats.summaries_cached += 1
            self._summaries[path] = cached
            return cached
        analyzed = self._parse(path, ())
        if analyzed is None:
            return None
        summary, findings = analyzed
        self._own[path] = findings
        self.cache.put("summary", key, summary)
        self.cache.put("findings", self._findings_key(path, info, ()), findings)
        self._summaries[path] = summary
        return summary

    def _parse(self, path: str, entries: Sequence[EntryContext]) -> Optional[Tuple[FileSummary, Tuple[Finding, ...]]]:
        from amplint.engine import analyze_source
        from amplint.project.summarize import summarize

        text = self._read(path)
        if text is None:
            return None
        self.stats.parsed.append(path)
        outcome = analyze_source(text, path, self.config, entries=entries, project=True)
        if isinstance(outcome, FileError):
            self.errors[path] = outcome
            return None
        assert outcome.analysis is not None
        summary = summarize(outcome.analysis)
        if any(f.exposed for f in summary.functions.values()):
            self._trees[path] = outcome.analysis
            while len(self._trees) > KEEP_TREES:
                self._trees.popitem(last=False)
        return summary, tuple(outcome.findings)

    # --- findings ------------------------------------------------------------
    def _findings_key(self, path: str, info: _FileInfo, entries: Sequence[EntryContext]) -> str:
        return digest(self.fingerprint, "findings", path, self._config_key, info.content, tuple(entries))

    def findings(self, path: str, entries: Sequence[EntryContext]) -> Union[List[Finding], FileError]:
        """The file's findings in project mode: its own, plus those of the entries the walk found."""
        if path in self.errors:
            return self.errors[path]
        info = self.info.get(path)
        if info is None:
            return []
        if self._content(path, info) is None:
            return self.errors[path]
        entries = tuple(sorted(set(entries), key=repr))
        if not entries and path in self._own:
            return list(self._own[path])
        key = self._findings_key(path, info, entries)
        cached = self.cache.get("findings", key)
        if isinstance(cached, tuple):
            self.stats.findings_cached += 1
            return list(cached)
        findings = self._entry_findings(path, entries)
        if isinstance(findings, FileError):
            return findings
        self.cache.put("findings", key, tuple(findings))
        return findings

    def _entry_findings(self, path: str, entries: Sequence[EntryContext]) -> Union[List[Finding], FileError]:
        tree = self._trees.get(path)
        if tree is not None:
            from amplint.analysis import with_entries
            from amplint.engine import finish

            text = self._read(path)
            if text is None:
                return self.errors[path]
            return finish(text, path, with_entries(tree, entries), self.config).findings
        parsed = self._parse(path, entries)
        if parsed is None:
            return self.errors.get(path, FileError(path, "cannot be read"))
        return list(parsed[1])


def cache_directory(paths: Sequence[str], top: str) -> str:
    """`$AMPLINT_CACHE_DIR`, else `.amplint_cache` in the project top."""
    return os.environ.get("AMPLINT_CACHE_DIR") or os.path.join(top, ".amplint_cache")
