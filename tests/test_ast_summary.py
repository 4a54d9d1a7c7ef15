"""Project summaries read from CPython's tree (`facts.astcalls`) must equal the LibCST collector's.

A file with no site, region or distribution is summarized without LibCST
(`summarize.summary_from_ast`). Each summary read that way is compared here
with the one the LibCST analysis gives for the same text: on every fixture, on
a module written to hit each difference between the two trees (argument order,
columns in characters, string annotations, parallel wrappers, containers), and
on hypothesmith's generated programs. Every file the reader may not summarize
must send the caller to LibCST (None).
"""
from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import libcst as cst
import pytest
from conftest import chain_names, write_package
from hypothesis import given

from amplint.config import Config
from amplint.cstwalk import walk
from amplint.facts.astcalls import FSTRING_POSITIONS
from amplint.facts.astsource import SourceText
from amplint.facts.frameworks import LiteralArg
from amplint.files import read_source
from amplint.pipeline import analyze_source
from amplint.positions import positions
from amplint.project.run import run_project
from amplint.project.summarize import summarize, summary_from_ast
from amplint.project.summary import FileSummary
from progen import GRAMMAR, GRAMMAR_SETTINGS, NO_HYPOTHESMITH, hypothesmith

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

ROUTING = '''\
"""A module the walk passes through: calls, instances, classes, and nothing the screens look for."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from .heads import Head, Tail
from . import blocks

GLOBAL_NET = blocks.Net().to("cpu")
ANNOTATED: nn.Module = build_from_config({"k": 1})
a = b = Head()
registry = {make_key(): Head(), **extra()}


def configure(cfg, scale=default_scale(), *rest, flag: "Head" = pick(), opt: Optional[Tail] = None,
              both: "Head" "Tail" = None, union: Tail | None = None, **kw):
    choice = Head() if cfg.use_head(1) else Tail(2)
    wrapped = DDP(Head(), device_ids=[0])
    wrapped.module.run(cfg)
    compiled = torch.compile(Tail())
    compiled(cfg)
    moved = Head().to(cfg.device).eval()
    moved.forward(cfg)
    model, opt2 = self_accelerator.prepare(Head(), Tail())
    model, opt2 = my_accelerator.prepare(Head(), Tail())
    model(x=1, *rest)
    call(f(a=1), *rest, **kw)
    (paren(1)).method(2)
    chain = (
        builder(1)
        .step(2)
        .done()
    )
    label = f"{fmt(cfg):>{width(3)}}"
    é = accent(1); ü(é)
    table = {key(1): value(2) for _ in range(3)}
    if (walrus := find(cfg)) is not None:
        walrus.use()
    lam = lambda z=inner_default(): z.go()
    x = torch.randn(3)
    x += 1
    y = x.float() * 2
    protected(x, y, torch.zeros(2, dtype=torch.float32), z.to(torch.float64), 1.5, -2, None, True)
    unprotected(x, y, h)
    cast_all(*[v.float() for v in items], **{k: v.double() for k, v in pairs})
    for item in range(3):
        item.step()
    with opened(cfg) as handle, other() as (h1, h2):
        handle.read(h1)
    return choice.forward(cfg)


class Model(nn.Module):
    shared = Tail()

    @decorate(arg())
    def __init__(self, width: int, head: Head, *, tail: "Tail" = None):
        super().__init__()
        self.head = head
        self.tail = Tail(width)
        self.ddp = DDP(Head())
        self.heads = nn.ModuleDict({"a": Head(), "b": Tail()})
        self.layers = nn.ModuleList([Head() for _ in range(2)])
        self.seq = nn.Sequential(Head(), Tail(), nn.ReLU())
        self.pair = [Head(), Tail()]
        self.declared: Head = make_head(width)
        self.exact: Head = Tail()

    def forward(self, x):
        for name, head in self.heads.items():
            head(x)
        for layer in self.layers:
            layer(x)
        for each in self.heads.values():
            each(x)
        self.heads["a"](x)
        self.ddp.module(x)
        self.ddp.module.inner.run(x)
        self.seq(x)
        self.tail.forward(x.float())
        cls.build(x)
        return self.head(x)

    class Inner(Head):
        def run(self, y):
            def nested(z):
                return z.go(y)
            return nested(y)

    async def stream(self, x):
        async for chunk in self.source(x):
            await chunk.send(x)
        async with self.lock(x) as held:
            held.release()


def configure(cfg):  # a second definition: the first scope keeps the key
    return second_body(cfg)


def outer():
    class Local(Head):
        def method(self):
            return self.head.run()
    return Local().method()
'''


REGIONS = '''\
import functools
import torch
from torch.cuda.amp import autocast
from contextlib import nullcontext

amp = functools.partial(torch.autocast, "cuda", dtype=torch.float16)
ctx = torch.autocast("cpu", dtype=torch.float16) if FLAG else nullcontext()


def train(model, x, y, crit, use_amp):
    with torch.autocast("cuda"):
        out = model(x)
        loss = crit(model(x), y)
        wrapped = (model(x))
        both = print((model(x)), y)
        long = model.some_rather_long_method_name(x, y, extra_argument=1)
        multi = model(
            x,  # the input
            y,
        )
        with torch.autocast("cuda", enabled=False):
            off = model(x)
        with autocast(enabled=use_amp), open("f") as fh:
            fh.write(model(x))
    with amp():
        model(x)
    with ctx:
        model.step(x)
    with torch.autocast("cuda") if use_amp else nullcontext():
        model.other(x)
    with torch.autocast(device_type=DEVICE, dtype=torch.bfloat16):
        model.bf(x)
    with torch.autocast(("cuda")):
        model.grouped(x)
    region = torch.autocast("mps")
    with region:
        model.mps(x)


@torch.autocast("cuda")
def decorated(model, x):
    return model(x)


@autocast()
def decorated_cuda(model, x):
    def inner(z):
        return model(z)
    return inner(x)


class Trainer2:
    amp_dtype = torch.float16 if HALF else torch.bfloat16

    def __init__(self):
        self.dtype = torch.float16

    def step(self, model, x):
        with torch.autocast("cuda", dtype=self.amp_dtype):
            return model(x)

    def step2(self, model, x):
        with torch.autocast("cuda", dtype=self.dtype):
            return model(x)

    def step3(self, model, x):
        with torch.autocast(self.device, dtype=self.unknown):
            return model(x)
'''


