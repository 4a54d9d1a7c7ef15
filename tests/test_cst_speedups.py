"""`amplint.positions`, `amplint.cstwalk` and `amplint.cstparse` against LibCST's own machinery.

Each replaces LibCST machinery for speed (issues 8 and 12), so each is checked
to give exactly what LibCST gives: every node's CodeRange, every hook call in
the same order, and the same tree from the parser, on the fixtures, on tricky
hand-written sources and on hypothesmith's grammar-generated programs.
"""
from __future__ import annotations

import ast
import sys
import warnings
from typing import Dict, List, Tuple

import libcst as cst
import libcst._nodes.base as cst_base
import pytest
from hypothesis import given
from libcst.metadata import MetadataWrapper, PositionProvider

from amplint import cstparse
from amplint.cstwalk import SKIPPED, children, nodes_of, type_test, walk
from amplint.names import collect_imports, import_table
from amplint.positions import SourceTree, positions
from amplint.textlines import FSTRING_POSITIONS
from conftest import ROOT
from progen import GRAMMAR, GRAMMAR_SETTINGS, NO_HYPOTHESMITH, hypothesmith

FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))

TRICKY = {
    "fstrings": 'x = f"{d}" + f"{a:{b(c)}>{d}}" + f"{e!r:{g()}}" + f"{h=}"\n',
    "decorators": "@a.b(c)\n@d\nclass K:\n    @staticmethod\n    def f(x, /, y=1, *a, z, **k) -> int:\n        return x\n",
    "with": "async def f():\n    async with a() as b, c(d) as (e, f):\n        pass\n    with (g() as h,\n          i()):\n        j()\n",
    "match": "match p:\n    case [1, *rest] if rest:\n        f(rest)\n    case {'k': v, **kw}:\n        pass\n    case C(x=1) | None:\n        pass\n",
    "expressions": "y = [f(i) for i in range(3) if (j := g(i))]\nz = lambda q=h(): q\nw = a if b else c[d:e:f, ...]\n",
    "crlf": "def f(x):\r\n    return g(\r\n        x)\r\n",
    "continuation": "x = f(1, \\\n      2)\nif a and \\\n   b:\n    c()\n",
    "tabs_unicode": "def f():\n\tδ = g('é')\n\treturn h(δ)  # ü\n",
    "formfeed": "x = 1\n\x0c\ndef f():\n    return g()\n",
    "no_trailing_newline": "x = f(y)",
    "empty": "",
    "comments_only": "# a\n\n# b\n",
    "semicolons": "import a; b = a.c(); d = b\n",
}


def _all_node_types() -> set:
    found: set = set()
    stack = [cst_base.CSTNode]
    while stack:
        for sub in stack.pop().__subclasses__():
            found.add(sub)
            stack.append(sub)
    return found


def _sources() -> List[Tuple[str, str]]:
    out = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in FIXTURES]
    return out + sorted(TRICKY.items())


# --- positions --------------------------------------------------------------------------------

def _assert_same_positions(text: str) -> int:
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    found = positions(module, {type(node) for node in expected})
    for node, span in expected.items():
        assert node in found and found[node] == span, (type(node).__name__, span)
    return len(expected)


@pytest.mark.parametrize("name,text", _sources(), ids=[name for name, _ in _sources()])
def test_positions_equal_position_provider_for_every_node(name: str, text: str) -> None:
    assert _assert_same_positions(text) > 0


def test_positions_records_only_what_is_asked() -> None:
    module = cst.parse_module("def f():\n    return g(h(1))\n")
    found = positions(module, {cst.Call})
    ret = module.body[0].body.body[0].body[0]  # type: ignore[attr-defined]
    outer, inner = ret.value, ret.value.args[0].value
    assert (found[outer].start.line, found[outer].start.column, found[outer].end.column) == (2, 11, 18)
    assert (found[inner].start.column, found[inner].end.column) == (13, 17)
    assert ret not in found and module not in found
    by_node = positions(module, nodes=(ret,))  # a single node, by identity
    assert ret in by_node and outer not in by_node
    with pytest.raises(KeyError):
        found[ret]


# --- positions read from CPython's tree (`amplint.treepositions`) -----------------------------------

