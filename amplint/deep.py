"""Guards for pathological sources: what CPython itself refuses, and deep trees.

LibCST visits trees recursively, about three Python frames per tree level, so
valid code such as a 400-term sum `a + a + ... + a`, a 200-long method chain
or 150 nested calls exceeds Python's default recursion limit of 1000 and
raises `RecursionError`. `call_deep` reruns such work in a thread with a big
C stack and a raised recursion limit. Deeper still, LibCST's native parser
overflows the C stack (a segfault, not an exception) on nesting CPython
rejects anyway, e.g. 1,500 nested parentheses where CPython allows 200, or
takes minutes on a 20,000-term sum CPython refuses in milliseconds:
`python_parse` asks CPython's own parser first (about a tenth of LibCST's
parse time), so such files are reported, never handed to LibCST.

CPython's own limit is no rule to rely on. 3.9 and 3.10 build a tree of any
depth, and 3.13 about 10,000 levels, while LibCST's parse grows faster than the
square of a sum's length (measured: 1,000 terms 0.3 s, 2,000 terms 1.9 s,
4,000 terms 19 s). 3.11 and 3.12 refuse about 3,000 levels less three per
frame already on the stack, so a pool worker and the main process drew the
line at different sums (2,910 and 2,950 terms) and `--jobs` changed the output.
So `python_parse` measures the depth itself, on every version, and refuses
over MAX_TREE_DEPTH levels with one message, whichever of the two refuses.
"""
from __future__ import annotations

import _thread
import ast
import re
import sys
import threading
import warnings
from typing import Any, Callable, List, Optional, TypeVar, Union

from amplint.textlines import FSTRING_POSITIONS, TextLines

T = TypeVar("T")

DEEP_RECURSION_LIMIT = 60_000
# Levels from the Module (1) down to a leaf such as an expression's `Load` context. CPython 3.11 and 3.12
# build 2,500 levels from a stack up to about 160 frames deep (2,989 from a top-level call), so below this it
# never refuses first.
MAX_TREE_DEPTH = 2_500
TOO_DEEP = f"too deeply nested to parse (amplint reads up to {MAX_TREE_DEPTH:,} levels of nesting)"
_SLACK = 8  # a node nests at most as many levels below it as it spans characters, plus this
DEEP_STACK_BYTES = 512 * 1024 * 1024  # address space only: pages are touched as the stack grows
_DEEP_LOCK = threading.Lock()  # the recursion limit is process-wide: one deep call at a time


def python_parse(text: str) -> Union[ast.Module, str]:
    """CPython's tree of `text`, or why its parser refuses it, in its own words.

    The running interpreter is the judge, as for flake8's E999 and for the
    `compile()` that `--fix` runs on its output: LibCST accepts some code no
    Python 3 runs (`except E, e:`), and code for a newer Python than the one
    running amplint could never be verified after a fix anyway. The tree is
    not wasted: the import table is read from it (`names.import_table`).

    The answer is the file's, not the caller's: CPython's parser counts the
    frames already on the stack against its own limit, so a file first read
    deep in the project walk (a value followed through a long chain of
    questions) was refused with a tree 11 levels deep, and reported as too
    deeply nested for the whole run. A RecursionError is judged again from
    an empty stack, in a thread of its own (`_in_new_thread`).
    """
    try:
        return _judge(text)
    except RecursionError:
        return _in_new_thread(_judge_from_the_top, text)


def _judge_from_the_top(text: str) -> Union[ast.Module, str]:
    try:
        return _judge(text)
    except RecursionError:
        return TOO_DEEP


def _judge(text: str) -> Union[ast.Module, str]:
    """`python_parse` from this stack; a RecursionError is the caller's to judge."""
    try:
        with warnings.catch_warnings():  # "invalid escape sequence" and the like are the user's compiler's to say
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except MemoryError:
        return TOO_DEEP
    except SyntaxError as exc:  # IndentationError and TabError included
        return refusal(text, exc)
    except ValueError as exc:  # null bytes, before Python 3.12
        return f"syntax error: {exc}"
    if len(text) + _SLACK > MAX_TREE_DEPTH and deeper_than(tree, MAX_TREE_DEPTH, text):
        return TOO_DEEP
    return tree


