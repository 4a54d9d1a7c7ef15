"""Reading the code around a finding: its node, its scope, the literals its names hold, its call's arguments.

`userentry.py` decides what to run; this module answers the questions it asks
of CPython's tree: which node the finding's columns cover (LibCST counts
characters, CPython counts UTF-8 bytes), which function and class enclose it,
whether a name is local there, and whether a local holds a number literal.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set, Tuple

from amplint.project.flowcalls import is_staticmethod
from amplint.transforms import parse_chain
from amplint.verify.slicebindings import assigned_names, loads
from amplint.verify.slicer import Parsed
from amplint.verify.userjob import Argument, TensorInput
from amplint.verify.userroles import LOG_OPS, role_of_argument

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.GeneratorExp, ast.ListComp, ast.SetComp,
          ast.DictComp)


class CannotRun(Exception):
    """The computation cannot be called as the code stands; the message says why."""


def parents_of(tree: ast.AST) -> Dict[int, ast.AST]:
    out: Dict[int, ast.AST] = {}
    for parent in ast.walk(tree):
        for child in ast.iter_child_nodes(parent):
            out[id(child)] = parent
    return out


def _byte_column(parsed: Parsed, line: int, column: int) -> int:
    """The 0-based UTF-8 offset CPython gives for LibCST's 1-based character column."""
    text = parsed.lines[line - 1] if 0 < line <= len(parsed.lines) else ""
    return len(text[: column - 1].encode("utf-8"))


def node_at(parsed: Parsed, line: int, column: int, end: Optional[Tuple[int, int]]) -> ast.AST:
    """The expression a finding covers: the one that spans exactly its range, else the outermost starting there."""
    start = _byte_column(parsed, line, column)
    stop = _byte_column(parsed, end[0], end[1]) if end is not None else None
    starting = [node for node in ast.walk(parsed.tree) if isinstance(node, ast.expr)
                and node.lineno == line and node.col_offset == start]
    exact = [node for node in starting if end is not None and (node.end_lineno, node.end_col_offset) == (end[0], stop)]
    if exact or starting:
        return (exact or starting)[0]
    raise CannotRun(f"no expression at {parsed.label}:{line}:{column}")


def literal_value(node: Optional[ast.AST]) -> Optional[object]:
    """A number literal's value (`1e-8`, `-0.5`, `True`); None for anything else."""
    if node is None:
        return None
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (int, float)) else None