TREE_TYPES = frozenset({cst.Call, cst.BinaryOperation, cst.Float, cst.With, cst.Decorator})
TRICKY_TREES = {
    **TRICKY,
    "operators": "y = (a + b) * -1.5e-3 @ m ** 2 // 3 % 4 << 1 >> 2 | 3 & 4 ^ 5 - 1_000.0 / .5\n",
    "nested_calls": "x = f(g(1.0)(2), *a, k=h(), **kw)[0](3)\n(z)(w)\n",
    "decorated": "@ \tdecorate(1.0)\n@a.b\nasync def f():\n    async with g() as h:\n        return (h)(1)\n",
    "class_keywords": "class C(B, metaclass=M):\n    x = f(1.0)\n",
    "unicode": "π = f('é', 2.0) + g('ü')\nif π:\n    σ = h(π)\n",
}


def _tree_read(text: str) -> "Tuple[cst.Module, object]":
    from amplint.treepositions import tree_positions

    module = cst.parse_module(text)
    return module, tree_positions(module, ast.parse(text), text, TREE_TYPES)


def _assert_tree_positions_equal_code_generation(text: str) -> bool:
    """Positions read from CPython's tree, when read, are code generation's: ranges whole, `with` and
    decorators at their start. False when the tree was not read."""
    module, read = _tree_read(text)
    if read is None:
        return False
    expected = positions(module, TREE_TYPES)
    found = positions(module, TREE_TYPES, source=SourceTree(ast.parse(text), text))
    asked = [node for node in nodes_of(module, TREE_TYPES)]
    for node in asked:
        if isinstance(node, (cst.With, cst.Decorator)):
            assert node not in found and found.start(node) == expected[node].start, type(node).__name__
        else:
            assert found[node] == expected[node], (type(node).__name__, expected[node], found[node])
    return True


@pytest.mark.parametrize("name,text", sorted(TRICKY_TREES.items()) + [(n, t) for n, t in _sources() if "/" in n],
                         ids=[name for name in sorted(TRICKY_TREES)] + [n for n, _ in _sources() if "/" in n])
def test_positions_from_cpython_tree_equal_code_generation(name: str, text: str) -> None:
    if name == "match" and sys.version_info < (3, 10):
        pytest.skip("`match` is Python 3.10 syntax")
    read = _assert_tree_positions_equal_code_generation(text)
    # Declined for a form feed in an indent (LibCST's columns leave it out), and before Python 3.11 for an
    # f-string (CPython may misplace what is inside it).
    fstrings = any(isinstance(node, ast.JoinedStr) for node in ast.walk(ast.parse(text)))
    assert read == (name != "formfeed" and (FSTRING_POSITIONS or not fstrings))


@pytest.mark.parametrize("text", [
    "def f():\n    x = 1\n\x0c    y = g(x)\n",  # LibCST leaves the form feed out of the column: 9, not 10
    "@\\\ndecorate\ndef f():\n    pass\n",  # the `@` is a line above the decorator's expression
])
def test_positions_from_cpython_tree_decline_when_unsure(text: str) -> None:
    module, read = _tree_read(text)
    assert read is None
    found = positions(module, TREE_TYPES, source=SourceTree(ast.parse(text), text))
    for node in nodes_of(module, TREE_TYPES):  # code generation answered instead: whole ranges for all
        assert node in found


def test_a_decorators_at_sign_is_found_beside_its_expression_only() -> None:
    from amplint.textlines import TextLines

    lines = TextLines("@ \tdecorate(1)\nclass C:\n    @d\n    def f(self): ...\n@\\\ngone\ndef g(): ...\n")
    assert lines.decorator_at(1, 3) == 0 and lines.decorator_at(3, 5) == 4
    assert lines.decorator_at(6, 0) is None  # the `@` is a line above: LibCST starts the decorator there


@pytest.mark.parametrize("text", ["", "\n", "x", "x\n", "a\n\nb", "a\r\nb\rc\n", "a\rb", "é\n\x0cz\n", "a\n\r\n"])
def test_line_starts_are_where_cpython_and_libcst_begin_each_line(text: str) -> None:
    from amplint.textlines import LINE_END, TextLines

    expected = [0] + [match.end() for match in LINE_END.finditer(text)]
    assert TextLines(text).line_starts() == expected
    for number, start in enumerate(expected, 1):
        assert TextLines(text).line(number) == text[start:expected[number] if number < len(expected) else None]


