"""Project helpers that open an autocast region for their caller, read from CPython's tree of their file.

    def amp_ctx():
        return torch.autocast("cpu", dtype=torch.float16)

    class Model:
        def maybe_autocast(self, dtype=torch.float16):
            if self.device != torch.device("cpu"):
                return torch.cuda.amp.autocast(dtype=dtype)
            return contextlib.nullcontext()

    @contextlib.contextmanager
    def mixed():
        with torch.autocast("cuda", dtype=torch.float16):
            yield

`with amp_ctx():`, `with self.maybe_autocast():` and `with mixed():` are regions, and which one is decided
where the helper is written: its autocast call's arguments, a parameter read at its default. A return that is
not autocast (`nullcontext()`) is the branch where the region is off, which a flag decides at run time, as for
`autocast(enabled=flag)`. The caller is matched by name, as `spellings` matches the project's other aliases:
a module function by its name, a method as `self.<name>`.
"""
from __future__ import annotations

import ast
from typing import Callable, Iterator, List, Optional, Tuple

from amplint.autocast_names import AUTOCAST_NAMES
from amplint.facts.astmathenv import parameters
from amplint.facts.astnodes import Arg, call_args
from amplint.facts.astregions import Unsure, factory_of, region_spec
from amplint.model import RegionInfo
from amplint.names import ImportTable, ast_qualnames
from amplint.project.flowtrees import own_nodes

CONTEXT_MANAGERS = frozenset({"contextlib.contextmanager", "contextlib.asynccontextmanager"})


def helper_regions(tree: ast.Module, imports: ImportTable, text: str) -> Iterator[Tuple[str, str, int, RegionInfo]]:
    """(name as callers write it, the autocast it calls, the helper's line, the region it opens) of each helper
    in the file: module functions, and methods as `self.<name>`."""
    source = _source(text)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found = _opens(node, imports, source)
            if found is not None:
                yield (node.name, *found)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found = _opens(item, imports, source)
                    if found is not None:
                        yield (f"self.{item.name}", *found)


def _source(text: str) -> Callable[[ast.expr], Optional[str]]:
    return lambda node: ast.get_source_segment(text, node)


def _opens(function: ast.AST, imports: ImportTable,
           source: Callable[[ast.expr], Optional[str]]) -> Optional[Tuple[str, int, RegionInfo]]:
    """The autocast call a helper returns, or enters around its `yield` as a context manager, and its region."""
    managed = any(ast_qualnames(d, imports) & CONTEXT_MANAGERS for d in function.decorator_list)  # type: ignore
    for call in (_entered(function, imports) if managed else _returned(function)):
        factory = factory_of(call.func, imports, frozenset())
        wraps = next((n for n in sorted(ast_qualnames(call.func, imports)) if n in AUTOCAST_NAMES), None)
        if factory is None or wraps is None:
            continue
        args = _at_defaults(call_args(call), function)
        if args is None:
            return None  # the caller's argument decides: not a region of its own
        try:
            spec = region_spec(factory, args, imports, source)
        except Unsure:
            return None
        return wraps, function.lineno, spec.at(function.lineno)  # type: ignore[attr-defined]
    return None


def _returned(function: ast.AST) -> Iterator[ast.Call]:
    for node in own_nodes(function):
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
            yield from (v for v in values if isinstance(v, ast.Call))


def _entered(function: ast.AST, imports: ImportTable) -> Iterator[ast.Call]:
    """The autocast calls of the `with`s whose bodies `yield`: the caller's block runs there."""
    for node in own_nodes(function):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(
                isinstance(inner, (ast.Yield, ast.YieldFrom)) for s in node.body for inner in ast.walk(s)):
            yield from (item.context_expr for item in node.items if isinstance(item.context_expr, ast.Call))


def _at_defaults(args: List[Arg], function: ast.AST) -> Optional[List[Arg]]:
    """`autocast(dtype=dtype)` where `dtype` is a parameter: its default stands for it (what a bare call gets);
    None when an argument is a parameter with no default, which only the caller gives."""
    defaults = dict(parameters(function))  # type: ignore[arg-type]
    if any(isinstance(arg.value, ast.Name) and arg.value.id in defaults and defaults[arg.value.id] is None
           for arg in args):
        return None
    return [arg._replace(value=defaults[arg.value.id]) if isinstance(arg.value, ast.Name) and
            defaults.get(arg.value.id) is not None else arg for arg in args]
