"""Module calls both collectors read: calls that return the module given, and containers of modules.

`facts.samemodule` and `facts.containers` read them in LibCST's tree,
`facts.astnodes` and `facts.astcalls` in CPython's; this module imports neither
parser, so project summaries are built without LibCST.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, List, Optional, Sequence, Set, Tuple

from amplint.facts.model import Scope
from amplint.names import ImportTable

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
# `nn.Module` containers: the collectors record the classes of their elements (`facts.containers`).
CONTAINERS = frozenset({"torch.nn.ModuleDict", "torch.nn.ModuleList", "torch.nn.Sequential"})
ELEMENT = "[]"  # suffix of the attribute name that stands for any element
EXPRESSION = "<expr>"  # the root of a callee no dotted name spells: `Scorer().evaluate`, `make()`, `heads[k]`


def expression_callee(name: str) -> str:
    """The callee recorded for a call on an expression (`attr`: the method called on it, or "" or ELEMENT):
    the project flow reads what the expression holds (`project.flow.Flow.call_values`)."""
    return f"{EXPRESSION}.{name}" if name and name != ELEMENT else EXPRESSION


def shortened_call(code: str, callee: str, func_code: Callable[[], str]) -> str:
    """A call as a chain shows it: as written, on one line, or its callee's text and `(...)` when that is longer
    than 40 characters (`Scorer().evaluate(...)` for an expression's callee)."""
    text = " ".join(code.split())
    if len(text) <= 40:
        return text
    return f"{' '.join(func_code().split()) if callee.startswith(EXPRESSION) else callee}(...)"


def constructed_classes(callees: Iterable[Optional[str]]) -> Tuple[str, ...]:
    """The capitalised callees (classes constructed), in order, each once; None for an element that is no call."""
    found: List[str] = []
    for callee in callees:
        if callee is not None and callee.rsplit(".", 1)[-1][:1].isupper() and callee not in found:
            found.append(callee)
    return tuple(found)


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

    # The host's tree: LibCST's in `samemodule.CstParallelMarks`, CPython's in `facts.astcalls`.
    def _dotted(self, node: Any) -> Optional[str]:
        raise NotImplementedError

    def _same_module(self, node: Any) -> Tuple[Any, bool]:
        raise NotImplementedError

    def _module_of(self, node: Any) -> Any:
        """`x` of `x.module`, else None."""
        raise NotImplementedError

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
