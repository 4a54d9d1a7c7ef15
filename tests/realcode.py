"""Derive autocast-heavy copies of real code, so the fixer has real code to fix.

`wrap_in_autocast(text)` wraps the body of every function that itself calls
`log_prob`, `entropy` or `kl_divergence` (not counting nested functions and
classes) in `with torch.autocast("cuda"):`. A docstring stays the first
statement, and `import torch` is added after the module docstring and
`__future__` imports when the module does not bind `torch` already.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

import libcst as cst

from amplint.fix.disable import is_docstring

TRIGGERS = frozenset({"log_prob", "entropy", "kl_divergence"})


class _Calls(cst.CSTVisitor):
    """Does a function's own body call a trigger? Nested functions and classes do not count."""

    def __init__(self) -> None:
        self.found = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
        if name in TRIGGERS:
            self.found = True


def _calls_trigger(statements: Sequence[cst.BaseStatement]) -> bool:
    calls = _Calls()
    for statement in statements:
        statement.visit(calls)
    return calls.found


AUTOCAST = cst.WithItem(
    cst.Call(cst.Attribute(cst.Name("torch"), cst.Name("autocast")), [cst.Arg(cst.SimpleString('"cuda"'))])
)


class _Wrap(cst.CSTTransformer):
    def __init__(self) -> None:
        self.wrapped = 0

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        body = updated.body
        if not isinstance(body, cst.IndentedBlock):
            return updated  # `def f(): return x.log_prob(y)` on one line: left alone
        statements = list(body.body)
        head: List[cst.BaseStatement] = statements[:1] if statements and is_docstring(statements[0]) else []
        rest = statements[len(head):]
        if not rest or not _calls_trigger(rest):
            return updated
        self.wrapped += 1
        block = cst.With(items=[AUTOCAST], body=cst.IndentedBlock(body=rest))
        return updated.with_changes(body=body.with_changes(body=[*head, block]))


def _binds_torch(module: cst.Module) -> bool:
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                if isinstance(small, cst.Import) and any(
                    alias.asname is None and (alias.evaluated_name.split(".")[0] == "torch") for alias in small.names
                ):
                    return True
    return False


def _insert_import(module: cst.Module) -> cst.Module:
    body = list(module.body)
    index = 0
    if body and is_docstring(body[0]):
        index = 1
    while index < len(body) and isinstance(body[index], cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
        for small in body[index].body
    ):
        index += 1
    line = cst.SimpleStatementLine([cst.Import([cst.ImportAlias(cst.Name("torch"))])])
    return module.with_changes(body=[*body[:index], line, *body[index:]])


def wrap_in_autocast(text: str) -> Optional[str]:
    """The derived text, or None when no function calls a trigger (or LibCST cannot parse it)."""
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None
    transformer = _Wrap()
    wrapped = module.visit(transformer)
    if not transformer.wrapped:
        return None
    if not _binds_torch(wrapped):
        wrapped = _insert_import(wrapped)
    return wrapped.code
