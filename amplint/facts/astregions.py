"""Autocast regions over CPython's tree: `amplint.regions` and the collector's region readings, for `astcalls`.

Each function answers what its namesake in `regions.py` (or `facts.nodes`)
answers for the same source; `tests/test_ast_summary.py` holds the summaries
built from them equal to the collector's. Expressions are given as LibCST
gives them: a call's arguments in source order (`astnodes.call_args`), and
the text of an argument as written (`source`).
"""
from __future__ import annotations

import ast
from typing import Callable, FrozenSet, List, Optional, Sequence, Set, Tuple

from amplint.astwalk import child_nodes
from amplint.autocast_names import PARTIAL_NAMES, Style
from amplint.facts.astnodes import Arg, call_args, matches, self_attribute
from amplint.model import Precision
from amplint.names import ImportTable, ast_qualnames
from amplint.regions import (
    AutocastFactory, RegionSpec, bind_arguments, dtype_kinds, opened, precision_of_kinds, spec_of, style_of,
)

Source = Callable[[ast.expr], Optional[str]]  # an expression's text as LibCST writes it; None when unsure


class Unsure(Exception):
    """An argument's text could not be told exactly: the file goes to LibCST."""


def autocast_style(func: ast.expr, table: ImportTable, extra: FrozenSet[str],
                   aliases: Tuple[Tuple[object, ...], ...] = ()) -> Optional[Style]:
    return style_of(ast_qualnames(func, table), extra, aliases)


def factory_of(expr: ast.expr, table: ImportTable, extra: FrozenSet[str],
               aliases: Tuple[Tuple[object, ...], ...] = ()) -> Optional[AutocastFactory]:
    """`cstregions.factory_of`; a partial's bound arguments are `astnodes.Arg`s."""
    if isinstance(expr, ast.IfExp):
        return factory_of(expr.body, table, extra, aliases) or factory_of(expr.orelse, table, extra, aliases)
    style = autocast_style(expr, table, extra, aliases)
    if style is not None:
        return AutocastFactory(style, (), opened(ast_qualnames(expr, table), aliases) if aliases else None)
    if isinstance(expr, ast.Call) and matches(table, expr.func, PARTIAL_NAMES):
        args = call_args(expr)
        if args and args[0].keyword is None and args[0].star == "":
            inner = autocast_style(args[0].value, table, extra, aliases)
            if inner is not None:
                return AutocastFactory(inner, tuple(args[1:]))  # type: ignore[arg-type]
    return None


def bound_argument(factory: AutocastFactory, args: Sequence[Arg], name: str) -> Optional[ast.expr]:
    return bind_arguments(factory.style, list(factory.bound_args) + list(args)).get(name)  # type: ignore[arg-type]


def region_spec(factory: AutocastFactory, args: Sequence[Arg], table: ImportTable, source: Source) -> RegionSpec:
    if factory.opens is not None:  # `cstregions.region_spec`
        return factory.opens
    bound = bind_arguments(factory.style, list(factory.bound_args) + list(args))  # type: ignore[arg-type]
    dtype, enabled = bound.get("dtype"), bound.get("enabled")
    given = dtype is not None and not (isinstance(dtype, ast.Constant) and dtype.value is None)
    disabled = isinstance(enabled, ast.Constant) and enabled.value is False
    return spec_of(factory.style, bound, _literal_string, lambda node: _code(node, source),
                   ast_qualnames(dtype, table) if given else None, disabled)  # type: ignore[arg-type]


def _literal_string(node: ast.expr) -> Optional[str]:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _code(node: ast.expr, source: Source) -> str:
    code = source(node)
    if code is None:
        raise Unsure
    return code


# --- `dtype=self.<attr>`: what the class assigns to it (`nodes.attribute_dtype`) ------------------------------
def attribute_dtype(cls: ast.ClassDef, attr: str, imports: ImportTable) -> Optional[Precision]:
    return precision_of_kinds(_dtype_kinds(value, imports) for value in attribute_values(cls, attr))


def attribute_values(cls: ast.ClassDef, attr: str) -> List[ast.expr]:
    """Every value the class (not a nested class) assigns to `self.<attr>` or to `<attr>`."""
    values: List[ast.expr] = []
    stack: List[ast.AST] = list(cls.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ClassDef):
            continue
        if isinstance(node, ast.Assign) and any(_names_attr(t, attr) for t in node.targets):
            values.append(node.value)
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _names_attr(node.target, attr):
            values.append(node.value)
        stack.extend(child_nodes(node))
    return values


def _names_attr(target: ast.expr, attr: str) -> bool:
    return self_attribute(target) == attr or (isinstance(target, ast.Name) and target.id == attr)


def _dtype_kinds(node: ast.expr, imports: ImportTable) -> Optional[Set[Precision]]:
    if isinstance(node, ast.IfExp):
        body, orelse = _dtype_kinds(node.body, imports), _dtype_kinds(node.orelse, imports)
        return None if body is None or orelse is None else body | orelse
    return dtype_kinds(ast_qualnames(node, imports))
