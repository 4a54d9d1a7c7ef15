"""A file's scopes and calls from CPython's tree, for a file with nothing else the project walk needs.

Project mode parses many files only for their summaries: region files, and
files the walk passes through on its way from a region to a probability
computation, with no site and no distribution of their own. Their summary is
then their scopes and regions, their calls (with the region each is made in,
the instance its receiver holds, and whether every argument is already
float32), their classes' bases and `self.` attributes: what
`facts.collector.Collector` records in project mode, read here from the tree
CPython builds about ten times faster than LibCST's.

Autocast regions are read as the collector reads them (`astregions`): `with`
items, decorators, names bound to an autocast factory or region object, the
configured and derived spellings, `dtype=self.<attr>`. A call made in a
float16 region keeps its text, as written (`astsource.SourceText.code`), and
a `Trainer(...)` or `TrainingArguments(...)` construction its precision
arguments (rules L and H, `frameworks.FrameworkCall`).

`ast_facts` answers None, and the caller parses with LibCST as before, for any
file that holds more: a distribution's method or a KL, a site whose judgement
depends on more than this reads, or text whose exact form a comment makes
unsure (distribution classes and accelerators are the caller's test,
`summarize.read_summary`). Two kinds of site are read here
(`astsites.SiteJudge`): a call of the project's own density, whose inputs are
the call's arguments, and hand-written math (a log of probabilities, a floor
float16 drops, an entropy term, a Gaussian written out; `astprobmath`). Each
is counted in its function, exposed or not, as the collector counts it. It
reads which parameters are typed as distributions and which functions are
densities, as the summary does. The walk order is LibCST's, so calls are
recorded in the same order and with the same bindings;
`tests/test_ast_summary.py` holds the two summaries equal.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

from amplint.astwalk import child_nodes, walk
from amplint.facts import astnodes as nodes
from amplint.facts import astregions as regions
from amplint.facts import astflow
from amplint.facts.astwithregions import AstRegions
from amplint.facts.flowstate import Branches, augmented
from amplint.facts.astscreen import loses_range
from amplint.facts.astsites import DENSITY, MATH, MathSeen, SiteJudge, Unread
from amplint.facts.astsource import SourceText
from amplint.facts.frameworks import PRECISION_KEYWORDS, RECORDED_SUFFIXES, FrameworkCall
from amplint.facts.model import MODULE_KEY, CallRecord, RegionEntry, Scope
from amplint.facts.reach import reached_in
from amplint.facts.typedslots import NUMBER_ANNOTATIONS
from amplint.facts.modulecalls import ELEMENT, ParallelMarks, expression_callee, shortened_call, without_module_hop
from amplint.model import Precision
from amplint.names import ImportTable, ast_dotted, ast_qualnames
from amplint.screen import counts_as_site
from amplint.textlines import FORM_FEED, FSTRING_POSITIONS

SELF_NAMES = ("self", "cls")


@dataclass
class AstFacts:
    """What `project.summarize` reads of a file: the collector's project-mode facts, for a file whose only sites are
    density calls and hand-written math."""

    scopes: Dict[str, Scope]
    params: Dict[str, Tuple[str, ...]]  # scope key -> `signatures.parameter_names` of its def
    dist_params: Dict[str, Tuple[str, ...]]  # scope key -> `signatures.distribution_params` of its def
    losing: FrozenSet[str] = frozenset()  # scope keys of the defs that lose range (`densitycalls.loses_range`)
    class_bases: Dict[str, List[str]] = field(default_factory=dict)
    class_attrs: Dict[str, Dict[str, Tuple[str, bool]]] = field(default_factory=dict)
    class_items: Dict[str, Dict[str, Tuple[str, ...]]] = field(default_factory=dict)
    framework_calls: List[FrameworkCall] = field(default_factory=list)
    sites: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # scope key -> (sites, exposed ones)


def ast_facts(tree: ast.Module, text: str, imports: ImportTable, extend_autocast: FrozenSet[str],
              aliases: Tuple[Tuple[object, ...], ...]) -> Optional[AstFacts]:
    """The project-mode facts of a file with no site, or None when it may hold one (or more than this reads)."""
    if FORM_FEED in text:
        return None  # LibCST leaves a form feed in an indent out of its columns, CPython counts it
    try:
        try:
            reader = _Reader(tree, text, imports, extend_autocast, aliases)
            reader.module()
        except MathSeen:  # most files hold no hand-written math: only these are read for it
            reader = _Reader(tree, text, imports, extend_autocast, aliases, math=True)
            reader.module()
    except (Unread, regions.Unsure, RecursionError):
        return None
    if reader.in_regions and reader.sites.may_report(
            lambda: {each.scope.key for each in reached_in(reader.scopes, reader.class_bases)}):
        return None  # the file may have findings of its own: LibCST reads it for them
    sites = reader.sites.counts(reader.scopes)
    return AstFacts(reader.scopes, reader.params, reader.dist_params, frozenset(reader.losing),
                    reader.class_bases, reader.class_attrs, reader.class_items, reader.framework_calls, sites)


class _Reader(AstRegions, ParallelMarks):
    """`Collector`'s project-mode bookkeeping over CPython's tree, in LibCST's order."""

    def __init__(self, tree: ast.Module, text: str, imports: ImportTable, extend_autocast: FrozenSet[str],
                 aliases: Tuple[Tuple[object, ...], ...], math: bool = False) -> None:
        super().__init__()
        self.tree = tree
        self.source = SourceText(text)
        self.imports = imports
        self.extend = extend_autocast
        self.aliases = aliases
        self.class_nodes: List[ast.ClassDef] = []
        self.attr_dtypes: Dict[Tuple[str, str], Optional[Precision]] = {}
        self.scope = Scope(MODULE_KEY, "<module>", None, None)
        self.scopes: Dict[str, Scope] = {MODULE_KEY: self.scope}
        self.params: Dict[str, Tuple[str, ...]] = {}
        self.dist_params: Dict[str, Tuple[str, ...]] = {}
        self.losing: List[str] = []
        self.class_stack: List[str] = []
        self.containers: List[str] = []
        self.class_bases: Dict[str, List[str]] = {}
        self.class_attrs: Dict[str, Dict[str, Tuple[str, bool]]] = {}
        self.class_items: Dict[str, Dict[str, Tuple[str, ...]]] = {}
        self.framework_calls: List[FrameworkCall] = []
        self.statement: ast.stmt = ast.Pass()  # the top-level statement being read
        self.functions: List[ast.AST] = []  # the defs being read, innermost last
        self.sites = SiteJudge(tree, self.source, imports, math)
        self._handlers = _MATH_HANDLERS if math else _HANDLERS  # with the math recognizers, or without
        self.in_regions = False  # some code of the file runs in a region it opens (a `with` or a decorator)
        self.flow = Branches()  # the compound statements around the current one (`facts.flowstate`)
        self.stacks: List[List[Any]] = []  # [name, regions pushed] of each `with ExitStack() as name:` around

    # --- the walk ----------------------------------------------------------------------------------
    def module(self) -> None:
        for statement in self.tree.body:
            self.statement = statement
            self.visit(statement)

    def visit(self, node: Optional[ast.AST]) -> None:
        if node is None:
            return
        kind = type(node)
        while kind is ast.Attribute:  # the commonest nodes: an attribute holds only its value, a name nothing
            node = node.value  # type: ignore[attr-defined]
            kind = type(node)
        if kind is ast.Name:
            return
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(self, node)
            return
        for child in child_nodes(node):
            self.visit(child)

    def visit_all(self, nodes_: "List[ast.AST] | List[ast.expr] | List[ast.stmt]") -> None:
        for node in nodes_:
            self.visit(node)

    def f_string(self, node: ast.JoinedStr) -> None:
        if not FSTRING_POSITIONS and any(isinstance(inner, ast.Call) for inner in walk(node)):
            raise Unread
        for child in node.values:
            self.visit(child)

    def arguments(self, args: ast.arguments) -> None:
        """Each parameter's annotation, then its default, in the order they are written."""
        positional = [*args.posonlyargs, *args.args]
        defaults: List[Optional[ast.expr]] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        pairs = list(zip(positional, defaults))
        pairs += [(args.vararg, None)] if args.vararg else []
        pairs += list(zip(args.kwonlyargs, args.kw_defaults))
        pairs += [(args.kwarg, None)] if args.kwarg else []
        for param, default in pairs:
            self.visit(param.annotation)
            self.visit(default)

    # --- sites (`astsites`) ---------------------------------------------------------------------------
    def constant(self, node: ast.Constant) -> None:
        self.sites.constant(node, counts_as_site(node, self.imports), self.scope, self._function(), self.statement)

    def bin_op(self, node: ast.BinOp) -> None:
        self.sites.operation(node, self.scope, self._owner(), self._function(), self.statement, self._wide)
        self.visit(node.left)
        self.visit(node.right)

    def bin_op_seen(self, node: ast.BinOp) -> None:
        """Without the math recognizers: a density kernel's operation sends the file to them (`MathSeen`)."""
        self.sites.kernel_seen(node, self.scope)
        self.visit(node.left)
        self.visit(node.right)

    def _function(self) -> Optional[ast.AST]:
        return self.functions[-1] if self.functions else None

    def _owner(self) -> Optional[ast.ClassDef]:
        """The class whose `self.` attributes the recognizers read (the collector's `math_env` class)."""
        return self.class_nodes[-1] if self.scope.class_name is not None and self.class_nodes else None

    # --- scopes --------------------------------------------------------------------------------------
    def class_def(self, node: ast.ClassDef) -> None:
        outer = self.class_stack[-1] + "." if self.containers and self.containers[-1] == "class" else ""
        name = outer + node.name
        self.class_stack.append(name)
        self.class_nodes.append(node)
        self.containers.append("class")
        self.class_bases[name] = [ast_dotted(nodes.unstarred(b)) or "" for b in node.bases]
        self.visit_all(node.decorator_list)
        self.visit_all(node.bases)
        self.visit_all(node.keywords)
        self.visit_all(node.body)
        self.class_stack.pop()
        self.class_nodes.pop()
        self.containers.pop()

    def function(self, node: "ast.FunctionDef | ast.AsyncFunctionDef") -> None:
        parent = self.scope
        container = self.containers[-1] if self.containers else "module"
        scope = parent.child(node.name, container, self.class_stack[-1] if container == "class" else None)
        key = scope.key
        self._record_params(scope, node.args, container == "class")
        scope.bound.update(param.arg for param in nodes.every_param(node.args))
        for decorator in node.decorator_list:
            spec = self._decorator_region(decorator)
            if spec is not None:
                scope.regions.append(RegionEntry(spec, self._decorator_line(decorator), None))
                self.in_regions = True
        if key not in self.scopes:
            self.scopes[key] = scope
            self.params[key] = nodes.parameter_names(node.args)
            dist_params = nodes.distribution_params(node.args, self.imports, self._starts_with_paren)
            if dist_params is None:
                raise Unread
            self.dist_params[key] = dist_params
            if loses_range(node, self.imports):
                self.losing.append(key)
        self.scope = scope
        self.containers.append("function")
        self.functions.append(node)
        self.visit_all(node.decorator_list)
        self.arguments(node.args)
        self.visit(node.returns)
        self.visit_all(node.body)
        self.scope = parent
        self.containers.pop()
        self.functions.pop()

    def _record_params(self, scope: Scope, args: ast.arguments, method: bool) -> None:
        for index, param in enumerate(nodes.every_param(args)):
            scope.params.add(param.arg)
            if method and index == 0:
                continue
            annotation = None if param.annotation is None else nodes.annotation_class(param.annotation,
                                                                                      self.source.segment)
            if annotation in NUMBER_ANNOTATIONS:
                scope.wide_names.add(param.arg)  # `alpha: float = 1.0`: a Python number
            elif annotation is not None:
                scope.instances[param.arg] = (annotation, False)

    def lambda_(self, node: ast.Lambda) -> None:
        self.arguments(node.args)
        self.visit(node.body)

    # --- expressions in LibCST's order ---------------------------------------------------------------
    def if_exp(self, node: ast.IfExp) -> None:
        self.visit(node.body)
        self.visit(node.test)
        self.visit(node.orelse)

    def dict_(self, node: ast.Dict) -> None:
        for key, value in zip(node.keys, node.values):
            self.visit(key)
            self.visit(value)

    # --- bindings ------------------------------------------------------------------------------------
    def assign(self, node: ast.Assign) -> None:
        self.visit_all(node.targets)
        self.visit(node.value)
        names = [name for target in node.targets for name in nodes.target_names(target)]
        first = node.targets[0]
        single = first.id if len(node.targets) == 1 and isinstance(first, ast.Name) else None
        pairs = nodes.literal_pairs(node.targets, node.value)
        for name, value in pairs or ():
            self._bind([name], name, value)
        if pairs is None:  # `mu, s = out.float().chunk(2)`: a float32 value unpacks to float32 names
            self._bind(names, single, node.value, keep_wide=single is None and self._wide(node.value))
        for target in node.targets:
            self._bind_project(target, node.value)

    def ann_assign(self, node: ast.AnnAssign) -> None:
        self.visit(node.target)
        self.visit(node.annotation)
        self.visit(node.value)
        if node.value is None:
            return
        single = node.target.id if isinstance(node.target, ast.Name) else None
        self._bind(nodes.target_names(node.target), single, node.value)
        self._bind_project(node.target, node.value)
        declared = nodes.declared_class(node.annotation, node.value)
        if declared is not None:
            self._set(node.target, (declared, False))

    def aug_assign(self, node: ast.AugAssign) -> None:
        self.visit(node.target)
        self.visit(node.value)
        names = nodes.target_names(node.target)
        wide, number = augmented(self.scope, names, self._wide(node.value), nodes.is_number(node.value))
        self._bind(names, None, node.value, keep_wide=wide)
        self.scope.numbers.update(names if number else ())

    def for_(self, node: "ast.For | ast.AsyncFor") -> None:
        self._forget(node.target)
        self.scope.elements.update(nodes.loop_elements(node))
        self.visit(node.target)
        self.visit(node.iter)
        astflow.loop_body(self, node.body, node.orelse)

    def with_(self, node: "ast.With | ast.AsyncWith") -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self._forget(item.optional_vars)
            self.visit(item.context_expr)
            self.visit(item.optional_vars)
        pushed = 0
        for item in node.items:
            if self.source.code(item.context_expr) != self.source.segment(item.context_expr):
                raise Unread  # `with (a(), b()):` groups the items: which node holds the parentheses is LibCST's call
            spec = self._region_from_with_item(item.context_expr)
            if spec is not None:
                self.scope.regions.append(RegionEntry(spec, node.lineno, None))
                self.in_regions = True
                pushed += 1
            elif self._accelerator_like(item.context_expr):
                raise Unread  # `with x.autocast():` of an accelerator built elsewhere: the collector's pending `with`
        named = [[item.optional_vars.id, 0] for item in node.items if isinstance(item.optional_vars, ast.Name)]
        self.stacks.extend(named)
        self.visit_all(node.body)
        for _ in range(pushed + sum(count for _, count in named)):
            self.scope.regions.pop()
        del self.stacks[len(self.stacks) - len(named):]

    def _bind(self, names: List[str], single: Optional[str], value: ast.expr, keep_wide: bool = False) -> None:
        """`Collector._bind` for a file with no distribution: which names are wide or hold autocast."""
        scope = self.scope
        wide = keep_wide or (single is not None and self._wide(value))
        autocast = self._autocast_value(value) if single is not None else None
        scope.bound.update(names)
        scope.numbers.difference_update(names)
        if single is not None and nodes.is_number(value):
            scope.numbers.add(single)
        for name in names:
            scope.wide_names.discard(name)
            scope.factories.pop(name, None)
            if wide:
                scope.wide_names.add(name)
        if single is not None and autocast is not None:
            scope.factories[single] = autocast

    def _bind_project(self, target: ast.expr, value: ast.expr) -> None:
        returned = nodes.prepared_arguments(value)
        if returned is not None:
            targets = [nodes.unstarred(t) for t in target.elts] if isinstance(target, (ast.Tuple, ast.List)) \
                else None
            pairs = list(zip(targets, returned)) if targets is not None else [(target, returned[0])]
            bound = [(each, self._instance_of(arg), True) for each, arg in pairs]
        else:
            bound = [(target, self._instance_of(value), nodes.same_module(value, self.imports)[1])]
        self._forget(target)
        for each, instance, parallel in bound:
            self._set(each, instance)
            self._mark_parallel(each, parallel and instance is not None)
        items, attr = nodes.element_classes(value, self.imports), nodes.self_attribute(target)
        if items and attr is not None and self.scope.class_name is not None:
            self.class_items.setdefault(self.scope.class_name, {})[attr] = items

    def _forget(self, target: ast.expr) -> None:
        for name in nodes.target_names(target):
            self.scope.assigned.add(name)
            self.scope.instances.pop(name, None)

    def _set(self, target: ast.expr, instance: Optional[Tuple[str, bool]]) -> None:
        if isinstance(target, ast.Name):
            if instance is not None:
                self.scope.instances[target.id] = instance
            return
        attr = nodes.self_attribute(target)
        cls = self.scope.class_name
        if attr is not None and cls is not None and instance is not None:
            self.class_attrs.setdefault(cls, {})[attr] = instance

    def _instance_of(self, value: ast.expr) -> Optional[Tuple[str, bool]]:
        value = self._unwrapped(value)
        if isinstance(value, ast.Call):
            callee = ast_dotted(value.func)
            return None if callee is None else (callee, True)
        if isinstance(value, ast.Name):
            return self._lookup(value.id)
        attr = nodes.self_attribute(value)
        if attr is not None and self.scope.class_name is not None:
            return self.class_attrs.get(self.scope.class_name, {}).get(attr)
        return None

    # `ParallelMarks` over CPython's tree.
    def _dotted(self, node: ast.expr) -> Optional[str]:
        return ast_dotted(node)

    def _same_module(self, node: ast.expr) -> Tuple[ast.expr, bool]:
        return nodes.same_module(node, self.imports)

    def _module_of(self, node: ast.expr) -> Optional[ast.expr]:
        return node.value if isinstance(node, ast.Attribute) and node.attr == "module" else None

    def _lookup(self, name: str) -> Optional[Tuple[str, bool]]:
        return self.scope.find(name, "instances")  # type: ignore[return-value]

    def _starts_with_paren(self, node: ast.expr) -> bool:
        return self.source.text.startswith("(", self.source.offset(node.lineno, node.col_offset))

    def _wide(self, node: ast.expr) -> bool:
        scope = self.scope
        return nodes.is_wide(node, self.imports, lambda name: name in scope.wide_names)

    # --- calls ----------------------------------------------------------------------------------------
    def call(self, node: ast.Call) -> None:
        args = nodes.call_args(node)  # read once: the site judgement, the record and the walk all use them
        site = self.sites.call(node, args, counts_as_site(node, self.imports), self.scope, self._owner(),
                               self._function(), self.statement, self._wide)
        if site != MATH:  # a probability site is not also a call, but a density is entered
            self._record(node, args, site == DENSITY)
        self.visit(node.func)
        for arg in args:
            self.visit(arg.value)

    def _record(self, node: ast.Call, args: List[nodes.Arg], density: bool) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            kind, name = "name", func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in SELF_NAMES:
            kind, name = "self", func.attr
        elif isinstance(func, (ast.Attribute, ast.Subscript, ast.Call)):
            kind, name = "attr", func.attr if isinstance(func, ast.Attribute) else ELEMENT
        else:
            return
        callee = nodes.element_callee(func, self.scope.elements) or ast_dotted(func) or expression_callee(name)
        protected = bool(args) and all(self._wide(a.value) for a in args)
        callee = without_module_hop(callee, self._holds_parallel)
        root = callee.split(".", 1)[0]
        receiver = None if root in SELF_NAMES else self._lookup(root)
        state = self.scope.effective()
        text = self._call_text(node, callee) if state is not None and state.is_float16 else ""
        column = self.source.column(node.lineno, node.col_offset) + 1
        self.scope.calls.append(CallRecord(
            kind, name, state, node.lineno, protected, column, callee, text, receiver,
            self.scope.binds_locally(root), density))
        if callee.rsplit(".", 1)[-1].endswith(RECORDED_SUFFIXES):  # rules L and H
            self.framework_calls.append(self._framework_call(node, args, callee, column))

    def _framework_call(self, node: ast.Call, args: List[nodes.Arg], callee: str, column: int) -> FrameworkCall:
        """`nodes.framework_call` over CPython's tree."""
        keywords = tuple((a.keyword, nodes.literal(a.value, self._code(a.value))) for a in args
                         if a.keyword in PRECISION_KEYWORDS)
        model = nodes.trainer_model(args)
        return FrameworkCall(
            qualnames=tuple(sorted(ast_qualnames(node.func, self.imports))), callee=callee, line=node.lineno,
            column=column, keywords=keywords, double_star=any(a.star == "**" for a in args),
            function=self.scope.key, model=None if model is None else self._instance_of(model))

    def _code(self, node: ast.expr) -> str:
        """LibCST's code for the node (`SourceText.code`); a comment that makes it unsure sends the file there."""
        code = self.source.code(node)
        if code is None:
            raise Unread
        return code

    def _call_text(self, node: ast.Call, callee: str) -> str:
        """`nodes.call_text`: as written, on one line, or `callee(...)` when longer than 40 characters."""
        return shortened_call(self._code(node), callee, lambda: self._code(node.func))


