"""Read the constructor check names (a finding's `built` hop) with what each of its slots holds.

Check quotes a distribution built in another function or file by its text
(`Independent(get_dist_class(self.dist_family)(**dist_params), 1)`,
`MixtureSameFamily(mix, comp)`): enough to flag and to cast, not to rebuild.
At the place check names, this module reads the slots as the code fills them:

- a local name bound, in the same function, only to constructors (`mix = Categorical(...)`);
- a class picked at run time, `get_dist_class(name)(**params)` or `DISTS[name](loc, scale)`: the classes the
  project function returns (`return Normal`, `return REGISTRY[name]`, in any project file) or the values of
  the dict literal it indexes. Each is an alternative, and verify runs every one;
- `**params` (keys unknown): the mapping feeds each tensor parameter of the class (`DistSpec.mapping`).

CPython's `ast` reads the files through the slicer's module finder; nothing is imported or run. The work
is bounded (`MAX_DEPTH` names followed, `MAX_ALTERNATIVES` alternatives kept), and a bound hit is said.
"""
from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from amplint.model import ArgSpec, DistSpec
from amplint.facts.astnodes import is_number, is_wide
from amplint.names import ImportTable, ast_qualnames, import_table
from amplint.torchnames import DISTRIBUTION_PACKAGES, distribution_name
from amplint.verify.slicer import Parsed, SliceNeeds, Slicer
from amplint.verify.userentrysite import CannotRun, node_at, parents_of

MAX_DEPTH = 4  # names and picker functions followed from one slot
MAX_ALTERNATIVES = 32  # alternatives kept for one constructor; more are dropped, and the note says so
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


@dataclass(frozen=True)
class Picked:
    """The classes a picker may give, in the order the code lists them, and where it was read."""

    qualnames: Tuple[str, ...]
    where: str  # `get_dist_class` at utils/distributions.py:25


@dataclass(frozen=True)
class Alternatives:
    """The constructor as each picked class would build it (one when nothing is picked), and what was read."""

    specs: Tuple[DistSpec, ...]
    notes: Tuple[str, ...]


def read_built(slicer: Slicer, path: str, line: int) -> Optional[Alternatives]:
    """The outermost distribution constructor on `line` of `path`, every slot read; None when none is there."""
    try:
        parsed = slicer.load(slicer.finder.module_of(path))
    except SliceNeeds:
        return None
    reader = _Reader(slicer, parsed, import_table(parsed.tree), parents_of(parsed.tree))
    call = reader.constructor_on(line)
    if call is None:
        return None
    try:
        specs = reader.specs(call, MAX_DEPTH)
    except SliceNeeds:  # a picker's module that cannot be read: nothing to run but check's text
        return None
    if not specs:
        return None
    notes = list(dict.fromkeys(reader.notes))
    if len(specs) > MAX_ALTERNATIVES:
        notes.append(f"more than {MAX_ALTERNATIVES} alternatives: ran the first {MAX_ALTERNATIVES} (the bound on "
                     "verify's work)")
    return Alternatives(tuple(specs[:MAX_ALTERNATIVES]), tuple(notes))


