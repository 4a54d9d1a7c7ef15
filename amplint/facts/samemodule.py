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

from typing import Any, Callable, List, Optional, Sequence, Set, Tuple

import libcst as cst

from amplint.facts.model import Scope
from amplint.names import ImportTable, dotted_name

# `nn.Module` methods that return `self` (`to`/`cuda`/`half`/... move or cast its parameters in place).
SAME_MODULE_METHODS = frozenset(
    {"to", "cuda", "cpu", "xpu", "half", "float", "double", "bfloat16", "train", "eval", "requires_grad_",
     "share_memory", "to_empty"}
)
# Wrappers whose `forward` runs the wrapped module's and whose `.module` is that module.
PARALLEL_WRAPPERS = frozenset(
    {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel",
     "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel",
     "torch.distributed.fsdp.FullyShardedDataParallel",
     "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"}
)
# Functions whose result calls the module given (`torch.compile` returns an OptimizedModule around it).
COMPILERS = frozenset({"torch.compile"})
MODULE_KEYWORDS = ("module", "model")
MAX_HOPS = 8  # `Net().to(dev).eval().train()...`: a bound on the chain, not on real code


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


def without_module_hop(callee: str, parallel: Callable[[Sequence[str]], bool]) -> str:
    """`ddp.module.policy` as `ddp.policy` when `ddp` holds a parallel wrapper (`parallel(["ddp"])`);
    `self.model.module(x)` as `self.model(x)` when `self.model` does."""
    parts = callee.split(".")
    head = 2 if parts[0] in ("self", "cls") else 1
    if len(parts) > head and parts[head] == "module" and parallel(parts[:head]):
        return ".".join(parts[:head] + parts[head + 1:])
    return callee


class ParallelMarks:
    """The collector's record of which names and `self.` attributes hold a parallel wrapper (`.module`).

    Keys are (function key, name) for names and ("self", class, attribute) for attributes; a rebinding
    without a wrapper clears the mark. The collector (its `scope`, `imports`) is the host.
    """

    scope: Scope
    imports: ImportTable

    def __init__(self) -> None:
        super().__init__()
        self.parallel_marks: Set[Tuple[str, ...]] = set()

    def _mark_key(self, parts: Sequence[str]) -> Optional[Tuple[str, ...]]:
        """Where the binding of `name` / `self.attr` that a lookup from here would find is marked."""
        if len(parts) == 2 and parts[0] == "self":
            return None if self.scope.class_name is None else ("self", self.scope.class_name, parts[1])
        if len(parts) != 1:
            return None
        scope: Optional[Scope] = self.scope
        while scope is not None:
            if parts[0] in scope.instances:
                return (scope.key, parts[0])
            if parts[0] in scope.params or parts[0] in scope.assigned:
                return None
            scope = scope.parent
        return None

    def _holds_parallel(self, parts: Sequence[str]) -> bool:
        key = self._mark_key(parts)
        return key is not None and key in self.parallel_marks

    # The host's tree: LibCST's here, CPython's in `facts.astcalls` (which overrides these three).
    def _dotted(self, node: Any) -> Optional[str]:
        return dotted_name(node)

    def _same_module(self, node: Any) -> Tuple[Any, bool]:
        return same_module(node, self.imports)

    def _module_of(self, node: Any) -> Any:
        """`x` of `x.module`, else None."""
        return node.value if isinstance(node, cst.Attribute) and node.attr.value == "module" else None

    def _mark_parallel(self, target: Any, parallel: bool) -> None:
        """After `target = value` bound an instance: whether `value` was a parallel wrapper."""
        text = self._dotted(target)
        parts = text.split(".") if text is not None else []
        key: Optional[Tuple[str, ...]] = None
        if len(parts) == 1:  # a name of this function (or of the module)
            key = (self.scope.key, parts[0])
        elif len(parts) == 2 and parts[0] == "self" and self.scope.class_name is not None:
            key = ("self", self.scope.class_name, parts[1])
        if key is not None and parallel:
            self.parallel_marks.add(key)
        elif key is not None:
            self.parallel_marks.discard(key)

    def _unwrapped(self, value: Any) -> Any:
        """`value` through calls that return the same module, and through `.module` of a parallel wrapper."""
        for _ in range(MAX_HOPS):
            value = self._same_module(value)[0]
            inner = self._module_of(value)
            if inner is None:
                return value
            text = self._dotted(inner)
            wrapper = self._same_module(inner)[1] or (text is not None and self._holds_parallel(text.split(".")))
            if not wrapper:
                return value  # `.module` of what is no parallel wrapper: an attribute of its own
            value = inner
        return value
