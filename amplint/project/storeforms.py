"""What a stored value may be by its form alone, before the flow evaluates it.

A store into a container (`heads[k] = head`, `layers.append(block)`) or under a computed attribute name
(`setattr(self, name, head)`) is followed only where its value may be a module, a class or a function by its
form: most such stores hold tensors (`outputs.append(h)`, `kwargs["mask"] = mask`), and following every one for
each question on the container cost more than the rest of a run on large code (transformers' generation code).
The test reads the storing function's own tree and nothing else.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional, Tuple

from amplint.project.flowtrees import iterated, param_names
from amplint.project.summary import MODULE_KEY

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.flowtrees import FileTree

_FORM_DEPTH = 4  # names bound to loops over names, followed this deep: `for x in x` ends
# what a loop over made elements may iterate
_COLLECTIONS = (ast.Call, ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def made_object(tree: "Optional[FileTree]", scope: str, value: ast.expr, depth: int = 0) -> bool:
    """May a stored element be a module, a class or a function by its form: a call (a class constructed,
    `build_head(cfg)`, `HEADS[kind](cfg)`, `head.to(device)`: what it returns), a lambda, a parameter of the
    storing function (`MODELS[name] = cls` in a registering decorator), a loop's variable over one of those or
    a display (`for name, head in heads.items()`), or a name the function binds only to those? A name bound
    otherwise (a subscript, arithmetic, a loop over `**kwargs`: `model_inputs[k] = v`, `outputs.append(h + r)`)
    is not followed."""
    if isinstance(value, (ast.Lambda, ast.Call)):
        return True
    if isinstance(value, ast.Starred):  # `layers.extend(blocks)`: the elements of `blocks`
        return made_elements(tree, scope, value.value, depth)
    return _named(tree, scope, value, depth, (ast.Call, ast.Lambda))


def made_elements(tree: "Optional[FileTree]", scope: str, iterable: ast.expr, depth: int) -> bool:
    """May the elements of what a loop iterates be made objects by their form (`made_object`): a display or a
    call, a parameter or a name bound only to those, or the `.items()`/`.values()` of one."""
    iterable = iterated(iterable)
    return isinstance(iterable, _COLLECTIONS) or _named(tree, scope, iterable, depth, _COLLECTIONS)


def _named(tree: "Optional[FileTree]", scope: str, value: ast.expr, depth: int, assigned: Tuple[type, ...]) -> bool:
    """Is `value` a parameter of the function `scope`, or a name it binds only to an expression of the forms
    `assigned` and by loops over made elements?"""
    node = tree.scopes.get(scope) if tree is not None and isinstance(value, ast.Name) else None
    if node is None or depth > _FORM_DEPTH:
        return False
    bindings = tree.scope_facts(scope).bindings.get(value.id, [])  # type: ignore[union-attr]
    if not bindings:
        return scope != MODULE_KEY and value.id in param_names(node)
    return all(isinstance(b, ast.Assign) and isinstance(b.value, assigned) or
               isinstance(b, (ast.For, ast.AsyncFor)) and made_elements(tree, scope, b.iter, depth + 1)
               for b in bindings)
