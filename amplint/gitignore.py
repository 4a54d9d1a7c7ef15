"""Which paths git ignores, so that discovery skips them as ruff does (`respect-gitignore`).

A checkout's ignored folders (`benchmarks/.work/`, a dataset, a vendored tree) can hold tens of thousands of
Python files that are not the project's code: walking and indexing them cost minutes and gigabytes. Git's own
rules say what they are, so they are read from the same places git reads them: `.gitignore` in every directory
from the repository root (the folder holding `.git`, a directory or a worktree's file) down to the path,
`.git/info/exclude`, and the user's global excludes file (`core.excludesFile` in git's configuration, by default
`$XDG_CONFIG_HOME/git/ignore`; `gitconfig` reads it, includes followed). With `core.ignorecase` every pattern
matches without case. Outside a repository nothing is ignored (ruff's `ignore` crate with `require_git`).

The patterns are compiled by `pathspec` (`GitIgnoreSpec`); precedence is git's, done here: the last matching
line of a file wins, a deeper `.gitignore` wins over a shallower one, then `info/exclude`, then the global
file, and a pattern
counts only when it matches the path itself. pathspec also lets a pattern match through a parent folder
(`sub/` matches `sub/x.py`); that is dropped, because the caller asks about each folder before the paths in
it and never enters an ignored one, which is how git keeps a file under an excluded folder excluded.
"""
from __future__ import annotations

import os
import re
from typing import Dict, Optional, Tuple

from pathspec import GitIgnoreSpec
from pathspec.pattern import RegexPattern

from amplint import gitconfig
from amplint.witness import Witness, noted

_DIR_MARK = "ps_d"  # the group pathspec's gitignore regexes give the `/` that ends a folder's name

Rules = Tuple[RegexPattern, ...]


class GitIgnore:
    """The ignore rules one walk reads, each `.gitignore` parsed once: one object per walk, no global state."""

    def __init__(self, witness: Optional[Witness] = None) -> None:
        self._witness = witness  # notes each file read and each `.git` looked for (`amplint.witness`)
        self._roots: Dict[str, Optional[str]] = {}  # directory -> its repository root (None: not in one)
        self._rules: Dict[Tuple[str, bool], Rules] = {}  # (ignore file, without case) -> its patterns
        self._excludes: Dict[str, Tuple[Tuple[str, ...], bool]] = {}  # repository root -> (`info/exclude` and
        # the global file, `core.ignorecase`)

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Does git ignore `path` itself? Its folders are the caller's to ask about first (see the module)."""
        full = os.path.abspath(path)
        directory = os.path.dirname(full)
        root = self._root(directory)
        if root is None or full == root:
            return False
        if root not in self._excludes:
            self._excludes[root] = self._excludes_of(root)
        excludes, fold = self._excludes[root]
        while True:  # deepest .gitignore first: the first that has a say decides
            verdict = _verdict(self._read(os.path.join(directory, ".gitignore"), fold), full, directory, is_dir)
            if verdict is not None:
                return verdict
            if directory == root or os.path.dirname(directory) == directory:
                break
            directory = os.path.dirname(directory)
        for each in excludes:
            verdict = _verdict(self._read(each, fold), full, root, is_dir)
            if verdict is not None:
                return verdict
        return False

    def _excludes_of(self, root: str) -> Tuple[Tuple[str, ...], bool]:
        """`info/exclude` and the global excludes file of the repository at `root`, and whether its patterns
        ignore case (`core.ignorecase`)."""
        git = _git_dir(root)
        if self._witness is not None and os.path.isfile(os.path.join(root, ".git")):  # a worktree's file
            noted(self._witness, os.path.join(root, ".git"))
            noted(self._witness, os.path.join(git, "commondir"))
        found = gitconfig.settings(git, root, lambda path: noted(self._witness, path))
        return (os.path.join(git, "info", "exclude"), *found.excludes), found.ignorecase

    def _root(self, directory: str) -> Optional[str]:
        """The nearest folder at or above `directory` holding `.git` (a nested repository starts its own rules)."""
        if directory not in self._roots:
            parent = os.path.dirname(directory)
            if self._witness is not None:
                self._witness.kind(os.path.join(directory, ".git"))
            if os.path.exists(os.path.join(directory, ".git")):
                self._roots[directory] = directory
            else:
                self._roots[directory] = None if parent == directory else self._root(parent)
        return self._roots[directory]

    def _read(self, path: str, fold: bool) -> Rules:
        if (path, fold) not in self._rules:
            noted(self._witness, path)
            self._rules[(path, fold)] = _parse(path, fold)
        return self._rules[(path, fold)]


def _parse(path: str, fold: bool = False) -> Rules:
    """The patterns of one ignore file; a missing or unreadable one has none, and a line git would drop (a bad
    range such as `[z-a]`) is dropped alone, so one typo does not switch the file off."""
    try:
        with open(path, "rb") as handle:
            lines = handle.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return ()
    patterns = []
    for line in lines:
        if line.rstrip().endswith("/**/"):  # pathspec reads `a/**/` as `a/`; git: the folders inside `a`
            line = line.rstrip() + "*/"
        try:
            patterns.extend(GitIgnoreSpec.from_lines([line]).patterns)
        except ValueError:  # pathspec's GitIgnorePatternError
            continue
    kept = tuple(p for p in patterns if isinstance(p, RegexPattern) and p.include is not None)
    if fold:  # `core.ignorecase`: git matches the patterns without case
        kept = tuple(RegexPattern(re.compile(p.regex.pattern, re.IGNORECASE), p.include) for p in kept)
    return kept


def _verdict(rules: Rules, full: str, base: str, is_dir: bool) -> Optional[bool]:
    """True (ignored) or False (re-included by `!`) from the last of `rules` that names `full`; None: none does."""
    if not rules:
        return None
    relative = full[len(base):].lstrip(os.sep)  # `base` is a folder above `full`, both absolute
    query = relative.replace(os.sep, "/") + ("/" if is_dir else "")
    for pattern in reversed(rules):
        if _names(pattern, query, is_dir):
            return bool(pattern.include)
    return None


def _names(pattern: RegexPattern, query: str, is_dir: bool) -> bool:
    """Does `pattern` match `query` itself, rather than only a folder above it?

    A pattern without pathspec's folder mark holds every path below some point (`*`, `a/**`): it names a folder
    strictly below that point (`a/**` does not name `a/`), so the folder is asked without its last `/`. Any
    other pattern names `query` when a match spans all of it and its folder mark, if any, is `query`'s end.
    """
    regex = pattern.regex
    if regex is None:
        return False
    if _DIR_MARK not in regex.groupindex:
        return regex.search(query[:-1] if is_dir else query) is not None
    for match in (regex.fullmatch(query), *regex.finditer(query)):  # finditer: the unanchored mark of `*/`
        if match is not None and match.end() == len(query) and match.end(_DIR_MARK) in (-1, len(query)):
            return True
    return False


def _git_dir(root: str) -> str:
    """The git folder of the repository at `root`, also when `.git` is a file (`gitdir: ...`: a worktree, whose
    `commondir` leads to the shared folder, or a submodule)."""
    git = os.path.join(root, ".git")
    if os.path.isfile(git):
        try:
            with open(git, encoding="utf-8", errors="replace") as handle:
                first = handle.readline().strip()
        except OSError:
            first = ""
        if first.startswith("gitdir:"):
            git = os.path.join(root, first[len("gitdir:"):].strip())
            try:
                with open(os.path.join(git, "commondir"), encoding="utf-8", errors="replace") as handle:
                    git = os.path.join(git, handle.readline().strip())
            except OSError:
                pass
    return git
