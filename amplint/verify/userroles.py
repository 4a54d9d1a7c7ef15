"""What kind of value each input of a user's density stands for, read from names and from where it is used.

A `torch.distributions` class says what its parameters are (`arg_constraints`);
a hand-written density does not, so the input generator reads the names the
author chose (`log_std`, `prior_var`, `probs`, `logits`) and, for a log of
probabilities, where an input sits: under a `softmax`/`sigmoid`/`exp` it is a
logit, directly under the log it is a probability. Each role has a sampler per
recipe (`userinputs.py`); a name that says nothing is a real value.
No torch here: the parent decides roles, the child draws the values.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Sequence, Tuple

from amplint.transforms import Step

REAL = "real"
SCALE = "scale"
LOG_SCALE = "log-scale"
VARIANCE = "variance"
LOG_VARIANCE = "log-variance"
PROBABILITY = "probability"
LOGITS = "logits"
EXP_LOGITS = "exp-logits"
ROLES = (REAL, SCALE, LOG_SCALE, VARIANCE, LOG_VARIANCE, PROBABILITY, LOGITS, EXP_LOGITS)

_END = r"s?(?:_|$|\d)"
_NAMES = (  # first match wins: `log_var` is a log-variance before it is a variance
    (LOG_VARIANCE, re.compile(r"(?:^|_)log_?(?:var|variance|sigma2|sigma_sq)" + _END)),
    (LOG_SCALE, re.compile(r"(?:^|_)log_?(?:std|stdev|stddev|sigma|scale|sd)" + _END)),
    (VARIANCE, re.compile(r"(?:^|_)(?:var|variance|sigma2|sigma_sq)" + _END)),
    (SCALE, re.compile(r"(?:^|_)(?:std|stdev|stddev|sigma|scale|sd)" + _END)),
    (EXP_LOGITS, re.compile(r"(?:^|_)exp_")),
    (LOGITS, re.compile(r"(?:^|_)logits?" + _END)),
    (PROBABILITY, re.compile(r"(?:^|_)(?:p|probs?|probabilit(?:y|ies)|likelihoods?|lkl|pmf|pdf)" + _END)),
)
# How real code makes a value of the role from a Linear output, inside the region: a probability is a softmax
# (a sigmoid for one column), a scale or a variance an `exp`. The float16 failure upstream of the density (a
# softmax's probabilities rounded to zero) is then part of the run, and the float64 reference does not share it.
# Fix A casts the value the density reads, after these steps, as the codemod casts the argument it sees.
_MADE_BY = {PROBABILITY: "softmax", EXP_LOGITS: "exp", SCALE: "exp", VARIANCE: "exp"}


def role_steps(role: str, columns: bool) -> Tuple[Step, ...]:
    """The steps that make a value of `role` from a head (`columns`: the input has a dimension after the batch)."""
    kind = _MADE_BY.get(role)
    if kind == "softmax" and not columns:
        kind = "sigmoid"
    return (Step(kind, dim=-1),) if kind is not None else ()


LOGIT_OPS = frozenset({"softmax", "log_softmax", "sigmoid", "logsigmoid", "exp", "softplus"})
LOG_OPS = frozenset({"log", "log2", "log10", "log1p"})
# Calls a value passes through unchanged in kind (floors, casts, views): past anything else (a matmul, a
# sum) what the log or the softmax reads is no longer the input itself, and the input is a real value.
PASS_OPS = frozenset({
    "clip", "clamp", "clamp_min", "clamp_max", "float", "double", "half", "to", "type", "detach", "reshape", "view",
    "transpose", "t", "permute", "unsqueeze", "squeeze", "contiguous", "abs", "neg", "maximum", "minimum", "where",
    "chunk", "split", "flatten", "expand", "expand_as", "clone",
})


def role_of_name(name: str) -> str:
    """`posterior_log_sigma` -> log-scale, `prior_var` -> variance, `probs` -> probability, `x` -> real."""
    lowered = name.lower().lstrip("_")
    for role, pattern in _NAMES:
        if pattern.search(lowered):
            return role
    return REAL


def _op_name(call: ast.Call) -> Optional[str]:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None


def role_in_expression(expr: ast.expr, name: str, logs: bool) -> str:
    """The role of input `name` in `expr`: its name's, else what its first use sits under.

    `logs`: the site is a log of probabilities (or its floor), so an input read
    by the log through arithmetic only is a probability.
    """
    named = role_of_name(name)
    if named != REAL:
        return named
    parents: Dict[int, ast.AST] = {}
    for parent in ast.walk(expr):
        for child in ast.iter_child_nodes(parent):
            parents[id(child)] = parent
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id == name:
            return _structural(node, parents, logs)
    return REAL


def _structural(node: ast.AST, parents: Dict[int, ast.AST], logs: bool) -> str:
    """Up from one use, through arithmetic and `PASS_OPS` only, to the first softmax-like call or log."""
    current = node
    parent = parents.get(id(current))
    while parent is not None:
        op: Optional[str] = None
        if isinstance(parent, ast.Call):  # the input is an argument: `torch.log(p)`
            op = _op_name(parent)
        elif isinstance(parent, ast.Attribute) and isinstance(parents.get(id(parent)), ast.Call):
            op = parent.attr  # the input is the receiver: `p.log()`
            parent = parents[id(parent)]
        elif not isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Subscript, ast.IfExp)):
            return REAL
        if op in LOGIT_OPS:
            return LOGITS
        if op in LOG_OPS:
            return PROBABILITY if logs else REAL
        if op is not None and op not in PASS_OPS:
            return REAL
        current, parent = parent, parents.get(id(parent))
    return REAL


def role_of_argument(param: Optional[str], code_names: Sequence[str]) -> str:
    """A call's argument: the callee's parameter name first (`log_std`), else the names in the argument's code."""
    if param is not None:
        role = role_of_name(param)
        if role != REAL:
            return role
    for name in code_names:
        role = role_of_name(name)
        if role != REAL:
            return role
    return REAL
