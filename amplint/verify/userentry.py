"""Find the computation at a finding's position and describe how the child should call it.

Three shapes, told apart by the site's kind:

- a call of the project's own density, `gaussian_nll(mu, log_std, y)` or
  `losses.gaussian_nll(...)`: the function is sliced and called with the call's
  arguments (literals as written, everything else a synthesized tensor that
  goes through the argument's own transform, `log_std.exp()`);
- a method, `self._likelihood(x)` or `posterior.kl()` after
  `posterior = DiagonalGaussianDistribution(z)`: the class is sliced, an
  instance is built (with the constructor's arguments as written, or with none
  when its constructor needs none), and the method is called;
- hand-written math (a log of probabilities, a written-out Gaussian, a
  vanishing floor): the expression itself becomes the body of a wrapper
  function whose parameters are the local names it reads. A local bound to a
  number literal (`eps=1e-8`, `self.eps = 1e-5`) keeps its number.

Nothing here runs the user's code: it reads CPython's tree and the slicer.
"""
from __future__ import annotations

import ast
from typing import List, Optional, Tuple, Union

from amplint.densitynames import DENSITY_KIND
from amplint.verify.sliceemit import emit
from amplint.verify.slicer import Parsed, SliceNeeds, Slicer
from amplint.verify.userentrysite import (
    CannotRun, Located, arguments, enclosing, method_params, node_at, site_expression,
)
from amplint.verify.userexpr import candidates
from amplint.verify.userjob import Candidate, Entry, TensorInput, UserJob

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
LOG_SHAPES = frozenset({"log-of-prob", "epsilon"})  # the site's `method`: what a hand-written shape computes


def locate(path: str, line: int, column: int, end: Optional[Tuple[int, int]], method: str, kind: str,
           slicer: Slicer) -> Union[UserJob, str]:
    """The job for the computation at (line, column) of `path`, or why there is none."""
    try:
        parsed = slicer.load(slicer.finder.module_of(path))
        node = node_at(parsed, line, column, end)
        located = enclosing(parsed, node)
        if kind == DENSITY_KIND:
            if not isinstance(node, ast.Call):
                raise CannotRun(f"no call of `{method}` at {parsed.label}:{line}:{column}")
            found = (Candidate(*_density_call(parsed, node, located, slicer, method)),)
        else:
            found = candidates(parsed, site_expression(parsed, node, method), located, slicer, method,
                               method in LOG_SHAPES)
        slicer.close()
        return UserJob(emit(slicer), found)
    except (SliceNeeds, CannotRun) as exc:
        return str(exc)


# --- a call of the project's density ----------------------------------------------------------------

def _density_call(parsed: Parsed, call: ast.Call, located: Located, slicer: Slicer,
                  label: str) -> Tuple[Entry, Tuple[TensorInput, ...]]:
    func = call.func
    module = parsed.module.name
    if isinstance(func, ast.Name):
        if located.is_local(func.id):
            raise CannotRun(f"`{func.id}` is local to `{located.qualname}`: verify slices only module-level code")
        slicer.need(parsed, func.id, {()}, label)
        found = slicer.definition(parsed, func.id)
        params = method_params(found, None, skip_self=False)
        args, inputs = arguments(call, params, "")
        return Entry(module, (func.id,), args, label), inputs
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        raise CannotRun(f"`{ast.unparse(func)}` is not a function or a method of a name verify can follow")
    receiver, name = func.value.id, func.attr
    if located.cls is not None and receiver == located.receiver:
        return _own_method(parsed, call, located, slicer, label)
    built = located.constructor_of(receiver) if located.is_local(receiver) else None
    if built is not None:
        return _built_instance(parsed, call, built, slicer, label)
    if not located.is_local(receiver):
        slicer.need(parsed, receiver, {(name,)}, label)
        found = slicer.definition(parsed, receiver)
        if found is not None:  # `Cls.static(...)`: a class's own function
            params = method_params(found, name, skip_self=False)
        else:
            params = None
        args, inputs = arguments(call, params, "")
        return Entry(module, (receiver, name), args, label), inputs
    raise CannotRun(f"the receiver `{receiver}` of `{label}(...)` is not built where verify can see it (a parameter, "
                    "or a value another call returns)")


