"""The flow's containers: a dict display kept by key, what a subscript reads of it, the element stores a scope
makes and which of them are followed (`flowvalues.keyed`, `flowvalues.items`, `flowtrees` element stores,
`storeforms`), and when two spellings of a computed name may meet (`flowstrings.overlap`)."""
from __future__ import annotations

import ast

import pytest

from amplint.project.flowstrings import overlap
from amplint.project.flowtrees import class_assignments, index_tree
from amplint.project.flowvalues import Container, Fanout, Function, Namespace, items, keyed
from amplint.project.storeforms import made_object

A, B, C = Function("m.py", "a"), Function("m.py", "b"), Function("m.py", "c")


def test_a_dict_with_literal_keys_keeps_what_each_key_holds() -> None:
    made = keyed([("pi", frozenset({A})), ("v", frozenset({B})), ("pi", frozenset({C}))])
    assert made == Container(frozenset({A, B, C}), (("pi", frozenset({A, C})), ("v", frozenset({B}))))


def test_a_key_that_is_no_literal_keeps_only_the_elements() -> None:
    assert keyed([("pi", frozenset({A})), (None, frozenset({B}))]) == Container(frozenset({A, B}))


def test_a_subscript_reads_the_keys_it_may_spell_and_every_element_otherwise() -> None:
    heads = frozenset({keyed([("pi", frozenset({A})), ("v", frozenset({B}))])})
    assert items(heads, frozenset({"pi"})) == {A}
    assert items(heads, frozenset({"pi", "v"})) == {A, B}
    assert items(heads, None) == {A, B}  # a key the flow cannot spell
    assert items(heads, frozenset({"q"})) == {A, B}  # a key the display lacks: stored later, maybe
    listed = frozenset({Container(frozenset({A, B})), Fanout(frozenset({C}))})
    assert items(listed, frozenset({"pi"})) == {A, B, C}  # a list, or a collection of metrics: any element


def test_a_scope_records_its_element_stores_and_an_attribute_store_binds_no_name() -> None:
    tree = index_tree(ast.parse(
        "class Agent:\n"
        "    def __init__(self, names):\n"
        "        self.heads = {}\n"
        "        for name in names:\n"
        "            self.heads[name] = make(name)\n"
        "        self.heads['pi'] = Head()\n"
        "        blocks = []\n"
        "        blocks.append(Block())\n"
        "        blocks.insert(0, First())\n"
        "        blocks.append(Block(), 1)\n"  # no list's append: not a store
        "        self.out = blocks\n"))
    facts = tree.scope_facts("Agent.__init__")
    assert {owner: sorted((ast.unparse(k) if k is not None else "", ast.unparse(v)) for k, v in stored)
            for owner, stored in facts.elements.items()} == {
        "self.heads": [("'pi'", "Head()"), ("name", "make(name)")],
        "blocks": [("", "Block()"), ("", "First()")]}
    assert "self" not in facts.bindings and set(facts.bindings) == {"name", "blocks"}
    stores = class_assignments(tree, "Agent", None).elements
    assert {attr: sorted((scope, ast.unparse(v)) for scope, _, v in found) for attr, found in stores.items()} == {
        "heads": [("Agent.__init__", "Head()"), ("Agent.__init__", "make(name)")]}


FORMS = """\
def fill(heads, *args, **kwargs):
    made = [Head()]
    total = h + r
    picked = heads["pi"]
    loop = loop
    for name, head in heads.items():
        pass
    for member in made:
        pass
    for key, value in kwargs.items():
        pass
    for part in picked:
        pass
    for loop in loop:
        pass
"""


@pytest.mark.parametrize("value, made", [
    ("Head()", True), ("build_head(cfg)", True), ('HEADS["pi"](cfg)', True), ('Head().to("cpu")', True),
    ("lambda x: x", True), ("heads", True), ("head", True), ("member", True), ("made", False),
    ("total", False), ("picked", False), ("value", False), ("part", False), ("args", False), ("loop", False),
    ("h + r", False), ('heads["pi"]', False),
])
def test_a_stored_value_is_followed_where_its_form_may_make_an_object(value: str, made: bool) -> None:
    """A call's result, a lambda, a parameter, or a name bound only to those or by a loop over one (or over a
    display): a module may be stored. A subscript, arithmetic, `**kwargs`' values, a name bound to itself, a
    list stored whole: not followed (tensors, in the code that stores most)."""
    tree = index_tree(ast.parse(FORMS))
    assert made_object(tree, "fill", ast.parse(value, mode="eval").body) is made


@pytest.mark.parametrize("first, second, fit", [
    ({"head_pi"}, {"head_pi"}, True), ({"head_pi"}, {"head_v"}, False), ({"head_*"}, {"head_pi"}, True),
    ({"head_pi"}, {"head_*"}, True), ({"head_*"}, {"h*"}, True), ({"h*"}, {"head_*"}, True),
    ({"head_*"}, {"tail_*"}, False), ({"*"}, {"critic"}, True), ({"pi", "v"}, {"q", "v"}, True),
])
def test_two_spellings_overlap_where_one_name_may_fit_both(first: set, second: set, fit: bool) -> None:
    assert overlap(frozenset(first), frozenset(second)) is fit


def test_extend_update_and_setdefault_store_elements_and_keyed_pairs() -> None:
    """`extend` and a non-display `update` store the elements of what they are given (`*blocks`); an `update`
    with a display or keywords, and `setdefault`, store each pair under its key; a call with another shape stores
    nothing."""
    tree = index_tree(ast.parse(
        "def build(blocks, more):\n"
        "    layers = []\n"
        "    layers.extend(blocks)\n"
        "    layers.extend(blocks, 1)\n"
        "    heads = {}\n"
        "    heads.update({'pi': Head(), **more})\n"
        "    heads.update(v=Critic(), **more)\n"
        "    heads.update(more)\n"
        "    heads.setdefault('q', Q())\n"))
    facts = tree.scope_facts("build")
    assert {owner: sorted((ast.unparse(k) if k is not None else "", ast.unparse(v)) for k, v in stored)
            for owner, stored in facts.elements.items()} == {
        "layers": [("", "*blocks")],
        "heads": [("", "*more"), ("", "*more"), ("", "*more"), ("'pi'", "Head()"), ("'q'", "Q()"),
                  ("'v'", "Critic()")]}


def test_a_namespace_reads_its_keywords_and_what_more_may_give_any_other_name() -> None:
    """`SimpleNamespace(pi=a, **more)`: `ns.pi` is `a`; any other attribute is what `more`'s elements may be."""
    made = Namespace((("pi", frozenset({A})),), frozenset({B}))
    assert made.read("pi") == {A} and made.read("v") == {B}
    assert Namespace((("pi", frozenset({A})),)).read("v") == frozenset()
