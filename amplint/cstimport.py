"""Import LibCST with the code `dataclasses` writes for it compiled once per machine, not in every process.

LibCST's ~200 node classes are dataclasses. For each one `dataclasses` writes
the source of `__init__`, `__repr__`, `__eq__`, `__setattr__`... and compiles
it with `exec`, at every import: on Python 3.11 that is 978 compilations of
623 distinct texts, half of the 0.9 G instructions `import libcst` costs
(benchmarks/RESULTS.md), paid by every process that parses a file with LibCST,
once per pool worker. More than half of a one-file check's instructions go to
importing LibCST. Python keeps a module's bytecode in `__pycache__`, but not
this code.

`import_libcst` imports LibCST with the `exec` that `dataclasses` calls looking
up each source text in a table of compiled code objects kept in the user's
cache directory, compiling only texts it has not seen. The objects are those
`exec` would compile (same text, file name and flags), so the classes are the
same. Like Python's own bytecode cache, the table is read always and written
unless bytecode writing is off (`PYTHONDONTWRITEBYTECODE`, `-B`); a file that is
not the user's own, is writable by others, or does not read back is ignored.
`AMPLINT_NO_CACHE` concerns the project's summaries and findings, not this.

amplint's own modules define about a hundred dataclasses too, compiled the same
way at every command: 0.11 G instructions a cold `-j 1` project run, a tenth of
a one-file check's. The command line runs inside `own_classes_compiled_once`,
with a second, smaller table that a command which parses nothing with LibCST
reads alone. A block inside another uses its own table and gives the outer one
back, so LibCST's classes stay in LibCST's table. A pool's forked workers use
the table their parent read; what they compile there is not written back.
"""
from __future__ import annotations

import marshal
import os
import sys
from contextlib import contextmanager
from importlib.util import MAGIC_NUMBER
from types import CodeType
from typing import Any, ContextManager, Dict, Iterator, Optional

MAX_ENTRIES = 20_000  # a table grown past this (many LibCST versions) starts afresh: LibCST's own needs ~650
# Code objects are read back only by the interpreter that wrote them, at the same optimization level.
_KEY = f"{sys.implementation.cache_tag}-{MAGIC_NUMBER.hex()}-O{sys.flags.optimize}.marshal"
_FILE = f"dataclass-code-{_KEY}"  # LibCST's classes
OWN_FILE = f"own-dataclass-code-{_KEY}"  # amplint's own (`own_classes_compiled_once`), read by every command


def import_libcst() -> None:
    """Import LibCST, if no one has, with the dataclass code it needs taken from the table where it can be."""
    if "libcst" in sys.modules:
        return
    with compiled_once(cache_file()):
        import libcst  # noqa: F401


def own_classes_compiled_once() -> "ContextManager[None]":
    """`compiled_once` for amplint's own dataclasses, which the modules a command imports define (about a
    hundred, 0.1 G instructions to compile: a tenth of a one-file check). Its own table: LibCST's is
    larger, and a command that parses nothing with LibCST does not read it. Other packages' classes
    created meanwhile are compiled as usual, so the table holds amplint's alone."""
    return compiled_once(cache_file(OWN_FILE), "amplint")  # not torch's, say, which `verify` imports


def cache_file(name: str = _FILE) -> Optional[str]:
    """Where the table `name` lives: `amplint/` in the platform's per-user cache directory (None: no home)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
    elif sys.platform == "darwin":
        base = os.path.join(os.path.expanduser("~"), "Library", "Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(base):  # unset, or relative, which the XDG spec says to ignore
            base = os.path.join(os.path.expanduser("~"), ".cache")
    if not base or not os.path.isabs(base) or sys.implementation.cache_tag is None:  # no home; no bytecode
        return None
    return os.path.join(base, "amplint", name)


@contextmanager
def compiled_once(path: Optional[str], package: Optional[str] = None) -> Iterator[None]:
    """Run the block with `dataclasses` compiling each source text through the table at `path` (None: in memory).

    Only `dataclasses`' own calls to `exec` are answered from the table, and with `package` only for the
    classes of its modules (others are compiled as usual and not kept); if some other code already replaced
    that name there, nothing is changed. Inside another `compiled_once` block, this table serves the inner
    block and the outer one's serves again after it (LibCST imported during a command).
    """
    import dataclasses

    outer = vars(dataclasses).get("exec")
    if outer is not None and not getattr(outer, _OURS, False):
        yield
        return
    table = read_table(path)
    known = len(table)
    ours = _cached_exec(table, package)
    dataclasses.exec = ours  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if vars(dataclasses).get("exec") is ours:  # a second thread may have put its own in and out meanwhile
            if outer is None:
                del dataclasses.exec  # type: ignore[attr-defined]
            else:
                dataclasses.exec = outer  # type: ignore[attr-defined]
        if path is not None and len(table) > known and not sys.dont_write_bytecode:
            write_table(path, table)


_OURS = "amplint_compiled_once"  # marks the `exec` a `compiled_once` block put in


def _in_package(namespace: Any, package: str) -> bool:
    """Is `namespace` (what `dataclasses` passes as globals: the class's module's) a module of `package`?"""
    name = namespace.get("__name__", "") if isinstance(namespace, dict) else ""
    return name == package or name.startswith(package + ".")


def _cached_exec(table: Dict[str, CodeType], package: Optional[str]) -> Any:
    def cached_exec(source: Any, globals: Any = None, locals: Any = None) -> None:
        if type(source) is str and (package is None or _in_package(globals, package)):
            code = table.get(source)
            if code is None:  # what `exec(source)` compiles: no future flags from this module
                code = table[source] = compile(source, "<string>", "exec", dont_inherit=True)
            source = code
        exec(source, globals, locals)

    setattr(cached_exec, _OURS, True)
    return cached_exec


def read_table(path: Optional[str]) -> Dict[str, CodeType]:
    """The table at `path`; empty when there is none, or it is not this user's alone, or it does not read back."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as handle:
            if not _private(os.fstat(handle.fileno())):
                return {}
            table = marshal.loads(handle.read())  # `marshal.load` reads a file piece by piece: 8x slower
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict) or len(table) > MAX_ENTRIES:
        return {}
    return {text: code for text, code in table.items() if type(text) is str and type(code) is CodeType}


def _private(stat: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (POSIX): code in it is run."""
    getuid = getattr(os, "getuid", None)
    if getuid is None:
        return True
    return stat.st_uid == getuid() and not stat.st_mode & 0o022


def write_table(path: str, table: Dict[str, CodeType]) -> None:
    """Replace the table at `path` at once (another process may read or write it meanwhile); errors are ignored."""
    from amplint.files import replace_file  # not at import: the command line imports this module first

    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        replace_file(path, marshal.dumps(table), ".dataclass-code-")
    except (OSError, ValueError):
        pass
