"""What sends a file to LibCST, told more narrowly on CPython's tree than the screens do.

The site screen (`amplint.screen.counts_as_site`) is a superset of what the
collector recognises, and a file it counts anything in is read again with the
math recognizers (`facts.astmathsites`) or with LibCST (`facts.astcalls`).
Four of its reasons rarely end in a site:

- A positive literal below float16's smallest subnormal (`1e-8`) is a site
  only as the floor of a value that holds probabilities (`mathsites._floor_site`
  asks `probmath.is_prob`). `is_prob` holds only where the code names a
  softmax, a sigmoid or `expit`, spells a name that says probabilities
  (`mathnames.names_probability`), or divides by a sum (`holds_probabilities`).
  It reads the floor's function, its bindings and its class's `self.`
  attributes, and a literal reaches a floor only through those: with none of
  them in the literal's function, or in its top-level statement when that
  function assigns a `self.` attribute, it is no site.
- A tensor log (`torch.log(x)`, `x.log10()`) is a site when it takes
  probabilities or a sum of exps, and part of one as a factor of an entropy
  term (`p * log(p)`) or beside a square in a sum (a Gaussian written out).
  The recognizers read the log's own function and its bindings, so with no
  probabilities, exp, square, power or log factor in that function, it is
  none (`may_hold_log_sites`).
- A log of numbers (`math.log(10000)`, `np.log(x)`) is not a tensor log
  (`probmath.log_operand`); the collector reads one only as the log(2*pi) term
  of a Gaussian written out (`probmath._is_log_2pi`), whose argument names pi
  (`scalar_log`).
- A call named like a density (`F.nll_loss`, `marginal_entropy(p)`) is a site
  only when `densitycalls.density_call` finds the project's own density behind
  it; a library function, a function of this file whose body keeps its range
  (`loses_range`), or a method of a class of this file that does, is none.
  Where it finds one (a function of this file that loses range, a project
  import, a method inherited from another file), the site is read here too,
  since its inputs are the call's own arguments (`density_site`). A function
  named like one is a density (`FunctionSummary.density`) only when its body
  loses range too.

And a file that says `distributions` (`may_name_distributions`) names a
distribution class (`dtypes.distribution_class`) only through an import from a
distributions package or a name or attribute `distributions` in its code; the
word in a license header ("Redistributions of source code") or a docstring
builds nothing.

These tests only widen what `ast_facts` reads; `tests/test_ast_summary.py` and
the file-by-file comparison of the two summaries hold them to the collector.
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple, Union

from amplint.astwalk import BLOCKS, child_nodes, walk
from amplint.densitynames import from_library, is_density_name
from amplint.torchnames import DISTRIBUTION_PACKAGES
from amplint.facts.astnodes import is_number, self_attribute
from amplint.facts.mathnames import (
    FLOOR_FUNCTIONS, FLOOR_METHODS, POW_FUNCTIONS, POW_METHODS, PROB_FUNCTIONS, PROB_METHODS, SCALAR_LOG_FUNCTIONS,
    SCALE_FUNCTIONS, SCALE_METHODS, SQUARE_FUNCTIONS, SQUARE_METHODS, UNSTABLE_OPS, names_probability, python_math,
)
from amplint.names import ImportTable, ast_dotted, ast_last_name
from amplint.screen import LGAMMA_FUNCTIONS, LGAMMA_METHODS, is_log_call, is_probability_call

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]

DISTRIBUTIONS = "distributions"
# The last parts of what makes a probability (`softmax`, `sigmoid`, `expit`), and of a sum.
_PROB_PARTS = frozenset(name.rsplit(".", 1)[-1] for name in PROB_FUNCTIONS) | PROB_METHODS
_SUM = "sum"
_FLOOR_PARTS = frozenset(name.rsplit(".", 1)[-1] for name in FLOOR_FUNCTIONS) | FLOOR_METHODS
# The last parts of an exp (a log-sum-exp) and of a square or power (a Gaussian's squared term).
_SHAPE_PARTS = frozenset(name.rsplit(".", 1)[-1] for name in SCALE_FUNCTIONS | SQUARE_FUNCTIONS | POW_FUNCTIONS
                         | LGAMMA_FUNCTIONS) | (SCALE_METHODS | SQUARE_METHODS | POW_METHODS | LGAMMA_METHODS)


def _last_parts(node: ast.AST, imports: ImportTable) -> "frozenset[str]":
    """The last part of what a name or attribute may stand for: itself, and for a name, what it imports."""
    name = ast_last_name(node)
    if name is None:
        return frozenset()
    if isinstance(node, ast.Name) and name in imports.bindings:
        return frozenset({name} | {qual.rsplit(".", 1)[-1] for qual in imports.qualnames_of(name)})
    return frozenset({name})


def _divides_by_a_sum(node: ast.AST, imports: ImportTable) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        divisor: ast.AST = node.right
    elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
        divisor = node.value
    else:
        return False
    return any(_is_sum_call(candidate, imports) for candidate in _under_floor(_without_plus(divisor), imports))


def _without_plus(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        node = node.operand
    return node


def _under_floor(node: ast.AST, imports: ImportTable) -> List[ast.AST]:
    """`x`, and what `probmath.strip_floor` may take `x` for: either side of a sum, what a clamp bounds."""
    found = [node]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        found += [node.left, node.right]
    elif isinstance(node, ast.Call) and _last_parts(node.func, imports) & _FLOOR_PARTS:
        found += [node.func.value] if isinstance(node.func, ast.Attribute) else []
        found += [arg.value if isinstance(arg, ast.keyword) else arg for arg in [*node.args, *node.keywords]]
    return [_without_plus(each) for each in found]


def _is_sum_call(node: ast.AST, imports: ImportTable) -> bool:
    return isinstance(node, ast.Call) and _SUM in _last_parts(node.func, imports)


def holds_probabilities(tree: ast.AST, imports: ImportTable) -> bool:
    """May some value of `tree` hold probabilities, as `probmath.is_prob` tells? (False: certainly none.)"""
    return any(_makes_probabilities(node, _last_parts(node, imports), imports) for node in walk(tree))


def may_hold_log_sites(scope: ast.AST, imports: ImportTable) -> bool:
    """May a tensor log in `scope` be part of a `mathsites` site? (False: certainly none is.)

    A log is a site of its own when it takes probabilities or a sum of exps, and part of one as a
    factor of an entropy term (`p * log(p)`) or a term of a sum beside a square (a Gaussian). The
    recognizers read the log's function and its bindings only, so `scope` is that function.
    """
    for node in walk(scope):
        parts = _last_parts(node, imports)
        if parts & _SHAPE_PARTS or _makes_probabilities(node, parts, imports):
            return True
        if isinstance(node, ast.BinOp) and (isinstance(node.op, ast.Pow) or isinstance(node.op, ast.Mult) and (
                _is_log_factor(node.left, imports) or _is_log_factor(node.right, imports)
                or ast.dump(_last_factor(node.left)) == ast.dump(node.right))):
            return True
    return False


def _last_factor(node: ast.expr) -> ast.expr:
    """`u` of `u`, `-u` and `-0.5 * u`: what a square written as a product repeats (`is_square_of_tensor`)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        node = node.right
    return node


