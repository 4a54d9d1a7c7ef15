"""Which values a function reads are float32 on every path that reaches them: the dtype half of the value flow.

A site's input that is a parameter, a `self.` attribute, or an attribute of a
value that crossed calls (`d.dist` of a wrapper a head returns) is float16 or
float32 according to what was given to it elsewhere. The file alone cannot
tell, so such an input used to be listed as uncast even where every caller cast
it: `DiagGaussian(mu.float(), sigma.float())` kept on `self.mu`, a wrapper
around a `Normal` built from cast tensors, a `loss(model, x.float())`.

Here each such read is followed through the project (`flow.Flow` finds the call
sites, the classes a value may be an instance of, and the trees): a name is
float32 when every binding and every argument given to it is; an attribute,
when every assignment of it on the classes its owner may be is; a distribution
built from float32 tensors is a float32 distribution; a call of a project
function, when everything it returns is. Anything not followed (no binding
found, a value of unknown class, a bound reached, a cycle) answers "not
float32", so a finding stays: the answer only ever removes an input proved
float32. The judge reads the answers as `Float32Reads` contexts (`Collector`'s
`is_wide`).
"""
from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from amplint.facts.astmathenv import parameters
from amplint.facts.astnodes import is_number, is_wide, tensorish, transform_operands
from amplint.facts.entry import Float32Reads
from amplint.names import ImportTable, ast_qualnames, import_table
from amplint.project.flow import MAX_HOPS, ClassValue, Flow, Instance, call_argument
from amplint.project.flowcalls import binds_first_parameter
from amplint.project.flowtrees import dotted, own_nodes, param_names
from amplint.project.reaching import reaching
from amplint.project.summary import MODULE_KEY
from amplint.project.symbols import ClassRef
from amplint.torchnames import SIZE_FACTORIES, distribution_name

_Key = Tuple[str, ...]
ItemKey = Optional[Union[int, str]]  # an element of a tuple or list, or an item of a dict, by its literal


