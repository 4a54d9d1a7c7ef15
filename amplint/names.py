"""Resolve names to qualified names through a file's imports.

A light walk of our own instead of LibCST's Scope/QualifiedName metadata:
those providers cost ~90% of a metadata-based rule's run time (see README,
"Speed"). The table is file-wide, not scope-exact: a name imported in two
places resolves to both, and a match on any of them counts.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Set, Tuple

from amplint.astwalk import BLOCKS, statements

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

# LibCST is imported inside the functions that take its nodes: the import table and the
# screen (`amplint.screen`) run on CPython's tree for files that are never parsed with LibCST.


def dotted_name(node: cst.BaseExpression) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain, else None."""
    import libcst as cst  # already loaded by whoever made `node`: a dictionary lookup

    kind = type(node)  # not `isinstance`: on LibCST's ABCs a failing one is slow, and most fail here
    if kind is cst.Name:
        return node.value
    if kind is cst.Attribute:
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


@dataclass
class ImportTable:
    """Local name -> every qualified name it may stand for."""

    bindings: Dict[str, Set[str]] = field(default_factory=dict)
    star_modules: List[str] = field(default_factory=list)
    # Module names bound once, to a Python number (`LOG_2PI = math.log(2 * math.pi)`), never a tensor: each with
    # its value where the expression is one of literals, `math`/NumPy constants and their functions, else None.
    number_constants: Dict[str, Optional[float]] = field(default_factory=dict)
    # `qualnames_of` answers: the collector asks the same few names for every call of a file.
    _answers: Dict[str, FrozenSet[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def bind(self, local: str, qualified: str) -> None:
        self.bindings.setdefault(local, set()).add(qualified)
        self._answers.clear()

    def star(self, module: str) -> None:
        """`from module import *`: a name bound nowhere else may come from `module`."""
        self.star_modules.append(module)
        self._answers.clear()

    def qualnames(self, node: cst.BaseExpression) -> FrozenSet[str]:
        """All qualified names `node` may refer to (empty for non-name expressions)."""
        dotted = dotted_name(node)
        return frozenset() if dotted is None else self.qualnames_of(dotted)

    def qualnames_of(self, dotted: str) -> FrozenSet[str]:
        """`qualnames` for a dotted name given as text (`torch.autocast`)."""
        answer = self._answers.get(dotted)
        if answer is None:
            head, *rest = dotted.split(".")
            found = self.bindings.get(head)
            bases = set(found) if found else {head, *(f"{module}.{head}" for module in self.star_modules)}
            suffix = "".join(f".{part}" for part in rest)
            answer = self._answers[dotted] = frozenset(base + suffix for base in bases)
        return answer

    def matches(self, node: cst.BaseExpression, wanted: Iterable[str]) -> bool:
        return not self.qualnames(node).isdisjoint(wanted)

    def local_names_for(self, qualified: str) -> List[str]:
        """Local names bound exactly to `qualified`, sorted for determinism."""
        return sorted(name for name, quals in self.bindings.items() if quals == {qualified})


def _statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement, in source order (`astwalk.statements`, sorted): imports and aliases are statements,
    so no expression is walked."""
    return iter(sorted(statements(tree), key=lambda stmt: (stmt.lineno, stmt.col_offset)))


def ast_dotted(node: ast.expr) -> Optional[str]:
    """`a.b.c` for a Name/Attribute chain of CPython's tree, else None (iterative: chains can be long)."""
    if isinstance(node, ast.Name):  # most of them
        return node.id
    parts: List[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def ast_last_name(node: ast.AST) -> Optional[str]:
    """`x` of `x` and of `a.b.x`; None for anything else."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def ast_qualnames(node: ast.expr, table: ImportTable) -> FrozenSet[str]:
    """`ImportTable.qualnames` for a node of CPython's tree: empty for an expression that is no dotted name."""
    dotted = ast_dotted(node)
    return frozenset() if dotted is None else table.qualnames_of(dotted)


def import_table(tree: ast.Module) -> ImportTable:
    """The file's imports and plain-assignment aliases, from CPython's tree.

    `engine.analyze_source` already has this tree (CPython screens every file
    first), and walking its statements costs a few milliseconds where a LibCST
    visitor over the whole module cost ~25% of an analysis (benchmarks/README.md).
    """
    table = ImportTable()
    for stmt in _statements(tree):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    table.bind(alias.asname, alias.name)
                else:
                    top = alias.name.split(".")[0]
                    table.bind(top, top)
        elif isinstance(stmt, ast.ImportFrom):
            _bind_from(table, stmt)
        elif isinstance(stmt, ast.Assign):
            _bind_alias(table, stmt)
    table.number_constants = _number_constants(tree, table)
    return table


_NUMBER_MODULES = frozenset({"math", "numpy", "statistics"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _number_constants(tree: ast.Module, table: ImportTable) -> Dict[str, Optional[float]]:
    """The module's names bound once at module level, by `name = value` with `value` a Python number's expression,
    and bound no other way there. A function's `global` rebinding is not looked for."""
    once: Dict[str, ast.expr] = {}
    other: Set[str] = set()
    todo: List[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            other.add(node.name)
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else getattr(
            node, "target", None) if isinstance(node, ast.AnnAssign) and node.value is not None else None
        if isinstance(target, ast.Name):
            other.update({target.id} if target.id in once else ())
            once[target.id] = node.value  # type: ignore[attr-defined]
        elif isinstance(node, ast.stmt):
            other.update(_bound(node))
        todo.extend(child for _, value in ast.iter_fields(node) if isinstance(value, list)
                    for child in value if isinstance(child, BLOCKS))
    found: Dict[str, Optional[float]] = {}
    for name in sorted(once, key=lambda n: (once[n].lineno, once[n].col_offset)):  # earlier ones may be used
        number, value = _number(once[name], table, found) if name not in other else (False, None)
        if number:
            found[name] = value
    return found


def _bound(stmt: ast.stmt) -> Iterator[str]:
    """The names a module-level statement other than `name = value` binds."""
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        yield from ((alias.asname or alias.name).split(".")[0] for alias in stmt.names)
        return
    targets: List[ast.AST] = list(getattr(stmt, "targets", ()))
    targets += [stmt.target] if isinstance(stmt, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)) else []
    targets += [i.optional_vars for i in getattr(stmt, "items", ()) if getattr(i, "optional_vars", None)]
    yield from (node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name))


_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: a}
_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}
_MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_MATH_FUNCTIONS = {"log": math.log, "log2": math.log2, "log10": math.log10, "sqrt": math.sqrt, "exp": math.exp}


def _number(node: ast.expr, table: ImportTable, known: Dict[str, Optional[float]]) -> Tuple[bool, Optional[float]]:
    """Is `node` a Python number's expression (literals, earlier constants, `math`/NumPy constants and functions of
    them), and its value where plain arithmetic and the common `math` constants and functions give one (None where
    not, or where Python refuses it: a log of 0, an overflow)?"""
    if isinstance(node, ast.Constant):
        number = type(node.value) in (int, float)
        return number, _apply(float, node.value) if number else None  # an int past float's range: None
    if isinstance(node, ast.Name):
        return node.id in known, known.get(node.id)
    if isinstance(node, ast.UnaryOp):
        number, value = _number(node.operand, table, known)
        return number, _apply(_UNARY.get(type(node.op)), value)
    if isinstance(node, ast.BinOp):
        (left, a), (right, b) = _number(node.left, table, known), _number(node.right, table, known)
        return left and right, _apply(_BINARY.get(type(node.op)), a, b)
    dotted = ast_dotted(node.func if isinstance(node, ast.Call) else node)
    if dotted is None or "." not in dotted or not any(
            q.split(".")[0] in _NUMBER_MODULES for q in table.qualnames_of(dotted.split(".")[0])):
        return False, None
    if not isinstance(node, ast.Call):
        return True, _MATH_CONSTANTS.get(dotted.rsplit(".", 1)[-1])
    args = [_number(arg, table, known) for arg in node.args]
    number = not node.keywords and all(each for each, _ in args)
    function = _MATH_FUNCTIONS.get(dotted.rsplit(".", 1)[-1]) if number and args else None
    return number, _apply(function, *(value for _, value in args))


def _apply(operation: Optional[Callable[..., float]], *values: Optional[float]) -> Optional[float]:
    """`operation` of `values`; None for no operation, a value not known, or one Python refuses."""
    if operation is None or any(value is None for value in values):
        return None
    try:
        result = operation(*values)
    except (ArithmeticError, ValueError, TypeError):
        return None
    return float(result) if isinstance(result, (int, float)) else None


def _bind_from(table: ImportTable, stmt: ast.ImportFrom) -> None:
    module = "." * stmt.level + (stmt.module or "")
    if any(alias.name == "*" for alias in stmt.names):
        table.star(module)
        return
    for alias in stmt.names:
        local = alias.asname or alias.name
        # `from .. import x` is "..x", the same name `from ..x import ...` builds on.
        table.bind(local, f"{module}.{alias.name}" if module.strip(".") else module + alias.name)


def _bind_alias(table: ImportTable, stmt: ast.Assign) -> None:
    """`ac = torch.autocast`: an alias by plain assignment of an imported name."""
    dotted = ast_dotted(stmt.value)
    if dotted is None or dotted.split(".")[0] not in table.bindings:
        return
    quals = table.qualnames_of(dotted)
    for target in stmt.targets:
        if isinstance(target, ast.Name):
            for qual in quals:
                table.bind(target.id, qual)


def collect_imports(module: cst.Module) -> ImportTable:
    """`import_table` for a LibCST module (tests and callers without CPython's tree)."""
    return import_table(ast.parse(module.code))
