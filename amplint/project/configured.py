"""Classes named by a string the value flow cannot spell: the ones the project's config files name.

Research code builds its models from configuration: Hydra's `instantiate(cfg.model)` with `_target_:
pkg.models.Policy` in a YAML file, latent diffusion's `get_obj_from_str(config["target"])`
(`getattr(importlib.import_module(module), cls)`), LightningCLI's `class_path:`, `pydoc.locate(name)`. The
string comes from a file the flow does not read as code, so the value was unknown, and the model's `forward`,
called in a float16 region, was never entered. The project's config files say which classes such strings
name (`configfiles.built_targets`, `Resolver.configured_targets`): a class looked up by a string the flow
cannot spell is one of them, and an object built from configuration is an instance of one. A name the flow can
spell keeps only the classes of that name. The walk's leads link a file that may build classes from strings
with the files that define these (`LeadQuestions._builders`): it runs their code without importing them.
"""
from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

from amplint.names import ImportTable, ast_qualnames
from amplint.project.flowstrings import ANY
from amplint.project.flowvalues import ClassValue, Instance, Values

if TYPE_CHECKING:  # pragma: no cover
    from amplint.project.flowstrings import Patterns
    from amplint.project.flowtrees import FileTree
    from amplint.project.modules import ModuleIndex

BUILDS = frozenset({"hydra.utils.instantiate"})  # calls that build an instance of the string's class
LOCATES = frozenset({  # calls that give the class a dotted string names
    "hydra.utils.get_class", "hydra.utils.get_object", "hydra.utils._locate", "hydra._internal.utils._locate",
    "pydoc.locate",
})
INSTANCE, CLASS = "instance", "class"
BY_STRING = frozenset(name.rsplit(".", 1)[-1] for name in BUILDS | LOCATES) | {"getattr"}  # their last names


