"""`facts.kernelshape` on LibCST's tree: a density written out with no log (`(1 + z ** 2 / nu) ** -k`,
`1 / (pi * s * (1 + z ** 2))`, `exp(-0.5 * z ** 2) / sigma`), judged as a site by `mathsites._kernel_site`."""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from amplint.facts.cstreader import CstReader
from amplint.facts.kernelshape import is_kernel
from amplint.facts.mathenv import Env
from amplint.facts.probmath import leaves

Found = Optional[Tuple[Tuple[cst.BaseExpression, ...], cst.BaseExpression]]  # (its tensor operands, its anchor)


def kernel(node: cst.BaseExpression, env: Env) -> Found:
    """A density kernel at `node`: its tensor operands and where it is reported (the node), else None."""
    return (tuple(leaves(node, env)), node) if is_kernel(node, CstReader(env)) else None
