"""Readings of CPython's tree that the LibCST collector makes of LibCST's, for the project summary (`astcalls`).

Each function here answers what its LibCST namesake answers for the same source
(`dtypes.is_wide`, `samemodule.same_module`, `containers.element_classes`, ...):
`tests/test_ast_summary.py` compares the summaries they build with the
collector's on every fixture and on programs written to differ. Two gaps between
the trees are bridged here: LibCST keeps a call's positional, keyword and
starred arguments in one list in source order (`call_args`), and it reads
`True`/`False`/`None` as names where CPython reads constants.
"""
from __future__ import annotations

import ast
from typing import AbstractSet, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from amplint.torchnames import (
    ARITHMETIC_METHODS, CAST_METHODS, DTYPE_CAST_METHODS, ELEMENTWISE_METHODS, FACTORY_FUNCTIONS,
    SELECT_FUNCTIONS, TRANSFORM_FUNCTIONS, WIDE_DTYPES,
)
from amplint.facts.modulecalls import CONTAINERS, ELEMENT, constructed_classes
from amplint.facts.frameworks import LiteralArg
from amplint.facts.modulecalls import COMPILERS, MAX_HOPS, MODULE_KEYWORDS, PARALLEL_WRAPPERS, SAME_MODULE_METHODS
from amplint.facts.typedslots import names_distribution, typed_slots
from amplint.names import ImportTable, ast_dotted, ast_qualnames


class Arg(NamedTuple):
    """One argument of a call as LibCST lists it: `keyword` None for a positional or `**` one."""

    keyword: Optional[str]
    star: str  # "", "*" or "**"
    value: ast.expr


def call_args(call: ast.Call) -> List[Arg]:
    """The call's arguments in source order, positional, keyword and starred alike."""
    if not call.keywords:  # most calls: already in order
        return [Arg(None, "*", a.value) if isinstance(a, ast.Starred) else Arg(None, "", a) for a in call.args]
    found = [(a.lineno, a.col_offset, Arg(None, "*", a.value) if isinstance(a, ast.Starred) else Arg(None, "", a))
             for a in call.args]
    found += [(k.lineno, k.col_offset, Arg(k.arg, "" if k.arg else "**", k.value)) for k in call.keywords]
    if call.args and call.keywords:
        found.sort(key=lambda each: (each[0], each[1]))
    return [arg for _, _, arg in found]


def literal(node: ast.expr, text: str) -> LiteralArg:
    """`nodes.literal`: a string, an integer, True, False or None is a literal; a float or bytes is not."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, str)) or type(value) is int:
            return LiteralArg(text, value, True)
    return LiteralArg(text)


def trainer_model(args: Sequence[Arg]) -> Optional[ast.expr]:
    """`nodes.trainer_model`: the `model=` argument, else the first positional one."""
    model = next((a.value for a in args if a.keyword == "model"), None)
    positional = [a.value for a in args if a.keyword is None and not a.star]
    return model if model is not None or not positional else positional[0]


def matches(table: ImportTable, node: ast.expr, wanted: AbstractSet[str]) -> bool:
    return not ast_qualnames(node, table).isdisjoint(wanted)


def self_attribute(node: ast.expr) -> Optional[str]:
    """`x` for `self.x`, else None."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def target_names(target: ast.expr) -> List[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in target_names(element)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []


def unstarred(node: ast.expr) -> ast.expr:
    """An element of a tuple or list as LibCST's `Element.value` / `StarredElement.value` gives it."""
    return node.value if isinstance(node, ast.Starred) else node


# --- dtypes (`amplint.dtypes`) --------------------------------------------------------------------
def is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None or (isinstance(node.value, (int, float, complex)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return is_number(node.operand)
    return False


def tensorish(node: ast.expr) -> bool:
    """`densitycalls._tensorish`: not a number, a string, True, False, None, `self` or a literal of those."""
    if is_number(node) or isinstance(node, ast.JoinedStr):
        return False
    if isinstance(node, ast.Name) and node.id in ("self", "cls"):
        return False
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(tensorish(element) for element in node.elts)
    return not (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)))