def _both(text: str, config: Config = Config()):
    quick = summary_from_ast(text, config)
    full = analyze_source(text, "module.py", config, project=True)
    return quick, summarize(full.analysis, full.parsed_text)


def _read_alike(text: str, config: Config = Config()) -> FileSummary:
    """The summary from CPython's tree, which must exist and equal LibCST's."""
    quick, expected = _both(text, config)
    assert quick is not None
    assert quick == expected
    return quick


def test_the_routing_module_reads_the_same_from_either_tree() -> None:
    # Before 3.11 CPython may misplace an f-string's calls, and the reader leaves such a file to LibCST
    # (`test_calls_inside_f_strings_have_libcst_positions`): the rest is compared there with the call unwrapped.
    quick = _read_alike(ROUTING if FSTRING_POSITIONS else ROUTING.replace('f"{fmt(cfg):>{width(3)}}"',
                                                                          "fmt(cfg, width(3))"))
    calls = {c.callee: c for f in quick.functions.values() for c in f.calls}
    # Spot checks that the comparison covers what it is meant to: each would differ if the reader erred.
    assert calls["accent"].column == 9 and calls["ü"].column == 20  # characters, not UTF-8 bytes (10, 22)
    assert calls["protected"].protected and not calls["unprotected"].protected and calls["cast_all"].protected
    assert calls["wrapped.run"].receiver == ("Head", True)  # through DDP's `.module`
    assert calls["self.heads[]"].callee == "self.heads[]"
    assert quick.classes["Model"].attrs[:3] == (("ddp", "Head", True), ("declared", "Head", False),
                                                ("exact", "Tail", True))
    assert "self.ddp" in [c.callee for c in quick.functions["Model.forward"].calls]  # `.module` of the wrapper
    assert ("shared", "Tail", True) in quick.instances  # a class body binds in the module's scope
    assert dict(quick.functions["configure"].nested) == {}
    assert quick.functions["Model.Inner.run"].nested == (("nested", "Model.Inner.run.<locals>.nested"),)


F_STRINGS = [
    'x = "abc" f"{f(1)}"\n',
    'x = f"a" f"{g(2)}" "b" f"{h(3)}"\n',
    'x = f"""\nline {f(1)}\n  more {g(2)}\n"""\n',
    'x = f"{f(1)!r:>{w(2)}}"\n',
    'x = f"{f(1)=}"\n',
    'x = (f"a{f(1)}"\n     f"b{g(2)}")\n',
    'x = f"{f(1)}" if c else f"{{}}{g(2)}"\n',
    'x = f"é{f(1)}"\n',
    'x = f"""{\nf(1)\n}"""\n',
]


@pytest.mark.parametrize("text", F_STRINGS)
def test_calls_inside_f_strings_have_libcst_positions(text: str) -> None:
    quick, expected = _both(text)
    if not FSTRING_POSITIONS:
        assert quick is None  # CPython before 3.11 may misplace them: LibCST reads the file
        return
    assert quick == expected
    assert all(call.line > 0 for f in quick.functions.values() for call in f.calls)


def test_regions_read_the_same_from_either_tree() -> None:
    quick = _read_alike(REGIONS)
    calls = {(c.line, c.callee): c for f in quick.functions.values() for c in f.calls}
    # Spot checks that the comparison covers regions: each would differ if the reader erred.
    assert calls[(12, "model")].text == "model(x)" and calls[(13, "model")].text == "model(x)"
    assert calls[(14, "model")].text == "(model(x))" and calls[(15, "model")].text == "(model(x))"
    assert calls[(15, "print")].text == "print((model(x)), y)"
    assert calls[(16, "model.some_rather_long_method_name")].text == "model.some_rather_long_method_name(...)"
    assert calls[(17, "model")].text == "model( x, # the input y, )"
    assert calls[(22, "model")].region is not None and not calls[(22, "model")].region.info.enabled
    assert calls[(32, "model.bf")].text == "" and calls[(32, "model.bf")].region.info.device_code == "DEVICE"
    assert calls[(34, "model.grouped")].region.info.device_code == '("cuda")'
    assert calls[(37, "model.mps")].region.info.device == "mps"
    assert calls[(64, "model")].region.info.precision.value == "float16"  # `self.dtype` as the class assigns it


FRAMEWORKS = '''\
import pytorch_lightning as pl
from transformers import Trainer, TrainingArguments
from .models import Net, Classifier


class MyTrainer(Trainer):
    pass


def main(cfg, **kw):
    model = Net()
    pl.Trainer(precision=16, max_epochs=1)
    pl.Trainer(max_epochs=1, precision=("16-mixed"), devices="auto")
    pl.Trainer(precision="bf16" "-mixed")
    pl.Trainer(precision=cfg.precision)
    pl.Trainer(**kw, precision=None)
    pl.Trainer(*cfg.args, precision=16.0)
    args = TrainingArguments("out", fp16=True, bf16=False)
    TrainingArguments("out", fp16=b"yes", **kw)
    Trainer(model=model, args=args)
    MyTrainer(Classifier(), args)
    self.trainer = Trainer(model, args=args)
    trainers[0](precision=16)
    return RunTrainer(-1, precision=0x10)
'''


