"""Which calls, literals and operations are sites of the collector's, judged on CPython's tree.

The summary reader (`facts.astcalls`) walks a file in LibCST's order and asks
`SiteJudge` at each call (and, reading math, each binary operation), which
answers as the collector's recognizers (`facts.sites.RECOGNIZERS`) would, in
their order:

- a distribution's method or a KL (`screen.is_distribution_call`): `Unread`,
  the file goes to LibCST;
- a density site (`densitycalls.density_call`), whose inputs are the call's
  own arguments, unless `astscreen` proves the collector makes none (a library
  call named like a density); where that depends on more than this reads
  (a local name bound to a construction), `Unread`;
- hand-written math (`astmathsites`).

A file is read first without the math recognizers, as most files hold none:
a literal or a call that may be part of one (`astscreen` tells which cannot)
raises `MathSeen`, and the caller reads the file again with them.

Each site is counted in its scope, exposed or not, as `Collector.make_site`
counts it; a math site on a call is no call of the scope (`Collector.visit_Call`).
A site in a region of its own function may be reported without the walk:
the file has findings of its own, and goes to LibCST (`Unread`).
"""
from __future__ import annotations

import ast
from functools import cached_property
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

from amplint.astwalk import walk
from amplint.facts import astnodes as nodes
from amplint.facts.astmathenv import Unsure
from amplint.facts.astmathsites import Inputs, MathSites, Screens, math_constant
from amplint.facts.astscreen import (
    Definitions, assigns_attributes, density_site, holds_probabilities, logs_pi, may_hold_log_sites, scalar_log,
)
from amplint.facts.astsource import SourceText
from amplint.facts.mathnames import LOG_2PI
from amplint.facts.model import Scope
from amplint.names import ImportTable
from amplint.screen import (
    LOG_METHODS, is_distribution_call, is_exp_call, is_log_call, is_probability_call, kernel_candidate,
    quadratic_candidate,
)

Span = Tuple[Tuple[int, int], Tuple[int, int]]
Wide = Callable[[ast.expr], bool]

DENSITY = "density"  # what `SiteJudge.call` answers for a density site: the call is recorded, as a density
MATH = "math"  # a hand-written math site: the call is not recorded

# Written-out log(2*pi) constants: a Gaussian term without any log call (`probmath._is_log_2pi`).
_LOG_2PI_VALUES = (LOG_2PI, LOG_2PI / 2, -LOG_2PI, -LOG_2PI / 2)


class Unread(Exception):
    """The file holds something only the LibCST collector reads (a site here, or in `astcalls` any other reason)."""


class MathSeen(Exception):
    """The file may hold hand-written math: read it again with the math recognizers (`SiteJudge(math=True)`)."""


def _log_of_pi(node: ast.Call) -> bool:
    """`x.log(2 * pi)`: a log(2*pi) term the site screen does not count (`probmath._is_log_2pi` does)."""
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in LOG_METHODS and (node.args or node.keywords)):
        return False
    return any(getattr(inner, "id", None) == "pi" or getattr(inner, "attr", None) == "pi"
               for arg in [*node.args, *node.keywords] for inner in walk(arg))


