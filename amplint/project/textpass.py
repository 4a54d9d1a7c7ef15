"""The text pass of a project run: every file read once, for cheap flags and indexes, and none parsed for it.

What it finds decides the rest of the run: the region files parsed up front,
the candidate files the walk may lead to, and the indexes name resolution
reads without parsing (which files subclass a name, define a function, write
`self.<attr> =`). Files that single-file mode would analyse, and region
files, keep the CPython tree the screen parsed (`cpython_trees`), where the
summaries pass will read it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence, Set, Tuple, Union

from amplint.config import Config
from amplint.cpython_trees import CPythonTrees, worker_trees
from amplint.files import read_source
from amplint.model import FileError
from amplint.pipeline import will_parse
from amplint.project import prefilter

if TYPE_CHECKING:  # pragma: no cover
    from amplint.parallel import RunPool
    from amplint.workers import Memory

# The text pass reads ~50 MB/s (0.35 ms a file in the benchmark corpus): a pool pays from ~1,000 files.
SCAN_POOL_FILES = 1000

# One file's result: flags, `single`, class bases named, defs, `self.<attr> =` names, the names imported and
# the classes defined.
_Scanned = Tuple[prefilter.Flags, bool, Tuple[str, ...], Tuple[str, ...], Tuple[str, ...], Tuple[str, ...],
                 Tuple[str, ...]]


@dataclass
class FileInfo:
    flags: prefilter.Flags
    single: bool  # single-file mode would parse it (`pipeline.will_parse`)
    imported: Tuple[str, ...] = ()  # `prefilter.imported_names`
    classes: Tuple[str, ...] = ()  # the names of its `class` lines
    content: str = ""  # sha256 of the decoded text, computed when a cache key needs it

    @property
    def candidate(self) -> bool:
        return self.flags.candidate


@dataclass
class TextPass:
    """What the text pass found, by file and by name."""

    info: Dict[str, FileInfo] = field(default_factory=dict)
    errors: Dict[str, FileError] = field(default_factory=dict)
    holders: Dict[str, int] = field(default_factory=dict)  # path -> the pool worker that read it
    subclasses: Dict[str, Set[str]] = field(default_factory=dict)  # base name -> files with a class line naming it
    defines: Dict[str, Set[str]] = field(default_factory=dict)  # function name -> files with a `def` of it
    attributes: Set[str] = field(default_factory=set)  # every `self.<attr> =` name


def read_texts(files: Sequence[str], trees: CPythonTrees, config: Config, pool: "RunPool") -> TextPass:
    """Read every file once for the text tests and the indexes (no parsing of its own).

    A large project is read in chunks of `parallel.FILE_CHUNK` files over the run's pool (from
    SCAN_POOL_FILES files); the chunks' results are merged in file order, so the indexes are the same as
    read here.
    """
    from amplint import parallel

    found = TextPass()
    scanned = parallel.map_chunks(_scan_job, files, trees, (config,), pool=pool, jobs=config.jobs,
                                  min_files=SCAN_POOL_FILES)
    for holder, chunk in scanned:
        for path, outcome in chunk:
            if isinstance(outcome, FileError):
                found.errors[path] = outcome
                continue
            flags, single, bases, names, attributes, imported, classes = outcome
            if holder is not None:
                found.holders[path] = holder
            found.info[path] = FileInfo(flags, single, imported, classes)
            for base in bases:
                found.subclasses.setdefault(base, set()).add(path)
            for name in names:
                found.defines.setdefault(name, set()).add(path)
            found.attributes.update(attributes)
    return found


def _scan_job(
    job: Tuple[Sequence[str], CPythonTrees, Config], memory: "Optional[Memory]" = None
) -> Tuple[Optional[int], List[Tuple[str, Union[_Scanned, FileError]]]]:
    """The text pass over a chunk of files: the pool worker that keeps their trees (its pid; None here), and
    each file's result."""
    paths, sent, config = job
    parsed = worker_trees(memory, sent)
    out: List[Tuple[str, Union[_Scanned, FileError]]] = []
    for path in paths:
        source = read_source(path)
        if isinstance(source, FileError):
            out.append((path, source))
            continue
        text = source.text
        classes = prefilter.class_bases(text) if "class" in text else []
        flags = prefilter.flags(text, config.extend_autocast, config.extend_distributions)
        single = will_parse(text, config, parsed)
        if not (single or flags.region):
            parsed.forget(text)  # not a region file (`Loader.region_files`): no summary of it comes next
        out.append((path, (
            flags,
            single,
            tuple(base for _, names in classes for base in names),
            tuple(prefilter.defined_names(text)),
            tuple(prefilter.assigned_attributes(text)) if "self." in text else (),
            tuple(prefilter.imported_names(text)) if "import" in text else (),
            tuple(name for name, _ in classes),
        )))
    return (None if memory is None else os.getpid()), out
