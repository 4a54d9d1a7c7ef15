"""Read the project's files once, and produce summaries and findings on demand.

The loader owns everything per run: which files exist, the cheap text flags
(region file, candidate file), the textual subclass index, the disk cache,
and a small bounded memory of parse trees (so a file parsed for its summary
is not parsed again for its entry findings in the same run). Files are read
again when needed rather than kept: memory stays flat with the repo's size.
"""
from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, TypeVar, Union

from amplint.config import Config
from amplint.cpython_trees import CPythonTrees, kept_trees
from amplint.files import content_digest, read_bytes, read_source
from amplint.identifiers import analysis_text
from amplint.model import FileError, Finding
from amplint.project import prefilter
from amplint.project.cache import DiskCache, PassCache, digest
from amplint.project.flowquestions import FlowQuestions
from amplint.project.leads import LeadAnswers, LeadQuestions
from amplint.project.stats import Stats
from amplint.project.kept import KEEP_SOURCE_BYTES, KeptTrees, worth_keeping
from amplint.project.modules import ModuleIndex
from amplint.project.reading import CPYTHON, LIBCST, NOT_READ, analyze_file
from amplint.project.textpass import FileInfo, read_texts
from amplint.project.summary import EntryContext, FileSummary

if TYPE_CHECKING:  # pragma: no cover
    from amplint.parallel import RunPool
    from amplint.project.shape import FileShape, Shape
    from amplint.workers import Memory, Workers

T = TypeVar("T")

# A pooled parse (`_parse_job`): how the file was read, and (summary or None, findings) or the error.
_Parsed = Tuple[str, Union[Tuple[Optional[FileSummary], Tuple[Finding, ...]], FileError]]
# `_parse_job`'s item: the path, the config, the entries, whether the summary is wanted, the trees' budget.
_JobItem = Tuple[str, Config, Tuple[EntryContext, ...], bool, int]
# What `_parse_job` returns: the above, and the worker process that kept the file's tree (its pid) or None.
_Job = Tuple[str, Union[Tuple[Optional[FileSummary], Tuple[Finding, ...]], FileError], Optional[int]]