class Float32Flow:
    """Answers "is this read float32 on every path?" over the project, memoized for the run."""

    def __init__(self, flow: Flow) -> None:
        self.flow = flow
        self._tables: Dict[str, ImportTable] = {}
        self._answers: Dict[_Key, bool] = {}
        self._busy: Set[_Key] = set()
        self._assumed: Set[_Key] = set()  # attributes assumed float32 while they are asked
        self._sizes: Dict[Tuple[str, str], FrozenSet[str]] = {}  # (path, scope) -> what it passes as sizes
        self._given: List[_Key] = []  # the answers in the order they were given
        # the configured distributions, with the project's own subclasses (`distsubclasses`)
        self._distributions = frozenset(flow.loader.config.extend_distributions)

    def reads(self, path: str, scope: str) -> Tuple[str, ...]:
        """The reads of function `scope` of `path` (its parameters and locals, attributes of them and of `self`)
        that are float32 on every path, as written (`self.mu`, `d.dist`, `x`)."""
        tree = self.flow.tree(path)
        node = tree.scopes.get(scope) if tree is not None else None
        if node is None or scope == MODULE_KEY:
            return ()
        proved: Dict[str, bool] = {}  # a text is proved when every read of it is (`mu32` before and after
        for read in _reads(node, tree.scope_facts(scope).bound):  # type: ignore[union-attr]
            text = ".".join(dotted(read) or ())  # `mu32 = head(mu32)` is two values under one name)
            if text and proved.get(text, True):
                try:
                    proved[text] = self.expression(path, scope, read, 0)
                except RecursionError:  # an expression nested past Python's stack: not proved
                    proved[text] = False
        return tuple(sorted(text for text, ok in proved.items() if ok))

    # --- memo ----------------------------------------------------------------------------------------------
    def _ask(self, key: _Key, hops: int, compute) -> bool:
        """An attribute met again while it is asked (`self.p = self.p * s + 1e-6`) is assumed float32: each of its
        assignments is then asked with that assumption, and where one fails, the answers given under it are
        dropped. Any other cycle, and a bound, is not proved."""
        if key in self._busy and key[0] == "attr":
            self._assumed.add(key)
            return True
        if hops > MAX_HOPS or key in self._busy:
            return False
        if key not in self._answers:
            since = len(self._given)
            self._busy.add(key)
            try:
                answer = compute()
            finally:
                self._busy.discard(key)
            if key in self._assumed:
                self._assumed.discard(key)
                for given in self._given[since:] if not answer else ():
                    self._answers.pop(given, None)
            self._answers[key] = answer
            self._given.append(key)
        return self._answers[key]

    def _is_size(self, path: str, scope: str, node: ast.expr) -> bool:
        """Is `node` a name or attribute the function also passes as a size (`torch.ones(n, k) / k`)? A size is
        an integer, never a float16 tensor."""
        text = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if text is None or scope == MODULE_KEY:
            return False
        if (path, scope) not in self._sizes:
            tree = self.flow.tree(path)
            calls = tree.scope_facts(scope).calls if tree is not None and scope in tree.scopes else []
            table = self._table(path)
            self._sizes[(path, scope)] = frozenset(
                ".".join(parts) for call in calls if not ast_qualnames(call.func, table).isdisjoint(SIZE_FACTORIES)
                for arg in call.args if (parts := dotted(arg)) is not None)
        return ".".join(text) in self._sizes[(path, scope)]

    def _table(self, path: str) -> ImportTable:
        if path not in self._tables:
            tree = self.flow.tree(path)
            self._tables[path] = import_table(tree.tree) if tree is not None else import_table(ast.Module([], []))
        return self._tables[path]

    # --- expressions ---------------------------------------------------------------------------------------
    def expression(self, path: str, scope: str, node: ast.expr, hops: int, key: ItemKey = None) -> bool:
        """Is `node`, read in `scope` of `path`, a float32 tensor (or distribution, or number) on every path?
        With `key`, only its element or item `key` is asked about (`out["dist"]`, `head(x)[0]`)."""
        if key is not None:
            chosen = _element(node, key)
            if chosen is not node:  # a literal tuple, list or dict: the element itself
                return self.expression(path, scope, chosen, hops)
            if not isinstance(node, (ast.Name, ast.Call)):
                key = None  # what the item comes out of: float32 as a whole, or not proved
        if is_number(node) or self._is_size(path, scope, node):
            return True
        if isinstance(node, ast.Name):
            return node.id not in ("self", "cls") and self._ask(
                ("name", path, scope, node.id, node.lineno, node.col_offset, repr(key)), hops,
                lambda: self._name(path, scope, node, hops, key))
        if isinstance(node, ast.Attribute):
            return self._attribute(path, scope, node, hops)
        if isinstance(node, ast.Call):
            return self._call(path, scope, node, hops, key)
        if isinstance(node, ast.Subscript) and _key(node) is not None:
            if self.expression(path, scope, node.value, hops, _key(node)):  # `head(x)[0]`, `out["dist"]`
                return True
        if isinstance(node, (ast.Subscript, ast.Starred)):
            return self.expression(path, scope, node.value, hops)
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.expression(path, scope, element, hops) for element in node.elts)
        if isinstance(node, ast.UnaryOp):
            return self.expression(path, scope, node.operand, hops)
        if isinstance(node, ast.BinOp):
            return not (is_number(node.left) and is_number(node.right)) and all(
                self.expression(path, scope, side, hops) for side in (node.left, node.right))
        if isinstance(node, ast.IfExp):
            return all(self.expression(path, scope, arm, hops) for arm in (node.body, node.orelse))
        return False

    def _call(self, path: str, scope: str, node: ast.Call, hops: int, index: ItemKey = None) -> bool:
        """`index`: element or item `index` of what the call returns (`head(x)[0]`, `d, loc = head(x)`,
        `head(x)["dist"]`)."""
        table = self._table(path)
        if is_wide(node, table, lambda name: False):
            return True  # a cast or a factory
        if distribution_name(self._qualified(path, node.func, table), self._distributions) is not None:  # float32
            tensors = [a for a in [*node.args, *(k.value for k in node.keywords)] if tensorish(a)]
            return all(self.expression(path, scope, a, hops) for a in tensors)
        operands = transform_operands(node, table)  # `x.float().clamp(min=1e-3)`, `torch.exp(x.float())`
        if operands:
            return all(self.expression(path, scope, a, hops) for a in operands)
        callees = self.flow.value(path, scope, node.func, hops)
        if callees and all(isinstance(callee, ClassValue) for callee in callees):  # `Belief(d)`: an instance
            return all(self._ask(("instance", c.cls.path, c.cls.name), hops,  # type: ignore[union-attr]
                                 lambda c=c: self._instance(c.cls, hops + 1)) for c in callees)  # type: ignore
        runs = [self.flow.runs(callee) for callee in callees]
        return bool(runs) and all(runs) and all(  # each callee runs known functions (a class: no tensor)
            self._returns(at, key, hops + 1, index) for each in runs for at, key in each)  # type: ignore[union-attr]

    def _qualified(self, path: str, func: ast.expr, table: ImportTable) -> FrozenSet[str]:
        """What `func` names: through the file's imports, and, for a class of the file itself
        (`ClippedLaplace(loc, scale)` where it is defined), under the file's module names."""
        names = set(ast_qualnames(func, table))
        local = ".".join(dotted(func) or ())
        if local and local.split(".")[0] not in table.bindings:
            names.update(self.flow.resolver.modules.dotted_names(path, local))
        return frozenset(names)

    def _returns(self, path: str, scope: str, hops: int, index: ItemKey = None) -> bool:
        def compute() -> bool:
            tree = self.flow.tree(path)
            node = tree.scopes.get(scope) if tree is not None else None
            returned = tree.scope_facts(scope).returns if node is not None else []  # type: ignore[union-attr]
            return bool(returned) and all(self.expression(path, scope, r, hops, index) for r in returned)
        return self._ask(("returns", path, scope, repr(index)), hops, compute)  # `0` and `"0"` apart

    # --- names ---------------------------------------------------------------------------------------------
    def _name(self, path: str, scope: str, read: ast.Name, hops: int, key: ItemKey = None) -> bool:
        """Every binding that may reach `read` (`reaching`: in its own function; any, in the ones around it);
        with `key`, its element or item `key` (`out["dist"]` of `out = head(x)`)."""
        name = read.id
        tree = self.flow.tree(path)
        current: Optional[str] = scope
        while tree is not None and current is not None and current in tree.scopes:
            facts = tree.scope_facts(current)
            node = tree.scopes[current]
            bindings, killed = facts.bindings.get(name, []), False
            if current == scope and current != MODULE_KEY:
                bindings, killed = reaching(node, bindings, read)
            values = list(_bound_values(bindings, name))
            is_param = current != MODULE_KEY and name in param_names(node) and not killed
            if values or is_param or name in facts.bound:
                if None in values or (not values and not is_param):
                    return False  # a `for` target, a `with` item, an import: not followed
                return all(self.expression(path, current, v, hops, key)  # type: ignore[arg-type]
                           for v in values) and (not is_param or self._parameter(path, current, name, hops + 1))
            current = tree.parents.get(current) if current != MODULE_KEY else None
        return False

    def _parameter(self, path: str, scope: str, name: str, hops: int) -> bool:
        """Every call site gives it a float32 value (or leaves a float32 default); at least one site is known."""
        tree = self.flow.tree(path)
        node = tree.scopes.get(scope) if tree is not None else None
        if node is None or hops > MAX_HOPS:
            return False
        params = param_names(node)
        method = binds_first_parameter(tree, scope)  # type: ignore[arg-type]
        default = _default(node, name)
        sites = self.flow.call_sites(path, scope, hops)
        for site in sites:
            argument = call_argument(site.call, params, name, 1 if method and site.bound else 0)
            if argument is not None:
                if not self.expression(site.path, site.scope, argument, hops):
                    return False
            elif default is None or not self.expression(path, MODULE_KEY, default, hops):
                return False  # `*args`, `**kwargs`, or a default that is not float32
        return bool(sites)

    # --- attributes ----------------------------------------------------------------------------------------
    def _attribute(self, path: str, scope: str, node: ast.Attribute, hops: int) -> bool:
        owner = node.value
        tree = self.flow.tree(path)
        classes: List[ClassRef] = []
        if isinstance(owner, ast.Name) and owner.id == "self" and tree is not None:
            cls = _enclosing_class(tree, scope)
            classes = [ClassRef(path, cls)] if cls is not None else []
        else:
            values = self.flow.value(path, scope, owner, hops)
            if not values or not all(isinstance(v, Instance) for v in values):
                return False  # a value of unknown class, a module, a function
            classes = [v.cls for v in values]  # type: ignore[union-attr]
        return bool(classes) and all(self._ask(("attr", c.path, c.name, node.attr), hops,
                                               lambda c=c: self._assigned(c, node.attr, hops)) for c in classes)

    def _instance(self, cls: ClassRef, hops: int) -> bool:
        """An instance of a plain project class (no base outside the project: a torch `Distribution` or
        `nn.Module` base keeps tensors `self.` does not show) holds float32 state when every attribute its
        classes assign is float32 (`self.dist = dist`: what every construction passes). Its methods' own
        computations are sites of their own; this only says the object carries no float16 tensor."""
        if self.flow.resolver.external_bases(cls) - {"object", "builtins.object"}:
            return False
        attrs: Set[str] = set()
        for ref, tree, node in self.flow.instance_classes(cls):
            if node is None or _updates_self(node):
                return False
            attrs.update(tree.self_attrs(ref.name))  # type: ignore[union-attr]
        return all(self._ask(("attr", cls.path, cls.name, attr), hops,
                             lambda attr=attr: self._assigned(cls, attr, hops)) for attr in sorted(attrs))

    def _assigned(self, cls: ClassRef, attr: str, hops: int) -> bool:
        """Every assignment of `attr` on the classes an instance of `cls` may be is float32; at least one."""
        assignments = list(self.flow.attr_assignments(cls, attr))
        return bool(assignments) and all(self.expression(p, s, v, hops) for p, s, v in assignments)


