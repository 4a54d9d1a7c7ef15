"""One project file read for its summary or findings: from CPython's tree when that says all, else with LibCST.

A file with no site and no distribution has no findings of its own, and its
summary is what `facts.astcalls` reads from CPython's tree
(`summarize.read_summary`); any other file goes through the pipeline,
which parses it with LibCST.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence, Tuple, Union

from amplint.config import Config
from amplint.files import read_source
from amplint.identifiers import analysis_text
from amplint.model import FileError
from amplint.project.summary import EntryContext, FileSummary

if TYPE_CHECKING:  # pragma: no cover
    from amplint.cpython_trees import CPythonTrees
    from amplint.source_analysis import SourceAnalysis

# How a file was read: not at all (an error), with LibCST, or with CPython's `ast` only.
NOT_READ, LIBCST, CPYTHON = "", "libcst", "ast"

# What reading a summary from CPython's tree imports, here and in every worker. A project run imports them
# before its pool forks (`parallel.RunPool`); imported after the fork, each process imported them on its own.
SUMMARY_READERS = ("amplint.project.summarize", "amplint.facts.astcalls")


def analyze_file(
    path: str, config: Config, entries: Sequence[EntryContext], trees: "Optional[CPythonTrees]" = None
) -> "Tuple[str, Union[SourceAnalysis, FileSummary, FileError]]":
    """Read `path` and analyse it in project mode: (how it was read, the analysis, its summary or the error).

    With no entries, the summary of a file with no site or distribution, with no findings of its own.
    `trees`: the run's CPython trees, when the file may have been parsed already in this process.
    """
    from amplint.pipeline import analyze_source
    from amplint.project.summarize import read_summary

    source = read_source(path)
    if isinstance(source, FileError):
        return NOT_READ, source
    # The text as the text pass read it (`ｌｏｇ_prob` is `log_prob`), and the tree it kept: `analyze_source` reads it.
    quick, read = read_summary(analysis_text(source.text), config, trees) if not entries else (None, None)
    if quick is not None:
        return CPYTHON, quick
    tree, imports = read if read is not None else (None, None)
    return LIBCST, analyze_source(source.text, path, config, entries=entries, project=True, imports=imports,
                                  trees=trees, tree=tree)
