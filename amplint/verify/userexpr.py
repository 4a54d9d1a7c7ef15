"""Hand-written math as a function the child can call: the site's expression, and the locals it is made from.

A log of probabilities or a written-out Gaussian is an expression inside some
function; the names it reads are that function's locals. The widest version
of the slice also takes the statements that make those locals, when each is
a local's only binding, in the function's own body, before the site (`var = sigma[:, 1:] ** 2`, then
the Gaussian that reads `var` and `mu[:, 1:]`): its inputs are then the values
the math starts from, with shapes that agree.

The child runs the expression alone when it can (its float64 reference runs
on some input shape): that is the computation the finding points at. Only
when it cannot (two locals that must agree in shape, `mu[:, 1:]` beside
`log_sigma`) does it take the wider versions, one statement back, then six.

A local that holds a number literal keeps it (`eps=1e-8`, `self.eps = eps`
with `eps=1e-5`); any other `self.x` is an input of its own (`self.x` in the
report); a call of a method of `self` stops a version: that needs an instance.
"""
from __future__ import annotations

import ast
import copy
import symtable
from typing import Dict, List, Set, Tuple

from amplint.verify.slicebindings import attribute_paths, loads
from amplint.verify.slicer import Parsed, SliceNeeds, Slicer
from amplint.verify.userentrysite import CannotRun, Located
from amplint.verify.userjob import SITE_FUNCTION, Argument, Candidate, Entry, TensorInput
from amplint.verify.userroles import role_in_expression

DEPTHS = (0, 1, 6)  # statements followed back from the expression: the expression alone first


def candidates(parsed: Parsed, expr: ast.expr, located: Located, slicer: Slicer, label: str,
               logs: bool) -> Tuple[Candidate, ...]:
    """The versions of the slice to try, narrowest first; the last reason when none can be built."""
    out: List[Candidate] = []
    seen: Set[str] = set()
    reason = ""
    for depth in DEPTHS:
        try:
            statements = definitions(located, expr, depth)
            body = _rewritten(statements, expr, located)
        except CannotRun as exc:
            reason = str(exc)
            continue
        if ast.dump(body) in seen:
            continue
        seen.add(ast.dump(body))
        try:
            out.append(_candidate(parsed, body, located, slicer, label, logs, f"{SITE_FUNCTION[:-2]}{len(out)}__",
                                  len(statements)))
        except (CannotRun, SliceNeeds) as exc:
            reason = str(exc)
    if not out:
        raise CannotRun(reason)
    return tuple(out)


def free_names(body: ast.Module) -> Set[str]:
    """Names the statements read from outside (what they bind, and their comprehensions bind, excluded)."""
    inner = "\n".join("    " + line for line in ast.unparse(body).splitlines()) or "    pass"
    table = symtable.symtable(f"def {SITE_FUNCTION}():\n{inner}\n", "<site>", "exec").get_children()[0]
    return {s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced()} & loads(body)


def definitions(located: Located, expr: ast.expr, depth: int) -> List[ast.Assign]:
    """The statements that make the expression's locals, up to `depth` steps back, in source order."""
    chosen: Dict[str, ast.Assign] = {}
    frontier = {n for n in free_names(ast.Module(body=[ast.Expr(expr)], type_ignores=[])) if located.is_local(n)}
    for _ in range(depth):
        found: Set[str] = set()
        for name in sorted(frontier - set(chosen)):
            statement = located.definition_before(name)
            if statement is None or located.literal_of(name) is not None or not _inlinable(statement.value, located):
                continue
            chosen[name] = statement
            found |= {n for n in free_names(ast.Module(body=[statement], type_ignores=[])) if located.is_local(n)}
        frontier = found
    return sorted(chosen.values(), key=lambda node: (node.lineno, node.col_offset))


def _inlinable(value: ast.expr, located: Located) -> bool:
    """A value computed from tensors: no call of a local (a module, a function passed in), no generator."""
    for node in ast.walk(value):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and located.is_local(node.func.id):
            return False
    return True


def _rewritten(statements: List[ast.Assign], expr: ast.expr, located: Located) -> ast.Module:
    """The statements and `return expr`, with `self.x` read as a number or as the input `self__x`."""
    body = ast.Module(body=[copy.deepcopy(s) for s in statements] + [ast.Return(value=copy.deepcopy(expr))],
                      type_ignores=[])
    receiver = located.receiver
    if located.cls is None or receiver is None:
        return body
    body = _SelfAttributes(receiver, located).visit(body)
    if receiver in loads(body):
        raise CannotRun(f"the expression uses `{receiver}` itself, not only attributes of it")
    return body


def _candidate(parsed: Parsed, body: ast.Module, located: Located, slicer: Slicer, label: str, logs: bool,
               name: str, steps: int) -> Candidate:
    literals: Dict[str, object] = {}
    inputs: List[str] = []
    needed: List[str] = []
    for free in sorted(free_names(body)):
        if located.is_local(free) or located.in_comprehension(free) or free.startswith("self__"):
            value = located.literal_of(free)
            if value is not None:
                literals[free] = value
            else:
                inputs.append(free)
        elif located.function is None and located.module_data(free):
            inputs.append(free)
        else:
            needed.append(free)
    paths = attribute_paths(body, set(needed))
    trial = slicer.fork()  # a version that needs what the slice may not have is dropped, the slice unchanged
    for free in needed:
        trial.need(trial.load(parsed.module), free, paths.get(free, {()}), located.qualname)
    trial.close()
    for free in needed:
        slicer.need(parsed, free, paths.get(free, {()}), located.qualname)
    body = _Substitute(literals).visit(body)
    params = ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in inputs], vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[])
    slicer.kept[parsed.module.name].extra.append(ast.FunctionDef(
        name=name, args=params, body=body.body, decorator_list=[], returns=None, lineno=1))
    tensors = tuple(TensorInput(_shown(n), role_in_expression(body, n, logs), items=_items(body, n)) for n in inputs)
    entry = Entry(parsed.module.name, (name,), tuple(Argument(None, _shown(n)) for n in inputs), label)
    note = f"{steps} statement(s) that make its locals, then the expression" if steps else "the expression alone"
    return Candidate(entry, tensors, note)


def _items(body: ast.AST, name: str) -> Tuple[str, ...]:
    """The string keys `name` is read with (`outputs["logits"]`): a dict of tensors, one per key."""
    return tuple(sorted({node.slice.value for node in ast.walk(body) if isinstance(node, ast.Subscript)
                         and isinstance(node.value, ast.Name) and node.value.id == name
                         and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)}))


def _shown(name: str) -> str:
    """The wrapper's parameter `self__eps` stands for `self.eps`."""
    return "self." + name[len("self__"):] if name.startswith("self__") else name


class _SelfAttributes(ast.NodeTransformer):
    def __init__(self, receiver: str, located: Located) -> None:
        self.receiver = receiver
        self.located = located

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == self.receiver:
            raise CannotRun(f"the expression calls the method `{self.receiver}.{func.attr}`, which needs an instance")
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == self.receiver and isinstance(node.ctx, ast.Load):
            value = self.located.attribute_literal(node.attr)
            if value is not None:
                return ast.Constant(value=value)
            return ast.Name(id=f"self__{node.attr}", ctx=ast.Load())
        self.generic_visit(node)
        return node


class _Substitute(ast.NodeTransformer):
    def __init__(self, literals: Dict[str, object]) -> None:
        self.literals = literals

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.literals and isinstance(node.ctx, ast.Load):
            return ast.Constant(value=self.literals[node.id])
        return node
