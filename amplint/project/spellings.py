"""Autocast spellings a project defines for itself, read from CPython's tree.

Real training code rarely writes `with torch.autocast(...)` where the model
runs. It stores a context manager factory on the object
(`self.amp_cm = autocast if args.amp else nullcontext`, often in a base class
in another file) and enters it later (`with self.amp_cm():`), or it writes a
decorator that enters autocast around the method it wraps:

    def forward_decorator(fn):
        def wrapper(self, *args):
            with torch.cuda.amp.autocast():
                return fn(self, *args)
        return wrapper

Both are regions. This module finds such definitions in one file's tree (a
few milliseconds: statements and small expressions only), so the project pass
can hand every file the names they define. A conditional alias counts when
one branch may be an enabled region, as a flag in a config does.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Dict, Iterator, List, Optional, Sequence, Tuple

from amplint.astwalk import statements
from amplint.config import Config
from amplint.cpython_trees import CPythonTrees, worker_trees
from amplint.files import read_stamped, source_from
from amplint.identifiers import analysis_text
from amplint.project.cache import pass_work, recall, shares
from amplint.model import DistributionBase, FileError, RegionInfo
from amplint.screen import mentions_probability
from amplint.names import ImportTable, ast_qualnames
from amplint.project.helperregions import helper_regions
from amplint.regions import RegionSpec
from amplint.autocast_names import AUTOCAST_NAMES, PARTIAL_NAMES

if TYPE_CHECKING:  # pragma: no cover
    from amplint.parallel import RunPool
    from amplint.project.cache import Known, PassCache
    from amplint.workers import Memory

# Reading every file and parsing the ones that say `autocast` costs ~0.4 ms a file: a pool pays from ~1,000.
CHUNK_POOL_FILES = 1000


@dataclass(frozen=True)
class Spelling:
    """A project name that opens an autocast region: what it wraps, and where it is defined."""

    name: str  # "self.amp_cm" for an attribute, "forward_decorator" for a decorator
    wraps: str  # the qualified autocast it enters, e.g. "torch.cuda.amp.autocast"
    line: int
    opens: Optional[RegionInfo] = None  # a helper that opens its own region (`helperregions`): which one


def _autocast_of(node: ast.expr, imports: ImportTable) -> Optional[str]:
    """The qualified autocast a factory expression stands for: a name, a partial, a branch of a conditional."""
    if isinstance(node, ast.IfExp):
        return _autocast_of(node.body, imports) or _autocast_of(node.orelse, imports)
    if isinstance(node, ast.Call) and ast_qualnames(node.func, imports) & PARTIAL_NAMES and node.args:
        return _autocast_of(node.args[0], imports)
    return next((name for name in sorted(ast_qualnames(node, imports)) if name in AUTOCAST_NAMES), None)


def _entered_autocast(node: ast.With, imports: ImportTable) -> Optional[str]:
    for item in node.items:
        expr = item.context_expr
        if isinstance(expr, ast.Call):
            found = _autocast_of(expr.func, imports)
            if found is not None:
                return found
    return None


def _walk_function(function: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function, nested functions included (a decorator's wrapper is one)."""
    stack: List[ast.AST] = [function]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _wrapping_decorator(function: ast.FunctionDef, imports: ImportTable) -> Optional[str]:
    """`def deco(fn)` whose body calls `fn(...)` inside an autocast `with`: the autocast it enters."""
    params = function.args.posonlyargs + function.args.args
    if not params:
        return None
    wrapped = params[0].arg
    for node in _walk_function(function):
        if not isinstance(node, ast.With):
            continue
        autocast = _entered_autocast(node, imports)
        if autocast is None:
            continue
        for inner in (n for statement in node.body for n in ast.walk(statement)):
            if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == wrapped:
                return autocast
    return None


def _self_alias(statement: ast.stmt, imports: ImportTable) -> Iterator[Tuple[str, str]]:
    if not isinstance(statement, (ast.Assign, ast.AnnAssign)) or statement.value is None:
        return
    autocast = _autocast_of(statement.value, imports)
    if autocast is None:
        return
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    for target in targets:
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            yield f"self.{target.attr}", autocast