class _Reader:
    """Reads one file's constructor; `notes` collects what was picked and from where."""

    def __init__(self, slicer: Slicer, parsed: Parsed, table: ImportTable, parents: Dict[int, ast.AST]) -> None:
        self.slicer = slicer
        self.parsed = parsed
        self.table = table
        self.parents = parents
        self.notes: List[str] = []

    def constructor_on(self, line: int) -> Optional[ast.Call]:
        found = [node for node in ast.walk(self.parsed.tree) if isinstance(node, ast.Call)
                 and node.lineno == line and self._torch_class(node.func) is not None]
        return min(found, key=lambda node: node.col_offset, default=None)

    # --- one constructor, every alternative ----------------------------------------------------------

    def specs(self, call: ast.Call, depth: int) -> List[DistSpec]:
        """`call` as DistSpecs: one per combination of the classes its slots (and itself) may be."""
        qualnames = self._qualnames(call.func, depth)
        if not qualnames:
            return []
        args: List[ArgSpec] = []
        mapping: Optional[ArgSpec] = None
        slots: List[List[DistSpec]] = []
        entries = [(None, i, a) for i, a in enumerate(call.args)] + [(k.arg, None, k.value) for k in call.keywords]
        for name, position, value in entries:
            if isinstance(value, ast.Starred):
                return []  # `*args`: which parameter each feeds is unknown
            if name is None and position is None:  # `**params`
                mapping = self._arg(None, None, value, call)
                continue
            inner = self._slot(value, call, depth)
            if inner:
                slots.append(inner)
            else:
                args.append(self._arg(name, position, value, call))
        combinations = itertools.product(qualnames, itertools.product(*slots))
        return [DistSpec(qualname, tuple(args), tuple(components), mapping)
                for qualname, components in itertools.islice(combinations, MAX_ALTERNATIVES + 1)]

    def _slot(self, value: ast.expr, at: ast.AST, depth: int) -> List[DistSpec]:
        """The distributions a slot value may be: a constructor, or a local name bound only to constructors."""
        if depth <= 0:
            return []
        if isinstance(value, ast.Call) and self._qualnames(value.func, depth):
            return self.specs(value, depth - 1)
        if isinstance(value, ast.Name):
            bindings = self.local_values(value.id, at)
            found = [self._slot(each, each, depth - 1) for each in bindings]
            if bindings and all(found):
                return [spec for each in found for spec in each]
        return []

    def _qualnames(self, func: ast.expr, depth: int) -> Tuple[str, ...]:
        """The classes a constructor's callee names: a torch class, or those a picker gives."""
        torch_class = self._torch_class(func)
        if torch_class is not None:
            return (torch_class,)
        picked = self._picked(func, depth)
        if picked is None or not any(name.startswith(DISTRIBUTION_PACKAGES) for name in picked.qualnames):
            return ()
        shown = ", ".join(name.rsplit(".", 1)[-1] for name in picked.qualnames)
        self.notes.append(f"the class is picked at run time: {picked.where} gives {shown}")
        return picked.qualnames

    # --- picked classes ----------------------------------------------------------------------------

    def _picked(self, func: ast.expr, depth: int) -> Optional[Picked]:
        """`get_dist_class(name)` (a project function's returned classes) or `DISTS[name]` (a dict's values)."""
        if depth <= 0:
            return None
        if isinstance(func, ast.Call):
            found = self._function(func.func)
            if found is None:
                return None
            parsed, node = found
            names = [name for value in _returned(node)
                     for name in _Reader(self.slicer, parsed, import_table(parsed.tree), {}).classes(value, depth)]
            where = f"`{node.name}` at {parsed.label}:{node.lineno}"
        elif isinstance(func, ast.Subscript):
            values = self._registry(func.value, func)
            if values is None:
                return None
            names = [name for value in values for name in self.classes(value, depth)]
            where = f"`{ast.unparse(func.value)}` at {self.parsed.label}:{func.lineno}"
        else:
            return None
        return Picked(tuple(dict.fromkeys(names)), where) if names else None

    def classes(self, value: ast.expr, depth: int) -> List[str]:
        """The classes a returned or stored value names: a torch class, a project class, or a registry's."""
        if isinstance(value, ast.Subscript):
            values = self._registry(value.value, value)
            return [name for each in values or () for name in self.classes(each, depth)]
        torch_class = self._torch_class(value)
        if torch_class is not None:
            return [torch_class]
        found = self.slicer.class_of(self.parsed, value)
        if found is not None and isinstance(found[0].tree.body[found[1]], ast.ClassDef):
            return [f"{found[0].module.name}.{found[0].tree.body[found[1]].name}"]  # type: ignore[attr-defined]
        return []

    def _torch_class(self, node: ast.expr) -> Optional[str]:
        """The torch (or pyro) distribution class `node` names through the file's imports, if any."""
        return distribution_name(ast_qualnames(node, self.table))

    def _function(self, func: ast.expr) -> Optional[Tuple[Parsed, ast.FunctionDef]]:
        try:
            found = self.slicer.class_of(self.parsed, func)
        except SliceNeeds:
            return None
        if found is None:
            return None
        node = found[0].tree.body[found[1]]
        return (found[0], node) if isinstance(node, ast.FunctionDef) else None

    def _registry(self, value: ast.expr, at: ast.AST) -> Optional[List[ast.expr]]:
        """The values of the dict literal a name is bound to (in the function, else at module level)."""
        if not isinstance(value, ast.Name):
            return None
        bindings = self.local_values(value.id, at) or [
            node.value for node in self.parsed.tree.body if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == value.id for t in node.targets)]
        if len(bindings) != 1 or not isinstance(bindings[0], ast.Dict):
            return None
        return [each for each in bindings[0].values if each is not None]

    # --- names in the enclosing function -------------------------------------------------------------

    def local_values(self, name: str, at: ast.AST) -> List[ast.expr]:
        """The values `name` is assigned in the function around `at` (plain `name = value` only)."""
        function = self._enclosing_function(at)
        if function is None:
            return []
        return [node.value for node in ast.walk(function) if isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name]

    def _enclosing_function(self, node: ast.AST) -> Optional[ast.AST]:
        while id(node) in self.parents:
            node = self.parents[id(node)]
            if isinstance(node, FUNCTIONS):
                return node
        return None

    def _arg(self, name: Optional[str], position: Optional[int], value: ast.expr, at: ast.AST) -> ArgSpec:
        """An argument as check describes one: float32 (`cast`) when it or its one local binding is wide."""
        return ArgSpec(name, position, ast.unparse(value), self._wide(value, at, MAX_DEPTH), is_number(value))

    def _wide(self, value: ast.expr, at: ast.AST, depth: int) -> bool:
        """A cast, a float32 factory, a number, `{k: v.float() ...}`: as `dtypes.is_wide` reads check's facts."""
        def wide_name(name: str) -> bool:
            bindings = self.local_values(name, at) if depth > 0 else []
            return len(bindings) == 1 and self._wide(bindings[0], at, depth - 1)
        try:
            return is_wide(value, self.table, wide_name)
        except RecursionError:  # an expression nested past Python's stack: not known to be wide
            return False