def test_framework_constructions_read_the_same_from_either_tree() -> None:
    quick = _read_alike(FRAMEWORKS)
    calls = quick.framework_calls
    # Spot checks that the comparison covers rules L and H: each would differ if the reader erred.
    assert [(c.line, c.column, c.callee) for c in calls[:2]] == [(12, 5, "pl.Trainer"), (13, 5, "pl.Trainer")]
    assert calls[0].keywords[0][1] == LiteralArg("16", 16, True)
    assert calls[1].keywords == (("precision", LiteralArg('("16-mixed")', "16-mixed", True)),)
    assert calls[2].keyword("precision").value == "bf16-mixed"
    assert not calls[3].keyword("precision").literal and calls[4].double_star
    assert calls[4].keyword("precision") == LiteralArg("None", None, True)
    assert calls[5].keyword("precision") == LiteralArg("16.0")  # a float is no literal to the rules
    assert calls[6].keywords == (("fp16", LiteralArg("True", True, True)), ("bf16", LiteralArg("False", False, True)))
    assert calls[7].keyword("fp16") == LiteralArg('b"yes"')
    assert calls[8].model == ("Net", True) and calls[9].model == ("Classifier", True)
    assert calls[6].qualnames == ("transformers.TrainingArguments",)
    assert calls[-1].keyword("precision") == LiteralArg("0x10", 16, True)
    assert len(calls) == 12  # `trainers[0](...)` names no constructor


MATCH = '''\
import torch
from .nets import Net, Head


def pick(cfg, x):
    with torch.autocast("cuda", dtype=torch.float16):
        match cfg.kind(1):
            case "net" | "mlp" if cfg.ok(2):
                model = Net()
                return model(x)
            case {"scale": 1.5, **rest} if rest.get(3):
                return Head()(x)
            case Head(depth=d) as head:
                return head.run(x, d)
            case [first, *others]:
                return first(x) + others[0](x)
            case _:
                return None
'''


@pytest.mark.skipif(sys.version_info < (3, 10), reason="`match` is Python 3.10 syntax")
def test_match_statements_read_the_same_from_either_tree() -> None:
    quick = _read_alike(MATCH)
    calls = [(c.line, c.callee, c.text) for c in quick.functions["pick"].calls]
    # Spot checks: the subject, guards and case bodies are read in order, in the region, with their texts.
    assert calls[1:4] == [(7, "cfg.kind", "cfg.kind(1)"), (8, "cfg.ok", "cfg.ok(2)"), (9, "Net", "Net()")]
    assert calls[4:] == [(10, "model", "model(x)"), (11, "rest.get", "rest.get(3)"),
                         (12, "<expr>", "Head()(x)"), (12, "Head", "Head()"),  # the flow reads what `Head()` is
                         (14, "head.run", "head.run(x, d)"), (16, "first", "first(x)"),
                         (16, "<expr>", "others[0](x)")]


PATHS = '''\
import torch
from .losses import blend


def step(head, x, flag, items):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(x)
        if flag:
            out = out.float()
        blend(out)
        try:
            a = out.float()
        except ValueError:
            a = out
        blend(a)
        b = out.float()
        for item in items:
            blend(b)
            b = item
        match flag:
            case 1:
                c = out.float()
            case _:
                c = out.double()
        blend(c)
        d = out.float()
        if flag:
            d = out
            return None
        blend(d)
'''


def test_paths_read_the_same_from_either_tree() -> None:
    """A call's arguments are float32 only when every path that reaches it casts them (`facts.flowstate`)."""
    quick = _read_alike(PATHS)
    assert [(c.line, c.protected) for c in quick.functions["step"].calls if c.callee == "blend"] == [
        (10, False), (15, False), (18, False), (25, True), (30, True)]


UPDATES = '''\
import torch
from .losses import blend


def step(head, x, t, c):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(x)
        a = out.float()
        a /= t
        blend(a)
        b = 0.0
        b += out
        blend(b)
        blend(torch.where(c, out.float(), 1.0))
        blend(torch.where(c, out, 1.0))
'''


def test_updates_and_selects_read_the_same_from_either_tree() -> None:
    """In place, a tensor keeps its dtype and a number takes the tensor's; `where` is as wide as its values."""
    quick = _read_alike(UPDATES)
    assert [(c.line, c.protected) for c in quick.functions["step"].calls if c.callee == "blend"] == [
        (10, True), (13, False), (14, True), (15, False)]


DENSITIES = '''\
import torch
import torch.nn.functional as F
from . import losses
from .losses import Entropy, gaussian_nll


def kl_term(mu, logvar):
    return -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum()


class Head(Base):
    def __init__(self):
        def later():
            self.nll = pick()
        self.entropy_fn = Entropy()

    def loss_nll(self, x):
        return x.pow(2)

    def forward(self, x, mu, y):
        if torch.is_autocast_enabled():  # no region: with one, the file has findings of its own
            out = self.body(x)
            a = gaussian_nll(out, mu, "sum", reduction=2, eps=None)
            b = kl_term(out.float(), mu.float())
        c = gaussian_nll(out, mu)
        d = self.nll(out.float())
        e = self.loss_nll(kl_term(out, mu))
        f = losses.marginal_entropy(out, mu)
        g = F.nll_loss(out, y) + self.entropy_fn(out)
        return a + b + c + d + e + f + g
'''


def test_density_calls_read_the_same_from_either_tree() -> None:
    quick = _read_alike(DENSITIES)
    forward = quick.functions["Head.forward"]
    density = [(c.line, c.callee) for c in forward.calls if c.density]
    # Spot checks that the comparison covers density sites: each would differ if the reader erred.
    assert density == [(23, "gaussian_nll"), (24, "kl_term"), (25, "gaussian_nll"), (26, "self.nll"),
                       (27, "self.loss_nll"), (28, "losses.marginal_entropy")]
    assert (27, "kl_term") in [(c.line, c.callee) for c in forward.calls]  # inside a site: no site of its own
    # `a`, `c`, `e` (its argument) and `f`: not cast. `b` is no site: `kl_term`'s body is one of its own (a KL in
    # log-variance form), and it reports the hazard (`build._drop_densities_with_sites`).
    assert (forward.sites, forward.exposed) == (5, 4)
    assert quick.functions["kl_term"].sites == 1
    assert quick.functions["kl_term"].loses_range and quick.functions["Head.loss_nll"].loses_range
    in_region = DENSITIES.replace("if torch.is_autocast_enabled():", 'with torch.autocast("cuda"):')
    assert summary_from_ast(in_region, Config()) is None  # `a` and `b` may be reported: LibCST reads the file


