"""The text pass of a project run: every file read once, for cheap flags and indexes, and none parsed for it.

What it finds decides the rest of the run: the region files parsed up front,
the candidate files the walk may lead to, and the indexes name resolution
reads without parsing (which files subclass a name, define a function, write
`self.<attr> =`). Files that single-file mode would analyse, and region
files, keep the CPython tree the screen parsed (`cpython_trees`), where the
summaries pass will read it; read in this process, every file keeps its tree, for the shapes and the flow.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple, Union

from amplint.config import Config
from amplint.cpython_trees import CPythonTrees, worker_trees
from amplint.files import read_bytes, source_from
from amplint.identifiers import analysis_text
from amplint.model import FileError
from amplint.pipeline import will_parse
from amplint.project.cache import held, pass_work, recall, shares
from amplint.project import prefilter
from amplint.project.flowtrees import may_call_getattr
from amplint.project.shape import FileShape, file_shape

if TYPE_CHECKING:  # pragma: no cover
    from amplint.parallel import RunPool
    from amplint.project.cache import Known, PassCache
    from amplint.workers import Memory

# The text pass reads ~50 MB/s (0.35 ms a file in the benchmark corpus): a pool pays from ~1,000 files.
SCAN_POOL_FILES = 1000

# What the text says: flags, `single`, class bases named, defs, `self.<attr> =` names, the names imported, the
# classes defined, the names used as constructing a class (`prefilter.used_names`), whether a call may run
# what `getattr` gives (`flowtrees.may_call_getattr`) and the attributes stored on owners other than `self`
# (`policy.head = ...`: `prefilter.stored_attributes`). It depends only on the text and the configured autocast
# and distribution names: the disk cache keeps it, as `_KIND`.
_Text = Tuple[prefilter.Flags, bool, Tuple[str, ...], Tuple[str, ...], Tuple[str, ...], Tuple[str, ...],
              Tuple[str, ...], Tuple[str, ...], bool, Tuple[str, ...]]
# And the content digest (None with no cache), and the file's shape when a pool worker parsed it (`_scan_job`).
_Scanned = Tuple[_Text, Optional[str], "Optional[FileShape]"]
_KIND = "scan"


@dataclass
class FileInfo:
    flags: prefilter.Flags
    single: bool  # single-file mode would parse it (`pipeline.will_parse`)
    imported: Tuple[str, ...] = ()  # `prefilter.imported_names`
    classes: Tuple[str, ...] = ()  # the names of its `class` lines
    content: str = ""  # sha256 of the decoded text, computed when a cache key needs it
    calls_getattr: bool = True  # may call what `getattr` gives (`flowtrees.may_call_getattr`)

    @property
    def candidate(self) -> bool:
        return self.flags.candidate


@dataclass
class TextPass:
    """What the text pass found, by file and by name."""

    info: Dict[str, FileInfo] = field(default_factory=dict)
    errors: Dict[str, FileError] = field(default_factory=dict)
    holders: Dict[str, int] = field(default_factory=dict)  # path -> the pool worker that read it
    shapes: "Dict[str, FileShape]" = field(default_factory=dict)  # path -> its shape, made by the worker that read it
    subclasses: Dict[str, Set[str]] = field(default_factory=dict)  # base name -> files with a class line naming it
    defines: Dict[str, Set[str]] = field(default_factory=dict)  # function name -> files with a `def` of it
    attributes: Set[str] = field(default_factory=set)  # every `self.<attr> =` name
    stores: Dict[str, Set[str]] = field(default_factory=dict)  # attr -> files with an `owner.attr =`, owner not self
    uses: Set[str] = field(default_factory=set)  # every name some file uses as constructing a class


def read_texts(files: Sequence[str], trees: CPythonTrees, config: Config, pool: "RunPool",
               cache: "Optional[PassCache]" = None) -> TextPass:
    """Read every file once for the text tests and the indexes (no parsing of its own but `will_parse`'s).

    A large project is read in chunks of `parallel.FILE_CHUNK` files over the run's pool (from
    SCAN_POOL_FILES files); the chunks' results are merged in file order, so the indexes are the same as
    read here. `cache` keeps what was read of each file by its content: a warm run tests no file, and reads
    none that the spellings pass read unchanged in this process (`CPythonTrees.digest_unchanged`).
    """
    from amplint import parallel

    options = _options(config)
    known = cache.load(_KIND, *options) if cache is not None else None
    found = TextPass()
    scanned = parallel.map_chunks(_scan_job, files, trees, (config,), pool=pool, jobs=config.jobs,
                                  min_files=SCAN_POOL_FILES, each=shares(known), work=pass_work(files, known))
    read: Known = {}
    for holder, chunk in scanned:
        for path, outcome in chunk:
            if isinstance(outcome, FileError):
                found.errors[path] = outcome
                continue
            text, content, shaped = outcome
            flags, single, bases, names, attributes, imported, classes, uses, calls_getattr, stored = text
            if holder is not None:
                found.holders[path] = holder
            if shaped is not None:
                found.shapes[path] = shaped
            found.info[path] = FileInfo(flags, single, imported, classes, content or "", calls_getattr)
            if content is not None:
                read[path] = (content, text)
            for base in bases:
                found.subclasses.setdefault(base, set()).add(path)
            for name in names:
                found.defines.setdefault(name, set()).add(path)
            found.attributes.update(attributes)
            for attr in stored:
                found.stores.setdefault(attr, set()).add(path)
            found.uses.update(uses)
    if cache is not None:
        cache.save(_KIND, read, known, *options)
    return found


def _options(config: Config) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    """What the text tests read of the configuration: the configured autocast and distribution names."""
    return tuple(config.extend_autocast), tuple(config.extend_distributions)


def _scan_job(
    job: Tuple[Sequence[str], CPythonTrees, Config, "Optional[Known]"], memory: "Optional[Memory]" = None
) -> Tuple[Optional[int], List[Tuple[str, Union[_Scanned, FileError]]]]:
    """The text pass over a chunk of files: the pool worker that keeps their trees (its pid; None here), and
    each file's result. `known`: the cache's results for these files, by path (None: no cache)."""
    paths, sent, config, known = job
    parsed = worker_trees(memory, sent)
    out: List[Tuple[str, Union[_Scanned, FileError]]] = []
    for path in paths:
        if known and path in known:  # the spellings pass read it here: unchanged, it is not read again
            content = parsed.digest_unchanged(path)
            said = None if content is None else held(known, path, content, _is_text)
            if said is not None:
                out.append((path, (said, content, None)))
                continue
        data = read_bytes(path)
        if isinstance(data, FileError):
            out.append((path, data))
            continue
        content, said = recall(known, path, data, _is_text)
        shaped = None
        if said is None:  # not in the cache: decoded and read (a warm run decodes nothing)
            source = source_from(path, data, content)
            if isinstance(source, FileError):
                out.append((path, source))
                continue
            text = analysis_text(source.text)  # `class Ｍｏｄｅｌ` defines `Model`: the tree the summary reads
            said = _scan(text, config, parsed)
            if memory is not None:
                # This process keeps every tree, for the shapes and the value flow that read most files; a
                # worker's small memo keeps those its summaries will read, and sends each file's shape instead.
                tree = parsed.kept(text)
                shaped = None if tree is None else file_shape(*tree)
                if not (said[1] or said[0].region):
                    parsed.forget(text)
        out.append((path, (said, content, shaped)))
    return (None if memory is None else os.getpid()), out


def _scan(text: str, config: Config, parsed: CPythonTrees) -> _Text:
    """One file's result, from its text as the analysis reads it (`identifiers.analysis_text`), and CPython's tree
    (for `will_parse`; kept in `parsed` for the readers after this pass)."""
    classes = prefilter.class_bases(text) if "class" in text else []
    single = will_parse(text, config, parsed)
    return (
        prefilter.flags(text, config.extend_autocast, config.names_a_distribution),
        single,
        tuple(base for _, names in classes for base in names),
        tuple(prefilter.defined_names(text)),
        tuple(prefilter.assigned_attributes(text)) if "self." in text else (),
        tuple(prefilter.imported_names(text)) if "import" in text else (),
        tuple(name for name, _ in classes),
        tuple(sorted(prefilter.used_names(text))),
        "getattr" in text and _calls_getattr(text, parsed),
        tuple(prefilter.stored_attributes(text)),
    )


def _calls_getattr(text: str, parsed: CPythonTrees) -> bool:
    """`flowtrees.may_call_getattr` of the tree `will_parse` kept; True (unknown) when it kept none."""
    tree = parsed.kept(text)
    return tree is None or may_call_getattr(tree[0])


def _is_text(value: object) -> bool:
    """Is a cached value a `_Text`? (The codec checks each class's fields; a tuple's shape is checked here.)"""
    return (isinstance(value, tuple) and len(value) == 10 and isinstance(value[0], prefilter.Flags)
            and isinstance(value[1], bool) and isinstance(value[8], bool)
            and all(isinstance(names, tuple) and all(isinstance(name, str) for name in names)
                    for names in (*value[2:8], value[9])))