def by_string(node: ast.Call, table: ImportTable) -> Optional[str]:
    """INSTANCE or CLASS for a call that builds, or looks up, a class a string names, where the flow cannot read
    the string; None for any other call. `getattr(importlib.import_module(module), name)` with `module` no
    literal looks one up."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in BY_STRING:
        return None
    if name == "getattr":
        module = node.args[0] if len(node.args) >= 2 else None
        return CLASS if isinstance(module, ast.Call) and _imports_by_string(module, table) else None
    qualified = ast_qualnames(func, table)
    return INSTANCE if qualified & BUILDS else CLASS if qualified & LOCATES else None


def _imports_by_string(node: ast.Call, table: ImportTable) -> bool:
    """`importlib.import_module(module)` (or `__import__`) with a module no literal spells."""
    if not node.args or isinstance(node.args[0], ast.Constant):
        return False
    return bool(ast_qualnames(node.func, table) & {"importlib.import_module", "__import__"}) or \
        isinstance(node.func, ast.Name) and node.func.id == "__import__"


# Imports that let a file build a class from a string: `importlib.import_module`, `pydoc.locate`, Hydra's.
_BY_STRING_IMPORTS = ("importlib", "pydoc", "hydra")


def may_build_by_string(imported: Sequence[str]) -> bool:
    """Does a file that imports `imported` (`prefilter.imported_names`) maybe build a class from a string?"""
    return any(name.split(".", 1)[0] in _BY_STRING_IMPORTS for name in imported)


def target_modules(modules: "ModuleIndex", importer: str, targets: FrozenSet[Tuple[str, str]],
                   names: Optional[FrozenSet[str]] = None) -> List[Tuple[str, str]]:
    """(module file, name) of each target (section, `pkg.heads.NormalHead`) whose module is a project file, in
    order, each once; with `names`, only the targets so named."""
    found: Dict[Tuple[str, str], None] = {}
    for _, dotted in sorted(targets):
        module, _, last = dotted.rpartition(".")
        if module and (names is None or last in names):
            found.update(((path, last), None) for path, rest in modules.locate(importer, module) if not rest)
    return list(found)


def under_section(targets: FrozenSet[Tuple[str, str]], key: Optional[str]) -> FrozenSet[Tuple[str, str]]:
    """The targets under section `key`, where the config files have such a section; otherwise all of them (code
    often, not always, names the config it builds from after its key)."""
    under = frozenset(t for t in targets if t[0] == key) if key is not None else frozenset()
    return under or targets


class ConfiguredFlow:
    """The configuration half of `flow.Flow`: what a class looked up, or an object built, by a string may be."""

    if TYPE_CHECKING:  # pragma: no cover - provided by `flow.Flow`
        resolver: Any
        _sections: Optional[FrozenSet[str]]

        def strings(self, path: str, scope: str, node: ast.expr, hops: int = 0) -> "Patterns": ...
        def tree(self, path: str) -> "Optional[FileTree]": ...
        def _module_symbol(self, path: str, parts: List[str]) -> Values: ...

    def configured(self, path: str, scope: str, node: ast.Call, instance: bool, hops: int) -> Values:
        """The classes the project's config files build (those under the section `instantiate(cfg.head)`
        names, where there are some), or instances of them; `getattr(module, name)` with a name the flow spells,
        only the classes of that name."""
        spelled = self.strings(path, scope, node.args[1], hops) if len(node.args) >= 2 else frozenset()
        names = frozenset(p for p in spelled if not p.endswith(ANY)) or None
        targets = self.resolver.configured_targets()
        if instance and node.args:
            targets = under_section(targets, self._section(path, scope, node.args[0]))
        classes = self._configured_classes(path, targets, names)
        return frozenset(Instance(v.cls, True) if instance else v for v in classes)

    def in_section(self, path: str, scope: str, node: ast.Call, found: Values) -> Values:
        """`found`, what a project function returns, less the configured classes its call's first argument does
        not name the section of: `instantiate_from_config(encoder_config)` builds the encoder's, not every class
        of the config files (the flow joins a helper's returns over every call)."""
        if not self._known_sections() or not any(isinstance(v, Instance) for v in found):
            return found
        targets = self.resolver.configured_targets()
        under = under_section(targets, self._section(path, scope, node.args[0]))
        if under is targets:
            return found
        every = {v.cls for v in self._configured_classes(path, targets, None)}
        kept = {v.cls for v in self._configured_classes(path, under, None)}
        return frozenset(v for v in found if not (isinstance(v, Instance) and v.cls in every and v.cls not in kept))

    def _configured_classes(self, path: str, targets: FrozenSet[Tuple[str, str]],
                            names: Optional[FrozenSet[str]]) -> List[ClassValue]:
        return [v for at, last in target_modules(self.resolver.modules, path, targets, names)
                for v in self._module_symbol(at, [last]) if isinstance(v, ClassValue)]

    def _section(self, path: str, scope: str, node: ast.expr, depth: int = 4) -> Optional[str]:
        """The key an expression names its config by, where the config files have it: a name, an attribute, a
        literal subscript; through a call, what it is given first (`default(conditioner_config, FALLBACK)`,
        `cfg.model.copy()`); through a local name bound once, what it is bound to (`settings = cfg["head"]`)."""
        if isinstance(node, ast.Call) and depth:
            inner = node.args[0] if node.args else node.func.value if isinstance(node.func, ast.Attribute) else None
            return self._section(path, scope, inner, depth - 1) if inner is not None else None
        if isinstance(node, ast.Subscript):
            key = node.slice.value if isinstance(node.slice, ast.Constant) else None
            return key if isinstance(key, str) and key in self._known_sections() else None
        key = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if key is None or key in self._known_sections():
            return key
        tree = self.tree(path) if isinstance(node, ast.Name) and depth else None
        bound = tree.scope_facts(scope).bindings.get(key, []) if tree is not None and scope in tree.scopes else []
        if len(bound) == 1 and isinstance(bound[0], ast.Assign) and len(bound[0].targets) == 1 and \
                isinstance(bound[0].targets[0], ast.Name):
            return self._section(path, scope, bound[0].value, depth - 1)
        return None

    def _known_sections(self) -> FrozenSet[str]:
        if self._sections is None:
            self._sections = frozenset(section for section, _ in self.resolver.configured_targets())
        return self._sections
