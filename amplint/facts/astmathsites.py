"""`mathsites` over CPython's tree: which calls and operations are hand-written probability math.

The recognizers are `facts.siteshape`'s, the collector's (`facts.mathsites`),
asked in its order over CPython's reader (`facts.astreader`) within a
function's bindings (`astmathenv`): a tensor log of probabilities or of a sum
of exps, a floor float16 drops (`p + 1e-10`, `p.clamp(min=1e-12)`), an entropy
term (`p * log(p)`), a Gaussian written out, a density kernel. Each answers the
site's inputs, or None for no site; `astsites.SiteJudge` counts them.
`siteshape`'s doc lists where these answers and the collector's differ.

Every such site needs a log or a literal float16 rounds to zero in its
function (or, for a floor, in its class's `self.` attributes): `_Triggers`
finds where those are written, so that most operations are not read.
"""
from __future__ import annotations

import ast
import re
from bisect import bisect_left
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Set, Tuple

from amplint.facts import siteshape
from amplint.facts.astmathenv import Env, class_attributes
from amplint.facts.astprobmath import leaves
from amplint.facts.astreader import AstReader
from amplint.facts.astsource import SourceText
from amplint.facts.kernelshape import is_kernel
from amplint.facts.mathnames import (
    EXP_FUNCTIONS, FLOOR_FUNCTIONS, FLOOR_METHODS, LOG_2PI, LOG_FUNCTIONS, SCALAR_LOG_FUNCTIONS,
)
from amplint.names import ImportTable, ast_qualnames
from amplint.screen import FLOAT16_SUBNORMAL, LOG_METHODS, quadratic_candidate

Inputs = Optional[List[ast.expr]]  # a site's inputs, or None for no site


_LOGS = LOG_FUNCTIONS | SCALAR_LOG_FUNCTIONS
_LOG_2PI_VALUES = (LOG_2PI, LOG_2PI / 2)  # written out, a Gaussian's log term with no log call
# How `_Triggers` finds them in the text: a float literal with an exponent (`1e-10`, `1.e-8`, `.5e-8`) or seven
# zeros after its point (`0.000_000_01`), as every float below float16's smallest subnormal is written; a log
# called by its name (`log`, `log2`, `log10`); log(2*pi) written out (1.8378..., .9189..., or with an exponent).
# A match with an exponent starts where a number does, and its digits before and after the point are two
# separate runs: the old pattern could split one run of digits at any place, at any start inside it, and took
# 58 s on a 1,864-digit integer of sympy's tests (cubic in the run's length; now linear).
_FLOAT_TEXT = re.compile(r"(?<![\w.])(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)[eE][+-]?\d[\d_]*|\.[0_]{7}[\d_]*")
_LOG_TEXT = re.compile(r"log(?:2|10)?\b")  # a literal first: the search is fast
_EXP_TEXT = re.compile(r"\bexp\b")


def math_constant(value: Optional[float]) -> bool:
    """A module constant's value the math reads by name (`ImportTable.number_constants`): a floor float16 drops
    (`probshape.literal_value`), or log(2*pi) or half of it (`sumshape.is_log_2pi`)."""
    return value is not None and (0 < value < FLOAT16_SUBNORMAL or any(
        abs(abs(value) - c) < 1e-6 for c in _LOG_2PI_VALUES))


