"""Cut the slice of a project that one density needs: its definition and what it uses, transitively.

`amplint verify --run-user-code` never imports the user's modules: their other
imports (trainers, datasets, loggers) rarely install cleanly, and importing
them runs their top-level code. Starting from the density (a function, a
method, or the expression of hand-written math), the slicer reads each name it
uses and keeps the one top-level statement that binds it: a function, a class
(only the members used through `self`, `cls` or `super()`, its constructor,
`forward` and its dunders), a constant, or one alias of an import. Through
`from .x import y` it follows project modules to their files. An import of
anything but `torch`, `math` and `numpy`, a name it cannot find, or a builtin
that reaches outside (`open`, `eval`, `__import__`) stops it: `SliceNeeds`,
which names what was needed, becomes the finding's `unverifiable` reason.

The work is bounded (`MAX_DEFINITIONS` statements kept, `MAX_MODULES` files
read); hitting a bound says so. CPython's `ast` reads the code and `symtable`
decides which names are local; nothing is executed here.
"""
from __future__ import annotations

import ast
import builtins
import importlib
import os
from collections import deque
from dataclasses import dataclass, field
from typing import Deque, Dict, List, Optional, Set, Tuple, Union

from amplint.files import read_source
from amplint.model import FileError
from amplint.verify.slicebindings import (
    Path, TopLevel, attribute_paths, globals_of, loads, local_imports, receiver_attributes, scope_tables,
    statement_names, top_level,
)
from amplint.verify.sliceimports import Finder, ModuleFile, absolute_name, allowed, refused

MAX_DEFINITIONS = 200  # statements and class members kept
MAX_MODULES = 50  # project files read
# Builtins through which code reaches past the computation: files, other modules, code from text.
DENIED_BUILTINS = frozenset({
    "__import__", "open", "eval", "exec", "compile", "input", "breakpoint", "globals", "locals", "vars", "exit",
    "quit", "help", "memoryview", "__loader__", "__spec__", "__builtins__",
})
IMPLICIT_MEMBERS = ("__init__", "__new__", "__call__", "forward", "__post_init__")


class SliceNeeds(Exception):
    """The slice would need something it may not have; the message names it."""


@dataclass
class Parsed:
    """One project file as the slicer reads it."""

    module: ModuleFile
    tree: ast.Module
    top: TopLevel
    tables: Dict[Tuple[str, int], object]
    label: str  # the path as messages print it
    lines: List[str] = field(default_factory=list)  # the source's lines, for columns in characters


@dataclass
class Kept:
    """What the slice keeps of one module."""

    statements: Set[int] = field(default_factory=set)
    aliases: Dict[int, Set[int]] = field(default_factory=dict)  # import statement -> names kept
    members: Dict[int, Set[str]] = field(default_factory=dict)  # class statement -> members kept
    after: List[str] = field(default_factory=list)  # project modules its top level imports from
    extra: List[ast.stmt] = field(default_factory=list)  # the site's wrapper function, for hand-written math


Item = Tuple[str, str, int, str, str]  # (kind, module, statement, member, user)


