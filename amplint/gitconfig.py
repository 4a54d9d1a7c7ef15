"""The settings of git's configuration that discovery needs: where the global excludes file is, and whether
patterns ignore case.

Git reads `core.excludesFile` from its system, global (`$XDG_CONFIG_HOME/git/config`, then `~/.gitconfig`) and
repository (`.git/config`) files, the last one that sets it winning; unset, the file is
`$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`). `core.ignorecase` (which `git init` sets on a
case-insensitive file system) makes the ignore patterns match without case. Running `git config` would start
a process per repository and need git installed, so the files are read here, as ruff's `ignore` crate reads
them, with their includes: `[include] path = ...`, and `[includeIf "gitdir:..."]` (`gitdir/i:`) and
`[includeIf "onbranch:..."]` whose condition holds, each read where it stands, a relative path from the
including file's folder, up to git's depth of 10. Not read: the `hasconfig:` condition and command-line `-c`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Iterator, List, Optional, Tuple

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}
MAX_INCLUDE_DEPTH = 10  # git refuses to read deeper ("exceeded maximum include depth")


Note = Callable[[str], None]  # told each file before it is read (`amplint.witness`)


@dataclass(frozen=True)
class GitSettings:
    """What discovery reads of one repository's configuration."""

    excludes: Tuple[str, ...]  # the global excludes file, if any
    ignorecase: bool  # `core.ignorecase`


def settings(git_dir: str, root: str, note: Note = lambda path: None) -> GitSettings:
    """The settings git reads for the repository at `root` (with its git folder `git_dir`). `note` is told each
    file before it is read: the configuration files, the ones they include, and `HEAD` for `onbranch:`."""
    excludes: Optional[str] = None
    ignorecase = False
    for config in config_files(git_dir):
        for section, key, value in _entries(config, git_dir, note, 0):
            if section == "core" and key == "excludesfile":
                excludes = value
            elif section == "core" and key == "ignorecase":
                ignorecase = _true(value)
    return GitSettings(_excludes_path(excludes, root), ignorecase)


def _excludes_path(setting: Optional[str], root: str) -> Tuple[str, ...]:
    if setting is None:
        return (os.path.join(_xdg_home(), "git", "ignore"),)
    if not setting:
        return ()
    path = os.path.expanduser(setting)
    return (path if os.path.isabs(path) else os.path.join(root, path),)


def config_files(git_dir: str) -> List[str]:
    """Git's configuration files, lowest precedence first, as git chooses them from its environment."""
    files: List[str] = []
    if not _true(os.environ.get("GIT_CONFIG_NOSYSTEM", "")):
        files.append(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")
    if os.environ.get("GIT_CONFIG_GLOBAL"):
        files.append(os.environ["GIT_CONFIG_GLOBAL"])
    else:
        files += [os.path.join(_xdg_home(), "git", "config"), os.path.expanduser("~/.gitconfig")]
    files.append(os.path.join(git_dir, "config"))
    return files


def setting_in(path: str, section: str, key: str) -> Optional[str]:
    """The last value of `section.key` in the configuration file at `path` (names compared as git does, without
    case), its includes not followed; None if the file is missing or does not set it. A key with no `=` is
    git's boolean true."""
    found = None
    for entry in _lines(path):
        if entry[0] == section and entry[2] == key:
            found = entry[3]
    return found


def _entries(path: str, git_dir: str, note: Note, depth: int) -> Iterator[Tuple[str, str, str]]:
    """(section, key, value) of each setting of the file at `path`, an included file's where it is included."""
    note(path)
    for section, subsection, key, value in _lines(path):
        if key == "path" and depth < MAX_INCLUDE_DEPTH and value and (
                section == "include" and subsection is None or
                section == "includeif" and subsection is not None and _holds(subsection, path, git_dir, note)):
            yield from _entries(_relative_to(value, path), git_dir, note, depth + 1)
        else:
            yield section, key, value


def _lines(path: str) -> Iterator[Tuple[str, Optional[str], str, str]]:
    """(section, subsection, key, value) of each setting in one file, names as git compares them."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return
    section, subsection = "", None
    for line in lines:
        header = _SECTION.match(line)
        if header is not None:
            section, line = header.group(1).lower(), header.group(3)
            subsection = None if header.group(2) is None else re.sub(r"\\(.)", r"\1", header.group(2))
        entry = _KEY.match(line)
        if entry is not None and section:
            yield section, subsection, entry.group(1).lower(), "true" if entry.group(2) is None else _value(
                entry.group(2))


def _relative_to(value: str, config: str) -> str:
    """An include's path: `~/` expanded, a relative one from the folder of the file that includes it."""
    path = os.path.expanduser(value)
    return path if os.path.isabs(path) else os.path.join(os.path.dirname(config), path)


def _holds(condition: str, config: str, git_dir: str, note: Note) -> bool:
    """Does an `includeIf` condition hold for this repository? (`hasconfig:`, and any other, does not.)"""
    kind, _, pattern = condition.partition(":")
    if kind in ("gitdir", "gitdir/i"):
        if pattern.startswith("./"):
            pattern = os.path.join(os.path.dirname(config), pattern[2:])
        pattern = os.path.expanduser(pattern) if pattern.startswith("~/") else pattern
        if not pattern.startswith("/"):
            pattern = "**/" + pattern
        pattern = pattern + "**" if pattern.endswith("/") else pattern
        places = {os.path.abspath(git_dir), os.path.realpath(git_dir)}
        return any(_wildmatch(pattern, place, kind == "gitdir/i") for place in places)
    if kind == "onbranch":
        head = os.path.join(git_dir, "HEAD")
        note(head)
        branch = _branch(head)
        return branch is not None and _wildmatch(pattern + "**" if pattern.endswith("/") else pattern, branch, False)
    return False


def _branch(head: str) -> Optional[str]:
    """The branch `HEAD` names (`ref: refs/heads/main`), None when detached or unreadable."""
    try:
        with open(head, encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip()
    except OSError:
        return None
    prefix = "ref: refs/heads/"
    return first[len(prefix):] if first.startswith(prefix) else None


def _wildmatch(pattern: str, text: str, fold: bool) -> bool:
    """Git's wildmatch with WM_PATHNAME: `*` and `?` stop at `/`, `**/` spans folders, `[...]` a class."""
    out, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
            continue
        if pattern.startswith("**", index):
            out.append(".*")
            index += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and "]" in pattern[index + 2:]:
            close = pattern.index("]", index + 2)
            body = pattern[index + 1:close]
            body = "^" + body[1:] if body[:1] in ("!", "^") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            index = close + 1
            continue
        else:
            out.append(re.escape(char))
        index += 1
    return re.fullmatch("".join(out), text, re.IGNORECASE if fold else 0) is not None


def _value(raw: str) -> str:
    """A value as git reads it: quotes removed, escapes read, a `#` or `;` outside quotes starts a comment,
    and unquoted space at either end dropped."""
    out: List[str] = []
    quoted, kept = False, 0  # kept: the length `out` keeps if what follows is trailing space
    index = 0
    while index < len(raw):
        char = raw[index]
        if char == "\\" and index + 1 < len(raw):
            out.append(_ESCAPES.get(raw[index + 1], raw[index + 1]))
            index += 2
            kept = len(out)
            continue
        if char == '"':
            quoted = not quoted
        elif not quoted and char in "#;":
            break
        else:
            out.append(char)
            if quoted or not char.isspace():
                kept = len(out)
        index += 1
    return "".join(out[:kept])


def _xdg_home() -> str:
    return os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")


def _true(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")
