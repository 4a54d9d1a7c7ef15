"""The package's shape: import direction, no import circles, small modules, rule codes only in `rules/`.

Imports are read with CPython's `ast` from the source (every `import`, at
module level, inside functions and under `TYPE_CHECKING`), so a lazy import
that goes the wrong way counts as much as an eager one.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 600

# Lowest first. A module may import modules of its own layer and of layers below it, never above.
LAYERS = [
    ("base", ("amplint", "amplint.model", "amplint.config", "amplint.files", "amplint.witness", "amplint.gitignore",
              "amplint.gitconfig", "amplint.names",
              "amplint.positions",
              "amplint.cstwalk", "amplint.astwalk", "amplint.screen", "amplint.noqa", "amplint.selection",
              "amplint.deep", "amplint.cpython_trees", "amplint.textlines", "amplint.treepositions",
              "amplint.progress", "amplint.parallel", "amplint.toml", "amplint.guard", "amplint.torchpatch", "amplint.autocast_names", "amplint.densitynames",
              "amplint.workers", "amplint.collection", "amplint.cstimport", "amplint.cstparse", "amplint.interrupts", "amplint.policies", "amplint.transforms", "amplint.notebook",
              "amplint.fix", "amplint.fix.safety", "amplint.identifiers", "amplint.respell")),
    ("facts", ("amplint.facts", "amplint.receivers", "amplint.regions", "amplint.dtypes",
               "amplint.torchnames")),
    ("rules", ("amplint.rulebase", "amplint.rules", "amplint.analysis", "amplint.fix.fixability",
               "amplint.pipeline", "amplint.source_analysis", "amplint.tabs",
               "amplint.risk")),
    ("project", ("amplint.project",)),
    ("engine", ("amplint.engine", "amplint.scope")),
    ("front ends", ("amplint.cli", "amplint.__main__", "amplint.flake8_plugin", "amplint.output", "amplint.sarif",
                    "amplint.github", "amplint.configfile", "amplint.fix.", "amplint.verify",
                    "amplint.lsp", "amplint.server", "amplint.addnoqa", "amplint.reports", "amplint.trace")),
]
# Where a rule's code may be written outside `rules/`: where it is printed or configured.
CODE_LITERALS_ALLOWED = {"amplint/cli.py", "amplint/configfile.py", "amplint/guard.py", "amplint/trace/records.py",
                         "amplint/flake8_plugin.py"}  # the plugin prints AMP000 for a configuration it cannot use
RULE_CODE = re.compile(r"\bAMP\d{3}\b")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] == "rules":
        parts = ["amplint"] + parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> Dict[str, Path]:
    files = sorted((ROOT / "amplint").rglob("*.py")) + sorted((ROOT / "rules").rglob("*.py"))
    return {_module_name(path): path for path in files}


SOURCES = _sources()


def _imports(name: str, path: Path) -> Set[str]:
    """The amplint modules `name` imports (a package imported for a submodule counts as the submodule)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: Set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t for t in targets if t in SOURCES] or [base]
        else:
            continue
        found.update(t for t in targets if t in SOURCES and t != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in SOURCES.items()}


def _layer(name: str) -> int:
    best, rank = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matched = name.startswith(prefix) if prefix.endswith(".") else (
                name == prefix or (prefix != "amplint" and name.startswith(prefix + ".")))
            if matched and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def test_every_module_has_a_layer() -> None:
    assert [name for name in SOURCES if _layer(name) < 0] == []


def test_imports_go_down_the_layers() -> None:
    upward = [
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, targets in sorted(GRAPH.items()) for target in sorted(targets) if _layer(target) > _layer(name)
    ]
    assert upward == []


