"""`facts.logparamshape` on LibCST's tree: a density in log-parameter form (`s + (x - mu) ** 2 * torch.exp(-s)`,
`eta.exp() - k * eta`) and a log of a scale made from an activation (`torch.log(F.softplus(s))`), judged as
sites by `mathsites`."""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from amplint.facts import logparamshape
from amplint.facts.cstreader import CstReader
from amplint.facts.logparamshape import SCALE_DEPTH, is_log_parameter_form
from amplint.facts.mathenv import Env
from amplint.facts.probmath import additive_terms, first_sum, leaves


def log_parameter_form(node: cst.BaseExpression, env: Env
                       ) -> Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]:
    """(its tensor operands, where it starts) for a sum in log-parameter form, else None."""
    if not is_log_parameter_form(node, CstReader(env)):
        return None
    return tuple(op for term in additive_terms(node) for op in leaves(term, env)), first_sum(node)


def is_positive_transform(node: cst.BaseExpression, env: Env, depth: int = SCALE_DEPTH) -> bool:
    """`logparamshape.is_positive_transform`: its log is a log-normaliser float16 sends to -inf."""
    return logparamshape.is_positive_transform(node, CstReader(env), depth)