def _json_literal(node: ast.expr) -> Tuple[bool, object]:
    """(True, value) for a literal the child can receive as JSON: numbers, strings, None, lists of those."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    if isinstance(value, tuple):
        value = list(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False, None
    return True, value


@dataclass
class Located:
    """Where a finding's node sits: its function, its class (a method's), and the names bound around it."""

    parsed: Parsed
    function: Optional[ast.AST] = None
    table: Optional[object] = None  # the function's symtable
    cls: Optional[int] = None  # the top-level class statement of a method
    receiver: Optional[str] = None  # a method's first parameter
    bound_around: Set[str] = field(default_factory=set)  # comprehension and lambda variables around the node
    around_literals: Dict[str, object] = field(default_factory=dict)  # `k` of `for k in ("y", "z")`: "y"
    preceding: List[ast.stmt] = field(default_factory=list)  # statements that run before the site's, in its blocks

    @property
    def qualname(self) -> str:
        name = getattr(self.function, "name", "<module>")
        cls = self.parsed.tree.body[self.cls] if self.cls is not None else None
        return f"{cls.name}.{name}" if isinstance(cls, ast.ClassDef) else name

    def is_local(self, name: str) -> bool:
        if self.table is None:
            return False
        try:
            symbol = self.table.lookup(name)  # type: ignore[attr-defined]
        except KeyError:
            return False
        return symbol.is_local() or symbol.is_parameter() or symbol.is_free()

    def in_comprehension(self, name: str) -> bool:
        return name in self.bound_around

    def _stores(self, name: str) -> List[ast.AST]:
        assert self.function is not None
        return [node for node in ast.walk(self.function) if isinstance(node, ast.Name) and node.id == name
                and isinstance(node.ctx, ast.Store)]

    def literal_of(self, name: str) -> Optional[object]:
        """A local holding a number literal: a parameter's default never reassigned, or one assignment of one."""
        if name in self.around_literals:
            return self.around_literals[name]
        if self.function is None or not isinstance(self.function, FUNCTIONS) or name in self.bound_around:
            return None
        stores = self._stores(name)
        args = self.function.args
        positional = args.posonlyargs + args.args
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        if name in defaults:
            return literal_value(defaults[name]) if not stores else None
        if name in [a.arg for a in positional + args.kwonlyargs]:
            return None
        assigns = [node for node in ast.walk(self.function) if isinstance(node, ast.Assign)
                   and any(name in assigned_names(t) for t in node.targets)]
        if len(stores) == 1 and len(assigns) == 1 and len(assigns[0].targets) == 1 \
                and isinstance(assigns[0].targets[0], ast.Name):
            return literal_value(assigns[0].value)
        return None

    def definition_before(self, name: str) -> Optional[ast.Assign]:
        """`name = value`, the local's only binding, a statement that runs before the site's in the same blocks."""
        if self.function is None or name in self.bound_around:
            return None
        args = self.function.args  # type: ignore[attr-defined]
        params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        if len(self._stores(name)) != 1 or name in params:
            return None
        for node in self.preceding:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id == name:
                return node
        return None

    def module_data(self, name: str) -> bool:
        """At module level: a name assigned from a computation (the region's data), not a def, import or number."""
        bindings = self.parsed.top.names.get(name, [])
        nodes = [self.parsed.tree.body[b.index] for b in bindings]
        return bool(nodes) and all(isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) for n in nodes) and not (
            len(nodes) == 1 and literal_value(getattr(nodes[0], "value", None)) is not None)

    def constructor_of(self, name: str) -> Optional[ast.Call]:
        """The call a local is bound to, when the function binds it exactly once, to a call."""
        if self.function is None:
            return None
        assigns = [node for node in ast.walk(self.function) if isinstance(node, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)]
        if len(self._stores(name)) == 1 and len(assigns) == 1 and isinstance(assigns[0].value, ast.Call):
            return assigns[0].value
        return None

    def attribute_literal(self, attribute: str) -> Optional[object]:
        """`self.eps` of a class that sets it once, to a number or to a constructor parameter's number default."""
        if self.cls is None or self.receiver is None:
            return None
        cls = self.parsed.tree.body[self.cls]
        assert isinstance(cls, ast.ClassDef)
        values: List[Optional[object]] = []
        for node in cls.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and attribute in [
                    n for t in getattr(node, "targets", [getattr(node, "target", None)]) for n in assigned_names(t)]:
                values.append(literal_value(node.value))
            if isinstance(node, FUNCTIONS):
                values.extend(_self_assignments(node, attribute))
        return values[0] if len(values) == 1 else None


def _self_assignments(method: ast.AST, attribute: str) -> List[Optional[object]]:
    assert isinstance(method, FUNCTIONS)
    if not method.args.args:
        return []
    receiver = method.args.args[0].arg
    args = method.args
    positional = args.posonlyargs + args.args
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(args.defaults):]], args.defaults))
    out: List[Optional[object]] = []
    for node in ast.walk(method):
        if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == receiver
               and t.attr == attribute for t in targets):
            value = node.value
            if isinstance(node, ast.Assign) and isinstance(value, ast.Name) and value.id in defaults:
                out.append(literal_value(defaults[value.id]))
            else:
                out.append(None if isinstance(node, ast.AugAssign) else literal_value(value))
    return out


def enclosing(parsed: Parsed, node: ast.AST) -> Located:
    """The function (and class, for a method) around `node`, and the comprehension variables bound around it."""
    parents = parents_of(parsed.tree)
    located = Located(parsed)
    current, below = parents.get(id(node)), node
    while current is not None and not isinstance(current, FUNCTIONS):
        located.preceding.extend(_before(current, below))
        if isinstance(current, (ast.GeneratorExp, ast.ListComp, ast.SetComp, ast.DictComp)):
            for generator in current.generators:
                located.bound_around.update(assigned_names(generator.target))
                first = _first_constant(generator)
                if first is not None:
                    located.around_literals[generator.target.id] = first  # type: ignore[attr-defined]
        elif isinstance(current, ast.Lambda):
            located.bound_around.update(a.arg for a in current.args.args + current.args.kwonlyargs)
        current, below = parents.get(id(current)), current
    if current is None:
        return located
    located.function = current
    located.preceding.extend(_before(current, below))
    located.table = parsed.tables.get((current.name, current.lineno))
    owner = parents.get(id(current))
    if isinstance(owner, ast.ClassDef) and owner in parsed.tree.body:
        located.cls = parsed.tree.body.index(owner)
        located.receiver = current.args.args[0].arg if current.args.args else None
    return located


