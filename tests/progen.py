"""A hypothesis strategy for PyTorch probability code under autocast, in random combinations.

`programs()` draws whole modules: every import spelling of autocast (with,
async with, several items, decorators, a bound region object,
functools.partial), nested enabled/disabled regions, float16/bfloat16/unknown
dtypes, distributions built inline or bound to names (Normal, Laplace,
Categorical, Independent, MixtureSameFamily, ...), every probability method
and kl_divergence, casts that protect and transforms that do not, helper
functions and `self.method()` calls reached from regions, `# noqa`, comments
inside expressions, multi-line and backslash formatting, semicolons, tabs or
two-space indents, CRLF. Every program compiles (the tests check that first).

It knows nothing of amplint's rules: the tests check properties that hold
whatever the findings are (no crash, the fix compiles and converges, front
ends agree), so the generator may freely produce near misses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Set, Tuple

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

LEAVES = ("mu", "sigma", "x", "logits", "h", "w", "log_sigma", "rate", "y")
PARAMS = "model, mu, sigma, x, logits, h, w, log_sigma, rate, y, p, q, flag, xs"

# (import line, callee, style): style decides the positional signature of the call.
AUTOCAST = (
    ("import torch", "torch.autocast", "generic"),
    ("import torch", "torch.amp.autocast", "generic"),
    ("import torch", "torch.cuda.amp.autocast", "cuda"),
    ("import torch", "torch.cpu.amp.autocast", "cpu"),
    ("import torch as t", "t.autocast", "generic"),
    ("from torch import autocast as ac", "ac", "generic"),
    ("from torch import autocast", "autocast", "generic"),
    ("from torch.cuda.amp import autocast as cuda_autocast", "cuda_autocast", "cuda"),
    ("import torch.cuda.amp as amp", "amp.autocast", "cuda"),
    ("from torch.cuda import amp as camp", "camp.autocast", "cuda"),
    ("from torch import amp as tamp", "tamp.autocast", "generic"),
    ("import torch.amp.autocast_mode as acm", "acm.autocast", "generic"),
)
# (import line, how a class is spelled)
DIST_SPELLINGS = (
    ("import torch.distributions as D", "D.{}"),
    ("from torch import distributions as td", "td.{}"),
    ("import torch", "torch.distributions.{}"),
    ("from torch.distributions import *", "{}"),
    ("import pyro.distributions as pdist", "pdist.{}"),
)
KL_SPELLINGS = (
    ("import torch", "torch.distributions.kl_divergence"),
    ("import torch", "torch.distributions.kl.kl_divergence"),
    ("from torch.distributions.kl import kl_divergence", "kl_divergence"),
    ("import torch.distributions as D", "D.kl_divergence"),
)
DEVICES = ('"cuda"', '"cpu"', '"cuda:0"', '"mps"', "dev", "self_device")
DTYPES = ("torch.float16", "torch.half", "torch.bfloat16", "torch.float32", "amp_dtype", "None")
ENABLED = ("True", "False", "use_amp")


@dataclass
class Ctx:
    """What the module imports so far, and the spellings it can use."""

    imports: Set[str] = field(default_factory=lambda: {"import torch"})
    indent: str = "    "
    statements: int = 3  # at most this many statements per region body

    def need(self, line: str) -> None:
        self.imports.add(line)


def _comment(draw: Callable, text: str = "note") -> str:
    return draw(st.sampled_from(["", "", "", f"  # {text}", "  # noqa", "  # noqa: AMP001", "  # noqa: E501"]))


@st.composite
def tensor(draw: Callable, ctx: Ctx, depth: int = 0) -> str:
    """An input expression: a name, a cast, a transform, a literal, an attribute..."""
    leaf = draw(st.sampled_from(LEAVES))
    kinds = [
        "name", "name", "name", "float", "double", "to32", "to64kw", "type32", "exp", "texp", "softplus",
        "scaled_sigmoid", "sigmoid", "softmax", "index", "slice", "attr", "call", "plus_eps", "literal",
        "zeros_like", "clamp",
    ]
    kind = draw(st.sampled_from(kinds if depth < 2 else ["name", "literal", "float"]))
    inner = draw(tensor(ctx, depth + 1)) if depth < 2 and draw(st.booleans()) else leaf
    if inner[0].isdigit() or inner[0] in "-." or " " in inner:
        inner = f"({inner})"  # `(1.0).exp()`, `(mu + 1e-6).exp()`: never `1.exp()` or `mu + 1e-6.exp()`
    if kind == "name":
        return leaf
    if kind == "float":
        return f"{inner}.float()"
    if kind == "double":
        return f"{inner}.double()"
    if kind == "to32":
        return f"{inner}.to(torch.float32)"
    if kind == "to64kw":
        return f"{inner}.to(dtype=torch.float64)"
    if kind == "type32":
        return f"{inner}.type(torch.float32)"
    if kind == "exp":
        return f"{inner}.exp()"
    if kind == "texp":
        return f"torch.exp({inner})"
    if kind == "softplus":
        ctx.need("import torch.nn.functional as F")
        return f"F.softplus({inner})"
    if kind == "scaled_sigmoid":
        return f"1e-3 * torch.sigmoid({inner})"
    if kind == "sigmoid":
        return f"{inner}.sigmoid()"
    if kind == "softmax":
        return f"{inner}.softmax(-1)"
    if kind == "index":
        return f"{leaf}[..., 0]"
    if kind == "slice":
        return f"{leaf}[:, 1:]"
    if kind == "attr":
        return draw(st.sampled_from(["self.mu", "batch.x", "self.scale"]))
    if kind == "call":
        return f"model({leaf})"
    if kind == "plus_eps":
        return f"{inner} + 1e-6"
    if kind == "zeros_like":
        return f"torch.zeros_like({leaf})"
    if kind == "clamp":
        return f"{inner}.clamp(min=1e-4)"
    return draw(st.sampled_from(["0.0", "1.0", "1e-3", "-1", "2"]))


@st.composite
def distribution(draw: Callable, ctx: Ctx, depth: int = 0) -> str:
    imp, spelling = draw(st.sampled_from(DIST_SPELLINGS))
    ctx.need(imp)

    def name(cls: str) -> str:
        return spelling.format(cls)

    def arg() -> str:
        return draw(tensor(ctx))

    choices = ["Normal", "Laplace", "LogNormal", "Cauchy", "Gamma", "StudentT", "Categorical", "Bernoulli",
               "Poisson", "Exponential", "Uniform", "Dirichlet", "Beta", "MultivariateNormal"]
    if depth == 0:
        choices += ["Independent", "Independent", "MixtureSameFamily"]
    cls = draw(st.sampled_from(choices))
    sep = draw(st.sampled_from([", ", ",", ",\n" + ctx.indent * 3, ", "]))
    if cls in ("Normal", "Laplace", "LogNormal", "Cauchy"):
        if draw(st.booleans()):
            return f"{name(cls)}({arg()}{sep}{arg()})"
        return f"{name(cls)}(loc={arg()}, scale={arg()})"
    if cls == "Gamma":
        return f"{name(cls)}({arg()}, rate={arg()})"
    if cls == "Beta":
        return f"{name(cls)}({arg()}, {arg()})"
    if cls == "StudentT":
        return f"{name(cls)}({arg()}, {arg()}, {arg()})"
    if cls in ("Categorical", "Bernoulli"):
        keyword = draw(st.sampled_from(["logits", "probs"]))
        return f"{name(cls)}({keyword}={arg()})"
    if cls in ("Poisson", "Exponential", "Dirichlet"):
        return f"{name(cls)}({arg()})"
    if cls == "Uniform":
        return f"{name(cls)}({arg()}, {arg()}, validate_args=False)"
    if cls == "MultivariateNormal":
        return f"{name(cls)}({arg()}, scale_tril={arg()})"
    if cls == "Independent":
        ndims = draw(st.sampled_from(["1", "reinterpreted_batch_ndims=1", "2"]))
        return f"{name(cls)}({draw(distribution(ctx, depth + 1))}, {ndims})"
    mix = f"{name('Categorical')}(logits={arg()})"
    comp = f"{name('Independent')}({name('Normal')}({arg()}, {arg()}), 1)"
    return f"{name('MixtureSameFamily')}({mix}{sep}{comp})"


@st.composite
def computation(draw: Callable, ctx: Ctx, bound: List[str]) -> Tuple[List[str], str]:
    """(statements that must come first, the computation expression)."""
    kind = draw(st.sampled_from(["log_prob", "log_prob", "log_prob", "entropy", "cdf", "icdf", "kl", "bound",
                                 "param"]))
    value = draw(tensor(ctx))
    if kind == "kl":
        imp, fn = draw(st.sampled_from(KL_SPELLINGS))
        ctx.need(imp)
        return [], f"{fn}({draw(distribution(ctx))}, {draw(distribution(ctx))})"
    if kind == "bound":
        name = draw(st.sampled_from(["dist", "d", "posterior"]))
        bound.append(name)
        method = draw(st.sampled_from(["log_prob", "log_prob", "entropy", "cdf"]))
        call = f"{name}.{method}({'' if method == 'entropy' else value})"
        return [f"{name} = {draw(distribution(ctx))}"], call
    if kind == "param":  # a distribution passed in: the constructor is not visible
        return [], f"{draw(st.sampled_from(['p', 'q']))}.log_prob({value})"
    dist = draw(distribution(ctx))
    if kind == "entropy":
        return [], f"{dist}.entropy()"
    spacing = draw(st.sampled_from(["", "", " ", "\n" + ctx.indent * 3]))
    return [], f"{dist}.{kind}({spacing}{value})"


@st.composite
def statement(draw: Callable, ctx: Ctx, expr: str) -> List[str]:
    """One statement (or a small block) that uses `expr`, as lines relative to the current indent."""
    i = ctx.indent
    kind = draw(st.sampled_from([
        "assign", "assign", "return", "neg_sum", "augassign", "append", "print", "paren", "semicolon",
        "backslash", "if", "for", "comprehension", "lambda", "ternary", "assert", "annassign", "tuple",
        "call_kw", "try", "continued",
    ]))
    note = _comment(draw)
    if kind == "assign":
        return [f"lp = {expr}{note}"]
    if kind == "return":
        return [f"return {expr}{note}"]
    if kind == "neg_sum":
        return [f"loss = -{expr}.sum(){note}"]
    if kind == "augassign":
        return ["loss = 0", f"loss += {expr}.mean(){note}"]
    if kind == "append":
        return ["out = []", f"out.append({expr}){note}"]
    if kind == "print":
        return [f"print({expr}){note}"]
    if kind == "paren":
        return ["lp = (", f"{i}{expr}  # inside", f"){note}"]
    if kind == "semicolon":
        return [f"a = 1; lp = {expr}; b = 2{note}"]
    if kind == "backslash":
        return ["lp = \\", f"{i}{expr}{note}"]
    if kind == "continued":  # flake8 reads a noqa anywhere on a backslash-continued line
        note = draw(st.sampled_from(["  # noqa", "  # noqa: AMP001", "  # noqa:AMP001,E501", note]))
        return [f"lp = {expr} \\", f"{i}+ 0{note}"]
    if kind == "if":
        return ["if flag:", f"{i}lp = {expr}{note}", "else:", f"{i}lp = None"]
    if kind == "for":
        return ["for v in xs:", f"{i}lp = {expr}{note}"]
    if kind == "comprehension":
        return [f"lps = [{expr} for _ in range(2)]{note}"]
    if kind == "lambda":
        return [f"fn = lambda: {expr}{note}"]
    if kind == "ternary":
        return [f"lp = {expr} if flag else None{note}"]
    if kind == "assert":
        return [f"assert {expr} is not None{note}"]
    if kind == "annassign":
        return [f"lp: torch.Tensor = {expr}{note}"]
    if kind == "tuple":
        return [f"lp, other = {expr}, 1{note}"]
    if kind == "call_kw":
        return [f"record(value={expr}, step=1){note}"]
    return ["try:", f"{i}lp = {expr}{note}", "except RuntimeError:", f"{i}lp = None"]


@st.composite
def region_header(draw: Callable, ctx: Ctx, enabled: str = "") -> Tuple[List[str], str]:
    """(set-up lines, the with-item text) for one autocast region."""
    imp, callee, style = draw(st.sampled_from(AUTOCAST))
    ctx.need(imp)
    args: List[str] = []
    if style == "generic":
        device = draw(st.sampled_from(DEVICES))
        args.append(device if draw(st.booleans()) else f"device_type={device}")
    if draw(st.booleans()):
        dtype = draw(st.sampled_from(DTYPES))
        args.append(f"dtype={dtype}")
    chosen = enabled or (draw(st.sampled_from(ENABLED)) if draw(st.integers(0, 3)) == 0 else "")
    if chosen:
        if style == "cuda" and draw(st.booleans()) and not args:
            args.append(chosen)  # torch.cuda.amp.autocast(False): enabled is the first positional
        else:
            args.append(f"enabled={chosen}")
    call = f"{callee}({', '.join(args)})"
    form = draw(st.sampled_from(["call", "call", "call", "bound", "partial", "several"]))
    if form == "bound":
        return [f"ctx = {call}"], "ctx"
    if form == "partial":
        ctx.need("import functools")
        return [f"fp = functools.partial({callee}{''.join(', ' + a for a in args)})"], "fp()"
    if form == "several":
        ctx.need("import contextlib")
        return [], f"contextlib.nullcontext(), {call}"
    return [], call


def _indent(lines: List[str], unit: str, level: int = 1) -> List[str]:
    return [unit * level + line if line.strip() else line for line in lines]


@st.composite
def region_body(draw: Callable, ctx: Ctx, helpers: List[str], methods: bool, depth: int = 0) -> List[str]:
    """Statements inside a region: computations, helper calls, a nested region."""
    lines: List[str] = ["mu, sigma = model(h)"] if draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, ctx.statements))):
        what = draw(st.sampled_from(["compute", "compute", "compute", "helper", "method", "nested", "comment"]))
        if what == "helper" and helpers:
            lines.append(f"lp = {draw(st.sampled_from(helpers))}({draw(tensor(ctx))}, sigma, x)")
        elif what == "method" and methods:
            lines.append(f"lp = self.score({draw(tensor(ctx))}, x)")
        elif what == "nested" and depth < 2:
            enabled = draw(st.sampled_from(["False", "False", "True", ""]))
            setup, item = draw(region_header(ctx, enabled))
            lines += setup + [f"with {item}:"]
            lines += _indent(draw(region_body(ctx, helpers, methods, depth + 1)), ctx.indent)
        elif what == "comment":
            lines.append("# a comment line inside the region")
        else:
            bound: List[str] = []
            pre, expr = draw(computation(ctx, bound))
            lines += pre + draw(statement(ctx, expr))
    if all(line.startswith("#") for line in lines):
        lines.append("pass")
    return lines


@st.composite
def function(draw: Callable, ctx: Ctx, name: str, helpers: List[str], in_class: bool) -> List[str]:
    params = ("self, " if in_class else "") + PARAMS
    kind = draw(st.sampled_from(["with", "with", "decorated", "async", "plain_then_region", "helper_only"]))
    lines: List[str] = []
    body: List[str] = []
    if kind == "decorated":
        imp, callee, style = draw(st.sampled_from(AUTOCAST))
        ctx.need(imp)
        arg = '"cuda"' if style == "generic" else ""
        if style == "generic" and draw(st.booleans()):
            arg += ", dtype=torch.bfloat16"
        lines.append(f"@{callee}({arg})")
        body = draw(region_body(ctx, helpers, in_class))
    elif kind == "helper_only":  # no region: reached (or not) through a call
        bound: List[str] = []
        pre, expr = draw(computation(ctx, bound))
        body = pre + draw(statement(ctx, expr))
    else:
        if kind == "plain_then_region":
            bound = []
            pre, expr = draw(computation(ctx, bound))
            body += pre + draw(statement(ctx, expr))
        setup, item = draw(region_header(ctx))
        keyword = "async with" if kind == "async" else "with"
        body += setup + [f"{keyword} {item}:"]
        body += _indent(draw(region_body(ctx, helpers, in_class)), ctx.indent)
        if draw(st.booleans()):
            body.append("return None")
    prefix = "async def" if kind == "async" else "def"
    lines.append(f"{prefix} {name}({params}):")
    if draw(st.booleans()):
        lines.append(f'{ctx.indent}"""Docstring with autocast in it."""')
    return lines + _indent(body, ctx.indent)


@st.composite
def programs(draw: Callable, functions: int = 2, statements: int = 3, classes: bool = True) -> str:
    """A module with up to `functions` helpers and `functions` region functions, maybe a class.

    `statements` bounds each region body; the defaults make programs of about 1.5 kB.
    """
    ctx = Ctx(indent=draw(st.sampled_from(["    ", "    ", "  ", "\t"])), statements=statements)
    chunks: List[List[str]] = []
    helpers: List[str] = []
    for index in range(draw(st.integers(0, functions))):
        name = f"helper_{index}"
        chunks.append(draw(function(ctx, name, [], False)))
        helpers.append(name)
    for index in range(draw(st.integers(1, functions))):
        chunks.append(draw(function(ctx, f"step_{index}", helpers, False)))
    if classes and draw(st.integers(0, 2)) == 0:
        cls = ["class Model(torch.nn.Module):"]
        cls += _indent(draw(function(ctx, "score", helpers, True)), ctx.indent)
        cls.append("")
        cls += _indent(draw(function(ctx, "forward", helpers, True)), ctx.indent)
        chunks.append(cls)
    header = sorted(ctx.imports, key=lambda line: (line.startswith("from"), line))
    head = [*header, "", 'dev = "cuda"', "self_device = dev", "amp_dtype = torch.float16", "use_amp = True", ""]
    body = [line for chunk in chunks for line in ["", *chunk, ""]]
    text = "\n".join(head + body) + "\n"
    if draw(st.integers(0, 9)) == 0:
        text = text.replace("\n", "\r\n")
    return text


# --- any Python program: hypothesmith's grammar, for what must hold of every module -------------------

try:
    import hypothesmith
except ImportError:  # pragma: no cover - the dev extra installs it
    hypothesmith = None
GRAMMAR = st.deferred(lambda: hypothesmith.from_grammar()) if hypothesmith is not None else st.just("")
NO_HYPOTHESMITH = "hypothesmith is not installed (pip install -e '.[dev]')"
# The settings of every test that compares two readings of a generated program: reproducible and unhurried.
GRAMMAR_SETTINGS = settings(
    max_examples=150, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
