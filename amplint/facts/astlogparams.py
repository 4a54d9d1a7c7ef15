"""`facts.logparamshape` on CPython's tree: `logparams` for the summary reader (`astmathsites`)."""
from __future__ import annotations

import ast
from typing import Optional, Tuple

from amplint.facts import logparamshape
from amplint.facts.astmathenv import Env
from amplint.facts.astprobmath import additive_terms, leaves
from amplint.facts.astreader import AstReader
from amplint.facts.logparamshape import SCALE_DEPTH, is_log_parameter_form


def log_parameter_form(node: ast.expr, env: Env) -> Optional[Tuple[ast.expr, ...]]:
    """`logparams.log_parameter_form`: the sum's tensor operands, else None."""
    if not is_log_parameter_form(node, AstReader(env)):
        return None
    return tuple(op for term in additive_terms(node, env) for op in leaves(term, env))


def is_positive_transform(node: ast.expr, env: Env, depth: int = SCALE_DEPTH) -> bool:
    """`logparams.is_positive_transform`: a scale or rate made from an activation (`exp`, `softplus`)."""
    return logparamshape.is_positive_transform(node, AstReader(env), depth)