def literal_pairs(targets: Sequence[ast.expr], value: ast.expr) -> Optional[List[Tuple[str, ast.expr]]]:
    """`nodes.literal_pairs`: `a, b = x.float(), y`, each name with its element."""
    target = targets[0] if len(targets) == 1 else None
    if not (isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List))):
        return None
    if len(target.elts) != len(value.elts) or not all(isinstance(e, ast.Name) for e in target.elts) or any(
            isinstance(e, ast.Starred) for e in (*target.elts, *value.elts)):
        return None
    return [(n.id, v) for n, v in zip(target.elts, value.elts)]  # type: ignore[attr-defined]


def is_wide(node: ast.expr, table: ImportTable, wide_name: Callable[[str], bool]) -> bool:
    """`dtypes.is_wide`: a float32/float64 tensor or a Python number."""
    if is_number(node):
        return True
    if isinstance(node, ast.Name):
        return wide_name(node.id)
    if isinstance(node, ast.Call):
        if is_cast_call(node, table):
            return True
        qualnames = ast_qualnames(node.func, table)  # read once: a factory's names, then a transform's
        if _is_float32_factory(node, qualnames):
            return True
        operands = _transform_operands(node, qualnames)
        return bool(operands) and all(is_wide(op, table, wide_name) for op in operands)
    if isinstance(node, ast.Subscript):
        return is_wide(node.value, table, wide_name)
    if isinstance(node, ast.BinOp):
        left = is_wide(node.left, table, wide_name)
        right = is_wide(node.right, table, wide_name)
        return left and right and not (is_number(node.left) and is_number(node.right))
    if isinstance(node, ast.UnaryOp):
        return is_wide(node.operand, table, wide_name)
    if isinstance(node, (ast.DictComp, ast.ListComp, ast.GeneratorExp)):
        element = node.value if isinstance(node, ast.DictComp) else node.elt
        return is_cast_call(element, table) or _casts_tensors(element, table)
    return False


def _casts_tensors(node: ast.expr, table: ImportTable) -> bool:
    if not (isinstance(node, ast.IfExp) and isinstance(node.orelse, ast.Name) and is_cast_call(node.body, table)):
        return False
    cast, test = node.body, node.test
    guard = ast_dotted(test.func) if isinstance(test, ast.Call) else None
    casts_name = isinstance(cast, ast.Call) and isinstance(cast.func, ast.Attribute) and isinstance(
        cast.func.value, ast.Name) and cast.func.value.id == node.orelse.id
    return casts_name and guard is not None and guard.rsplit(".", 1)[-1] in ("is_tensor", "isinstance", "hasattr")


def _is_float32_factory(node: ast.Call, qualnames: AbstractSet[str]) -> bool:
    """`dtypes.is_float32_factory`, given the names the callee may refer to."""
    return not qualnames.isdisjoint(FACTORY_FUNCTIONS) and not any(k.arg == "dtype" for k in node.keywords)


def is_cast_call(node: ast.expr, table: ImportTable) -> bool:
    if not isinstance(node, ast.Call):
        return False
    if any(k.arg == "dtype" and matches(table, k.value, WIDE_DTYPES) for k in node.keywords):
        return True
    if not isinstance(node.func, ast.Attribute):
        return False
    method = node.func.attr
    if method in CAST_METHODS and not node.args and not node.keywords:
        return True
    if method in DTYPE_CAST_METHODS:
        return any(arg.keyword in (None, "dtype") and matches(table, arg.value, WIDE_DTYPES)
                   for arg in call_args(node))
    return False


def transform_operands(node: ast.Call, table: ImportTable) -> List[ast.expr]:
    """`dtypes.transform_operands` on CPython's tree: the operands whose dtype the call keeps."""
    return _transform_operands(node, ast_qualnames(node.func, table))


