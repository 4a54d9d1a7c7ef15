"""Cast one input expression to float32 the way fix A wants it.

The cast goes *before* an elementwise transform, because the transform is
where float16 breaks: measured on CPU float16 autocast, a Poisson rate of
`exp(head)` cast after the `exp` still gave 2,444 NaN in 65,536 rows and 0
when cast before it; `1e-3 * sigmoid(head)` as a Normal scale gave
non-finite gradients unless the cast came before the `sigmoid`.

Only `.float()` is emitted: it needs no import, and `dtypes.is_wide` reads
it (and an elementwise transform of it) as float32, so a fixed file
re-checks clean. When the inside of an expression cannot be cast without
guessing which operand is a tensor (`x.view(n, -1)`, `mu * k`), the whole
expression is cast instead: `.float()` on a Python number would raise.
"""
from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from amplint import dtypes
from amplint.names import ImportTable

Wide = Callable[[cst.BaseExpression], bool]

# Expressions that can take `.float()` without parentheses.
ATOMS = (
    cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.List, cst.Dict, cst.Set,
    cst.ListComp, cst.SetComp, cst.DictComp, cst.SimpleString, cst.FormattedString,
)


def wide_predicate(table: ImportTable, wide_name: Callable[[str], bool]) -> Wide:
    """`dtypes.is_wide` bound to one scope: the same test the analysis used."""
    return lambda node: dtypes.is_wide(node, table, wide_name)


def append_float(node: cst.BaseExpression) -> cst.Call:
    """`node.float()`, adding parentheses only where precedence needs them."""
    if not node.lpar and not isinstance(node, ATOMS):
        node = node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=node, attr=cst.Name("float")))


def cast_starred(node: cst.BaseExpression, star: str, table: ImportTable) -> cst.BaseExpression:
    """`**params` as `{k: v.float() if torch.is_tensor(v) else v for k, v in params.items()}`, `*args` as a list
    the same way: the tensors of a mapping or a sequence cast, anything else (a flag, a number) as it was.

    Without `torch` imported, `hasattr(v, "float")` tells tensors apart instead (numbers have no `.float()`).
    """
    torch = next(iter(table.local_names_for("torch")), None)
    test = f"{torch}.is_tensor(v)" if torch is not None else 'hasattr(v, "float")'
    element = f"v.float() if {test} else v"
    source = cst.Module([]).code_for_node(node)
    if not node.lpar and not isinstance(node, ATOMS):
        source = f"({source})"
    if star == "**":
        return cst.parse_expression(f"{{k: {element} for k, v in {source}.items()}}")
    return cst.parse_expression(f"[{element} for v in {source}]")


def cast_expression(node: cst.BaseExpression, table: ImportTable, wide: Wide) -> cst.BaseExpression:
    """`node` as a float32 expression; unchanged when it already is one."""
    if wide(node):
        return node
    inside = _cast_inside(node, table, wide)
    if inside is not None and wide(inside):
        return inside
    return append_float(node)


def _cast_inside(node: cst.BaseExpression, table: ImportTable, wide: Wide) -> Optional[cst.BaseExpression]:
    """Cast the tensor operand under a transform, or None when there is none to reach."""
    if isinstance(node, cst.Call):
        return _cast_transform(node, table, wide)
    if isinstance(node, cst.BinaryOperation):
        # `1e-3 * torch.sigmoid(x)`: a number literal on one side needs no cast.
        if dtypes.is_number(node.left) and not dtypes.is_number(node.right):
            return node.with_changes(right=cast_expression(node.right, table, wide))
        if dtypes.is_number(node.right) and not dtypes.is_number(node.left):
            return node.with_changes(left=cast_expression(node.left, table, wide))
        return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        return node.with_changes(expression=cast_expression(node.expression, table, wide))
    if isinstance(node, cst.Subscript):
        # `head.exp()[..., 0]` casts before the exp; `x[:, 0]` is cast after indexing (less to copy).
        inner = _cast_inside(node.value, table, wide)
        return None if inner is None else node.with_changes(value=inner)
    return None


def _cast_transform(node: cst.Call, table: ImportTable, wide: Wide) -> Optional[cst.BaseExpression]:
    operands = dtypes.transform_operands(node, table)
    if len(operands) != 1:
        return None  # not a transform, or other operands that may be numbers or shapes
    operand = operands[0]
    cast = cast_expression(operand, table, wide)
    if isinstance(node.func, cst.Attribute) and node.func.value is operand:
        return node.with_changes(func=node.func.with_changes(value=cast))
    if node.args and node.args[0].value is operand:
        return node.with_changes(args=[node.args[0].with_changes(value=cast), *node.args[1:]])
    return None