def test_descendants_leave_out_what_they_skip_and_what_is_under_it() -> None:
    from amplint.cstwalk import descendants

    module = cst.parse_module("def f(x):\n    y = g(x)\n    def h():\n        return k(y)\n    return y\n")
    body = module.body[0].body  # type: ignore[attr-defined]
    calls = [n.func.value for n in descendants(body) if isinstance(n, cst.Call)]  # type: ignore[attr-defined]
    assert calls == ["g", "k"]
    skipping = descendants(body, lambda node: isinstance(node, cst.FunctionDef))
    assert [n.func.value for n in skipping if isinstance(n, cst.Call)] == ["g"]  # type: ignore[attr-defined]


def test_positions_from_cpython_tree_start_only_for_with_and_decorators() -> None:
    text = "@d(1)\ndef f():\n    with g(2.5) as h:  # c\n        pass\n    # a footer comment\n"
    module = cst.parse_module(text)
    found = positions(module, TREE_TYPES, source=SourceTree(ast.parse(text), text))
    function = module.body[0]
    decorator, with_ = function.decorators[0], function.body.body[0]  # type: ignore[attr-defined]
    assert (found.start(decorator).line, found.start(decorator).column) == (1, 0)
    assert (found.start(with_).line, found.start(with_).column) == (3, 4)
    assert decorator not in found and with_ not in found  # LibCST ends the `with` after the footer comment
    call = with_.items[0].item
    assert (found[call].start.column, found[call].end.column) == (9, 15)
    assert found.start(call) == found[call].start
    with pytest.raises(KeyError):
        found.start(function)


def test_positions_read_once_serve_the_same_module_again() -> None:
    """A kept tree analysed again with the walk's contexts reads the positions its first analysis read."""
    from amplint.analysis import analyze_module
    from amplint.facts.model import AnalysisOptions

    text = "import torch\nwith torch.autocast('cuda'):\n    y = torch.distributions.Normal(m, s).log_prob(x)\n"
    module = cst.parse_module(text)
    first = analyze_module(module, AnalysisOptions(project=True), source=SourceTree(ast.parse(text), text))
    kept = first.facts.positions
    assert kept is not None and kept.types >= TREE_TYPES - {cst.BinaryOperation}
    assert positions(module, kept.types, source=kept) is kept
    assert positions(module, {cst.Call}, source=kept) is not kept  # other types: generated again
    again = analyze_module(module, AnalysisOptions(project=True), source=kept)
    assert again.facts.positions is kept and _read_positions(again) == _read_positions(first)


def test_analysis_reads_the_same_with_positions_from_cpython_tree() -> None:
    """Every fixture analysed with positions from CPython's tree gives the findings code generation gives."""
    from amplint.analysis import analyze_module
    from amplint.facts.model import AnalysisOptions

    for path in FIXTURES:
        text = path.read_text(encoding="utf-8")
        module = cst.parse_module(text)
        tree = ast.parse(text)
        for project in (False, True):
            options = AnalysisOptions(project=project)
            plain = analyze_module(module, options, imports=import_table(tree))
            read = analyze_module(module, options, imports=import_table(tree), source=SourceTree(tree, text))
            assert _read_positions(read) == _read_positions(plain), path.name


def _read_positions(analysis: "object") -> List[object]:
    """Every position an analysis took from `amplint.positions`: sites, regions, calls."""
    found: List[object] = [(d.code, d.site.position, d.region.line) for d in analysis.diagnoses]  # type: ignore
    for scope in analysis.scopes.values():  # type: ignore[attr-defined]
        found += [(site.position, site.kind) for site in scope.sites]
        found += [(call.line, call.column, call.name) for call in scope.calls]
        found += [entry.line for entry in scope.regions]
    return found


# --- the walk ---------------------------------------------------------------------------------

def _recorder(fields: bool = True, brackets: bool = True) -> type:
    """A visitor with every hook LibCST knows, each logging (kind, type, node id[, field]); without field hooks
    (`fields`) or bracket hooks (`brackets`), it is a visitor whose walk leaves punctuation fields out."""

    def hook(kind: str, field: str = ""):  # type: ignore[no-untyped-def]
        def record(self, node):  # type: ignore[no-untyped-def]
            self.log.append((kind, type(node).__name__, id(node), field))
        return record

    methods: Dict[str, object] = {}
    skipped = {t.__name__ for t in SKIPPED}  # by name: LibCST's add_slots leaves same-named originals around
    for node_type in _all_node_types():
        name = node_type.__name__
        if name in skipped:  # walk() refuses visitors that hook skipped types
            continue
        if brackets or not (name.endswith(("Paren", "Bracket", "Brace")) and name.startswith(("Left", "Right"))):
            methods[f"visit_{name}"] = hook("visit")
            methods[f"leave_{name}"] = hook("leave")
        for field in getattr(node_type, "__dataclass_fields__", {}) if fields else ():
            methods[f"visit_{name}_{field}"] = hook("visit_attr", field)
            methods[f"leave_{name}_{field}"] = hook("leave_attr", field)
    return type("Recorder", (cst.CSTVisitor,), methods)