class Loader(FlowQuestions, LeadQuestions):
    def __init__(self, files: Sequence[str], config: Config, cache: DiskCache, modules: ModuleIndex,
                 fingerprint: str, parsed: Optional[CPythonTrees] = None, pool: "Optional[RunPool]" = None,
                 pass_cache: Optional[PassCache] = None) -> None:
        """`pass_cache`: where the text pass keeps what it read of each file (None: nowhere)."""
        from amplint.parallel import RunPool

        self.files = list(files)
        self.known = set(files)
        self.config = config
        self.cache = cache
        self.modules = modules
        self.fingerprint = fingerprint
        self.pass_cache = pass_cache
        self.info: Dict[str, FileInfo] = {}
        self.errors: Dict[str, FileError] = {}
        self.stats = Stats()
        self._subclass_index: Dict[str, Set[str]] = {}
        self._def_index: Dict[str, Set[str]] = {}
        self._region_files: Optional[List[str]] = None
        self._attr_index: Set[str] = set()
        self._store_index: Dict[str, Set[str]] = {}
        self.used_names: Set[str] = set()  # every name some file uses as constructing a class (`constructed`)
        self._summaries: Dict[str, Optional[FileSummary]] = {}
        self._shapes: Dict[str, "FileShape"] = {}
        self._scanned_shapes: Dict[str, "FileShape"] = {}  # made by the pool workers of the text pass
        self._own: Dict[str, Tuple[Finding, ...]] = {}  # findings without entries, of files parsed this run
        self._trees = KeptTrees()  # this process's parses, for their entry pass
        self._parsed = parsed or CPythonTrees()  # CPython's trees, shared by the scan, summaries and shapes
        self._holders: Dict[str, int] = {}  # path -> the pool worker that keeps its LibCST tree
        # path -> the pool worker whose text pass read it: the one that keeps its CPython tree, if any does
        self._cpython_holders: Dict[str, int] = {}
        # The run's workers, started by the first batch that pays; whoever passes `pool` ends it (one made here
        # ends when the loader is dropped: `workers.Workers` has a finalizer).
        self._pool = pool or RunPool(config.jobs)
        self._ready: Dict[str, Tuple[Finding, ...]] = {}  # findings parsed in a pool (`prepare_findings`), by key
        self._imports: Dict[str, Tuple[str, ...]] = {}  # `FlowQuestions.imports`, by path
        self.leads = LeadAnswers()  # `LeadQuestions`' answers for the run
        self._answers: Dict[Tuple[str, object], object] = {}  # (path, question about its text) -> the answer
        # Parsed ahead in a pool, not yet asked for: recorded (parsed, errors, cache) only when `summary` asks.
        self._ahead: Dict[str, _Parsed] = {}
        self._speculating = False
        self._wanted: Dict[str, None] = {}  # asked for while speculating and not known: parse them ahead
        self._started: Set[str] = set()  # of those, the ones already sent to a worker (`_start_ahead`)
        self.misses = 0  # summaries answered None for speculation (`amplint.project.memo`)
        self._parse_rate: Optional[float] = None  # one process's seconds per source byte, as the pool parsed them
        self._config_key = repr(config)
        self._options_key = repr((config.extend_autocast, config.extend_distributions, config.autocast_aliases))

    # --- the text pass -------------------------------------------------------
    def scan(self) -> None:
        """The text pass (`textpass.read_texts`): every file's flags, and the indexes by name."""
        found = read_texts(self.files, self._parsed, self.config, self._pool, self.pass_cache)
        self.info, self._cpython_holders = found.info, found.holders
        self.errors.update(found.errors)
        self._subclass_index, self._def_index, self._attr_index = found.subclasses, found.defines, found.attributes
        self._store_index = found.stores
        self.used_names = found.uses
        self._scanned_shapes = found.shapes

    def _read(self, path: str) -> Optional[str]:
        """The file's text as the analysis reads it (`identifiers.analysis_text`), for its questions and trees."""
        source = read_source(path)
        if isinstance(source, FileError):
            self.errors[path] = source
            return None
        return analysis_text(source.text)

    def _content(self, path: str, info: FileInfo) -> Optional[str]:
        """The file's content digest (read again: texts are not kept between the passes)."""
        if not info.content:
            data = read_bytes(path)
            if isinstance(data, FileError):
                self.errors[path] = data
                return None
            info.content = content_digest(data)
        return info.content

    def region_files(self) -> List[str]:
        """The files parsed up front: see `prefilter` for the rule (memoized)."""
        if self._region_files is None:
            lightning = bool(self._subclass_index.get("LightningModule"))
            self._region_files = [p for p in self.files if p in self.info and self._eager(p, lightning)]
        return self._region_files

    def know_region_files(self, paths: Sequence[str]) -> None:
        """The region files a cached solution recorded (`project.solution`): the rule's answer over the same texts,
        which costs every file's imports to compute again."""
        self._region_files = list(paths)

    def _eager(self, path: str, lightning: bool) -> bool:
        info = self.info[path]
        flags = info.flags
        if info.single or flags.hf or (flags.lightning and lightning):
            return True
        return (flags.autocast or flags.accelerate) and self.worth_entering(path)

    def subclass_files(self, base: str) -> List[str]:
        """Files with a `class X(... base ...)` line (by the base's last name)."""
        return sorted(self._subclass_index.get(base, ()))

    def method_definitions(self, path: str, name: str) -> int:
        """How many methods named `name` the file's text defines (`prefilter.method_definitions`)."""
        return self.answer(path, ("def", name), lambda text: prefilter.method_definitions(text, name), 0)

    def matches(self, path: str, pattern: "re.Pattern[str]") -> bool:
        """Does the file's text match `pattern`?"""
        return self.answer(path, pattern, lambda text: pattern.search(text) is not None, False)

    def answer(self, path: str, question: object, read: Callable[[str], T], unread: T) -> T:
        """`read(text)` of the file (`unread` if it cannot be read), once per question: the text is read again, not
        kept, so memory stays flat, and the answer kept, as the walk's speculative passes ask again."""
        key = (path, question)
        if key not in self._answers:
            text = self._read(path)
            self._answers[key] = unread if text is None else read(text)
        return self._answers[key]  # type: ignore[return-value]

    def know_configured(self, targets: Callable[[], FrozenSet[Tuple[str, str]]]) -> None:
        """Where the (section, dotted name) of the classes the project's config files build come from (read on
        first use): the leads link the files that build classes from strings to theirs (`LeadQuestions._builders`)."""
        self.configured = targets

    def calls_getattr(self, path: str) -> bool:
        """May the file call what `getattr` gives (`flowtrees.may_call_getattr`, read by the text pass)?"""
        info = self.info.get(path)
        return info is not None and info.calls_getattr

    def may_assign(self, attr: str) -> bool:
        """Does any file write `self.<attr> = ...`? If not, no class holds an instance there."""
        return attr in self._attr_index

    # --- summaries -----------------------------------------------------------
    def shape(self, path: str) -> "Optional[Shape]":
        """What the file defines, for name resolution: the summary when it is known already (read, parsed
        ahead, or cached), else `shape.file_shape` from CPython's tree.

        A file worth entering is shaped too until the walk enters it: a question about classes (the
        subclasses of `PreTrainedModel`, 3,910 of them in transformers) must not summarize every file it
        reads: that search took 53 s there with summaries, 8 s with shapes. The tree stays in the run's memo
        for the summary.
        A shape is kept for the run only: it costs a few milliseconds.
        """
        if path in self._summaries or path in self._ahead or path in self._wanted:
            return self.summary(path)
        if path in self._shapes:
            return self._shapes[path]
        info = self.info.get(path)
        if info is None or path not in self.known:
            return None
        if self._summary_cached(path, info):
            return self.summary(path)
        shaped = self._shape(path)
        if shaped is None:  # CPython refuses it: the summary records the error, as before
            return self.summary(path)
        self._shapes[path] = shaped
        return shaped

    def _summary_cached(self, path: str, info: FileInfo) -> bool:
        """Is the file's summary in the disk cache? With no cache, the file is not read to find out."""
        return self.cache.directory is not None and self._content(path, info) is not None and \
            self.cache.contains("summary", self._summary_key(info))

    def _shape(self, path: str) -> "Optional[FileShape]":
        """The shape from the disk cache, else from the text pass's worker, else from CPython's tree (kept in the
        cache: a warm run on real code read 30 files with `ast` for their shapes, a tenth of the run)."""
        from amplint.project.shape import FileShape, file_shape

        info = self.info[path]
        key = None
        if self.cache.directory is not None and self._content(path, info) is not None:
            key = digest(self.fingerprint, "shape", info.content)
            cached = self.cache.get("shape", key)
            if isinstance(cached, FileShape):
                self.stats.shapes_cached += 1
                return cached
        shaped = self._scanned_shapes.pop(path, None)  # the worker that read the file parsed it: no parse here
        if shaped is None:
            text = self._read(path)
            parsed = None if text is None else self._parsed.parse(text)
            if parsed is None or isinstance(parsed, str):
                return None
            shaped = file_shape(*parsed)
        self.stats.shaped.append(path)
        if key is not None:
            self.cache.put("shape", key, shaped)
        return shaped

    def summary(self, path: str) -> Optional[FileSummary]:
        """The file's summary, from memory, the disk cache, or one parse; None if not a readable project file.

        While speculating (`speculate`), a summary that would need a parse is
        answered None and noted instead (`wanted`): nothing is parsed here or
        recorded (the parse may start in an idle worker, `_start_ahead`).
        """
        if path in self._summaries:
            return self._summaries[path]
        if path in self._wanted:
            self.misses += 1
            return None
        self._summaries[path] = None  # a re-entrant request (import cycle) sees "not yet"
        info = self.info.get(path)
        if info is None or path not in self.known or self._content(path, info) is None:
            return None
        key = self._summary_key(info)
        cached = self.cache.get("summary", key)
        if isinstance(cached, FileSummary):
            self.stats.summaries_cached += 1
            self._summaries[path] = cached
            return cached
        if path in self._ahead:
            outcome = self._commit(path, self._ahead.pop(path))
            return None if outcome is None else self._keep_summary(path, info, key, outcome)
        if self._speculating:
            del self._summaries[path]
            self._wanted[path] = None
            self.misses += 1
            self._start_ahead(path)
            return None
        analyzed = self._parse(path, ())
        if analyzed is None:
            return None
        return self._keep_summary(path, info, key, analyzed)

    def _summary_key(self, info: FileInfo) -> str:
        return digest(self.fingerprint, "summary", self._options_key, info.content)

    def _keep_summary(
        self, path: str, info: FileInfo, key: str, analyzed: Tuple[FileSummary, Tuple[Finding, ...]]
    ) -> FileSummary:
        summary, findings = analyzed
        self._own[path] = findings
        self.cache.put("summary", key, summary)
        self.cache.put("findings", self._findings_key(path, info, ()), findings)
        self._summaries[path] = summary
        return summary

    def prepare_summaries(self, paths: Sequence[str]) -> None:
        """Parse, in a process pool when it pays (`amplint.parallel`), the files `summary` would parse.

        `summary(path)` then answers from memory for them, exactly as if it had
        parsed them itself, except that no parse tree is kept for the entry pass.
        With no pool, nothing happens here and `summary` parses them one by one.
        """
        todo: List[Tuple[str, FileInfo, str]] = []
        for path in paths:
            info = self.info.get(path)
            if path in self._summaries or info is None or path not in self.known:
                continue
            if self._content(path, info) is None:
                continue
            key = self._summary_key(info)
            if not self.cache.contains("summary", key):
                todo.append((path, info, key))
        outcomes = self._parse_batch([(path, ()) for path, _, _ in todo], summaries=True)
        for (path, info, key), parsed in zip(todo, outcomes or ()):
            outcome = self._commit(path, parsed)
            if outcome is not None:
                self._keep_summary(path, info, key, outcome)
            else:
                self._summaries[path] = None

    # --- speculation: summaries parsed ahead of the walk (`amplint.project.ahead`) ------------------
    def may_pool(self) -> bool:
        """Could a parse pool start at all in this run (`--jobs`, usable CPUs)?"""
        from amplint import parallel

        return parallel.pool_size(parallel.MIN_ITEMS, self.config.jobs) >= 1

    @property
    def speculating(self) -> bool:
        """Is a speculative pass running (another pass may follow it)?"""
        return self._speculating

    def speculate(self, on: bool) -> List[str]:
        """Start or end a speculative pass; returns the summaries it wanted (ending one), in request order.

        During the pass `summary` never parses here: a file it would parse answers
        None and is noted. Memory, the cache and what `parse_ahead` parsed still
        answer truly, so a pass that wanted nothing got the answers a real one gets.
        """
        wanted = list(self._wanted)
        self._speculating = on
        self._wanted = {}
        return wanted

    def _start_ahead(self, path: str) -> None:
        """Send the summary job of a file the pass wants to a worker, if one is idle now.

        The pass goes on here meanwhile; `parse_ahead` then takes the result
        instead of sending the job again (`Workers.start`). Nothing else
        changes: the same jobs, the same results, in the same order.
        """
        workers = self._pool.started()
        if workers is None:  # no pool yet: the batch decides whether one pays
            return
        job, pin = self._job(path, (), True, workers), self._cpython_holders.get(path)
        if workers.start(_parse_job, job, stateful=True, pin=pin):
            self._started.add(path)

    def parse_ahead(self, paths: Sequence[str]) -> bool:
        """Parse these files for their summaries in a process pool, kept aside until `summary` asks for one.

        False, and nothing parsed, when a pool would not pay for them. A file
        parsed ahead but never asked for leaves no trace (no error reported, not
        in `stats.parsed`, not cached): the run is the same as one without it.
        """
        paths = [path for path in paths if path not in self._ahead and path not in self._summaries]
        outcomes = self._parse_batch([(path, ()) for path in paths], summaries=True)
        self.stats.started.extend(path for path in paths if path in self._started)
        self._started.clear()
        if outcomes is None:
            return False
        for path, parsed in zip(paths, outcomes):
            self._ahead[path] = parsed
        self.stats.ahead.extend(paths)
        return True

    def pool_saving(self, paths: Sequence[str]) -> Optional[float]:
        """About how many seconds parsing these summaries in the pool saves against parsing them here, from the
        rate of the last batch (None: no batch yet, or a pool forced for any batch). Jobs a worker started early
        make it low: it errs towards parsing here."""
        from amplint import parallel

        workers = self._pool.started()
        if self._parse_rate is None or workers is None or parallel.forced():
            return None
        serial = sum(_size(path) for path in paths) * self._parse_rate
        return serial * (1 - 1 / max(1, len(workers.alive)))

    def end_ahead(self) -> None:
        """Forget what was parsed ahead and not used (counted in `stats.ahead_unused`)."""
        self.stats.ahead_unused.extend(self._ahead)
        self._ahead.clear()
        workers = self._pool.started()
        if workers is not None:
            workers.settle()

    def _parse_batch(
        self, requests: Sequence[Tuple[str, Tuple[EntryContext, ...]]], summaries: bool
    ) -> Optional[List[_Parsed]]:
        """`_parse_job` for each request in the run's pool; None (and nothing done) when a pool would not pay.

        A findings request goes to the worker that kept the file's tree, if
        one did, however small the batch: it costs that worker no parse. A
        summary goes, by preference, to the worker whose text pass kept its
        CPython tree.
        Nothing is recorded here but which worker keeps which tree: the caller
        `_commit`s each result it uses.
        """
        from amplint import parallel, progress

        progress.current().phase("parsing", len(requests))  # `_parse` advances it when there is no pool
        sizes = [_size(path) for path, _ in requests]
        holders = self._cpython_holders if summaries else self._holders
        pins = [holders.get(path) for path, _ in requests]
        if summaries:  # a worker already runs one of them (`_start_ahead`): collect it there
            held = any(path in self._started for path, _ in requests)
        else:
            held = any(pin in self._pool.alive() for pin in pins)
        if not held and parallel.pool_size(len(requests), self.config.jobs, sum(sizes)) < 1:
            return None
        workers = self._pool.workers()
        if workers is None:
            return None  # no pool can start here: `summary` and `findings` parse in this process
        jobs = [self._job(path, entries, summaries, workers) for path, entries in requests]
        started = time.perf_counter()
        done = parallel.run_map(_parse_job, jobs, jobs=self.config.jobs, weights=sizes, pool=workers, pins=pins,
                                stateful=True, steal=summaries)
        if summaries and sum(sizes):
            self._parse_rate = (time.perf_counter() - started) * len(workers.alive) / sum(sizes)
        outcomes: List[_Parsed] = []
        for (path, _), (read, outcome, holder) in zip(requests, done):
            if holder is not None:
                self._holders[path] = holder
            outcomes.append((read, outcome))
        return outcomes

    def _job(self, path: str, entries: Tuple[EntryContext, ...], summaries: bool, workers: "Workers") -> "_JobItem":
        """`_parse_job`'s item. The workers share the budget this process has for its own trees: peak memory is
        bounded alike."""
        return path, self.config, entries, summaries, KEEP_SOURCE_BYTES // max(1, len(workers.alive))

    def _commit(self, path: str, parsed: "_Parsed") -> Optional[Tuple[Optional[FileSummary], Tuple[Finding, ...]]]:
        """Record a pooled parse as `_parse` records its own: the parse in the stats, an error as the file's."""
        how, outcome = parsed
        self._count(path, how)
        if isinstance(outcome, FileError):
            self.errors[path] = outcome
            return None
        return outcome

    def _parse(self, path: str, entries: Sequence[EntryContext]) -> Optional[Tuple[FileSummary, Tuple[Finding, ...]]]:
        from amplint import progress
        from amplint.project.summarize import summarize

        how, outcome = analyze_file(path, self.config, entries, self._parsed)
        self._count(path, how)
        if how:
            progress.current().advance()
        if isinstance(outcome, FileError):
            self.errors[path] = outcome
            return None
        if isinstance(outcome, FileSummary):
            return outcome, ()
        assert outcome.analysis is not None
        summary = summarize(outcome.analysis, outcome.parsed_text, self._parsed)
        self._trees.keep(path, outcome, worth_keeping(summary))  # the walk's contexts may come
        return summary, tuple(outcome.findings)

    def _count(self, path: str, how: str) -> None:
        if how == LIBCST:
            self.stats.parsed.append(path)
        elif how == CPYTHON:
            self.stats.from_ast.append(path)

    # --- findings ------------------------------------------------------------
    def _findings_key(self, path: str, info: FileInfo, entries: Sequence[EntryContext]) -> str:
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
        if key in self._ready:
            return list(self._ready.pop(key))
        cached = self.cache.get("findings", key)
        if isinstance(cached, tuple):
            self.stats.findings_cached += 1
            return list(cached)
        findings = self._entry_findings(path, entries)
        if isinstance(findings, FileError):
            return findings
        self.cache.put("findings", key, tuple(findings))
        return findings

    def prepare_findings(self, requests: Sequence[Tuple[str, Sequence[EntryContext]]]) -> None:
        """Parse, in a process pool when it pays, the files `findings(path, entries)` would parse.

        Those are the files with neither findings in memory or in the disk cache
        nor a kept parse tree. `findings` then returns what was parsed here;
        with no pool nothing happens, and `findings` parses them in turn.
        """
        todo: List[Tuple[str, Tuple[EntryContext, ...], str]] = []
        for path, entries in requests:
            info = self.info.get(path)
            if path in self.errors or info is None or path in self._trees or self._content(path, info) is None:
                continue
            entries = tuple(sorted(set(entries), key=repr))
            if not entries and path in self._own:
                continue
            key = self._findings_key(path, info, entries)
            if key not in self._ready and not self.cache.contains("findings", key):
                todo.append((path, entries, key))
        outcomes = self._parse_batch([(path, entries) for path, entries, _ in todo], summaries=False)
        for (path, _, key), parsed in zip(todo, outcomes or ()):
            outcome = self._commit(path, parsed)
            if outcome is not None:
                self.cache.put("findings", key, outcome[1])
                self._ready[key] = outcome[1]

    def _entry_findings(self, path: str, entries: Sequence[EntryContext]) -> Union[List[Finding], FileError]:
        reused = self._trees.findings(path, self.config, entries)
        if reused is not None:
            return reused
        parsed = self._parse(path, entries)
        if parsed is None:
            return self.errors.get(path, FileError(path, "cannot be read"))
        return list(parsed[1])


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _parse_job(job: _JobItem, memory: "Optional[Memory]") -> _Job:
    """`Loader._parse` in a pool worker: (how the file was read, (summary, findings) or the error, kept by).

    The summary is None unless asked for (the entry pass needs only findings).
    A worker keeps the tree of a file parsed for its summary, as the loader
    does (`kept.KeptTrees` in its `memory`, within `budget` bytes of source),
    and a findings job pinned to it reads that tree instead of parsing again.
    A file's CPython tree is read from the worker's memo of the passes over
    every file when they kept it there (`cpython_trees.kept_trees`).
    `memory` is None in the caller.
    """
    from amplint.project.summarize import summarize

    path, config, entries, want_summary, budget = job
    trees = None if memory is None else memory.setdefault("trees", KeptTrees(budget))
    if trees is not None and not want_summary:
        reused = trees.findings(path, config, entries)
        if reused is not None:
            return NOT_READ, (None, tuple(reused)), None
    how, outcome = analyze_file(path, config, entries, kept_trees(memory))
    if isinstance(outcome, FileError):
        return how, outcome, None
    if isinstance(outcome, FileSummary):
        return how, (outcome if want_summary else None, ()), None
    assert outcome.analysis is not None
    if not want_summary:
        return how, (None, tuple(outcome.findings)), None
    summary = summarize(outcome.analysis, outcome.parsed_text, kept_trees(memory))
    kept = trees is not None and trees.keep(path, outcome, worth_keeping(summary))
    return how, (summary, tuple(outcome.findings)), os.getpid() if kept else None


def cache_directory(paths: Sequence[str], top: str) -> str:
    """`$AMPLINT_CACHE_DIR`, else `.amplint_cache` in the project top."""
    return os.environ.get("AMPLINT_CACHE_DIR") or os.path.join(top, ".amplint_cache")
