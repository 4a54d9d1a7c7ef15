"""Calls that return the module they are given: `.to(device)`, `.eval()`, `torch.compile(m)`, `DDP(m)`.

Real code almost never calls the model it built: it calls `Net().to(device)`,
`torch.compile(net)`, `DDP(net)` or `accelerator.prepare(net, opt)`. Each
returns the same module, or a wrapper whose `forward` is the module's, so the
class an expression holds passes through them (issue 13, item 1). `.half()`
makes the module float16 outright: only its class flows here, precision is
the regions' business.

DistributedDataParallel, DataParallel and FSDP (and a prepared model, which
Accelerate may have wrapped in one) also give the module back as `.module`:
`ddp.module(x)` and `model.module.policy(x)` are calls on the module itself.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import libcst as cst

from amplint.facts.modulecalls import (
    COMPILERS, MAX_HOPS, MODULE_KEYWORDS, PARALLEL_WRAPPERS, SAME_MODULE_METHODS, ParallelMarks,
)
from amplint.names import ImportTable, dotted_name


def same_module(node: cst.BaseExpression, table: ImportTable) -> Tuple[cst.BaseExpression, bool]:
    """The expression whose module `node` holds, and whether a parallel wrapper (with `.module`) was passed.

    `Net(8).to(dev).eval()` gives `Net(8)`; `DDP(model, device_ids=[0])` gives `model`; anything else is itself.
    A method named like one of these on an object that holds no module is harmless: the object it is
    called on is what the caller looks up, and an object of no known class stays unknown.
    """
    parallel = False
    for _ in range(MAX_HOPS):
        if not isinstance(node, cst.Call):
            break
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in SAME_MODULE_METHODS:
            node = func.value
            continue
        wrapper = table.matches(func, PARALLEL_WRAPPERS)
        inner = _module_argument(node) if wrapper or table.matches(func, COMPILERS) else None
        if inner is None:
            break
        parallel = parallel or wrapper
        node = inner
    return node, parallel


def _module_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The module a wrapper is given: its first positional argument, or `module=`/`model=`."""
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value in MODULE_KEYWORDS:
            return arg.value
    return None


def prepared_arguments(value: cst.BaseExpression) -> Optional[List[cst.BaseExpression]]:
    """`accelerator.prepare(model, opt)` on an accelerator the file does not build (a parameter, `self.`):
    what it returns, in order. Only a receiver named like an accelerator counts: `prepare` is a common name.
    """
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "prepare" and value.args and not any(a.star for a in value.args)):
        return None
    receiver = value.func.value
    name = receiver.attr.value if isinstance(receiver, cst.Attribute) else getattr(receiver, "value", "")
    return [a.value for a in value.args] if isinstance(name, str) and "accelerator" in name.lower() else None


class CstParallelMarks(ParallelMarks):
    """`ParallelMarks` over LibCST's tree: the collector's host."""

    def _dotted(self, node: Any) -> Optional[str]:
        return dotted_name(node)

    def _same_module(self, node: Any) -> Tuple[Any, bool]:
        return same_module(node, self.imports)

    def _module_of(self, node: Any) -> Any:
        """`x` of `x.module`, else None."""
        return node.value if isinstance(node, cst.Attribute) and node.attr.value == "module" else None
