"""The one setting of git's configuration that discovery needs: where the user's global excludes file is.

Git reads `core.excludesFile` from its system, global (`$XDG_CONFIG_HOME/git/config`, then `~/.gitconfig`) and
repository (`.git/config`) files, the last one that sets it winning; unset, the file is
`$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`). Running `git config` for it would start a process per
repository and need git installed, so the files are read here, as ruff's `ignore` crate reads them. What is not
read: `[include]` and `[includeIf]` (a setting only an included file makes is missed) and command-line `-c`.
"""
from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]\s*(.*)$')
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}


def excludes_files(git_dir: str, root: str) -> Tuple[str, ...]:
    """The global excludes file git reads for the repository at `root` (with its git folder `git_dir`), if any."""
    setting: Optional[str] = None
    for config in config_files(git_dir):
        found = setting_in(config, "core", "excludesfile")
        if found is not None:
            setting = found
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
    case); None if the file is missing or does not set it. A key with no `=` is git's boolean true."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    current, value = "", None
    for line in lines:
        header = _SECTION.match(line)
        if header is not None:
            current, line = header.group(1).lower(), header.group(2)
        entry = _KEY.match(line)
        if entry is not None and current == section and entry.group(1).lower() == key:
            value = "true" if entry.group(2) is None else _value(entry.group(2))
    return value


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