def float32_reads(flow: Flow, path: str, scopes: List[str]) -> Tuple[Float32Reads, ...]:
    """The `Float32Reads` of the functions `scopes` of `path` (those that hold sites), in key order."""
    answers = Float32Flow(flow)
    found = [(scope, answers.reads(path, scope)) for scope in sorted(scopes)]
    return tuple(Float32Reads(scope, reads) for scope, reads in found if reads)


def _reads(function: ast.AST, local: Set[str]) -> Iterator[ast.expr]:
    """Names the function binds, and attribute chains rooted at one or at `self`, as read (not a method
    called: `d.cdf` of `d.cdf(x)` is not read, `d` is)."""
    called = set()
    for node in own_nodes(function):
        if isinstance(node, ast.Call):
            called.add(id(node.func))
    for node in own_nodes(function):
        if id(node) in called or not isinstance(getattr(node, "ctx", None), ast.Load):
            continue
        parts = dotted(node) if isinstance(node, (ast.Name, ast.Attribute)) else None
        if parts is not None and (parts[0] in local or parts[0] == "self") and parts != ["self"]:
            yield node  # type: ignore[misc]


def _bound_values(bindings, name: str) -> Iterator[Optional[ast.expr]]:
    """The value each binding gives `name`; None for one whose value is not an expression here."""
    for binding in bindings:
        if isinstance(binding, (ast.Assign, ast.AnnAssign)) and binding.value is not None:
            targets = binding.targets if isinstance(binding, ast.Assign) else [binding.target]
            for target in targets:
                yield from _target_value(target, binding.value, name)
        elif isinstance(binding, ast.NamedExpr):
            yield binding.value
        else:
            yield None