def _makes_probabilities(node: ast.AST, parts: "frozenset[str]", imports: ImportTable) -> bool:
    """May `node` (its `_last_parts` are `parts`) make probabilities: a softmax, a name, a normalisation?"""
    return bool(parts & _PROB_PARTS) or any(names_probability(part) for part in parts) or _divides_by_a_sum(
        node, imports)


def _is_log_factor(node: ast.expr, imports: ImportTable) -> bool:
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Call) and is_log_call(node, imports)


def scalar_log(node: ast.Call, imports: ImportTable) -> bool:
    """`math.log(10000)`, `np.log(x)`: a log of numbers whose argument does not name pi, so never part of a site.

    False for anything else, a tensor log (`torch.log`, `x.log()`) and a probability call included.
    """
    dotted = ast_dotted(node.func)
    if dotted is None or not (node.args or node.keywords) or is_probability_call(node, imports):
        return False
    quals = imports.qualnames_of(dotted)
    if not quals or not quals <= SCALAR_LOG_FUNCTIONS:
        return False
    return not any(_names_pi(inner, imports) for arg in [*node.args, *node.keywords] for inner in walk(arg))


def logs_pi(node: ast.Call, imports: ImportTable) -> bool:
    """`math.log(2 * math.pi)`: a log whose argument names pi, a Gaussian's constant wherever it is bound (a local,
    a module constant, a `self.` attribute the class's other methods read)."""
    return any(_names_pi(inner, imports) for arg in [*node.args, *node.keywords] for inner in walk(arg))


