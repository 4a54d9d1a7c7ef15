"""Which calls and literals the site screen counts are sites of the collector's, judged on CPython's tree.

The summary reader (`facts.astcalls`) walks a file in LibCST's order; at each
call or literal the screen (`amplint.screen.counts_as_site`) counts, it asks
`SiteJudge`. The answer is one of three:

- no site: what `astscreen` proves the collector cannot make a site of (a
  floor or a tensor log with nothing in its function it could be a site
  with, a log of numbers, a library's call named like a density);
- a density site (`densitycalls.density_call`), whose inputs are the call's
  own arguments: it is counted in its scope, exposed or not, as
  `Collector.make_site` counts it;
- anything else (`Unread`): the file goes to LibCST.

Each `astscreen` test of a function or statement is read once per file.
"""
from __future__ import annotations

import ast
from functools import cached_property
from typing import Callable, Dict, Optional, Sequence, Tuple

from amplint.astwalk import walk
from amplint.facts import astnodes as nodes
from amplint.facts.astscreen import (
    Definitions, assigns_attributes, density_site, holds_probabilities, may_hold_log_sites, scalar_log,
)
from amplint.facts.astsource import SourceText
from amplint.facts.model import Scope
from amplint.facts.mathnames import LOG_2PI
from amplint.names import ImportTable
from amplint.screen import LOG_METHODS, is_distribution_call, is_log_call, is_probability_call

# Written-out log(2*pi) constants: a Gaussian term without any log call (`probmath._is_log_2pi`).
_LOG_2PI_VALUES = (LOG_2PI, LOG_2PI / 2, -LOG_2PI, -LOG_2PI / 2)

Span = Tuple[Tuple[int, int], Tuple[int, int]]


class Unread(Exception):
    """The file holds something only the LibCST collector reads (a site here, or in `astcalls` any other reason)."""


def _log_of_pi(node: ast.Call) -> bool:
    """`x.log(2 * pi)`: a log(2*pi) term the site screen does not count (`probmath._is_log_2pi` does)."""
    if not (isinstance(node.func, ast.Attribute) and node.func.attr in LOG_METHODS and (node.args or node.keywords)):
        return False
    return any(getattr(inner, "id", None) == "pi" or getattr(inner, "attr", None) == "pi"
               for arg in [*node.args, *node.keywords] for inner in walk(arg))


class SiteJudge:
    """The site judgements of one file, with the density sites counted per scope.

    `function` is the innermost def being read (None outside any), `statement`
    the top-level statement: the recognizers read a function's own bindings,
    and its class's `self.` attributes, never a module-level name.
    """

    def __init__(self, tree: ast.Module, source: SourceText, imports: ImportTable) -> None:
        self.tree = tree
        self.source = source
        self.imports = imports
        self.counts: Dict[int, Tuple[int, int]] = {}  # id(scope) -> (density sites, exposed ones)
        self._last: Optional[Span] = None  # the last site's span (`Collector.inside_site`)
        self._screens: Dict[Tuple[str, int], bool] = {}  # (test, id(node)) -> its answer

    @cached_property
    def definitions(self) -> Definitions:
        return Definitions(self.tree)

    # --- literals ---------------------------------------------------------------------------------
    def constant(self, node: ast.Constant, counted: bool, function: Optional[ast.AST], statement: ast.AST) -> None:
        """A literal: a written-out log(2*pi), or a floor (`1e-10`, `counted`) that may be a site, is unread."""
        if isinstance(node.value, float) and any(abs(node.value - c) < 1e-3 for c in _LOG_2PI_VALUES):
            raise Unread
        if counted and self._screened(self._holds_probabilities, self._floors_reached(function, statement)):
            raise Unread  # a floor is a site only under probabilities

    def _floors_reached(self, function: Optional[ast.AST], statement: ast.AST) -> ast.AST:
        """Where every floor the literal may be the epsilon of lies (`probmath.literal_value`): its function,
        unless that assigns a `self.` attribute; then its top-level statement, as the class's other methods read it.
        """
        if function is None or self._screened(assigns_attributes, function):
            return statement
        return function

    # --- calls ------------------------------------------------------------------------------------
    def call(self, node: ast.Call, args: Sequence[nodes.Arg], counted: bool, scope: Scope,
             owner: Optional[ast.ClassDef], function: Optional[ast.AST], statement: ast.AST,
             wide: Callable[[ast.expr], bool]) -> bool:
        """Is the call a density site (then counted in `scope`)? False for one that is no site.

        `args`: its arguments (`astnodes.call_args`); `counted`: the site screen counts the call. `owner` is
        the class whose body holds it (the collector's `math_env` class), `wide` the reader's float32 test.
        """
        if _log_of_pi(node):
            raise Unread
        if not counted or scalar_log(node, self.imports) or self._quiet_log(node, function or statement):
            return False
        if is_distribution_call(node, self.imports) or is_log_call(node, self.imports):
            raise Unread
        span = self._span(node)
        if self._last is not None and self._last[0] <= span[0] and span[1] <= self._last[1]:
            return False  # inside the last site (`Collector.inside_site`): the collector asks this first
        verdict = density_site(node, self.imports, self.definitions, scope.class_name, owner)
        if verdict is None:
            raise Unread
        if verdict:
            self._count(args, scope, wide, span)
        return verdict

    def _quiet_log(self, node: ast.Call, where: ast.AST) -> bool:
        """A tensor log whose function holds nothing it could be a site with (`astscreen.may_hold_log_sites`)."""
        if not is_log_call(node, self.imports) or is_probability_call(node, self.imports):
            return False
        return not self._screened(self._may_hold_log_sites, where)

    def _count(self, args: Sequence[nodes.Arg], scope: Scope, wide: Callable[[ast.expr], bool], span: Span) -> None:
        """`Collector.make_site` for a density call: its inputs are its tensor arguments."""
        inputs = [arg.value for arg in args if not arg.star and nodes.tensorish(arg.value)]
        exposed = scope.effective() is None and any(not wide(i) for i in inputs)
        sites, exposures = self.counts.get(id(scope), (0, 0))
        self.counts[id(scope)] = (sites + 1, exposures + exposed)
        self._last = span

    def _span(self, node: ast.expr) -> Span:
        """The node's start and end as LibCST positions it (lines, columns in characters)."""
        end_line = node.end_lineno or node.lineno
        return ((node.lineno, self.source.column(node.lineno, node.col_offset)),
                (end_line, self.source.column(end_line, node.end_col_offset or 0)))

    # --- `astscreen` tests, once per node -------------------------------------------------------------
    def _screened(self, test: Callable[[ast.AST], bool], node: ast.AST) -> bool:
        key = (test.__name__, id(node))
        found = self._screens.get(key)
        if found is None:
            found = self._screens[key] = test(node)
        return found

    def _holds_probabilities(self, node: ast.AST) -> bool:
        return holds_probabilities(node, self.imports)

    def _may_hold_log_sites(self, node: ast.AST) -> bool:
        return may_hold_log_sites(node, self.imports)