def relative(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


class Slicer:
    """Collects a slice; `parsed` and `kept` describe it once `close()` has run."""

    def __init__(self, finder: Finder, max_definitions: int = MAX_DEFINITIONS, max_modules: int = MAX_MODULES,
                 cache: Optional[Dict[str, Parsed]] = None) -> None:
        self.finder = finder
        self.max_definitions = max_definitions
        self.max_modules = max_modules
        self.cache: Dict[str, Parsed] = {} if cache is None else cache  # files read, shared with forks
        self.parsed: Dict[str, Parsed] = {}
        self.kept: Dict[str, Kept] = {}
        self.queue: Deque[Item] = deque()
        self.count = 0
        self.resolving: Set[Tuple[str, str]] = set()  # (module, name) pairs being resolved: an import circle

    # --- modules ---------------------------------------------------------------------------------

    def fork(self) -> "Slicer":
        """An empty slice over the same files, for a trial that must leave this one as it is."""
        return Slicer(self.finder, self.max_definitions, self.max_modules, self.cache)

    def load(self, module: ModuleFile) -> Parsed:
        """Read and parse a project file once; the slice holds every module it loaded."""
        if module.name in self.parsed:
            return self.parsed[module.name]
        if module.name in self.cache:
            self.parsed[module.name] = self.cache[module.name]
            self.kept[module.name] = Kept()
            return self.cache[module.name]
        if module.name.split(".", 1)[0] in ("torch", "math", "numpy"):
            raise SliceNeeds(f"the project's module {module.name} ({relative(module.path)}) would shadow the "
                             "installed package of that name")
        if len(self.parsed) >= self.max_modules:
            raise SliceNeeds(f"the slice reached {self.max_modules} project files (the bound on the slicer's "
                             f"work) before it closed, at {module.name}")
        label = relative(module.path)
        source = read_source(module.path)
        if isinstance(source, FileError):
            raise SliceNeeds(f"the slice needs {label}, which cannot be read ({source.message})")
        try:
            tree = ast.parse(source.text, module.path)
            tables = scope_tables(source.text, module.path)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise SliceNeeds(f"the slice needs {label}, which does not parse ({exc})") from exc
        parsed = Parsed(module, tree, top_level(tree), tables, label,  # type: ignore[arg-type]
                        source.text.splitlines())
        self.parsed[module.name] = self.cache[module.name] = parsed
        self.kept[module.name] = Kept()
        return parsed

    def close(self) -> None:
        """Keep everything the queued statements need, transitively, within the bound."""
        while self.queue:
            kind, module, index, member, user = self.queue.popleft()
            parsed, kept = self.parsed[module], self.kept[module]
            if kind == "statement":
                if index in kept.statements:
                    continue
                kept.statements.add(index)
                self._count(user)
                self._statement(parsed, index, user)
            else:
                members = kept.members.setdefault(index, set())
                if member in members:
                    continue
                members.add(member)
                self._count(user)
                self._member(parsed, index, member, user)

    def _count(self, user: str) -> None:
        self.count += 1
        if self.count > self.max_definitions:
            raise SliceNeeds(f"the slice grew past {self.max_definitions} definitions (the bound on the slicer's "
                             f"work) before it closed, while following `{user}`")

    # --- what a statement needs ----------------------------------------------------------------------

    def _statement(self, parsed: Parsed, index: int, user: str) -> None:
        node = parsed.tree.body[index]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.function(parsed, node, None, node.name)
        elif isinstance(node, ast.ClassDef):
            header = ast.Module(body=[ast.Expr(part) for part in _header_parts(node)], type_ignores=[])
            paths = attribute_paths(header, loads(header))
            for name in sorted(paths):
                self.need(parsed, name, paths[name], node.name)
            for member in self.members_of(node):
                if member in IMPLICIT_MEMBERS or (member.startswith("__") and member.endswith("__")):
                    self.queue.append(("member", parsed.module.name, index, member, node.name))
        else:
            for name in sorted(loads(node)):
                self.need(parsed, name, attribute_paths(node, {name}).get(name, {()}), user)

    def _member(self, parsed: Parsed, index: int, member: str, user: str) -> None:
        cls = parsed.tree.body[index]
        assert isinstance(cls, ast.ClassDef)
        qualname = f"{cls.name}.{member}"
        local = set(self.members_of(cls))
        for node in cls.body:
            if member not in [name for name, _ in statement_names(node)]:
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.function(parsed, node, index, qualname)
            else:  # a class-level assignment: other members, or the module's names
                for name in sorted(loads(node)):
                    if name in local:
                        self.queue.append(("member", parsed.module.name, index, name, qualname))
                    else:
                        self.need(parsed, name, attribute_paths(node, {name}).get(name, {()}), qualname)

    @staticmethod
    def members_of(cls: ast.ClassDef) -> List[str]:
        return [name for node in cls.body for name, _ in statement_names(node)]

    def function(self, parsed: Parsed, node: Union[ast.FunctionDef, ast.AsyncFunctionDef], cls: Optional[int],
                 qualname: str) -> None:
        """A function's needs: its module's names, its own imports, and (a method) the members it reads."""
        table = parsed.tables.get((node.name, node.lineno))
        if table is None:  # pragma: no cover - symtable and ast agree on every def
            raise SliceNeeds(f"`{qualname}` in {parsed.label} could not be read")
        outer = _header_loads(node)  # decorators and defaults run in the enclosing scope
        names = globals_of(table) & loads(node)  # type: ignore[arg-type]
        paths = attribute_paths(node, names)
        for name in sorted(names):
            self.need(parsed, name, paths.get(name, {()}), qualname)
        for name in sorted(outer):
            if cls is not None and name in self.members_of(parsed.tree.body[cls]):  # type: ignore[arg-type]
                self.queue.append(("member", parsed.module.name, cls, name, qualname))
            else:
                self.need(parsed, name, attribute_paths(node, {name}).get(name, {()}), qualname)
        for statement in local_imports(node):
            self._local_import(parsed, node, statement, qualname)
        if cls is not None and node.args.args:
            receiver = node.args.args[0].arg
            for attribute in sorted(receiver_attributes(node, receiver)):
                self.member_everywhere(parsed, cls, attribute, qualname)

    def member_everywhere(self, parsed: Parsed, cls: int, member: str, user: str) -> None:
        """Keep `member` in the class and in each project base that defines it (what `self.x` may mean)."""
        for owner, index in self.lineage(parsed, cls):
            node = owner.tree.body[index]
            assert isinstance(node, ast.ClassDef)
            if member in self.members_of(node):
                self.queue.append(("member", owner.module.name, index, member, user))

    def lineage(self, parsed: Parsed, cls: int) -> List[Tuple[Parsed, int]]:
        """The class and its project bases, depth first (the MRO for the single inheritance slices meet)."""
        out: List[Tuple[Parsed, int]] = []
        stack = [(parsed, cls)]
        while stack:
            owner, index = stack.pop(0)
            if (owner.module.name, index) in [(o.module.name, i) for o, i in out]:
                continue
            out.append((owner, index))
            node = owner.tree.body[index]
            assert isinstance(node, ast.ClassDef)
            for base in node.bases:
                found = self.class_of(owner, base)
                if found is not None:
                    stack.append(found)
        return out

    def class_of(self, parsed: Parsed, expr: ast.expr) -> Optional[Tuple[Parsed, int]]:
        """The project class `expr` (a name, or `module.Name`) refers to in `parsed`, if any."""
        if isinstance(expr, ast.Name):
            return self.definition(parsed, expr.id)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            target = self._module_bound(parsed, expr.value.id)
            if target is not None:
                return self.definition(self.load(target), expr.attr)
        return None

    def definition(self, parsed: Parsed, name: str, hops: int = 0) -> Optional[Tuple[Parsed, int]]:
        """The project `def`/`class` statement `name` ends at, through project imports (no side effects but loads)."""
        for binding in reversed(parsed.top.names.get(name, [])):
            node = parsed.tree.body[binding.index]
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                return parsed, binding.index
            if isinstance(node, ast.ImportFrom) and binding.alias is not None and hops < 8:
                source = absolute_name(parsed.module, node.level, node.module)
                found = self.finder.find(source, parsed.module) if source and not allowed(source) else None
                if found is not None:
                    return self.definition(self.load(found), node.names[binding.alias].name, hops + 1)
            return None
        return None

    def _module_bound(self, parsed: Parsed, name: str) -> Optional[ModuleFile]:
        for binding in parsed.top.names.get(name, []):
            node = parsed.tree.body[binding.index]
            if isinstance(node, ast.Import) and binding.alias is not None:
                alias = node.names[binding.alias]
                dotted = alias.name if alias.asname else alias.name.split(".", 1)[0]
                return None if allowed(dotted) else self.finder.find(dotted, parsed.module)
        return None

    # --- resolving one name --------------------------------------------------------------------------

    def need(self, parsed: Parsed, name: str, paths: Set[Path], user: str) -> None:
        """Keep what binds `name` in `parsed`'s module, for a use by `user` reading `paths` on it."""
        key = (parsed.module.name, name)
        if key in self.resolving:  # `from b import x` in a, `from a import x` in b
            raise SliceNeeds(f"the slice needs `{name}`, which {parsed.label} imports in a circle (used by `{user}`)")
        self.resolving.add(key)
        try:
            self._need(parsed, name, paths, user)
        finally:
            self.resolving.discard(key)

    def _need(self, parsed: Parsed, name: str, paths: Set[Path], user: str) -> None:
        bindings = parsed.top.names.get(name)
        if bindings:
            for binding in bindings:
                self._bound(parsed, binding.index, binding.alias, name, paths, user)
            return
        for index in parsed.top.stars:
            if self._star(parsed, index, name, paths, user):
                return
        if name in parsed.top.conditional:
            found = parsed.top.conditional[name]
            where = f"{parsed.label}:{found.line}"
            if found.module is not None and not allowed(found.module):
                raise SliceNeeds(f"the slice needs {found.module} (`{user}` uses `{name}`, imported at {where})")
            raise SliceNeeds(f"the slice needs `{name}`, bound only under an `if`/`try` at {where} (used by `{user}`)")
        if name in ("__name__", "__file__", "__doc__", "__package__"):
            return
        if hasattr(builtins, name):
            if name in DENIED_BUILTINS:
                raise SliceNeeds(f"the slice needs the builtin `{name}` (used by `{user}`), which reaches outside "
                                 "the computation")
            return
        raise SliceNeeds(f"the slice needs `{name}`, which {parsed.label} does not define (used by `{user}`)")

    def _bound(self, parsed: Parsed, index: int, alias: Optional[int], name: str, paths: Set[Path],
               user: str) -> None:
        node = parsed.tree.body[index]
        if isinstance(node, ast.Import) and alias is not None:
            self._import(parsed, node, alias, paths, user, top=index)
        elif isinstance(node, ast.ImportFrom) and alias is not None:
            self._import_from(parsed, node, alias, paths, user, top=index)
        else:
            self.queue.append(("statement", parsed.module.name, index, "", user))
            if isinstance(node, ast.ClassDef):  # `Cls.method(...)`, `Cls.CONSTANT`: those members too
                for head in sorted({path[0] for path in paths if path}):
                    self.member_everywhere(parsed, index, head, user)

    def _keep_alias(self, parsed: Parsed, index: int, alias: int, after: Optional[str]) -> None:
        kept = self.kept[parsed.module.name]
        kept.aliases.setdefault(index, set()).add(alias)
        if after is not None and after not in kept.after and after != parsed.module.name:
            kept.after.append(after)

    def _import(self, parsed: Parsed, node: ast.Import, alias: int, paths: Set[Path], user: str,
                top: Optional[int]) -> None:
        """`import a.b` binds `a`, `import a.b as c` binds `a.b`: allowed, or a project module whose attributes
        are read."""
        item = node.names[alias]
        if allowed(item.name):
            bound = item.name if item.asname else item.name.split(".", 1)[0]
            self._refuse(bound, paths, user, item.asname or bound)
            if top is not None:
                self._keep_alias(parsed, top, alias, None)
            return
        bound = item.name if item.asname else item.name.split(".", 1)[0]
        found = self.finder.find(bound, parsed.module)
        if found is None:
            raise SliceNeeds(f"the slice needs {item.name} (`{user}` uses `{item.asname or bound}`, imported at "
                             f"{parsed.label}:{node.lineno})")
        if top is not None:
            self._keep_alias(parsed, top, alias, found.name)
        self.attributes(found, paths, user, item.asname or bound)
        if not item.asname:
            for depth in range(2, item.name.count(".") + 2):  # `import a.b.c` needs a.b and a.b.c to exist
                sub = self.finder.find(".".join(item.name.split(".")[:depth]), parsed.module)
                if sub is not None:
                    self.load(sub)

    def _import_from(self, parsed: Parsed, node: ast.ImportFrom, alias: int, paths: Set[Path], user: str,
                     top: Optional[int]) -> None:
        item = node.names[alias]
        source = absolute_name(parsed.module, node.level, node.module)
        where = f"{parsed.label}:{node.lineno}"
        if source is None:
            raise SliceNeeds(f"the slice needs a module above the top package (`{user}` uses `{item.name}`, "
                             f"imported at {where})")
        if source == "__future__":
            return
        if allowed(source):
            self._refuse(f"{source}.{item.name}", paths, user, item.asname or item.name)
            if top is not None:
                self._keep_alias(parsed, top, alias, None)
            return
        found = self.finder.find(source, parsed.module)
        if found is None:
            raise SliceNeeds(f"the slice needs {source} (`{user}` uses `{item.asname or item.name}`, imported at "
                             f"{where})")
        target = self.load(found)
        if top is not None:
            self._keep_alias(parsed, top, alias, found.name)
        if item.name in target.top.names or target.top.stars or item.name in target.top.conditional:
            self.need(target, item.name, paths, user)
            return
        sub = self.finder.find(f"{source}.{item.name}", parsed.module)
        if sub is None:
            raise SliceNeeds(f"the slice needs `{item.name}`, which {target.label} does not define (`{user}` "
                             f"imports it at {where})")
        self.attributes(sub, paths, user, item.asname or item.name)

    @staticmethod
    def _refuse(module: str, paths: Set[Path], user: str, shown: str) -> None:
        """`torch.hub.load`, `torch.multiprocessing` and the like (`REFUSED`): never part of a slice."""
        for path in sorted(paths) or [()]:
            reached = refused(".".join((module,) + path))
            if reached is not None:
                raise SliceNeeds(f"the slice needs {reached} (`{user}` uses `{'.'.join((shown,) + path)}`), which "
                                 "--run-user-code refuses: it starts processes, loads compiled code or reads files")

    def _star(self, parsed: Parsed, index: int, name: str, paths: Set[Path], user: str) -> bool:
        node = parsed.tree.body[index]
        assert isinstance(node, ast.ImportFrom)
        source = absolute_name(parsed.module, node.level, node.module)
        if source is None:
            return False
        if allowed(source):
            try:
                module = importlib.import_module(source)  # torch, math or numpy: installed packages only
            except ImportError:
                return False
            if hasattr(module, name):
                self.kept[parsed.module.name].statements.add(index)
                return True
            return False
        found = self.finder.find(source, parsed.module)
        if found is None:
            raise SliceNeeds(f"the slice needs {source} (`{user}` uses `{name}`, which may come from its `*` "
                             f"imported at {parsed.label}:{node.lineno})")
        target = self.load(found)
        if name not in target.top.names and not target.top.stars:
            return False
        kept = self.kept[parsed.module.name]
        kept.statements.add(index)
        if found.name not in kept.after:
            kept.after.append(found.name)
        self.need(target, name, paths, user)
        return True

    def attributes(self, module: ModuleFile, paths: Set[Path], user: str, shown: str) -> None:
        """A name bound to a project module: each `mod.x.y` it is read through, resolved in that module."""
        for path in sorted(paths):
            if not path:
                raise SliceNeeds(f"the slice needs the module {module.name} as a value (`{user}` uses `{shown}` "
                                 "itself, not one of its attributes)")
            parsed = self.load(module)
            head, rest = path[0], path[1:]
            if head in parsed.top.names or parsed.top.stars or head in parsed.top.conditional:
                self.need(parsed, head, {rest}, user)
                continue
            sub = self.finder.find(f"{module.name}.{head}", module)
            if sub is None:
                raise SliceNeeds(f"the slice needs `{head}`, which {parsed.label} does not define (`{user}` reads "
                                 f"`{shown}.{head}`)")
            self.attributes(sub, {rest}, user, f"{shown}.{head}")

    def _local_import(self, parsed: Parsed, function: ast.AST, node: ast.stmt, user: str) -> None:
        """An import inside a function runs at call time: allowed, or from a project module the slice holds."""
        assert isinstance(node, (ast.Import, ast.ImportFrom))
        for alias, item in enumerate(node.names):
            if item.name == "*":
                raise SliceNeeds(f"`{user}` in {parsed.label} imports `*` inside a function")
            bound = item.asname or item.name.split(".", 1)[0]
            paths = attribute_paths(function, {bound}).get(bound, {()})
            if isinstance(node, ast.Import):
                self._import(parsed, node, alias, paths, user, top=None)
            else:
                self._import_from(parsed, node, alias, paths, user, top=None)


def _header_parts(node: ast.AST) -> List[ast.expr]:
    """What runs in the enclosing scope: a `def`'s decorators and defaults, a `class`'s bases, keywords, decorators."""
    parts: List[ast.expr] = list(getattr(node, "decorator_list", []))
    if isinstance(node, ast.ClassDef):
        parts += list(node.bases) + [keyword.value for keyword in node.keywords]
    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts += list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]
    return parts


def _header_loads(node: ast.AST) -> Set[str]:
    names: Set[str] = set()
    for part in _header_parts(node):
        names |= loads(part)
    return names
