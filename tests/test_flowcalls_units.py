"""Two small readings the value flow relies on (`project/flowcalls.py`): which calls may call a function, and
which parameters hold tensors (for which the flow, whose values are instances, functions, classes and
containers, has nothing to look for)."""
from __future__ import annotations

import ast

import pytest

from amplint.project.flowcalls import array_index, fits, tensor_annotated

FORWARD = ast.parse("def forward(self, x, mask=None, *, scale=1.0): pass").body[0]


@pytest.mark.parametrize("call, expected", [
    ("m(x)", True), ("m(x, y)", True), ("m(x, y, z)", False), ("m()", False), ("m(x, scale=2)", True),
    ("m(x, foo=2)", False), ("m(mask=1, x=2)", True), ("m(*a)", True), ("m(**kw)", True),
])
def test_a_call_fits_a_method_its_instance_runs(call: str, expected: bool) -> None:
    assert fits(ast.parse(call, mode="eval").body, FORWARD, 1) is expected  # type: ignore[arg-type]


def test_tensor_annotations() -> None:
    node = ast.parse("def f(model, h: torch.Tensor, y: Tensor, z: Optional[Tensor], *, w: int): pass").body[0]
    assert [tensor_annotated(node, n) for n in ("model", "h", "y", "z", "w", "missing")] == [
        False, True, True, False, False, False]


@pytest.mark.parametrize("read, expected", [
    ("x[:, -1, :]", True), ("x[..., 0]", True), ("x[0, ...]", True), ("x[:, None]", True),
    ("heads[0]", False), ("models[1:]", False), ("table[a, b]", False), ("d['pi']", False), ("x[None]", False),
])
def test_an_array_index_is_told_from_a_container_read(read: str, expected: bool) -> None:
    assert array_index(ast.parse(read, mode="eval").body.slice) is expected  # type: ignore[attr-defined]


@pytest.mark.parametrize("code, expected", [
    ("getattr(obj, name)(x)", True),  # called as it is picked
    ("def f(obj, name):\n    fn = getattr(obj, name)\n    return fn(1)", True),  # a local bound to it, called
    ("def f(obj):\n    fn, b = getattr(obj, 'pair')\n    fn()", True),  # a name it is unpacked into counts too
    ("x = getattr(obj, 'x', None)\nprint(x.y)", False),  # read, never called
    ("getattr(obj, 'x', None)", False),
    ("s = 'getattr(obj, name)(x)'", False),  # only in a string
    ("f = getattr(obj, 'x')\ng = lambda: f", False),
])
def test_a_file_that_may_call_what_getattr_gives(code: str, expected: bool) -> None:
    from amplint.project.flowtrees import index_tree, may_call_getattr

    tree = ast.parse(code)
    assert may_call_getattr(tree) is expected
    assert bool(index_tree(tree).getattr_calls()) <= expected  # never False where the flow finds such a call


def test_may_call_getattr_holds_on_every_call_the_flow_finds_in_this_repository() -> None:
    """`may_call_getattr` is False only where `FileTree.getattr_calls` finds nothing: on every Python file of
    amplint, its tests and its fixtures (hundreds of `getattr` uses)."""
    from pathlib import Path

    from amplint.project.flowtrees import index_tree, may_call_getattr

    root = Path(__file__).resolve().parent.parent
    checked = found = 0
    for path in sorted([*root.glob("amplint/**/*.py"), *root.glob("tests/**/*.py"), *root.glob("fixtures/**/*.py")]):
        text = path.read_text(encoding="utf-8", errors="replace")
        if "getattr" not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        checked += 1
        calls = index_tree(tree).getattr_calls()
        found += bool(calls)
        assert not calls or may_call_getattr(tree), path
    assert checked > 50 and found > 0


def test_a_scopes_own_nodes_leave_out_the_bodies_of_the_functions_nested_in_it() -> None:
    """What a scope evaluates itself: a nested def's defaults and decorators, a class body (the flow's class
    attributes live in the scope around the class), never a nested def's body or a lambda's."""
    from amplint.project.flowtrees import index_tree, own_nodes

    tree = ast.parse(
        "import functools\n\n\n"
        "@functools.lru_cache(maxsize=make_size())\n"
        "def f(a=default_a(), *, k=default_k()):\n"
        "    inside_f = 1\n\n"
        "    def g(b=default_b()):\n"
        "        inside_g = 2\n"
        "    return inside_f\n\n\n"
        "class C(Base, metaclass=Meta):\n"
        "    attr = make_attr()\n"
        "    act = lambda x: lambda_body(x)\n\n"
        "    def m(self, c=default_c()):\n"
        "        inside_m = 3\n")

    def names(scope: ast.AST) -> set:
        return {n.id for n in own_nodes(scope) if isinstance(n, ast.Name)}

    module, function = tree, tree.body[1]
    assert names(module) == {"functools", "make_size", "default_a", "default_k", "Base", "Meta", "attr", "act",
                             "make_attr", "default_c"}
    assert names(function) == {"inside_f", "default_b"}
    facts = index_tree(tree)
    assert sorted(facts.scope_facts("<module>").bindings) == ["act", "attr"]
    assert sorted(facts.scope_facts("f").bindings) == ["inside_f"]
    assert sorted(facts.scope_facts("f.<locals>.g").bindings) == ["inside_g"]