# What `_Reader.visit` calls for each node type; the rest it walks into. Kept out of the instance: bound methods
# there would make each reader a cycle, which keeps the file's tree until the cyclic collector runs.
_HANDLERS: Dict[type, Callable[[_Reader, Any], None]] = {
    ast.FunctionDef: _Reader.function, ast.AsyncFunctionDef: _Reader.function, ast.ClassDef: _Reader.class_def,
    ast.Lambda: _Reader.lambda_, ast.Call: _Reader.call, ast.Assign: _Reader.assign,
    ast.AnnAssign: _Reader.ann_assign, ast.AugAssign: _Reader.aug_assign, ast.For: _Reader.for_,
    ast.AsyncFor: _Reader.for_, ast.With: _Reader.with_, ast.AsyncWith: _Reader.with_, ast.IfExp: _Reader.if_exp,
    ast.Expr: _Reader.expression,
    ast.Dict: _Reader.dict_, ast.Constant: _Reader.constant, ast.JoinedStr: _Reader.f_string,
    ast.BinOp: _Reader.bin_op_seen, **dict(astflow.HANDLERS),
}
# Reading hand-written math: binary operations are judged, and a literal is part of the site it is in.
_MATH_HANDLERS: Dict[type, Callable[[_Reader, Any], None]] = {
    **{kind: handler for kind, handler in _HANDLERS.items() if kind is not ast.Constant}, ast.BinOp: _Reader.bin_op,
}