class MathSites:
    """The hand-written math recognizers of one file, with each function's `Env` and the sums judged whole.

    `function` is the innermost def being read (None outside any), `statement` the top-level statement, `owner`
    the class whose `self.` attributes the recognizers read (the collector's `math_env` class).
    """

    def __init__(self, source: SourceText, imports: ImportTable, screened: "Screens") -> None:
        self.source = source
        self.imports = imports
        self._envs: Dict[int, Env] = {}  # id(function) -> its `Env` (`Collector.math_envs`)
        self._claimed: Set[int] = set()  # inner sums judged whole (`Collector.claimed_sums`)
        self._triggers = _Triggers(source, imports)
        self._screened = screened

    def log_call(self, node: ast.Call, function: Optional[ast.AST], owner: Optional[ast.ClassDef],
                 inside_last: Callable[[ast.expr], bool]) -> Inputs:
        """`mathsites.inline_call`: a tensor log of probabilities, of a sum of exps or of a scale."""
        env = self._env(function, owner)
        found = siteshape.log_site(node, AstReader(env), inside_last)
        return None if found is None else list(leaves(found[1], env))

    def kernel_call(self, node: ast.Call, function: Optional[ast.AST], owner: Optional[ast.ClassDef],
                    inside_last: Callable[[ast.expr], bool]) -> Inputs:
        """`mathsites._kernel_site` on a call: `torch.pow(1 + z ** 2, -2)` (`kernelshape`)."""
        return None if inside_last(node) else _kernel(node, self._env(function, owner))

    def floor_call(self, node: ast.Call, function: Optional[ast.AST], statement: ast.AST,
                   owner: Optional[ast.ClassDef]) -> Inputs:
        """`mathsites.floor_call`: `p.clamp(min=1e-12)`, `torch.clamp(p, eps)` under probabilities."""
        if not self._names(node.func, FLOOR_METHODS, FLOOR_FUNCTIONS) or not self._floors(function, statement, owner):
            return None
        return self._floor_site(node, self._env(function, owner))

    def operation(self, node: ast.BinOp, function: Optional[ast.AST], statement: ast.AST,
                  owner: Optional[ast.ClassDef], inside_last: Callable[[ast.expr], bool]) -> Inputs:
        """`mathsites.inline_operation`: a floor, then an entropy term, then a Gaussian written out, then a
        density kernel (`kernelshape`).

        `inside_last`: does a node lie inside the last site counted (`Collector.inside_site`)?"""
        operator = type(node.op)
        if operator is ast.Add and self._floors(function, statement, owner):
            inputs = self._floor_site(node, self._env(function, owner))
            if inputs is not None:
                return inputs
        if operator is ast.Mult and (self._log_factor(node.left) or self._log_factor(node.right)):
            inputs = self._product_site(node, self._env(function, owner))
            if inputs is not None:
                return inputs
        elif operator in (ast.Add, ast.Sub) and (self._screened(self._triggers.log_or_exp, function or statement) or (
                function is not None and owner is not None and self._screened(self._triggers.log, owner))
                or _quadratic_candidate(node)):
            if id(node) in self._claimed or inside_last(node):
                return None  # one site per written sum, not one per sub-sum
            tree = AstReader(self._env(function, owner))
            self._claimed.update(id(inner) for inner in siteshape.inner_sums(node, tree))
            operands: Optional[Tuple[ast.expr, ...]] = None
            for _, operands in siteshape.density_sums(node, tree):
                if operands:
                    break  # the first with operands, else the last answer (`siteshape`'s doc)
            return None if operands is None else list(operands)
        if operator in (ast.Mult, ast.Div, ast.Pow) and not inside_last(node):
            return _kernel(node, self._env(function, owner))
        return None

    # --- the recognizers ---------------------------------------------------------------------------
    def _floor_site(self, node: ast.expr, env: Env) -> Inputs:
        found = siteshape.floor_site(node, AstReader(env))
        return None if found is None else list(leaves(found[0], env))

    def _product_site(self, node: ast.expr, env: Env) -> Inputs:
        found = siteshape.entropy_site(node, AstReader(env))
        return None if found is None else list(leaves(found[1], env))  # a log of its own is its own site

    def _env(self, function: Optional[ast.AST], owner: Optional[ast.ClassDef]) -> Env:
        """`Collector.math_env`: one per function (the module's, with no bindings, for code outside any)."""
        key = id(function)
        env = self._envs.get(key)
        if env is None:
            own = function if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            env = self._envs[key] = Env(self.imports, self.source, own, class_attributes(owner))
        return env

    # --- what a node must be for a recognizer to look further ---------------------------------------------
    def _names(self, func: ast.expr, methods: "frozenset[str]", functions: "frozenset[str]") -> bool:
        """Is `func` named as one of `methods`, or does it resolve to one of `functions`? A qualified name ends as
        the name written does unless an import renames it, so most calls need no lookup."""
        last = _last_parts(functions)
        if isinstance(func, ast.Attribute):
            if func.attr in methods:
                return True
            if func.attr not in last:
                return False
        elif not isinstance(func, ast.Name) or func.id not in last and func.id not in self.imports.bindings:
            return False
        return bool(ast_qualnames(func, self.imports) & functions)

    def _log_factor(self, node: ast.expr) -> bool:
        """Can `node` be the log of an entropy term (`probshape.entropy_operand`)?"""
        while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            node = node.operand
        return isinstance(node, ast.Call) and self._names(node.func, LOG_METHODS, LOG_FUNCTIONS)

    def _floors(self, function: Optional[ast.AST], statement: ast.AST, owner: Optional[ast.ClassDef]) -> bool:
        """May a floor here be one float16 drops? Its literal lies in the function (its bindings and defaults),
        in the class's `self.` attributes, or, outside any function, in the expression."""
        if self._screened(self._triggers.tiny_literal, function or statement):
            return True
        return function is not None and owner is not None and self._screened(self._triggers.tiny_literal, owner)