def _transform_operands(node: ast.Call, qualnames: AbstractSet[str]) -> List[ast.expr]:
    """`dtypes.transform_operands`, given the names the callee may refer to."""
    values = _positional(node)
    if not qualnames.isdisjoint(SELECT_FUNCTIONS) and len(values) == 3 and not node.keywords:
        return [a for a in values[1:] if not is_number(a)] or values[1:2]
    if not qualnames.isdisjoint(TRANSFORM_FUNCTIONS):
        if any(k.arg == "dtype" for k in node.keywords):
            return []
        return _positional(node)[:1]
    if isinstance(node.func, ast.Attribute) and node.func.attr in ELEMENTWISE_METHODS:
        receiver = [node.func.value]
        if node.func.attr in ARITHMETIC_METHODS:
            return receiver + [a for a in _positional(node)[:1] if not is_number(a)]
        return receiver
    return []


def _positional(node: ast.Call) -> List[ast.expr]:
    """The values of the arguments that are not starred, in source order."""
    return [arg.value for arg in call_args(node) if not arg.star]


# --- modules passed through calls (`amplint.facts.samemodule`) -----------------------------------------
def same_module(node: ast.expr, table: ImportTable) -> Tuple[ast.expr, bool]:
    parallel = False
    for _ in range(MAX_HOPS):
        if not isinstance(node, ast.Call):
            break
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in SAME_MODULE_METHODS:
            node = func.value
            continue
        qualnames = ast_qualnames(func, table)
        wrapper = not qualnames.isdisjoint(PARALLEL_WRAPPERS)
        inner = _module_argument(node) if wrapper or not qualnames.isdisjoint(COMPILERS) else None
        if inner is None:
            break
        parallel = parallel or wrapper
        node = inner
    return node, parallel


def _module_argument(call: ast.Call) -> Optional[ast.expr]:
    for arg in call_args(call):
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword in MODULE_KEYWORDS:
            return arg.value
    return None


def prepared_arguments(value: ast.expr) -> Optional[List[ast.expr]]:
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "prepare"):
        return None
    args = call_args(value)
    if not args or any(a.star for a in args):
        return None
    receiver = value.func.value
    name = receiver.attr if isinstance(receiver, ast.Attribute) else receiver.id if isinstance(
        receiver, ast.Name) else ""
    return [a.value for a in args] if "accelerator" in name.lower() else None


# --- containers (`amplint.facts.containers`) ---------------------------------------------------------
def element_classes(value: ast.expr, imports: ImportTable) -> Tuple[str, ...]:
    if isinstance(value, ast.Call) and matches(imports, value.func, CONTAINERS):
        args = call_args(value)
        if not args:
            return ()
        if len(args) == 1 and isinstance(args[0].value, (ast.Dict, ast.List, ast.Tuple, ast.ListComp, ast.DictComp)):
            return element_classes(args[0].value, imports)
        return _constructed([a.value for a in args if not a.star])
    if isinstance(value, (ast.List, ast.Tuple)):
        return _constructed([e for e in value.elts if not isinstance(e, ast.Starred)])
    if isinstance(value, ast.Dict):
        return _constructed([v for k, v in zip(value.keys, value.values) if k is not None])
    if isinstance(value, (ast.ListComp, ast.GeneratorExp)):
        return _constructed([value.elt])
    if isinstance(value, ast.DictComp):
        return _constructed([value.value])
    return ()


def _constructed(values: Sequence[ast.expr]) -> Tuple[str, ...]:
    return constructed_classes(ast_dotted(value.func) if isinstance(value, ast.Call) else None for value in values)


def loop_elements(node: "ast.For | ast.AsyncFor") -> Dict[str, str]:
    source = node.iter
    method = None
    if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) and not source.args and \
            not source.keywords:
        method, source = source.func.attr, source.func.value
    attr = self_attribute(source)
    if attr is None or method not in (None, "values", "items"):
        return {}
    target = node.target
    if method == "items":
        if not (isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2):
            return {}
        target = unstarred(target.elts[1])
    return {target.id: f"self.{attr}{ELEMENT}"} if isinstance(target, ast.Name) else {}


def element_callee(func: ast.expr, elements: Dict[str, str]) -> Optional[str]:
    if isinstance(func, ast.Subscript):
        attr = self_attribute(func.value)
        return None if attr is None else f"self.{attr}{ELEMENT}"
    if isinstance(func, ast.Name):
        return elements.get(func.id)
    return None