def _cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            advanced = False
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    advanced = True
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_module_is_small(name: str) -> None:
    lines = SOURCES[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{SOURCES[name].relative_to(ROOT)} has {lines} lines"


def _docstrings(tree: ast.AST) -> Set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def test_rule_codes_are_written_only_in_rules() -> None:
    """Outside `rules/`, code never tests or assigns a rule code: it asks the rule (`amplint.rules.rule_for`)."""
    found = []
    for name, path in SOURCES.items():
        relative = path.relative_to(ROOT).as_posix()
        if relative.startswith("rules/") or relative in CODE_LITERALS_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs \
                    and RULE_CODE.search(node.value):
                found.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert found == []


def test_every_rule_module_holds_its_detection() -> None:
    from amplint.rules import ALL_RULES

    for rule in ALL_RULES:
        hooks = [hook for hook in (rule.at_site, rule.when_reached, rule.check_file) if hook is not None]
        assert hooks, rule.code
        assert {hook.__module__ for hook in hooks} == {rule.message.__module__}, rule.code
        assert rule.message.__module__.startswith("amplint.rules."), rule.code


def test_the_cpython_fact_path_imports_no_libcst() -> None:
    # Project summaries read from CPython's trees, and the project walk around them, must not load LibCST
    # (~0.2 s): a run whose summaries all come from CPython's trees then never imports it.
    script = ("import sys\n"
              "import amplint.facts.astcalls, amplint.project.summarize, amplint.project.run, amplint.cli\n"
              "print(sorted(name for name in sys.modules if name.split('.')[0] == 'libcst'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_asking_for_a_tree_that_was_not_kept_imports_no_libcst() -> None:
    # A file whose summary came from CPython's tree has no LibCST tree kept; its findings job asks for one first.
    # LibCST must then be imported by the parse (`cstimport.import_libcst`, with its compiled dataclass code),
    # not by this question: imported directly, each class's code is compiled again (~0.45 G instructions).
    script = ("import sys\n"
              "from amplint.config import Config\n"
              "from amplint.project.kept import KeptTrees\n"
              "assert KeptTrees().findings('module.py', Config(), ()) is None\n"
              "print(sorted(name for name in sys.modules if name.split('.')[0] == 'libcst'))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def _reads_libcst(path: Path) -> bool:
    """`path` imports LibCST anywhere: at the top, lazily, or for type checking only."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
        if any(name.split(".")[0] == "libcst" for name in names):
            return True
    return False


# The modules outside the rewriting code (`amplint.fix`) that still read LibCST's tree: the one-tree work of
# issue 50 empties this list, and nothing may join it. Delete a name when its module stops reading LibCST.
STILL_READING_LIBCST = frozenset({
    "amplint.analysis", "amplint.cstimport", "amplint.cstparse", "amplint.cstwalk",
    "amplint.dtypes", "amplint.facts.build", "amplint.facts.built", "amplint.facts.collector",
    "amplint.facts.containers", "amplint.facts.cstflow", "amplint.facts.cstreader", "amplint.facts.cstregions",
    "amplint.facts.cstwithregions", "amplint.facts.densitycalls", "amplint.facts.devicemath",
    "amplint.facts.discrete", "amplint.facts.distrefs", "amplint.facts.mathcalls", "amplint.facts.mathenv",
    "amplint.facts.mathsites", "amplint.facts.model", "amplint.facts.nodes", "amplint.facts.probmath",
    "amplint.facts.returns", "amplint.facts.samemodule", "amplint.facts.signatures", "amplint.facts.sites",
    "amplint.facts.sitespec", "amplint.names", "amplint.pipeline", "amplint.positions",
    "amplint.receivers", "amplint.regions",
    "amplint.source_analysis", "amplint.treepositions",
})


def test_no_module_starts_reading_libcst() -> None:
    """Rules, the rule base and every module not listed read no LibCST (the rules quote code through
    `rulebase.Code`); a listed module that stopped must leave the list, so it only shrinks."""
    reading = {name for name, path in SOURCES.items() if not name.startswith("amplint.fix.") and _reads_libcst(path)}
    assert reading - STILL_READING_LIBCST == set(), "new LibCST readers"
    assert STILL_READING_LIBCST - reading == set(), "no longer reading LibCST: take them off the list"
    assert not any(name.startswith("amplint.rules") for name in reading)