class Screens:
    """Each test's answer for a node of one file (a function, a class, a statement), read once."""

    def __init__(self) -> None:
        self._answers: Dict[Tuple[str, int], bool] = {}  # (test, id(node)) -> its answer

    def __call__(self, test: Callable[[ast.AST], bool], node: ast.AST) -> bool:
        key = (test.__name__, id(node))
        found = self._answers.get(key)
        if found is None:
            found = self._answers[key] = test(node)
        return found


def _quadratic_candidate(node: ast.BinOp) -> bool:
    """A sum that may hold a Gaussian's quadratic form with no log written (`sumshape.quadratic_sum`: `sum(z * z)
    / (2 * sigma * sigma) - log_det`), as the file screen asks it of each operation."""
    return any(isinstance(each, ast.BinOp) and quadratic_candidate(each) for each in ast.walk(node))


class _Triggers:
    """Where a log and a literal float16 rounds to zero are written. Read from the text, a superset of the tree:
    a literal is written there as a number, and a log is called by its name unless an import renames it. The
    text is searched once, on first use; a function or class then asks whether one lies within its lines."""

    def __init__(self, source: SourceText, imports: ImportTable) -> None:
        self.source = source
        self.imports = imports
        # A log imported under another name (`from torch import log as ln`) is called with no `log` written.
        self._renamed_log = any(local != qual.rsplit(".", 1)[-1] for local, quals in imports.bindings.items()
                                for qual in quals if qual in _LOGS)
        self._found: Optional[Tuple[List[int], List[int]]] = None  # where tiny literals and logs are written
        self._exps: Optional[List[int]] = None  # where `exp` is written
        self._renamed_exp = any(local != qual.rsplit(".", 1)[-1] for local, quals in imports.bindings.items()
                                for qual in quals if qual in EXP_FUNCTIONS)

    def tiny_literal(self, node: ast.AST) -> bool:
        """A float literal float16 rounds to zero (`1e-10`) may be in `node`."""
        return self._within(self._offsets()[0], node)

    def log(self, node: ast.AST) -> bool:
        """A call of a log or a written-out log(2*pi) may be in `node`."""
        return self._renamed_log or self._within(self._offsets()[1], node)

    def log_or_exp(self, node: ast.AST) -> bool:
        """A log, or an `exp` (a density in log-parameter form, `logparamshape`), may be in `node`."""
        if self.log(node):
            return True
        if self._exps is None:
            self._exps = [match.start() for match in _EXP_TEXT.finditer(self.source.text)]
        return self._renamed_exp or self._within(self._exps, node)

    def _offsets(self) -> Tuple[List[int], List[int]]:
        if self._found is None:
            text = self.source.text
            tiny: List[int] = []
            logs = [match.start() for match in _LOG_TEXT.finditer(text)  # `log` with no word character before
                    if not match.start() or not (text[match.start() - 1].isalnum() or text[match.start() - 1] == "_")]
            for written in ("1.8378", ".9189"):
                at = text.find(written)
                while at >= 0:
                    logs.append(at)
                    at = text.find(written, at + 1)
            for match in _FLOAT_TEXT.finditer(text):
                try:
                    value = float(match.group().replace("_", ""))
                except ValueError:
                    continue
                if 0 < value < FLOAT16_SUBNORMAL:
                    tiny.append(match.start())
                elif any(abs(value - c) < 1e-3 for c in _LOG_2PI_VALUES):
                    logs.append(match.start())
            for name, value in self.imports.number_constants.items():  # `EPS = 1e-10` read by name elsewhere
                if math_constant(value):
                    found = tiny if 0 < value < FLOAT16_SUBNORMAL else logs  # type: ignore[operator]
                    found += [m.start() for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\b", text)]
            self._found = sorted(tiny), sorted(logs)
        return self._found

    def _within(self, offsets: List[int], node: ast.AST) -> bool:
        """Does one of `offsets` lie in the lines `node` spans, from its first decorator's?"""
        if not offsets:
            return False
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        index = bisect_left(offsets, self.source.offset(first, 0))
        end = self.source.offset(node.end_lineno or first, node.end_col_offset or 0)
        return index < len(offsets) and offsets[index] < end


def _kernel(node: ast.expr, env: Env) -> Inputs:
    """`mathsites._kernel_site`: a density kernel's tensor operands, else None."""
    return list(leaves(node, env)) if is_kernel(node, AstReader(env)) else None


@lru_cache(maxsize=None)
def _last_parts(names: "frozenset[str]") -> "frozenset[str]":
    return frozenset(name.rsplit(".", 1)[-1] for name in names)