def _own_method(parsed: Parsed, call: ast.Call, located: Located, slicer: Slicer,
                label: str) -> Tuple[Entry, Tuple[TensorInput, ...]]:
    """`self.m(...)`: an instance of the enclosing class, built with no arguments, calls `m`."""
    assert located.cls is not None and isinstance(call.func, ast.Attribute)
    cls = parsed.tree.body[located.cls]
    assert isinstance(cls, ast.ClassDef)
    lineage = slicer.lineage(parsed, located.cls)
    required = _required_init(lineage)
    if required:
        raise CannotRun(f"`{label}` is a method of {cls.name}, whose constructor needs `{required[0]}`: verify "
                        "does not guess constructor arguments")
    slicer.queue.append(("statement", parsed.module.name, located.cls, "", label))
    slicer.member_everywhere(parsed, located.cls, call.func.attr, label)
    params = _member_params(lineage, call.func.attr)
    args, inputs = arguments(call, params, "")
    return Entry(parsed.module.name, (cls.name,), args, label, call.func.attr, ()), inputs


def _built_instance(parsed: Parsed, call: ast.Call, built: ast.Call, slicer: Slicer,
                    label: str) -> Tuple[Entry, Tuple[TensorInput, ...]]:
    """`obj.m(...)` after `obj = Cls(args)` in the same function: Cls built with those arguments, then `m`."""
    assert isinstance(call.func, ast.Attribute)
    path = _dotted(built.func)
    if path is None:
        raise CannotRun(f"`{ast.unparse(built.func)}` is not a class verify can follow")
    head, rest = path[0], path[1:]
    slicer.need(parsed, head, {rest + (call.func.attr,)}, label)
    found = slicer.definition(parsed, head) if not rest else None
    is_class = found is not None and isinstance(found[0].tree.body[found[1]], ast.ClassDef)
    lineage = slicer.lineage(*found) if found is not None and is_class else []
    if lineage:
        for owner, index in lineage:  # the constructor runs: keep it, and what it uses
            slicer.member_everywhere(owner, index, "__init__", label)
    ctor_args, ctor_inputs = arguments(built, _member_params(lineage, "__init__") if lineage else None, "")
    args, inputs = arguments(call, _member_params(lineage, call.func.attr) if lineage else None, "",
                             taken={i.key for i in ctor_inputs})
    return (Entry(parsed.module.name, path, args, label, call.func.attr, ctor_args),
            ctor_inputs + inputs)


def _dotted(node: ast.expr) -> Optional[Tuple[str, ...]]:
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return inner + (node.attr,) if inner is not None else None
    return None


def _member_params(lineage: List[Tuple[Parsed, int]], member: str) -> Optional[List[ast.arg]]:
    for owner, index in lineage:
        cls = owner.tree.body[index]
        assert isinstance(cls, ast.ClassDef)
        for node in cls.body:
            if isinstance(node, FUNCTIONS) and node.name == member:
                return method_params((owner, index), member, skip_self=True)
    return None


def _required_init(lineage: List[Tuple[Parsed, int]]) -> List[str]:
    """The constructor's parameters without defaults (the first `__init__` on the project lineage)."""
    for owner, index in lineage:
        cls = owner.tree.body[index]
        assert isinstance(cls, ast.ClassDef)
        for node in cls.body:
            if isinstance(node, FUNCTIONS) and node.name == "__init__":
                positional = node.args.posonlyargs + node.args.args
                required = [a.arg for a in positional[1:len(positional) - len(node.args.defaults)]]
                required += [a.arg for a, d in zip(node.args.kwonlyargs, node.args.kw_defaults) if d is None]
                return required
    return []