def _target_value(target: ast.AST, value: ast.expr, name: str) -> Iterator[ast.expr]:
    if isinstance(target, ast.Name):
        if target.id == name:
            yield value
    elif isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for sub_target, sub_value in zip(target.elts, value.elts):
                yield from _target_value(sub_target, sub_value, name)
        elif isinstance(value, ast.Call) and not any(isinstance(t, ast.Starred) for t in target.elts):
            for position, sub_target in enumerate(target.elts):  # `d, loc = head(x)`: `head(x)[0]` for `d`
                element = ast.copy_location(ast.Subscript(value, ast.Constant(position), ast.Load()), value)
                yield from _target_value(sub_target, element, name)
        elif any(name in {n.id for n in ast.walk(t) if isinstance(n, ast.Name)} for t in target.elts):
            yield value  # `loc, raw = out.float().chunk(2)`: an element of a float32 value


def _updates_self(cls: ast.ClassDef) -> bool:
    """`self.total += x`, `setattr(self, ...)`: state a plain assignment does not show."""
    for node in ast.walk(cls):
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            return True
    return False


def _key(node: ast.Subscript) -> ItemKey:
    """The literal non-negative index of `x[0]`, or the string key of `x["dist"]`; else None."""
    index = node.slice
    if isinstance(index, ast.Constant) and (type(index.value) is int and index.value >= 0 or
                                            isinstance(index.value, str)):
        return index.value  # type: ignore[no-any-return]
    return None


def _element(value: ast.expr, key: ItemKey) -> ast.expr:
    """Element `key` of a tuple or list literal (`return d, loc`), or item `key` of a dict literal with literal
    keys (`return {"dist": d, "loc": loc}`); the whole value when it is neither."""
    if (isinstance(key, int) and isinstance(value, (ast.Tuple, ast.List)) and key < len(value.elts)
            and not any(isinstance(e, ast.Starred) for e in value.elts[:key + 1])):
        return value.elts[key]
    if isinstance(key, str) and isinstance(value, ast.Dict) and all(isinstance(k, ast.Constant) for k in value.keys):
        found = [v for k, v in zip(value.keys, value.values) if k.value == key]  # type: ignore[union-attr]
        if len(found) == 1:
            return found[0]
    return value


def _default(function: ast.AST, name: str) -> Optional[ast.expr]:
    return next((default for param, default in parameters(function) if param == name), None)  # type: ignore


def _enclosing_class(tree, scope: str) -> Optional[str]:
    """The class whose method `scope` is (a nested def's too: `self` is the method's)."""
    head = scope.split(".<locals>.", 1)[0]
    owner = head.rpartition(".")[0]
    return owner if owner in tree.classes else None