RECORDER = _recorder()
NODE_RECORDER = _recorder(fields=False, brackets=False)


def _logs(text: str, recorder: type = RECORDER) -> Tuple[list, list]:
    module = cst.parse_module(text)
    by_libcst, by_walk = recorder(), recorder()
    by_libcst.log, by_walk.log = [], []
    module.visit(by_libcst)
    walk(module, by_walk)
    return by_libcst.log, by_walk.log


@pytest.mark.parametrize("name,text", _sources(), ids=[name for name, _ in _sources()])
def test_walk_calls_the_hooks_libcst_calls_in_the_same_order(name: str, text: str) -> None:
    expected, found = _logs(text)
    assert found == expected
    assert expected or not text.strip("\n# ab")


@pytest.mark.parametrize("name,text", _sources(), ids=[name for name, _ in _sources()])
def test_walk_without_bracket_hooks_leaves_punctuation_out_and_calls_the_same_hooks(name: str, text: str) -> None:
    from amplint.cstwalk import ORDERS, _Hooks

    call = cst.parse_expression("f( a , (b) )")
    assert [f for f, *_ in _Hooks(NODE_RECORDER).plan(call, ORDERS)[2]] == ["func", "args"]
    assert "lpar" in [f for f, *_ in _Hooks(RECORDER).plan(call, ORDERS)[2]]  # a bracket hook: every field
    expected, found = _logs(text, NODE_RECORDER)
    assert found == expected


@pytest.mark.parametrize("name,text", _sources(), ids=[name for name, _ in _sources()])
def test_inner_children_are_the_children_without_brackets(name: str, text: str) -> None:
    """Punctuation fields hold brackets and nothing else `children` yields: no expression or statement."""
    from amplint.cstwalk import inner_children

    brackets = (cst.LeftParen, cst.RightParen, cst.LeftSquareBracket, cst.RightSquareBracket, cst.LeftCurlyBrace,
                cst.RightCurlyBrace)
    todo: List[cst.CSTNode] = [cst.parse_module(text)]
    while todo:
        node = todo.pop()
        every = list(children(node))
        assert inner_children(node) == [child for child in every if not isinstance(child, brackets)]
        todo.extend(every)