def file_spellings(tree: ast.Module, imports: ImportTable, text: str = "") -> Tuple[Spelling, ...]:
    """Self-held autocast aliases, autocast-entering decorators and, given the file's `text`, helpers that open a
    region for their caller (`helperregions`), defined in one file.

    Only a function with an autocast `with` within its lines can be such a
    decorator: a `with` starts a line of its own, so the lines say which
    functions hold it without walking each function again.
    """
    found: Dict[str, Spelling] = {}
    functions: List[ast.FunctionDef] = []
    entering: List[int] = []  # the lines of the autocast `with`s
    for node in statements(tree):  # `ast.walk`'s order: the first definition it meets wins
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node)  # type: ignore[arg-type]
        elif isinstance(node, ast.With):
            if _entered_autocast(node, imports) is not None:
                entering.append(node.lineno)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for name, autocast in _self_alias(node, imports):
                found.setdefault(name, Spelling(name, autocast, node.lineno))
    for function in functions:  # a function's name never has the `self.` of an alias
        if any(function.lineno < line <= (function.end_lineno or function.lineno) for line in entering):
            autocast = _wrapping_decorator(function, imports)
            if autocast is not None:
                found.setdefault(function.name, Spelling(function.name, autocast, function.lineno))
    for name, autocast, line, opens in helper_regions(tree, imports, text) if text else ():
        found.setdefault(name, Spelling(name, autocast, line, opens))
    return tuple(sorted(found.values(), key=lambda s: (s.line, s.name)))


@dataclass(frozen=True)
class ClassLine:
    """A `class Name(bases):` line as written, read from the text alone: where a project distribution class
    may be defined (`distsubclasses`), without parsing every file that defines a class."""

    name: str
    bases: Tuple[str, ...]  # each base's last name (`Normal` of `D.Normal`)


_CLASS_LINE = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)


def class_lines(text: str) -> Tuple[ClassLine, ...]:
    """The file's `class` lines with bases; a base's last name only (what a text can tell)."""
    return tuple(ClassLine(match.group(1), tuple(base.strip().rsplit(".", 1)[-1].split("[", 1)[0]
                                                 for base in match.group(2).split(",") if base.strip()))
                 for match in _CLASS_LINE.finditer(text) if match.group(2).strip()) if "class" in text else ()


@dataclass(frozen=True)
class ProjectNames:
    """What the first pass reads of every file: the project's autocast spellings, and its class lines by file."""

    spellings: Tuple[Spelling, ...]
    classes: Dict[str, Tuple[ClassLine, ...]]


def project_spellings(
    files: Sequence[str], jobs: Optional[int] = None, parsed: Optional[CPythonTrees] = None,
    pool: "Optional[RunPool]" = None, cache: "Optional[PassCache]" = None,
) -> ProjectNames:
    """Every spelling defined in `files` (only files that mention `autocast` are parsed), first definition wins,
    and every file's class lines (read from its text).

    Every file is read, and the ones that mention `autocast` get CPython's parse
    (~1.8 s for the 4,637 files of the benchmark corpus) unless `cache` holds
    their spellings: from CHUNK_POOL_FILES files the chunks go to a process pool
    (`parallel.map_chunks`: the run's `pool` if given, `jobs` as `--jobs`), and
    their results are merged in file order, as read here. `parsed`: the run's
    CPython trees; the text pass and the summaries read these files again.
    """
    from amplint import parallel

    known = cache.load(_KIND) if cache is not None else None
    found: Dict[str, Spelling] = {}
    classes: Dict[str, Tuple[ClassLine, ...]] = {}
    read: "Known" = {}
    done = parallel.map_chunks(_spellings_job, files, parsed or CPythonTrees(), pool=pool, jobs=jobs,
                               min_files=CHUNK_POOL_FILES, each=shares(known), work=pass_work(files, known))
    for chunk in done:
        for path, content, spellings in chunk:
            if content is not None:
                read[path] = (content, spellings)
            for spelling in spellings:
                if isinstance(spelling, ClassLine):
                    classes[path] = classes.get(path, ()) + (spelling,)
                else:
                    found.setdefault(spelling.name, spelling)
    if cache is not None:
        cache.save(_KIND, read, known)
    return ProjectNames(tuple(found[name] for name in sorted(found)), classes)