def _names_pi(node: ast.AST, imports: ImportTable) -> bool:
    """`math.pi`, `np.pi`, `pi`, or a name imported as pi (`from math import pi as PI`): `probmath.mentions_pi`'s
    test (`PI_NAMES`, all of them named `pi`), widened to any name or attribute `pi`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "pi"
    if isinstance(node, ast.Name):
        return node.id == "pi" or any(qual.rsplit(".", 1)[-1] == "pi" for qual in imports.qualnames_of(node.id))
    return False


def may_name_distributions(tree: ast.AST, imports: ImportTable) -> bool:
    """May a name in the code stand for a torch or pyro distribution class? (False: certainly none does.)"""
    packages = tuple(package.rstrip(".") for package in DISTRIBUTION_PACKAGES)  # the modules themselves too
    held = [qual for quals in imports.bindings.values() for qual in quals] + list(imports.star_modules)
    if any(qual.startswith(packages) for qual in held):
        return True
    return any(ast_last_name(node) == DISTRIBUTIONS for node in walk(tree))


# --- calls and functions named like densities (`amplint.facts.densitycalls`) -------------------------------
class Definitions:
    """The module's top-level functions and classes, looked up as `densitycalls` looks them up."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions: Dict[str, Function] = {}  # the first of each name
        self.classes: List[ast.ClassDef] = []
        self._attributes: Dict[int, Tuple[ast.ClassDef, "frozenset[str]"]] = {}
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(statement.name, statement)
            elif isinstance(statement, ast.ClassDef):
                self.classes.append(statement)

    def class_def(self, dotted: str) -> Optional[ast.ClassDef]:
        """`Outer.Inner`: a class of the module's body, then of that class's body."""
        body: List[ast.stmt] = list(self.classes)
        found: Optional[ast.ClassDef] = None
        for part in dotted.split("."):
            found = next((s for s in body if isinstance(s, ast.ClassDef) and s.name == part), None)
            if found is None:
                return None
            body = found.body
        return found

    def methods(self, name: str) -> List[Function]:
        return [m for c in self.classes for m in c.body
                if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == name]

    def attributes(self, cls: ast.ClassDef) -> "frozenset[str]":
        """The `self.` attributes the class's methods assign (`mathenv._attribute_bindings`), once per class."""
        found = self._attributes.get(id(cls))
        if found is None or found[0] is not cls:
            found = self._attributes[id(cls)] = (cls, _assigned_attributes(cls))
        return found[1]


def assigns_attributes(function: ast.AST) -> bool:
    """Does anything in `function` assign a `self.` attribute?"""
    return any(isinstance(node, ast.Assign) and any(self_attribute(t) is not None for t in node.targets)
               for node in walk(function))


def _assigned_attributes(cls: ast.ClassDef) -> "frozenset[str]":
    """`self.x = ...` in the methods of the class body, outside nested functions and classes."""
    found = set()
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        stack: List[ast.AST] = list(method.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(node, ast.Assign):
                found.update(attr for attr in map(self_attribute, node.targets) if attr is not None)
            elif isinstance(node, ast.stmt):
                stack.extend(child_nodes(node))
            elif isinstance(node, BLOCKS):  # a handler or a match case
                stack.extend(node.body)
    return frozenset(found)


def loses_range(function: Function, imports: ImportTable) -> bool:
    """`densitycalls.loses_range`: does the body use a tensor op float16 can push out of range?"""
    stack: List[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in UNSTABLE_OPS:
            root = ast_dotted(node.func.value)
            if root is None or not python_math(root, imports):
                return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not is_number(node.left):
            return True
        stack.extend(child_nodes(node))
    return False


def density_site(node: ast.Call, imports: ImportTable, definitions: Definitions, class_name: Optional[str],
                 owner: Optional[ast.ClassDef] = None) -> Optional[bool]:
    """Does `densitycalls.density_call` make a site of a call the screen counts for its density name?

    True: it does, the project's density with no receiver to add inputs; False: it never does; None: that
    depends on more than this reads (a local name bound to a construction). `owner` is the class whose body
    holds the call (the collector's `math_env` class). The caller (`astsites.SiteJudge.call`) has left out
    distribution methods and logs, other recognizers' sites, and tells whether the call lies inside another
    site, which the collector asks first.
    """
    func = node.func
    name = ast_last_name(func)
    if name is None or not is_density_name(name):
        return None
    if isinstance(func, ast.Name):
        defined = definitions.functions.get(name)
        if defined is not None:
            return loses_range(defined, imports)
        quals = imports.bindings.get(name)
        return bool(quals and not from_library(quals))
    assert isinstance(func, ast.Attribute)
    if not isinstance(func.value, ast.Name):
        return False  # `a.b.kl()`: not the project's density by the collector's rule
    root = func.value.id
    if root in ("self", "cls"):
        return _own_method_site(name, imports, definitions, class_name, owner)
    if root in imports.bindings and imports.qualnames_of(root):
        return not from_library(imports.qualnames_of(root))
    return None  # a local name: what it is bound to decides (`densitycalls._constructed`)


def _own_method_site(name: str, imports: ImportTable, definitions: Definitions, class_name: Optional[str],
                     owner: Optional[ast.ClassDef]) -> bool:
    """`self.m(...)` (`densitycalls._own_method`): no site when no class of this file is the scope's, when `m`
    is an attribute the owner or a class of the module assigns (`self.m = LowerBound(...)`), or when the
    methods named `m` all keep their range; with no such method, a site when the class has a base."""
    cls = definitions.class_def(class_name) if class_name is not None else None
    if cls is None:
        return False
    if owner is not None and name in definitions.attributes(owner):
        return False
    if any(name in definitions.attributes(c) for c in definitions.classes):
        return False
    methods = definitions.methods(name)
    if methods:
        return any(loses_range(m, imports) for m in methods)
    return bool(cls.bases)