def test_walk_skips_children_when_visit_returns_false() -> None:
    class TopLevelCalls(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.calls: List[str] = []
            self.left: List[str] = []

        def visit_Call(self, node: cst.Call) -> bool:
            self.calls.append(cst.Module([]).code_for_node(node.func))
            return False

        def leave_Call(self, original_node: cst.Call) -> None:
            self.left.append("call")

    visitor = TopLevelCalls()
    walk(cst.parse_module("a(b(c()))\nd()\n"), visitor)
    assert visitor.calls == ["a", "d"]
    assert visitor.left == ["call", "call"]  # leave still runs, as in LibCST


# --- imports from CPython's tree ------------------------------------------------------------------

def test_import_table_reads_imports_and_aliases_in_source_order() -> None:
    text = (
        "import torch, torch.distributions as D\n"
        "from torch.amp import autocast as ac\n"
        "from . import sibling\n"
        "from ..pkg import *\n"
        "def f():\n"
        "    from torch.cuda.amp import autocast\n"
        "    if x:\n"
        "        other = ac; again = other\n"
        "    late = later\n"
        "later = torch.autocast\n"
    )
    table = import_table(ast.parse(text))
    assert table.bindings["torch"] == {"torch"}
    assert table.bindings["D"] == {"torch.distributions"}
    assert table.bindings["ac"] == {"torch.amp.autocast"}
    assert table.bindings["autocast"] == {"torch.cuda.amp.autocast"}
    assert table.bindings["sibling"] == {".sibling"}
    assert table.bindings["other"] == table.bindings["again"] == {"torch.amp.autocast"}
    assert "late" not in table.bindings  # `later` was bound after it: source order
    assert table.bindings["later"] == {"torch.autocast"}
    assert table.star_modules == ["..pkg"]
    assert collect_imports(cst.parse_module(text)) == table


# --- generated programs ---------------------------------------------------------------------------

@pytest.mark.skipif(hypothesmith is None, reason=NO_HYPOTHESMITH)
@GRAMMAR_SETTINGS
@given(source=GRAMMAR)
def test_positions_and_walk_equal_libcst_on_generated_programs(source: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cst.parse_module(source)
        except (cst.ParserSyntaxError, RecursionError):
            return
        _assert_same_positions(source)
        try:
            ast.parse(source)
        except (SyntaxError, RecursionError, ValueError):
            pass
        else:
            _assert_tree_positions_equal_code_generation(source)
        expected, found = _logs(source)
        _assert_same_tree(source)
    assert found == expected


# --- the parser without per-node checks -------------------------------------------------------

def _assert_same_tree(text: str) -> None:
    fast = cstparse.parse_module(text)
    checked = cst.parse_module(text)
    assert fast.deep_equals(checked) and fast.code == checked.code  # LibCST round-trips some blank lines badly


@pytest.mark.parametrize("name,text", _sources(), ids=[name for name, _ in _sources()])
def test_parse_without_node_checks_gives_libcsts_tree(name: str, text: str) -> None:
    _assert_same_tree(text)


def test_node_checks_are_on_again_after_a_parse_that_fails() -> None:
    assert cstparse._SWITCHABLE  # the installed LibCST has one hook for every node: the fast path is taken
    with pytest.raises(cst.ParserSyntaxError):
        cstparse.parse_module("def f(:\n")
    cstparse.parse_module("x = 1\n")
    with pytest.raises(cst.CSTValidationError):
        cst.Name("")  # a hand-built node is checked as before
    with pytest.raises(cst.CSTValidationError):
        cstparse.parse_module("(a)\n").body[0].body[0].value.with_changes(rpar=[])  # and an edit of a parsed tree


@pytest.mark.parametrize("name,text", sorted(TRICKY.items()), ids=sorted(TRICKY))
def test_children_are_libcsts_children_less_whitespace(name: str, text: str) -> None:
    module = cst.parse_module(text)
    stack: List[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        expected = [child for child in node.children if type(child) not in SKIPPED]
        assert list(children(node)) == expected, type(node).__name__
        stack.extend(expected)


def test_walk_refuses_a_visitor_that_hooks_skipped_nodes() -> None:
    class CommentCounter(cst.CSTVisitor):
        def visit_Comment(self, node: cst.Comment) -> None:
            pass

    with pytest.raises(TypeError, match="Comment"):
        walk(cst.parse_module("x = 1  # c\n"), CommentCounter())


def test_type_test_answers_as_isinstance_for_every_node_and_value() -> None:
    """The per-type memo gives `isinstance`'s answer, for nodes, ABC bases, sentinels and plain values alike."""
    module = cst.parse_module("async def f(x=1.5):\n    for a in b: y = [c for c in d]\n    return lambda: x\n")
    test = type_test(cst.BaseSmallStatement, cst.For, cst.CompFor)
    values: List[object] = []

    class Every(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            values.append(node)
            values.extend(getattr(node, name) for name in getattr(type(node), "__dataclass_fields__", {}))
            return True

    module.visit(Every())
    values += [None, "x", 1, cst.MaybeSentinel.DEFAULT, ()]
    answers = [test(value) for value in values + values]  # asked twice: the second answers come from the memo
    assert answers == [isinstance(value, (cst.BaseSmallStatement, cst.For, cst.CompFor)) for value in values + values]
    assert sum(answers) == 2 * 5  # For, Assign, Return, and CompFor twice (a node, and `ListComp.for_in`)


# The concrete classes the analysis tests with `type(node) is cst.X` (not `isinstance`, slow when it fails).
EXACT_TYPE_TESTS = (
    cst.Name, cst.Attribute, cst.Call, cst.Arg, cst.Subscript, cst.UnaryOperation, cst.BinaryOperation,
    cst.Integer, cst.Float, cst.Imaginary, cst.Plus, cst.Minus, cst.Add, cst.Multiply, cst.Power,
    cst.Lambda, cst.FunctionDef,
)


@pytest.mark.parametrize("node_type", EXACT_TYPE_TESTS, ids=lambda t: t.__name__)
def test_exact_type_tests_are_isinstance_tests(node_type: type) -> None:
    """`type(node) is X` answers as `isinstance(node, X)` only while LibCST derives no class from X."""
    assert node_type.__subclasses__() == []