CODE_CASES = [
    "x = (foo(1))\n",
    "y = ((a.b)\n  .c(2))\n",
    "w = g((h(4)), k( (m(5)) ))\n",
    "print((f(1)), y)\n",
    "t = (f(1), g(2))\n",
    "u = (f(1),)\n",
    "if (f(1)):\n    pass\n",
    "v = not (f(1))\n",
    "z = (f(x) for x in y)\n",
    "z = sum(f(x) for x in y)\n",
    "r = [(f(1)) for _ in y]\n",
    "q = {k: (f(1))}\n",
    "lam = lambda: (f(1))\n",
    "s = x[(f(1))]\n",
    "c = (f)(g(1))\n",
    "d = (f(1))(2)\n",
    "e = a if (f(1)) else (g(2))\n",
    "o = (\n    f(1)\n)\n",
    "n = (  f(1)  )\n",
    "m = print \\\n    (f(1))\n",
    "é = (ü(1))\n",
    "y = (\n    # why\n    f(1)\n)\n",  # comment lines and trailing comments between a call and its parentheses
    "z = g(\n    # a comment\n    (h(2)),  # after h\n    k(3)  # after k\n)\n",
    "w = ((f(1))  # c\n     )\n",
    "v = [\n    # one\n\n    # two\n    (f(1))\n]\n",
    "u = (  # code before this comment: unsure\n    f(1))\n",
]


@pytest.mark.parametrize("text", CODE_CASES)
def test_the_text_of_a_call_is_libcsts_code_for_it(text: str) -> None:
    module = cst.parse_module(text)
    found = positions(module, frozenset({cst.Call}))
    expected = {}

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            start = found[node].start
            expected[(start.line, start.column)] = module.code_for_node(node)

    walk(module, Calls())
    source = SourceText(text)
    read = {(n.lineno, source.column(n.lineno, n.col_offset)): source.code(n)
            for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)}
    assert set(read) == set(expected)
    assert {at: code for at, code in read.items() if code is not None} == {
        at: expected[at] for at, code in read.items() if code is not None}  # None: unsure, left to LibCST


def test_comment_lines_between_a_call_and_its_parentheses_leave_its_text_sure() -> None:
    for text in ("y = (\n    # why\n    f(1)\n)\n", "v = [\n    # one\n\n    # two\n    (f(1))\n]\n",
                 "w = ((f(1))  # c\n     )\n"):
        source = SourceText(text)
        assert None not in [source.code(n) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)], text


def test_a_comment_between_a_call_and_its_parentheses_leaves_its_text_unsure() -> None:
    text = "x = (  # why\n    f(1))\ny = g(  # why\n    h(2))\n"
    source = SourceText(text)
    codes = {n.func.id: source.code(n) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call)}
    assert codes == {"f": None, "g": "g(  # why\n    h(2))", "h": None}


def test_a_form_feed_in_an_indent_moves_libcsts_columns_not_cpythons() -> None:
    """Why a form feed sends the file to LibCST: the call's column would differ by the form feed."""
    text = "import torch\ndef f():\n    x = 1\n\x0c    y = model(x)\n"
    full = analyze_source(text, "t.py", Config(), project=True)
    call = next(c for f in summarize(full.analysis, full.parsed_text).functions.values() for c in f.calls)
    model = next(n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Call))
    assert (call.line, call.column) == (4, 9) and model.col_offset + 1 == 10


def test_a_comment_beside_a_float16_call_sends_the_file_to_libcst() -> None:
    text = "import torch\nwith torch.autocast('cuda'):\n    y = f(  # why\n        model(x))\n"
    assert summary_from_ast(text, Config()) is None
    assert summary_from_ast(text.replace("  # why", ""), Config()) is not None


def test_comment_lines_beside_a_float16_call_read_the_same_from_either_tree() -> None:
    text = ("import torch\nwith torch.autocast('cuda'):\n    y = f(a,\n        # f(b),\n        model(x),\n"
            "        (g(h)  # why not\n        ))\n")
    calls = {c.callee: c for f in _read_alike(text).functions.values() for c in f.calls}
    assert calls["model"].text == "model(x)" and calls["g"].text == "(g(h) # why not )"


