"""Calls whose arguments reach a function by a way other than its own call: the flow's (`flow.py`) readings of
`super()`, `functools.partial`, `*args`/`**kwargs` forwarding and a `**kwargs` parameter.

Each is Python's own semantics, read without running the code:

- `super().m(...)` in a method of `C` calls `m` as the class after `C` in the MRO defines it, and
  `super().__init__(...)` is a call site of that base's `__init__`;
- `functools.partial(f, a, k=v)` is `f` with `a` and `k` bound: a call site of `f` for those arguments, and
  calling it runs `f`;
- `def f(*args, **kwargs): return g(*args, **kwargs)` hands `f`'s arguments to `g` unchanged: `f`'s call sites
  are `g`'s;
- a `**kwargs` parameter holds the keyword arguments no named parameter takes; `*args` the extra positional ones;
- a `@dataclass`'s generated `__init__` stores each argument under its field's name;
- `cls` in a `@classmethod` is the class it is called on, so `cls(...)` there constructs that class.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Iterator, List, Optional, Tuple

from amplint.facts.classfields import declared_fields
from amplint.names import ast_qualnames

if TYPE_CHECKING:  # pragma: no cover
    from amplint.names import ImportTable
    from amplint.project.flowtrees import FileTree

PARTIALS = frozenset({"functools.partial"})


def is_super(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def super_owner(tree: "FileTree", scope: str, node: ast.Call) -> Optional[str]:
    """The class whose MRO `super(...)` continues: its first argument, else the class of the method it is in."""
    if node.args and isinstance(node.args[0], ast.Name):
        named = node.args[0].id
        owner = scope.rpartition(".")[0]
        candidates = [key for key in tree.classes if key == named or key.endswith(f".{named}")]
        return owner if owner in candidates else (candidates[0] if len(candidates) == 1 else None)
    owner = scope.rpartition(".")[0]
    return owner if owner in tree.classes else None


def is_partial(func: ast.expr, imports: "ImportTable") -> bool:
    last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return last == "partial" and bool(ast_qualnames(func, imports) & PARTIALS)


def bound_call(call: ast.Call) -> ast.Call:
    """`partial(f, a, k=v)` as the call `f(a, k=v)` it binds (positions kept, for messages and lookups)."""
    bound = ast.Call(func=call.args[0], args=call.args[1:], keywords=call.keywords)
    return ast.copy_location(bound, call)


def star_params(node: ast.AST) -> Tuple[Optional[str], Optional[str]]:
    """The names of a function's `*args` and `**kwargs` parameters (None where it has none)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return None, None
    args = node.args
    return (args.vararg.arg if args.vararg else None), (args.kwarg.arg if args.kwarg else None)


def forwards(call: ast.Call, node: ast.AST) -> bool:
    """Does `call`, written in function `node`, pass on exactly that function's `*args`/`**kwargs` and nothing
    else, while the function takes no other positional parameter (`def f(*args, **kwargs): g(*args, **kwargs)`)?"""
    vararg, kwarg = star_params(node)
    if vararg is None and kwarg is None:
        return False
    fn_args = node.args  # type: ignore[attr-defined]
    if fn_args.posonlyargs or fn_args.args:
        return False
    positional = [a for a in call.args]
    if positional and not (len(positional) == 1 and isinstance(positional[0], ast.Starred)
                           and isinstance(positional[0].value, ast.Name) and positional[0].value.id == vararg):
        return False
    spread = [k for k in call.keywords if k.arg is None]
    if call.keywords and not (len(spread) == 1 == len(call.keywords) and isinstance(spread[0].value, ast.Name)
                              and spread[0].value.id == kwarg):
        return False
    return bool(positional or spread)


