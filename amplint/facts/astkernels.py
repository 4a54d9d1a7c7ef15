"""`facts.kernelshape` on CPython's tree: `kernels` for the summary reader (`astmathsites`). The screens' syntax-only
test, a superset of what it takes but for a Gaussian's (its `exp` is a call they count), is
`amplint.screen.kernel_candidate`."""
from __future__ import annotations

import ast
from typing import List, Optional

from amplint.facts.astmathenv import Env
from amplint.facts.astprobmath import leaves
from amplint.facts.astreader import AstReader
from amplint.facts.kernelshape import is_kernel


def kernel(node: ast.expr, env: Env) -> Optional[List[ast.expr]]:
    """`kernels.kernel`: the kernel's tensor operands, else None."""
    return list(leaves(node, env)) if is_kernel(node, AstReader(env)) else None