@pytest.mark.parametrize("path", sorted(p for p in FIXTURES.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_fixture_reads_the_same_or_goes_to_libcst(path: Path) -> None:
    source = read_source(str(path))
    quick = summary_from_ast(source.text, Config())
    if quick is None:
        return
    full = analyze_source(source.text, str(path), Config(), project=True)
    assert quick == summarize(full.analysis, full.parsed_text)


def test_most_plain_fixture_modules_take_the_ast_path() -> None:
    """The fixture comparison above must compare something: count the files it applies to."""
    read = [p for p in FIXTURES.rglob("*.py") if summary_from_ast(read_source(str(p)).text, Config()) is not None]
    assert len(read) >= 8  # the routing modules of the project fixtures; the corpora add hundreds


# Hand-written math (`astprobmath`), each with its scopes' (sites, exposed ones) as LibCST counts them.
MATH_CASES = [
    ("import torch\ny = torch.log(p.softmax(-1))\n", {"<module>": (1, 1)}),
    ("y = probs.log()\n", {"<module>": (1, 1)}),
    # An entropy term; then one whose log of probabilities is a site of its own.
    ("import torch\n\n\ndef f(p):\n    return -(p * torch.log(p)).sum()\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(x):\n    p = x.softmax(-1)\n    return -(p * torch.log(p)).sum()\n", {"f": (1, 1)}),
    ("def f(x):\n    lse = x.exp().sum(-1)\n    return lse.log()\n", {"f": (1, 1)}),  # a log-sum-exp, through a name
    ("def f(x, mu, var):\n    lv = var.log()\n    return (x - mu).pow(2) / var + lv\n", {"f": (1, 1)}),  # a Gaussian
    # A sum in parentheses of its own is one term, and a sum is one site.
    ("import torch\n\n\ndef f(x, mu, s):\n    return ((x - mu) ** 2 / s + torch.log(s)) + torch.log(s)\n",
     {"f": (1, 1)}),
    # A square written as a product of two factors written alike, and of two written otherwise.
    ("import torch\n\n\ndef f(x, s):\n    return x * x / s + torch.log(s)\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(x, s):\n    return (x) * x / s + torch.log(s)\n", {}),
    # LibCST's attribute name is a `Name`, followed to the local `mu`.
    ("import torch\n\n\ndef f(self, x):\n    mu = x.pow(2)\n    return self.mu + torch.log(x)\n", {"f": (1, 1)}),
    # A density of this file whose body holds the site: its call is no site (`build._drop_densities_with_sites`).
    ("import torch\n\n\ndef nll(x, mu, s):\n    return (x - mu) ** 2 / s + torch.log(s)\n\n\n"
     "def loss(x, mu, s):\n    return nll(x, mu, s)\n", {"nll": (1, 1)}),
    ("y = probs + 1e-10\n", {"<module>": (1, 1)}),
    ("y = torch.special.expit(z).clamp(min=1e-12)\n", {"<module>": (1, 1)}),
    ("import torch\ny = torch.clamp(min=1e-10, input=p_prob)\nz = torch.clamp(probs, torch.tensor(1e-9))\n",
     {"<module>": (2, 2)}),
    ("w = h / (h.sum() + 1e-12)\n", {}),  # a division by a sum makes probabilities, at module level no site
    ("from torch import sum as total\nh /= total(h) + 1e-12\n", {}),
    ("def f(x, eps=1e-12):\n    p = x.softmax(-1)\n    return p + eps\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(x):\n    p = x.softmax(-1)\n    p += 0\n    loss = 0\n"
     "    loss -= (p * torch.log(p + 1e-10)).sum()\n    return loss\n", {"f": (2, 2)}),  # augmented assignments
    ("import torch\n\n\ndef f(x, s):\n    acc = 0\n    acc += x ** 2 / s\n    return acc + torch.log(s)\n",
     {"f": (1, 1)}),  # the square in an augmented assignment
    # The floor in another method, and in the class of a def nested in a method.
    ("class Head(nn.Module):\n    def __init__(self, eps=1e-8):\n        self.eps = eps\n\n"
     "    def forward(self, x):\n        return torch.log(x.softmax(-1) + self.eps)\n", {"Head.forward": (2, 2)}),
    ("class Head(nn.Module):\n    def __init__(self):\n        self.eps = 1e-10\n\n    def forward(self, x):\n"
     "        def inner(y):\n            return y.softmax(-1) + self.eps\n        return inner(x)\n",
     {"Head.forward.<locals>.inner": (1, 1)}),
    ("def f(h):\n    w = h / h.sum(-1).clamp(min=1e-12)\n    return w + 1e-12\n", {"f": (1, 1)}),  # a sum under a floor
    # A cast input: that site is not exposed.
    ("import torch\n\n\ndef f(p):\n    a = torch.log(p.float().softmax(-1))\n"
     "    b = torch.log(p.softmax(-1))\n    return a, b\n", {"f": (2, 1)}),
    ("import torch\nf = lambda x: torch.log(x.softmax(-1))\n", {"<module>": (1, 1)}),
    ("y = sq(z) - 0.9189385332\n", {}),
    ("y = z ** 2 - 0.9189385332\n", {"<module>": (1, 1)}),
    ("y = sq(z) - t.log(2 * math.pi)\n", {}),
    ("import math\ny = sq(z) - math.log(2 * math.pi)\n", {}),
    ("import math\ny = z.square() - math.log(2 * math.pi) - (w.square() + v.log())\n", {"<module>": (1, 1)}),
    ("from math import log, pi as PI\ny = z ** 2 - log(2 * PI)\n", {"<module>": (1, 1)}),
    ("import numpy as np\nfrom torch import *\ny = np.log(x) + log(z.sigmoid())\n", {"<module>": (1, 1)}),
    ("from .losses import gaussian_nll\ny = gaussian_nll(x).softmax(-1).log()\n", {"<module>": (1, 1)}),  # inside
    # Literals and logs however written (`astmathsites._Triggers` finds them in the text).
    ("def f(x):\n    p = x.softmax(-1)\n    return p + 0.000_000_01\n", {"f": (1, 1)}),
    ("def f(x):\n    p = x.softmax(-1)\n    return p.clamp(min=.5e-8)\n", {"f": (1, 1)}),
    ("from torch import log as ln\n\n\ndef f(x, mu, s):\n    return (x - mu) ** 2 / s + ln(s)\n", {"f": (1, 1)}),
    ("def f(x, mu):\n    return (x - mu) ** 2 - 0.91893853320467e0\n", {"f": (1, 1)}),
    ("def f(x, mu):\n    return (x - mu) ** 2 - 9.1893853320467E-1\n", {"f": (1, 1)}),
    # A log of a scale made by `softplus` or `exp` (through a local, a floor, a number times it); inside a
    # Gaussian sum it is a term of that site, not a site; a log of anything else is none.
    ("import torch\nimport torch.nn.functional as F\n\n\ndef f(s):\n    std = F.softplus(s) + 1e-6\n"
     "    return 0.5 + torch.log(2 * std)\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(s):\n    return torch.log(torch.exp(0.5 * s).float())\n", {"f": (1, 0)}),  # cast
    ("import torch\n\n\ndef f(x, mu, s):\n    std = s.exp()\n    return (x - mu) ** 2 / std + torch.log(std)\n",
     {"f": (1, 1)}),
    ("import torch\n\n\ndef f(box):\n    return torch.log(box.abs())\n", {}),
    # An entropy term beside a term of the same tensor: the entropy's log is the site, not a log-parameter sum.
    ("import torch\n\n\ndef f(u, Y):\n    return (u * Y + Y * torch.log(Y.clip(1e-20))).sum()\n", {"f": (1, 1)}),
    # A rate Poisson NLL spelling the same call in both terms, the log's floor a local.
    ("import torch\nimport torch.nn.functional as F\n\n\ndef f(eta, k, eps=1e-8):\n"
     "    return F.softplus(eta) - k * torch.log(F.softplus(eta) + eps)\n", {"f": (1, 1)}),
    # Constants are constants wherever they are bound: a module's (also inside an `if`), a `self.` attribute set
    # from `math.log(2 * math.pi)`; a floor float16 keeps, or a constant the function rebinds, is none.
    ("import torch\nEPS = 1e-10\n\n\ndef f(x):\n    return torch.log(x.softmax(-1) + EPS)\n", {"f": (2, 2)}),
    ("import torch\nEPS = 1e-3\n\n\ndef f(x):\n    return torch.log(x.softmax(-1) + EPS)\n", {}),
    ("import torch\nEPS = 1e-10\n\n\ndef f(x, EPS=0.1):\n    return torch.log(x.softmax(-1) + EPS)\n", {}),
    ("import math\nLOG_2PI = math.log(2 * math.pi)\n\n\ndef f(z):\n    return 0.5 * (z ** 2 + LOG_2PI)\n",
     {"f": (1, 1)}),
    ("import math\nif True:\n    HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)\n\n\ndef f(z):\n"
     "    return 0.5 * z ** 2 + HALF_LOG_2PI\n", {"f": (1, 1)}),
    ("import math\nLOG_2PI = math.log(2 * math.pi)\nLOG_2PI = 0\n\n\ndef f(z):\n    return 0.5 * (z ** 2 + LOG_2PI)\n",
     {}),
    ("import math\nimport torch.nn as nn\n\n\nclass Head(nn.Module):\n    def __init__(self):\n"
     "        self.log_2pi = math.log(2 * math.pi)\n\n    def forward(self, z):\n"
     "        return 0.5 * (z * z + self.log_2pi)\n", {"Head.forward": (1, 1)}),
    # A square written as a product after a number or a sign (`-0.5 * u * u` is `(-0.5 * u) * u`).
    ("import torch\n\n\ndef f(u, s):\n    return -0.5 * u * u - torch.log(s)\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(u, s):\n    return -u * u / 2 - torch.log(s)\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(u, v, s):\n    return -0.5 * u * v - torch.log(s)\n", {}),
    # Densities with no log (`kernels`): a Student-t's, a Cauchy's, a Gaussian's beside its normaliser, through
    # names; a power, a reciprocal and an `exp` that are none (no square, a positive power, no normaliser, a
    # grid weighed by its own sum). A kernel on module number constants and a cast head reads no tensor.
    ("import torch\n\n\ndef f(y, mu, s, nu):\n    q = 1 + ((y - mu) / s) ** 2 / nu\n"
     "    return torch.pow(q, -(nu + 1) / 2) / s\n", {"f": (1, 1)}),
    ("def f(z, s):\n    return (1 + z.pow(2)) ** -1.5 / s\n", {"f": (1, 1)}),
    ("def f(z, s, k=-2.0):\n    return (1 + z * z).pow(k) / s\n", {"f": (1, 1)}),
    ("import math\n\n\ndef f(z, s):\n    return 1.0 / (math.pi * s * (1 + z ** 2))\n", {"f": (1, 1)}),
    ("import torch\n\n\ndef f(y, mu, sigma):\n    k = torch.exp(-0.5 * ((y - mu) / sigma) ** 2)\n"
     "    return k / sigma\n", {"f": (1, 1)}),
    ("import math\n\n\ndef f(z):\n    return (-z * z / 2).exp() / math.sqrt(2 * math.pi)\n", {"f": (1, 1)}),
    ("def f(z, s):\n    return (1 + z) ** -2 / s + (1 + z ** 2) ** 2 + 1 / (1 + z) + 1 / (z * z + 1e-12)\n", {}),
    ("import torch\n\n\ndef f(d, bw):\n    return torch.exp(-(d ** 2).sum(-1) / (2 * bw ** 2))\n", {}),
    ("import torch\n\n\ndef f(x, s):\n    k = torch.exp(-0.5 * (x / s).pow(2))\n    return k / k.sum()\n", {}),
    ("import math\nimport torch\nC = 1.0 / math.sqrt(2 * math.pi)\n\n\ndef f(head, x, y):\n"
     "    sd = head(x).float().exp()\n    return C * torch.exp(-0.5 * (y.float() / sd) ** 2) / sd\n", {"f": (1, 0)}),
    ("import math\nimport torch\nC = 1.0 / math.sqrt(2 * math.pi)\n\n\ndef f(head, x, y, C):\n"
     "    sd = head(x).float().exp()\n    return C * torch.exp(-0.5 * (y.float() / sd) ** 2) / sd\n", {"f": (1, 1)}),
]


@pytest.mark.parametrize("text, counts", MATH_CASES)
def test_hand_written_math_reads_the_same_from_either_tree(text: str, counts: dict) -> None:
    quick = _read_alike(text)
    assert {key: (f.sites, f.exposed) for key, f in quick.functions.items() if f.sites} == counts


@pytest.mark.parametrize("text", [
    "d = make()\nd.log_prob(x)\n",
    "import torch.distributions as D\nf(x)\n",
    "from torch import distributions\nf(x)\n",
    "import torch\nd = torch.distributions.Normal(m, s)\n",
    "from pyro.distributions import *\nf(x)\n",
    "from accelerate import Accelerator\nacc = Accelerator()\n",
    "import accelerate\nacc = accelerate.Accelerator()\n",
    "from accelerate import *\nacc = Accelerator()\n",
    'trainer = pl.Trainer(precision=(  # half\n    "16-mixed"))\n',  # a comment makes LibCST's text unsure
    "def f(z):\n    post = pick(z)\n    return post.nll()\n",  # a local receiver: its constructor decides
    "def f(z):\n    post = Posterior(z)\n    return post.kl()\n",  # what `post` is decides
    "def f(d: Dict[(str, Distribution)]):\n    return d\n",  # one subscript element to LibCST, or two?
    "def f(d: Dict[(str), Distribution]):\n    return d\n",
    "def broken(:\n",
    # A site in a region of the file: it may be reported without the walk.
    "import torch\n\n\ndef f(p):\n    with torch.autocast('cuda'):\n        return torch.log(p.softmax(-1))\n",
    # A comment after code before a factor: whether the parentheses are its own is left to LibCST.
    "import torch\n\n\ndef f(x, s):\n    return (  # why\n        x) * x / s + torch.log(s)\n",
    "import torch\ndef f():\n    x = 1\n\x0c    y = model(x)\n",  # LibCST's column leaves the form feed out
])
def test_what_only_libcst_reads_sends_the_file_there(text: str) -> None:
    assert summary_from_ast(text, Config()) is None


@pytest.mark.parametrize("text", [
    "# Redistributions of source code must retain the above copyright notice.\n"
    "\"\"\"Samples from the distributions.\"\"\"\nimport torch\nf(torch.ones(3))\n",
    "from .layers.distributions import make_layer\nlayer = make_layer(3)\n",  # a project module
    "import torch\nopt = torch.optim.LBFGS(params, tolerance_grad=1e-9)\ny = p + 1e-10\n",  # no probabilities
    # A tensor log is part of a site only with probabilities, an exp, a square or an entropy term in its function.
    "import torch\ny = torch.log(p)\n",
    "y = p.log()\n",
    "from math import log, pi as PI\ny = sq(z) - log(2 * PI)\n",
    "import numpy as np\nfrom torch import *\ny = np.log(x) + log(z)\n",
    "import torch\n\n\ndef f(t):\n    return ((1 - t) / t).log()\n\n\ndef g(x):\n    return x.softmax(-1)\n",
    "class Stats:\n    def ratio(self, grads):\n        return grads.mean(dim=1).log10() - 1\n\n"
    "    def probs(self, x):\n        return torch.sigmoid(x) ** 2\n",
    # Probabilities elsewhere in the file: a floor is a site only with them in its own top-level statement.
    "p = x.softmax(-1)\ny = q + 1e-10\n",
    "y = torch.special.expit(z)\nw = y.clamp(min=1e-12)\n",  # at module level no name is followed
    "from torch import sum as total\nh /= total(h)\nw = h + 1e-12\n",
    "class Head(nn.Module):\n    def scores(self, x):\n        return x.softmax(-1)\n\n"
    "    def box(self, gt, stride, eps=1e-8):\n        return torch.log(gt / stride + eps)\n",  # no `self.` set
    "import numpy as np\n\n\ndef l2(d):\n    d /= np.sqrt(np.sum(d ** 2)) + 1e-16\n    return d\n",
    "import torch\n\n\ndef scores(x):\n    return x.softmax(-1)\n\n\n"
    "def box_target(gt, stride, eps=1e-8):\n    return torch.sqrt(gt / stride + eps)\n",
    "class Norm(nn.Module):\n    def __init__(self, epsilon=1e-8):\n        self.epsilon = epsilon\n\n"
    "    def forward(self, x):\n        return x / torch.sqrt(x.pow(2).mean() + self.epsilon)\n\n\n"
    "class Head(nn.Module):\n    def forward(self, x):\n        return self.norm(x).sigmoid()\n",
    "import math\nimport numpy as np\nscale = math.log(10000) / np.log(half)\n",
    "import torch.nn.functional as F\nloss = F.nll_loss(logp, y) + F.kl_div(a, b)\n",  # a library's
    "from lightning.pytorch.accelerators import Accelerator\n\n\n"  # Lightning's: not Accelerate's
    "def fit(model, accelerator: \"str | Accelerator\" = \"auto\"):\n    acc = Accelerator()\n    return model(acc)\n",
    "def marginal_entropy(x):\n    return x.logsumexp(-1)\n\n\nloss = marginal_entropy(out)\n",
    "class Head:\n    def entropy_loss(self, x):\n        return -(x.softmax(1) * x.log_softmax(1)).sum(1)\n\n"
    "    def f(self, x):\n        return self.entropy_loss(x)\n",
    "class Head:\n    def f(self, x):\n        return self.nll(x)\n",  # no method, no base: not the project's
    "class Head(Base):\n    def __init__(self, cifar):\n        if cifar:\n"
    "            self.softmax_entropy = entropy_cifar\n"
    "        else:\n            self.softmax_entropy = entropy_imagenet\n\n    def f(self, x):\n"
    "        return self.softmax_entropy(x)\n",  # an attribute, not a method
    "class Config:\n    def __init__(self):\n        try:\n            pass\n        except ValueError:\n"
    "            self.nll = pick()\n\n\nclass Head(Base):\n    def f(self, x):\n"
    "        return self.nll(x)\n",  # an attribute of another class of the module
    "def f(x):\n    return x.head.log_prob_of(x)\n",  # a longer receiver: the collector does not follow it
    "def gaussian_nll(x, mu):\n    return ((x - mu) ** 2).mean()\n",  # a density of its own
    "from typing import Optional\n\n\nclass GaussianDistribution:\n    pass\n\n\n"
    "def loss(model, d: Optional[GaussianDistribution], y: \"GaussianDistribution\", *, q: GaussianDistribution"
    " | None, r: Dict[str, GaussianDistribution], s: Dict[str, int]):\n    return d\n",
])
def test_what_cannot_make_a_site_reads_the_same_from_either_tree(text: str) -> None:
    quick = _read_alike(text)
    if "gaussian_nll" in text:
        assert quick.functions["gaussian_nll"].loses_range  # the spot check: read from CPython's tree
    if "def loss" in text:
        assert quick.functions["loss"].dist_params == ("1", "d", "q", "r")


def test_configured_and_derived_spellings_open_regions_as_in_libcst() -> None:
    configured = Config(extend_autocast=("mylib.amp_ctx",))
    quick = _read_alike("import mylib\nwith mylib.amp_ctx():\n    f(x)\n", configured)
    assert quick.functions["<module>"].calls[-1].region is not None
    aliased = Config(autocast_aliases=(("self.amp_cm", "torch.autocast"),))
    quick = _read_alike("class A:\n    def f(self):\n        with self.amp_cm():\n            g()\n", aliased)
    assert quick.functions["A.f"].calls[-1].text == "g()"
    assert summary_from_ast("h = MyDist(1)\n", Config(extend_distributions=("pkg.MyDist",))) is None


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    return write_package(tmp_path, {
        "train.py": "import torch\nfrom pkg.route import step\n\n\ndef train(x):\n"
                    "    with torch.autocast('cpu', dtype=torch.float16):\n        return step(x)\n",
        "route.py": "from pkg.losses import gaussian\n\n\ndef step(x):\n    h = prepare(x)\n    return gaussian(h)\n",
        "losses.py": "import torch\n\n\ndef gaussian(h):\n    d = torch.distributions.Normal(h, h.exp())\n"
                     "    return d.log_prob(h)\n",
    })


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_project_run_reads_the_routing_file_without_libcst(tmp_path: Path, jobs: int, forced: None) -> None:
    package = _project(tmp_path)
    run = run_project([str(tmp_path)], Config(jobs=jobs), use_cache=False)
    route = str(package / "route.py")
    assert route in run.stats.from_ast and route not in run.stats.parsed
    findings = [(r.path, f.line, f.column, f.code) for r in run.results for f in r.findings]
    assert findings == [(str(package / "losses.py"), 6, 12, "AMP001")]
    chain = next(f.chain for r in run.results for f in r.findings)
    assert "step" in " ".join(chain_names(chain))


# A file whose sites the reader can count has findings of its own when a site may run in one of its regions:
# it goes to LibCST for them. Otherwise its summary is read, and the walk decides.
OWN_FINDINGS = {
    # A density called in the region (its body holds no site of its own).
    "density.py": "import torch\nfrom pkg.losses import gaussian_nll\n\n\ndef step(model, x):\n"
                  "    with torch.autocast('cuda'):\n        mu, s = model(x)\n        return gaussian_nll(x, mu, s)\n",
    # A log of probabilities in a function the region calls.
    "reached.py": "import torch\n\n\ndef score(x):\n    return torch.log(x.softmax(-1))\n\n\n"
                  "def step(model, x):\n    with torch.autocast('cuda'):\n        return score(model(x))\n",
    # A log of probabilities no region of this file reaches; the region calls something else.
    "apart.py": "import torch\n\n\ndef score(x):\n    return torch.log(x.softmax(-1))\n\n\n"
                "def step(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
    # A squared deviation with no log beside it: no site of its own, but `**` loses range.
    "losses.py": "def gaussian_nll(x, mu, s):\n    return 0.5 * ((x - mu) / s) ** 2\n",
}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_file_with_findings_of_its_own_goes_to_libcst(tmp_path: Path, jobs: int) -> None:
    package = write_package(tmp_path, OWN_FINDINGS)
    run = run_project([str(tmp_path)], Config(jobs=jobs), use_cache=False)
    findings = sorted((Path(r.path).name, f.line, f.column, f.code) for r in run.results for f in r.findings)
    assert findings == [("density.py", 8, 16, "AMP003"), ("reached.py", 5, 12, "AMP003")]
    assert str(package / "apart.py") in run.stats.from_ast
    assert {str(package / name) for name in ("density.py", "reached.py")} <= set(run.stats.parsed)


# --- generated programs ---------------------------------------------------------------------------

@pytest.mark.skipif(hypothesmith is None, reason=NO_HYPOTHESMITH)
@GRAMMAR_SETTINGS
@given(source=GRAMMAR)
def test_generated_programs_read_the_same_from_either_tree(source: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quick = summary_from_ast(source, Config())
        if quick is None:
            return
        full = analyze_source(source, "generated.py", Config(), project=True)
    if not hasattr(full, "analysis") or full.analysis is None:
        return  # LibCST refuses what CPython accepts: nothing to compare
    assert quick == summarize(full.analysis, full.parsed_text)


def test_a_configured_distribution_is_named_by_its_word_not_inside_a_longer_name() -> None:
    """A configured class (project mode configures its own subclasses, `Squashed`) sends a file that names it to
    LibCST, which reads configured distributions; a file that only names `SquashedLayer` or `unsquashed` does
    not name it, and is read from CPython's tree, as it was before anything was configured."""
    config = Config(extend_distributions=("pkg.dists.Squashed",))
    text = ("import torch\n\n\nclass SquashedLayer:\n    def f(self, unsquashed):\n"
            "        return torch.tanh(unsquashed)\n")
    assert summary_from_ast(text, Config()) is not None
    assert summary_from_ast(text, config) is not None
    for naming in ("from pkg.dists import Squashed\n", "import pkg.dists as d\nd.Squashed\n", "# a Squashed one\n"):
        assert summary_from_ast(naming + text, config) is None, naming
