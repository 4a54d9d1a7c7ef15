"""Find the constructor of a distribution the analysis could not see at the call, for verify only.

`dist.log_prob(x)` where `dist` is a parameter, or `self.dist.log_prob(x)`
where `__init__` built it, has no constructor at the site, so the finding's
`SiteSpec` has no distribution and verify could only say `unverifiable`. The
constructor is usually nearby: an argument of a call to the enclosing
function in the same file, or the `self.<attr> = Normal(...)` assignment of
the enclosing class. This module finds it with CPython's `ast` (nothing is
evaluated) and describes it as the analysis would (`DistSpec`): its
arguments' code, through verify's transform parser, gives the input recipe
(`Linear` head, then `exp`/`sigmoid`/...). Where several constructions
reach the site, the first in the file is used and the report says so.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterator, List, Optional, Sequence, Tuple

from amplint.model import ArgSpec, DistSpec, SiteSpec
from amplint.names import ImportTable, ast_dotted, import_table
from amplint.transforms import parse_chain

PACKAGES = ("torch.distributions.", "pyro.distributions.")
NOT_CLASSES = frozenset({"transforms", "constraints", "constraint_registry", "utils", "kl"})


@dataclass(frozen=True)
class Rebuilt:
    """The site with its distribution, and where the constructor was found."""

    site: SiteSpec
    note: str


def rebuild(text: str, line: int, column: int, site: SiteSpec) -> Optional[Rebuilt]:
    """`site` with the constructor found in `text` for the call at (line, column), or None."""
    if site.dists or site.method == "kl_divergence":
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    table = import_table(tree)
    parents = _parents(tree)
    call = _site_call(tree, line, column, site.method)
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    receiver = call.func.value
    found = _from_attribute(receiver, call, parents, table) or _from_parameter(receiver, call, tree, parents, table)
    if found is None:
        return None
    ctor, count = found
    spec = _dist_spec(ctor, table)
    if spec is None:
        return None
    where = f"rebuilt `{_short(ast.unparse(receiver))}` from its construction at line {ctor.lineno}"
    if count > 1:
        where += f" (the first of {count} constructions that reach it)"
    return Rebuilt(SiteSpec(site.method, (spec,), site.values), where)


def _short(code: str, limit: int = 40) -> str:
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _parents(tree: ast.AST) -> dict:
    out = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            out[child] = node
    return out


def _site_call(tree: ast.AST, line: int, column: int, method: str) -> Optional[ast.Call]:
    """The `<receiver>.<method>(...)` call that starts at (line, column) (1-based column)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
                and node.lineno == line and node.col_offset == column - 1):
            return node
    return None


def _enclosing(node: ast.AST, parents: dict, kinds: tuple) -> Optional[ast.AST]:
    while node in parents:
        node = parents[node]
        if isinstance(node, kinds):
            return node
    return None


def is_distribution(func: ast.expr, table: ImportTable) -> bool:
    dotted = ast_dotted(func)
    if dotted is None:
        return False
    for name in table.qualnames_of(dotted):
        for package in PACKAGES:
            parts = name[len(package):].split(".") if name.startswith(package) else []
            if parts and parts[-1][:1].isupper() and not set(parts[:-1]) & NOT_CLASSES:
                return True
    return False


def _constructors(value: ast.expr, scope: Optional[ast.AST], table: ImportTable) -> List[ast.Call]:
    """`value` itself when it is a constructor call, or the constructors a local name in `scope` is assigned."""
    if isinstance(value, ast.Call) and is_distribution(value.func, table):
        return [value]
    if isinstance(value, ast.Name) and scope is not None:
        return [node.value for node in ast.walk(scope) if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)
                and isinstance(node.value, ast.Call) and is_distribution(node.value.func, table)]
    return []


def _from_attribute(receiver: ast.expr, call: ast.Call, parents: dict,
                    table: ImportTable) -> Optional[Tuple[ast.Call, int]]:
    """`self.<attr>.log_prob(...)`: the class's `self.<attr> = <constructor>` assignments."""
    if not (isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self"):
        return None
    cls = _enclosing(call, parents, (ast.ClassDef,))
    if cls is None:
        return None
    found = [node.value for node in ast.walk(cls) if isinstance(node, ast.Assign)
             and any(isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
                     and t.attr == receiver.attr for t in node.targets)
             and isinstance(node.value, ast.Call) and is_distribution(node.value.func, table)]
    return (found[0], len(found)) if found else None


def _from_parameter(receiver: ast.expr, call: ast.Call, tree: ast.AST, parents: dict,
                    table: ImportTable) -> Optional[Tuple[ast.Call, int]]:
    """`dist.log_prob(...)` with `dist` a parameter: the arguments the file's calls of the function pass."""
    func = _enclosing(call, parents, (ast.FunctionDef, ast.AsyncFunctionDef))
    if not isinstance(receiver, ast.Name) or func is None:
        return None
    local = _constructors(receiver, func, table)
    if local:
        return local[0], len(local)
    params = [a.arg for a in func.args.posonlyargs + func.args.args]  # type: ignore[attr-defined]
    if receiver.id not in params:
        return None
    index = params.index(receiver.id)
    method = bool(params) and params[0] in ("self", "cls") and isinstance(parents.get(func), ast.ClassDef)
    found: List[ast.Call] = []
    for caller in _calls_of(tree, func.name):  # type: ignore[attr-defined]
        through_attribute = isinstance(caller.func, ast.Attribute)
        position = index - 1 if method and through_attribute else index
        value = _argument(caller, receiver.id, position)
        if value is not None:
            scope = _enclosing(caller, parents, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)) or tree
            found.extend(_constructors(value, scope, table))
    return (found[0], len(found)) if found else None


def _calls_of(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if (isinstance(func, ast.Name) and func.id == name) or (isinstance(func, ast.Attribute)
                                                                    and func.attr == name):
                yield node


def _argument(call: ast.Call, name: str, position: int) -> Optional[ast.expr]:
    for keyword in call.keywords:
        if keyword.arg == name:
            return keyword.value
    if 0 <= position < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[:position + 1]):
        return call.args[position]
    return None


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_number(node.operand)
    return isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)) or (
        isinstance(node, ast.Constant) and node.value is None)


def _dist_spec(ctor: ast.Call, table: ImportTable) -> Optional[DistSpec]:
    dotted = ast_dotted(ctor.func)
    names = sorted(n for n in table.qualnames_of(dotted or "") if n.startswith(PACKAGES))
    if not names:
        return None
    args: List[ArgSpec] = []
    components: List[DistSpec] = []
    entries: Sequence[Tuple[Optional[str], Optional[int], ast.expr]] = (
        [(None, i, a) for i, a in enumerate(ctor.args)] + [(k.arg, None, k.value) for k in ctor.keywords])
    for name, position, value in entries:
        if isinstance(value, ast.Starred) or (name is None and position is None):
            return None
        if isinstance(value, ast.Call) and is_distribution(value.func, table):
            component = _dist_spec(value, table)
            if component is None:
                return None
            components.append(component)
            continue
        code = ast.unparse(value)
        args.append(ArgSpec(name, position, code, parse_chain(code).has_cast, _is_number(value)))
    return DistSpec(names[0], tuple(args), tuple(components))
