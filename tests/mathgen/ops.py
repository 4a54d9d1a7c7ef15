"""Each op real density code uses, in the spellings real code writes it; each records its name.

One function per op, so a family reads as the math it writes. The op names
(`Features.ops`) are the vocabulary the scorer's "by op" table is keyed by.
"""
from __future__ import annotations

from .code import Expr, Writer, binary, literal, operand


def _form(w: Writer, op: str, *forms: str) -> Expr:
    w.features.ops.add(op)
    return Expr(w.pick(forms))


def log(w: Writer, e: Expr) -> Expr:
    return _form(w, "log", f"torch.log({e.code})", f"{operand(e)}.log()")


def exp(w: Writer, e: Expr) -> Expr:
    return _form(w, "exp", f"torch.exp({e.code})", f"{operand(e)}.exp()")


def softplus(w: Writer, e: Expr) -> Expr:
    return _form(w, "softplus", f"F.softplus({e.code})")


def sigmoid(w: Writer, e: Expr) -> Expr:
    return _form(w, "sigmoid", f"torch.sigmoid({e.code})", f"{operand(e)}.sigmoid()")


def softmax(w: Writer, e: Expr) -> Expr:
    return _form(w, "softmax", f"torch.softmax({e.code}, dim=-1)", f"F.softmax({e.code}, dim=-1)",
                 f"{operand(e)}.softmax(dim=-1)", f"{operand(e)}.softmax(-1)")


def log_softmax(w: Writer, e: Expr) -> Expr:
    return _form(w, "log_softmax", f"F.log_softmax({e.code}, dim=-1)", f"torch.log_softmax({e.code}, -1)",
                 f"{operand(e)}.log_softmax(dim=-1)")


def logsigmoid(w: Writer, e: Expr) -> Expr:
    return _form(w, "logsigmoid", f"F.logsigmoid({e.code})")


def logsumexp(w: Writer, e: Expr) -> Expr:
    return _form(w, "logsumexp", f"torch.logsumexp({e.code}, dim=-1, keepdim=True)",
                 f"{operand(e)}.logsumexp(-1, keepdim=True)")


def lgamma(w: Writer, e: Expr) -> Expr:
    return _form(w, "lgamma", f"torch.lgamma({e.code})", f"{operand(e)}.lgamma()")


def total(w: Writer, e: Expr, keepdim: bool = False) -> Expr:
    """A sum over the last (event or class) dimension; never over the batch, so rows stay independent."""
    if keepdim:
        return _form(w, "sum", f"{operand(e)}.sum(-1, keepdim=True)", f"{operand(e)}.sum(dim=-1, keepdim=True)",
                     f"torch.sum({e.code}, dim=-1, keepdim=True)")
    return _form(w, "sum", f"{operand(e)}.sum(-1)", f"{operand(e)}.sum(dim=-1)", f"torch.sum({e.code}, dim=-1)")


def average(w: Writer, e: Expr) -> Expr:
    return _form(w, "mean", f"{operand(e)}.mean(-1)", f"torch.mean({e.code}, dim=-1)")


def square(w: Writer, e: Expr) -> Expr:
    form = w.rng.randrange(4)
    if form == 3:
        return _form(w, "square", f"torch.square({e.code})")
    if form == 0:
        w.features.ops.add("pow")
        return binary(e, "**", literal(2))
    return _form(w, "pow", (f"{operand(e)}.pow(2)", f"torch.pow({e.code}, 2)")[form - 1])


def power(w: Writer, e: Expr, exponent: float) -> Expr:
    return _form(w, "pow", f"{operand(e)}.pow({exponent!r})", f"torch.pow({e.code}, {exponent!r})")


def absolute(w: Writer, e: Expr) -> Expr:
    return _form(w, "abs", f"torch.abs({e.code})", f"{operand(e)}.abs()")


def divide(w: Writer, a: Expr, b: Expr) -> Expr:
    w.features.ops.add("div")
    return binary(a, "/", b)


def negate(e: Expr) -> Expr:
    return Expr(f"-{operand(e)}", atom=False)


def times(value: float, e: Expr) -> Expr:
    return binary(literal(value), "*", e)


def reduce(w: Writer, e: Expr, share: float = 0.5) -> Expr:
    """Per element as it is, or summed or averaged over the last dimension (per row)."""
    if not w.chance(share):
        return e
    return total(w, e) if w.chance(0.6) else average(w, e)