def syntax_error(text: str) -> Optional[str]:
    """Why CPython refuses `text` (as `python_parse` says it), or None: for files no screen parses otherwise.

    A file with no probability word is never analysed, but a file that cannot be parsed is reported whatever
    it holds, as ruff and flake8 (E999) do. Nesting too deep to analyse is no error of the file: None.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<amplint>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        return None
    except SyntaxError as exc:
        return refusal(text, exc)
    except ValueError as exc:
        return f"syntax error: {exc}"
    return None


# Syntax a later Python accepts, by the line CPython refuses: (version, pattern, what it is, the start of the
# message an older CPython gives for it, "" for any).
_NEWER_SYNTAX = (
    ((3, 12), re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+[A-Za-z_]\w*\s*\["), "type parameters (PEP 695)", ""),
    ((3, 12), re.compile(r"^\s*type\s+[A-Za-z_]\w*\s*(?:\[.*\])?\s*="), "a `type` statement (PEP 695)", ""),
    # `f"{d["key"]}"`: the f-string's own quote inside its braces, which ended the string before 3.12.
    ((3, 12), re.compile(r"(?i)(?<![\w'\"])(?:f|rf|fr)(['\"])(?:(?!\1).)*?(?<!\{)\{(?!\{)[^}]*?\1.*?\}"),
     "its f-string's own quote inside the braces (PEP 701)", "f-string"),
    ((3, 11), re.compile(r"^\s*except\s*\*"), "`except*` (PEP 654)", ""),
    ((3, 10), re.compile(r"^\s*match\s+[^=]*:\s*(?:#.*)?$"), "a `match` statement (PEP 634)", ""),
)


def refusal(text: str, exc: SyntaxError) -> str:
    """CPython's reason in one line: a syntax error, or the newer Python a line needs (`class P[T]:` on 3.11).

    Syntax of a later Python is no error of the file: the message names the Python that reads it.
    """
    if not exc.lineno:  # e.g. "source code string cannot contain null bytes" (3.12+)
        return f"syntax error: {exc.msg}"
    lines = text.splitlines()
    line = lines[exc.lineno - 1] if 0 < exc.lineno <= len(lines) else ""
    for version, pattern, what, message in _NEWER_SYNTAX:
        if sys.version_info[:2] < version and exc.msg.startswith(message) and pattern.search(line):
            running = ".".join(map(str, sys.version_info[:2]))
            return (f"line {exc.lineno} uses {what}, which needs Python {version[0]}.{version[1]} or newer; "
                    f"amplint runs on Python {running} here: run it with a newer Python to check this file")
    where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
    return f"syntax error at {where}: {exc.msg}"


def deeper_than(tree: ast.AST, limit: int, text: str = "") -> bool:
    """Whether a path from `tree` down to a leaf has more than `limit` nodes, `tree` counted.

    Without recursion, since the tree may be deeper than the recursion limit.
    Each level of nesting takes at least a character of source, so a node that
    spans fewer characters than the levels left is passed over whole. A node
    on one line gives its width; `text`, the tree's source, gives the span of
    a node over several. So most functions are passed over whole, and the walk
    costs a small part of the parse. Before Python 3.11 the nodes inside
    an f-string may be misplaced, so their positions pass nothing over.
    """
    starts = TextLines(text).line_starts() if text else None
    stack = [(tree, 1, True)]
    while stack:
        node, depth, placed = stack.pop()  # placed: the node's position can be trusted
        if depth > limit:
            return True
        line = getattr(node, "lineno", None)
        if placed and line is not None:
            end = node.end_lineno  # type: ignore[attr-defined]
            # Characters spanned, at most: UTF-8 bytes on one line; from the start of the first line otherwise.
            span = (node.end_col_offset - node.col_offset if end == line  # type: ignore[attr-defined]
                    else None if starts is None else starts[end - 1] - starts[line - 1] + node.end_col_offset)
            if span is not None and depth + span + _SLACK <= limit:
                continue
        placed = placed and (FSTRING_POSITIONS or not isinstance(node, ast.JoinedStr))
        stack.extend((child, depth + 1, placed) for child in ast.iter_child_nodes(node))
    return False


def call_deep(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a thread with a 512 MiB stack and a recursion limit of 60,000.

    Exceptions propagate to the caller; `RecursionError` still means the tree is
    deeper than even this allows. The limit is raised before the thread starts,
    and it starts through `_thread` (`_in_new_thread`): `threading.Thread` takes
    Python frames, and a caller deep in the project walk had none left, so a
    file first read there was reported as too deeply nested to analyse (three
    of transformers' model files, in one run).
    """
    with _DEEP_LOCK:
        old_limit = sys.getrecursionlimit()
        old_stack = threading.stack_size()
        try:
            threading.stack_size(DEEP_STACK_BYTES)
        except (ValueError, RuntimeError):  # a platform without big thread stacks: no deeper than before
            return fn(*args, **kwargs)
        sys.setrecursionlimit(max(old_limit, DEEP_RECURSION_LIMIT))
        try:
            return _in_new_thread(fn, *args, **kwargs)
        finally:
            sys.setrecursionlimit(old_limit)
            threading.stack_size(old_stack)


def _in_new_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a new thread (its stack empty, its size `threading.stack_size`), awaited; its
    exception raised here. Started and awaited through `_thread`, whose calls take no Python frame: the caller
    may be deep in the project walk with none left to spare."""
    outcome: List[Any] = []
    done = _thread.allocate_lock()
    done.acquire()

    def target() -> None:
        try:
            outcome.append((True, fn(*args, **kwargs)))
        except BaseException as exc:  # raised again in the caller's thread
            outcome.append((False, exc))
        finally:
            done.release()

    _thread.start_new_thread(target, ())
    done.acquire()
    finished, value = outcome[0]
    if not finished:
        raise value
    return value  # type: ignore[no-any-return]