def fits(call: ast.Call, node: ast.AST, offset: int) -> bool:
    """Could `call` call function `node` (its first `offset` parameters bound already)? Its positional arguments
    are not too many nor too few, and each keyword names a parameter; a starred argument may fill any."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    args = node.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]][offset:]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return True
    given = {k.arg for k in call.keywords}
    if args.kwarg is None and not given <= {*positional, *(a.arg for a in args.kwonlyargs)}:
        return False
    if args.vararg is None and len(call.args) > len(positional):
        return False
    required = positional[:len(positional) - len(args.defaults)]
    return all(i < len(call.args) or name in given for i, name in enumerate(required))


def star_arguments(call: ast.Call, node: ast.AST, params: List[str], name: str, offset: int) -> Iterator[ast.expr]:
    """The arguments of `call` a star parameter `name` of function `node` collects: for `**kwargs` the keywords
    no named parameter takes, for `*args` the positional ones past the named."""
    vararg, kwarg = star_params(node)
    if name == kwarg:
        yield from (k.value for k in call.keywords if k.arg is not None and k.arg not in params)
    elif name == vararg:
        fn_args = node.args  # type: ignore[attr-defined]
        named = len(fn_args.posonlyargs) + len(fn_args.args) - offset
        for argument in call.args[max(named, 0):]:
            if isinstance(argument, ast.Starred):
                return
            yield argument


def dataclass_fields(node: ast.ClassDef) -> Optional[List[str]]:
    """A `@dataclass`'s or `NamedTuple`'s own fields in order (`facts.classfields`): its generated `__init__`'s
    parameters, each stored under its own name; None for any other class."""
    fields = declared_fields(
        [last_name(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list],
        [last_name(b) for b in node.bases],
        [(s.target.id, _outer(s.annotation)) for s in node.body
         if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)])
    return None if fields is None else list(fields)


def tensor_annotated(node: ast.AST, name: str) -> bool:
    """Is the parameter `name` of function `node` annotated as a tensor (`torch.Tensor`, `Tensor`)? A tensor is
    no instance, function, class or container: the flow has nothing to find for it, at any call site."""
    args = getattr(node, "args", None)
    if not isinstance(args, ast.arguments):
        return False
    for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
        if arg.arg == name:
            return arg.annotation is not None and last_name(arg.annotation) == "Tensor"
    return False


def is_classmethod(node: ast.AST) -> bool:
    """A `@classmethod`: its first parameter holds the class it is called on."""
    return _decorated(node, "classmethod")


def _decorated(node: Optional[ast.AST], name: str) -> bool:
    """Is `node` a def decorated `@name` (or `@module.name`)?"""
    return any(last_name(d) == name for d in getattr(node, "decorator_list", ()))


def is_staticmethod(node: Optional[ast.AST]) -> bool:
    """A `@staticmethod`: a call on an instance or a class fills no parameter of its own."""
    return _decorated(node, "staticmethod")


def binds_first_parameter(tree: "FileTree", scope: str) -> bool:
    """Is `scope` a method whose first parameter a call on an instance or a class fills (`self`, `cls`): a def
    in a class body, not a `@staticmethod`? A static method's arguments were read one place off, so
    `Losses().nll(model, h)` gave `model` to the parameter `h`."""
    return scope.rpartition(".")[0] in tree.classes and not is_staticmethod(tree.scopes.get(scope))


def last_name(node: ast.expr) -> str:
    """`b` of `a.b`, `a` of `a`; "" for any other expression (a decorator's or an annotation's name)."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _outer(annotation: ast.expr) -> str:
    """`ClassVar` of `ClassVar[int]`: an annotation's outer type, by its last name."""
    return last_name(annotation.value if isinstance(annotation, ast.Subscript) else annotation)


def array_index(index: ast.expr) -> bool:
    """Is `index` a multi-dimensional array index (`x[:, -1]`, `x[..., 0]`)? A tuple holding a slice or an
    ellipsis is no key of a dict and no position in a list: what it reads is part of a tensor (or an array),
    never a module or a distribution, so the flow does not look (transformers' `logits[:, -1, :].to(...)`
    once joined the returns of every module `logits` might come from)."""
    return isinstance(index, ast.Tuple) and any(
        isinstance(item, ast.Slice) or isinstance(item, ast.Constant) and item.value is Ellipsis for item in index.elts)
