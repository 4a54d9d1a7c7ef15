"""Fix C: fix A's casts, plus `with torch.autocast(device_type=..., enabled=False):` around the statement.

The casts are not optional: disabling autocast does not convert tensors that
autocast already made float16 (measured: 15,485 `-inf` of 65,536 with and
without `enabled=False`, 0 once the inputs were cast).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Mapping, Optional, Sequence, Set

import libcst as cst

from amplint.fix.cast import CastTransformer
from amplint.fix.plan import CastTarget, WrapTarget
from amplint.names import ImportTable

# Spellings whose first parameter is device_type; never the deprecated torch.cuda.amp.autocast.
GENERIC_AUTOCAST = ("torch.autocast", "torch.amp.autocast")


@dataclass(frozen=True)
class AutocastSpelling:
    """How the file can name `torch.autocast`, and whether `import torch` must be added for it."""

    func: str
    needs_import: bool


def module_level_names(module: cst.Module) -> Set[str]:
    """Names bound by imports that run at module level (including in `try`), not in functions or `if`."""
    names: Set[str] = set()
    pending: List[cst.BaseStatement] = list(module.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, cst.Try):
            pending.extend(statement.body.body)
            continue
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                for alias in small.names:
                    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                        names.add(alias.asname.name.value)
                    elif isinstance(small, cst.Import):
                        names.add(_top_name(alias.name))
                    elif isinstance(alias.name, cst.Name):
                        names.add(alias.name.value)
    return names


def _top_name(node: cst.BaseExpression) -> str:
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def autocast_spelling(module: cst.Module, table: ImportTable) -> AutocastSpelling:
    """Reuse the file's own name for torch (`t.autocast`), then a bare `autocast`; else add `import torch`."""
    bound = module_level_names(module)
    torch_names = [name for name in table.local_names_for("torch") if name in bound]
    if torch_names:
        name = "torch" if "torch" in torch_names else torch_names[0]
        return AutocastSpelling(f"{name}.autocast", False)
    for qualified in GENERIC_AUTOCAST:
        names = [name for name in table.local_names_for(qualified) if name in bound]
        if names:
            return AutocastSpelling(names[0], False)
    return AutocastSpelling("torch.autocast", True)


class DisableTransformer(CastTransformer):
    """Casts as in fix A, then wraps each planned statement in a disabled autocast block."""

    def __init__(
        self,
        casts: Mapping[int, CastTarget],
        table: ImportTable,
        wraps: Mapping[int, WrapTarget],
        spelling: AutocastSpelling,
    ) -> None:
        super().__init__(casts, table)
        self.wraps = wraps
        self.spelling = spelling

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        # The new block indents like the block it sits in (tabs stay tabs), not like the file's default.
        body = self._wrap_body(original_node.body, updated_node.body, updated_node.indent)
        return updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        updated_node = updated_node.with_changes(body=self._wrap_body(original_node.body, updated_node.body, None))
        if self.spelling.needs_import and self.wraps:
            updated_node = add_import_torch(updated_node)
        return updated_node

    def _planned(self, statement: cst.BaseStatement) -> Optional[WrapTarget]:
        wrap = self.wraps.get(id(statement))
        return wrap if wrap is not None and wrap.statement is statement else None

    def _wrap_body(
        self, original: Sequence[cst.BaseStatement], updated: Sequence[cst.BaseStatement], indent: Optional[str]
    ) -> List[cst.BaseStatement]:
        """Wrap planned statements; consecutive ones for the same device share one `with` block."""
        out: List[cst.BaseStatement] = []
        index = 0
        while index < len(original):
            wrap = self._planned(original[index])
            if wrap is None:
                out.append(updated[index])
                index += 1
                continue
            end = index + 1
            while end < len(original):
                following = self._planned(original[end])
                if following is None or following.device_code != wrap.device_code:
                    break
                end += 1
            out.append(self._with_block(list(updated[index:end]), wrap.device_code, indent))
            index = end
        return out

    def _with_block(self, statements: List[cst.BaseStatement], device_code: str, indent: Optional[str]) -> cst.With:
        item = cst.parse_expression(f"{self.spelling.func}(device_type={device_code}, enabled=False)")
        first = statements[0]
        # Comments and blank lines above the first statement stay above the new `with`.
        body = cst.IndentedBlock(body=[first.with_changes(leading_lines=()), *statements[1:]], indent=indent)
        return cst.With(items=[cst.WithItem(item=item)], body=body, leading_lines=first.leading_lines)


def add_import_torch(module: cst.Module) -> cst.Module:
    """Insert `import torch` before the first import (after the docstring and `__future__` imports)."""
    body: Sequence[cst.BaseStatement] = module.body
    index = _import_position(body)
    statement = cst.SimpleStatementLine(body=[cst.Import(names=[cst.ImportAlias(name=cst.Name("torch"))])])
    new_body = list(body)
    if index < len(body) and _is_import(body[index]):
        # Take over the leading comments/blank lines of the import it goes above.
        statement = statement.with_changes(leading_lines=body[index].leading_lines)
        new_body[index] = body[index].with_changes(leading_lines=())
    new_body.insert(index, statement)
    return module.with_changes(body=new_body)


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _is_future(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and any(
        isinstance(small, cst.ImportFrom) and isinstance(small.module, cst.Name) and small.module.value == "__future__"
        for small in statement.body
    )


def is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _import_position(body: Sequence[cst.BaseStatement]) -> int:
    index = 0
    if body and is_docstring(body[0]):
        index = 1
    while index < len(body) and _is_future(body[index]):
        index += 1
    for position in range(index, len(body)):
        if _is_import(body[position]):
            return position
    return index


def apply_disable(
    module: cst.Module,
    casts: Mapping[int, CastTarget],
    wraps: Mapping[int, WrapTarget],
    table: ImportTable,
) -> cst.Module:
    spelling = autocast_spelling(module, table)
    return module.visit(DisableTransformer(casts, table, wraps, spelling))