def _spellings_job(
    job: Tuple[Sequence[str], CPythonTrees, "Optional[Known]"], memory: "Optional[Memory]" = None
) -> List[Tuple[str, Optional[str], Tuple["Spelling | ClassLine", ...]]]:
    """(path, content digest, spellings) of each file of a chunk that mentions `autocast` and that CPython
    parses, in file order (maybe in a pool worker, which keeps the trees). `known`: the cache's spellings of
    these files, by path (None: no cache, and no digest)."""
    paths, sent, known = job
    parsed = worker_trees(memory, sent)
    found: List[Tuple[str, Optional[str], Tuple["Spelling | ClassLine", ...]]] = []
    for path in paths:
        read = read_stamped(path)
        if isinstance(read, FileError):
            continue
        data, stamp = read
        content, spellings = recall(known, path, data, _are_spellings)
        if content is not None:  # the text pass, next, finds the file by this digest if it is unchanged
            parsed.note_read(path, stamp, content)
        if spellings is None:  # not in the cache: decoded and read (a warm run decodes nothing)
            source = source_from(path, data, content)
            if isinstance(source, FileError):
                continue
            text = analysis_text(source.text)  # `ａｕｔｏｃａｓｔ` is `autocast`
            classes = class_lines(text)
            if "autocast" in text:
                spellings = _text_spellings(text, parsed)
                spellings = None if spellings is None else spellings + classes
            elif content is not None or classes:
                spellings = classes  # kept in the cache too, so that a warm run need not decode it to see that
        if spellings is not None:
            found.append((path, content, spellings))
    return found


def _are_spellings(value: object) -> bool:
    return isinstance(value, tuple) and all(isinstance(each, (Spelling, ClassLine)) for each in value)


_KIND = "spellings"  # their entry in the disk cache


def _text_spellings(text: str, parsed: CPythonTrees) -> Optional[Tuple[Spelling, ...]]:
    """`file_spellings` of the text; None when CPython refuses it (the file's own check reports that)."""
    # The text pass parses it again when it may have findings of its own (`pipeline.may_have_findings`:
    # `autocast` is here, so the probability words decide).
    tree = parsed.parse(text, keep=mentions_probability(text))
    return None if isinstance(tree, str) else file_spellings(*tree, text)


def with_spellings(config: Config, spellings: Sequence["Spelling | DistributionBase"]) -> Config:
    """`config` that treats the project's spellings as autocast (their names are region words of every
    prefilter), and its own distribution classes (`distsubclasses`) as configured distributions."""
    if not spellings:
        return config
    regions = [s for s in spellings if isinstance(s, Spelling)]
    names = tuple(s.name for s in regions if s.name not in config.extend_autocast)
    classes = tuple(s for s in spellings if isinstance(s, DistributionBase)
                    and s.name not in config.extend_distributions)
    return replace(
        config,
        extend_autocast=config.extend_autocast + names,
        autocast_aliases=config.autocast_aliases + tuple(_alias(s) for s in regions),
        extend_distributions=config.extend_distributions + tuple(s.name for s in classes),
        distribution_bases=config.distribution_bases + classes,
    )


def _alias(spelling: Spelling) -> Tuple[object, ...]:
    """The config's alias: (name, the autocast it wraps), and the region a helper opens when it does."""
    if spelling.opens is None:
        return (spelling.name, spelling.wraps)
    info = spelling.opens
    return (spelling.name, spelling.wraps, RegionSpec(info.precision, info.enabled, info.device, info.device_code))