# --- annotations and parameters (`amplint.facts.nodes`, `amplint.facts.signatures`) ------------------------
def annotation_class(node: ast.expr, source: Callable[[ast.expr], str]) -> Optional[str]:
    """`nodes.annotation_class`; `source` gives a node's text (a string annotation must be one literal)."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = ast_dotted(node)
        return None if name in ("None", "Any", "typing.Any") else name
    if isinstance(node, ast.Constant) and node.value is None:
        return None  # LibCST's `Name("None")`
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if not _one_string_literal(source(node)):
            return None  # `"A" "B"`: LibCST's ConcatenatedString, which it does not read
        value = node.value
        return value.strip() if all(part.isidentifier() for part in value.strip().split(".")) else None
    if isinstance(node, ast.Subscript) and ast_dotted(node.value) in ("Optional", "typing.Optional") and \
            not isinstance(node.slice, (ast.Tuple, ast.Slice)):
        return annotation_class(node.slice, source)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if isinstance(other, ast.Constant) and other.value is None:
                return annotation_class(side, source)
    return None


def _one_string_literal(text: str) -> bool:
    """Is `text` one string literal (any prefix, any quotes), not an implicit concatenation?"""
    body = text.lstrip("rRuUbBfF")
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote) and body.endswith(quote) and len(body) >= 2 * len(quote):
            return quote not in body[len(quote):-len(quote)].replace("\\" + quote[0], "")
    return False


def declared_class(annotation: ast.expr, value: ast.expr) -> Optional[str]:
    declared = ast_dotted(annotation)
    if declared is None or not declared.rsplit(".", 1)[-1][:1].isupper():
        return None
    if isinstance(value, ast.Call):
        callee = ast_dotted(value.func)
        if callee is not None and callee.rsplit(".", 1)[-1][:1].isupper():
            return None
    return declared


def every_param(args: ast.arguments) -> List[ast.arg]:
    """`nodes.record_params`'s order: positional-only, positional, keyword-only, then `*args` and `**kwargs`."""
    return [*args.posonlyargs, *args.args, *args.kwonlyargs] + [p for p in (args.vararg, args.kwarg) if p]


def parameter_names(args: ast.arguments) -> Tuple[str, ...]:
    """`signatures.parameter_names`: positional ones (`self`/`cls` left out), then keyword-only ones."""
    params = [p.arg for p in [*args.posonlyargs, *args.args]]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    return tuple(params) + tuple(p.arg for p in args.kwonlyargs)


def distribution_params(args: ast.arguments, imports: ImportTable, starts_with_paren: Callable[[ast.expr], bool]
                        ) -> Optional[Tuple[str, ...]]:
    """`signatures.distribution_params`: the slots (position, then name) of parameters typed as a distribution.

    None when unsure: `X[(A, B)]` is one subscript element to LibCST (a tuple, not read), `X[A, B]` two,
    and CPython's tree has a tuple for both; `X[(A), B]` starts with a parenthesis too
    (`starts_with_paren(tuple)`), so such a subscript is left to LibCST.
    """
    try:
        return typed_slots([(p.arg, p.annotation) for p in [*args.posonlyargs, *args.args]],
                           [(p.arg, p.annotation) for p in args.kwonlyargs],
                           lambda annotation: _distribution_annotation(annotation, imports, starts_with_paren))
    except _Unsure:
        return None


class _Unsure(Exception):
    pass


def _distribution_annotation(annotation: Optional[ast.expr], imports: ImportTable,
                             starts_with_paren: Callable[[ast.expr], bool]) -> bool:
    """`signatures.is_distribution_annotation`: `Distribution`, `D.Normal`, `Optional[Distribution]`, `X | None`."""
    stack = [annotation] if annotation is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, ast.BinOp):
            stack.extend((node.left, node.right))
            continue
        if isinstance(node, ast.Subscript):
            inner = node.slice
            if isinstance(inner, ast.Tuple):
                if starts_with_paren(inner):
                    raise _Unsure
                stack.extend(inner.elts)
            else:
                stack.append(inner)
            continue
        dotted = ast_dotted(node)
        if dotted is not None and names_distribution(dotted, imports):
            return True
    return False