def _returned(function: ast.FunctionDef) -> List[ast.expr]:
    """The values `function` returns, nested functions left out."""
    out: List[ast.expr] = []
    stack: List[ast.AST] = list(function.body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, ast.Return) and node.value is not None:
            out.append(node.value)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda value: (value.lineno, value.col_offset))  # the order the code lists them


# A wrapper's attribute that is one of its slots, by the slot's place among the wrapper's components.
SLOT_ATTRIBUTES = {"base_dist": 0, "base_distribution": 0, "mixture_distribution": 0, "component_distribution": 1}


@dataclass(frozen=True)
class Receiver:
    """What the site's receiver is of the distribution check names: itself (None) or a slot (`base_dist`)."""

    views: Tuple[Optional[str], ...]
    note: str = ""


def receiver_of(slicer: Slicer, path: str, line: int, column: int, end: Optional[Tuple[int, int]],
                method: str) -> Receiver:
    """`iid = dist.base_dist` (or `dist` in another branch) before `iid.icdf(p)`: the receiver's views."""
    try:
        parsed = slicer.load(slicer.finder.module_of(path))
        call = node_at(parsed, line, column, end)  # the finding's own expression: the method call
    except (SliceNeeds, CannotRun):
        return Receiver((None,))
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == method):
        return Receiver((None,))
    receiver = call.func.value
    reader = _Reader(slicer, parsed, import_table(parsed.tree), parents_of(parsed.tree))
    values = reader.local_values(receiver.id, call) if isinstance(receiver, ast.Name) else [receiver]
    views = tuple(dict.fromkeys(_slot_attribute(value) for value in values)) or (None,)
    if views == (None,):
        return Receiver(views)
    shown = " or ".join(f"`{ast.unparse(value)}` (line {value.lineno})" for value in values)
    return Receiver(views, f"the receiver `{ast.unparse(receiver)}` is {shown}: each was run")


def _slot_attribute(value: ast.expr) -> Optional[str]:
    return value.attr if isinstance(value, ast.Attribute) and value.attr in SLOT_ATTRIBUTES else None


def viewed(spec: DistSpec, view: Optional[str]) -> Optional[DistSpec]:
    """The distribution `view` names of `spec`: itself, or the component in that slot."""
    if view is None:
        return spec
    index = SLOT_ATTRIBUTES[view]
    return spec.components[index] if index < len(spec.components) else None


def first_alternatives(slicer: Slicer, built: Sequence[Tuple[str, int]]) -> Optional[Alternatives]:
    """The first of check's `built` places (path, line) whose constructor can be read."""
    for path, line in built:
        found = read_built(slicer, path, line)
        if found is not None:
            return found
    return None