class SiteJudge:
    """The site judgements of one file, with the sites counted per scope.

    `function` is the innermost def being read (None outside any), `statement`
    the top-level statement, `owner` the class whose `self.` attributes the
    recognizers read (the collector's `math_env` class). With `math`, the
    hand-written math recognizers are read too; without, a literal or call that
    may be part of a math site raises `MathSeen`.
    """

    def __init__(self, tree: ast.Module, source: SourceText, imports: ImportTable, math: bool = False) -> None:
        self.tree = tree
        self.source = source
        self.imports = imports
        self._screened = Screens()  # the `astscreen` tests and `astmathsites`' triggers, once per node
        self.maths = MathSites(source, imports, self._screened) if math else None
        self._sites: Dict[int, List[_Mark]] = {}  # id(scope) -> its sites, in the walk's order
        self._scopes: Dict[int, Scope] = {}  # id(scope) -> the scope, for each scope with sites
        self._last: Optional[Tuple[Span, ast.AST]] = None  # the last site (`Collector.inside_site`)

    @cached_property
    def definitions(self) -> Definitions:
        return Definitions(self.tree)

    # --- literals (without the math recognizers) ------------------------------------------------------
    def constant(self, node: ast.Constant, counted: bool, scope: Scope, function: Optional[ast.AST],
                 statement: ast.AST) -> None:
        """A literal: a written-out log(2*pi), or a floor (`1e-10`, `counted`) that may be part of a site."""
        if isinstance(node.value, float) and any(abs(node.value - c) < 1e-3 for c in _LOG_2PI_VALUES):
            self._math_seen(scope)
        if counted and self._screened(self._holds_probabilities, self._floors_reached(function, statement)):
            self._math_seen(scope)  # a floor is a site only under probabilities
        if function is None and self._screened(self._binds_math_constant, statement):
            self._math_seen(scope)  # `EPS = 1e-10`, `LOG_2PI = ...`: a module constant a function's math may read

    def _binds_math_constant(self, statement: ast.AST) -> bool:
        """Does a module-level statement bind a number constant (`ImportTable.number_constants`) the math reads
        (`math_constant`)? Its functions read it by name, where no literal is written."""
        constants = self.imports.number_constants
        return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and math_constant(
            constants.get(node.id)) for node in walk(statement)) if constants else False

    def _math_seen(self, scope: Scope) -> None:
        """What may be part of a math site: read the file again with the math recognizers, unless it is in a
        region, where a site would be a finding of the file's own, which LibCST reads (`_count`)."""
        raise Unread if scope.effective() is not None else MathSeen

    def _floors_reached(self, function: Optional[ast.AST], statement: ast.AST) -> ast.AST:
        """Where every floor the literal may be the epsilon of lies (`probmath.literal_value`): its function,
        unless that assigns a `self.` attribute; then its top-level statement, as the class's other methods read it.
        """
        if function is None or self._screened(assigns_attributes, function):
            return statement
        return function

    def _logs_reached(self, function: Optional[ast.AST], statement: ast.AST) -> ast.AST:
        """Where what a log reads may be computed: its function, unless that reads a `self.` attribute; then its
        top-level statement, as the class's other methods assign it (`mathenv._attribute_bindings`)."""
        if function is None or self._screened(_reads_attributes, function):
            return statement
        return function

    # --- calls ------------------------------------------------------------------------------------
    def call(self, node: ast.Call, args: Sequence[nodes.Arg], counted: bool, scope: Scope,
             owner: Optional[ast.ClassDef], function: Optional[ast.AST], statement: ast.AST,
             wide: Wide) -> Optional[str]:
        """`DENSITY` or `MATH` for a site (counted in `scope`), None for no site.

        `args`: its arguments (`astnodes.call_args`); `counted`: the site screen counts the call; `wide`: the
        reader's float32 test.
        """
        if self.maths is None and _log_of_pi(node):
            self._math_seen(scope)
        if counted and is_distribution_call(node, self.imports):
            raise Unread
        if counted and is_probability_call(node, self.imports) and self._density(node, scope, owner):
            self._count(node, [arg.value for arg in args if not arg.star and nodes.tensorish(arg.value)], scope,
                        wide, _callee_key(node.func, scope))
            return DENSITY
        if counted and is_log_call(node, self.imports):
            if self.maths is None and logs_pi(node, self.imports):
                self._math_seen(scope)  # log(2*pi): a Gaussian's term, which may be bound to be read elsewhere
            if scalar_log(node, self.imports) or self._quiet_log(node, self._logs_reached(function, statement)):
                return None
            if self.maths is None:
                self._math_seen(scope)
            return self._math(node, scope, wide, lambda: self.maths.log_call(node, function, owner, self._inside_last))
        if self.maths is None:
            if counted and (is_exp_call(node, self.imports) or kernel_candidate(node)):
                self._math_seen(scope)  # a density in log-parameter form or a kernel may hold it
            return None  # a floor's literal raises `MathSeen` where it is written
        maths = self.maths

        def recognize() -> Inputs:
            found = maths.floor_call(node, function, statement, owner)
            return found if found is not None else maths.kernel_call(node, function, owner, self._inside_last)
        return self._math(node, scope, wide, recognize)

    def kernel_seen(self, node: ast.BinOp, scope: Scope) -> None:
        """Without the math recognizers: an operation that may be a density kernel or a Gaussian's quadratic form
        (`screen.kernel_candidate`, `screen.quadratic_candidate`)."""
        if kernel_candidate(node) or quadratic_candidate(node):
            self._math_seen(scope)

    def _density(self, node: ast.Call, scope: Scope, owner: Optional[ast.ClassDef]) -> bool:
        if self._inside_last(node):
            return False  # inside the last site (`Collector.inside_site`): the collector asks this first
        verdict = density_site(node, self.imports, self.definitions, scope.class_name, owner)
        if verdict is None:
            raise Unread
        return verdict

    def _quiet_log(self, node: ast.Call, where: ast.AST) -> bool:
        """A tensor log whose function holds nothing it could be a site with (`astscreen.may_hold_log_sites`)."""
        if is_probability_call(node, self.imports):
            return False
        return not self._screened(self._may_hold_log_sites, where)

    # --- binary operations (with the math recognizers) --------------------------------------------------
    def operation(self, node: ast.BinOp, scope: Scope, owner: Optional[ast.ClassDef],
                  function: Optional[ast.AST], statement: ast.AST, wide: Wide) -> None:
        assert self.maths is not None
        maths = self.maths
        self._math(node, scope, wide, lambda: maths.operation(node, function, statement, owner, self._inside_last))

    def _math(self, node: ast.expr, scope: Scope, wide: Wide, recognize: Callable[[], Inputs]) -> Optional[str]:
        """Count the site `recognize` finds at `node`: its inputs, or None for none."""
        try:
            inputs = recognize()
        except Unsure:
            raise Unread from None
        if inputs is None:
            return None
        self._count(node, inputs, scope, wide)
        return MATH

    # --- counting -----------------------------------------------------------------------------------
    def _count(self, node: ast.expr, inputs: Sequence[ast.expr], scope: Scope, wide: Wide,
               density: Optional[str] = None) -> None:
        """`Collector.make_site`: exposed when some input is not float32 (it has no region of its own here).

        `density`: for a density call, the key of the scope it calls (`build._drop_densities_with_sites`)."""
        if scope.effective() is not None:
            raise Unread  # a site in a region here: the file has findings of its own, which LibCST reads
        exposed = any(not wide(i) for i in inputs)
        self._sites.setdefault(id(scope), []).append(_Mark(density, exposed))
        self._scopes[id(scope)] = scope
        self._last = (self._span(node), node)

    def may_report(self, reached: Callable[[], Set[str]]) -> bool:
        """May a site counted here be reported with no entry from the walk: is it in a function `reached` (their
        keys, asked only when some site is counted) from a region of this file? (One in a region of its own
        function is never counted: `_count`.)"""
        if not any(self._sites.values()):
            return False
        keys = reached()
        return any(self._scopes[key].key in keys for key, marks in self._sites.items() if marks)

    def counts(self, scopes: Dict[str, Scope]) -> Dict[str, Tuple[int, int]]:
        """Each scope's (sites, exposed ones), once a density call whose callee here holds sites of its own is
        dropped, in `build._drop_densities_with_sites`'s order: those sites report the hazard."""
        for scope in scopes.values():
            marks = self._sites.get(id(scope), [])
            for mark in [m for m in marks if m.density is not None]:
                callee = scopes.get(mark.density or "")
                if callee is not None and callee is not scope and self._sites.get(id(callee)):
                    marks.remove(mark)
        return {key: (len(marks), sum(m.exposed for m in marks)) for key, scope in scopes.items()
                for marks in [self._sites.get(id(scope))] if marks is not None}

    def _inside_last(self, node: ast.expr) -> bool:
        if self._last is None or self._last[1] is node:
            return False
        span, outer = self._span(node), self._last[0]
        return outer[0] <= span[0] and span[1] <= outer[1]

    def _span(self, node: ast.expr) -> Span:
        """The node's start and end as LibCST positions it (lines, columns in characters)."""
        end_line = node.end_lineno or node.lineno
        return ((node.lineno, self.source.column(node.lineno, node.col_offset)),
                (end_line, self.source.column(end_line, node.end_col_offset or 0)))

    # --- `astscreen` tests ------------------------------------------------------------------------------
    def _holds_probabilities(self, node: ast.AST) -> bool:
        return holds_probabilities(node, self.imports)

    def _may_hold_log_sites(self, node: ast.AST) -> bool:
        return may_hold_log_sites(node, self.imports)


class _Mark(NamedTuple):
    """A site counted in a scope: for a density call, the key of the scope it calls ("" for none here)."""

    density: Optional[str]
    exposed: bool


def _reads_attributes(function: ast.AST) -> bool:
    return any(nodes.self_attribute(node) is not None for node in walk(function))


def _callee_key(func: ast.expr, scope: Scope) -> str:
    """The scope a density call may call in this file (`build._drop_densities_with_sites`): `f` for `f(...)`,
    `C.m` for `x.m(...)` in a method of `C`; "" for none."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and scope.class_name is not None:
        return f"{scope.class_name}.{func.attr}"
    return ""