def _first_constant(generator: ast.comprehension) -> Optional[object]:
    """`for k in ("y", "z")`: the first value, which the slice runs with (a literal loop runs them all alike)."""
    items = generator.iter
    if isinstance(generator.target, ast.Name) and isinstance(items, (ast.Tuple, ast.List)) and items.elts:
        first = items.elts[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, (str, int, float)):
            return first.value
    return None


def _before(block: ast.AST, statement: ast.AST) -> List[ast.stmt]:
    """The statements of the list in `block` (a body, an `else`, a `finally`) that come before `statement`."""
    for name in ("body", "orelse", "finalbody"):
        items = getattr(block, name, None)
        if isinstance(items, list) and statement in items:
            return items[: items.index(statement)]
    return []


def site_expression(parsed: Parsed, node: ast.AST, shape: str) -> ast.expr:
    """What to run for hand-written math: the Gaussian's whole statement value, a floor's log, else the node."""
    parents = parents_of(parsed.tree)
    if shape == "gaussian":
        current = node
        while current is not None and not isinstance(current, ast.stmt):
            current = parents.get(id(current))
        value = getattr(current, "value", None)
        if isinstance(current, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)) and value is not None:
            return value
    if shape == "epsilon":
        current = parents.get(id(node))
        while current is not None and not isinstance(current, (ast.stmt, *SCOPES)):
            if isinstance(current, ast.Call) and _op(current) in LOG_OPS:
                return current
            current = parents.get(id(current))
    if not isinstance(node, ast.expr):
        raise CannotRun(f"no expression at {parsed.label}:{getattr(node, 'lineno', '?')}")
    return node


def _op(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def method_params(found: Optional[Tuple[Parsed, int]], member: Optional[str],
                  skip_self: bool) -> Optional[List[ast.arg]]:
    """The positional parameters of a function statement, or of a class's member (without `self` when asked)."""
    if found is None:
        return None
    node = found[0].tree.body[found[1]]
    if member is not None:
        if not isinstance(node, ast.ClassDef):
            return None
        node = next((m for m in node.body if isinstance(m, FUNCTIONS) and m.name == member), None)
    if not isinstance(node, FUNCTIONS):
        return None
    params = node.args.posonlyargs + node.args.args
    return params[1:] if skip_self and not is_staticmethod(node) else params


def arguments(call: ast.Call, params: Optional[List[ast.arg]], prefix: str,
              taken: Optional[Set[str]] = None) -> Tuple[Tuple[Argument, ...], Tuple[TensorInput, ...]]:
    """A call's arguments: literals as written, every other argument a tensor input through its own steps."""
    used = set(taken or ())
    out: List[Argument] = []
    inputs: List[TensorInput] = []
    entries: List[Tuple[Optional[str], Optional[str], ast.expr]] = []
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            raise CannotRun(f"the call `{ast.unparse(call)[:60]}` unpacks `*{ast.unparse(arg.value)}`")
        param = params[position].arg if params is not None and position < len(params) else None
        entries.append((None, param, arg))
    for keyword in call.keywords:
        if keyword.arg is None:
            raise CannotRun(f"the call `{ast.unparse(call)[:60]}` unpacks `**{ast.unparse(keyword.value)}`")
        entries.append((keyword.arg, keyword.arg, keyword.value))
    for keyword_name, param, value in entries:
        is_literal, literal = _json_literal(value)
        if is_literal:
            out.append(Argument(keyword_name, None, literal))
            continue
        chain = parse_chain(ast.unparse(value))
        names = sorted(loads(value))
        key = prefix + (param or (chain.head if chain.head.isidentifier() else f"arg{len(inputs)}"))
        while key in used:
            key += "'"
        used.add(key)
        inputs.append(TensorInput(key, role_of_argument(param, names), chain.steps))
        out.append(Argument(keyword_name, key))
    return tuple(out), tuple(inputs)
