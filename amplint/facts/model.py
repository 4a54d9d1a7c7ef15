"""The fact layer's data: regions, probability sites, call records and scopes of one file.

Facts say what the code does (which autocast state holds where, which inputs
are wide, which names were made in a float16 region, what a function calls);
they know no rule codes. Rules (`amplint.rules`) read them and decide findings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Dict, FrozenSet, List, Optional, Protocol, Set, Tuple, Union

from amplint.model import DistributionBase, OnDevice, Precision, Probed, RegionInfo
from amplint.policies import AutocastPolicy, policy_for
from amplint.regions import AutocastFactory, RegionSpec

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst
    from libcst.metadata import CodeRange

    from amplint.facts.frameworks import FrameworkCall
    from amplint.facts.entry import (
        CallReturn, Constructor, DensityCall, DistArgument, Float32Reads, HeldAccelerator, ReturnedDist,
    )
    from amplint.names import ImportTable
    from amplint.positions import Positions

FLOAT16_LIKE = frozenset({Precision.FLOAT16, Precision.MAYBE_FLOAT16})
MODULE_KEY = "<module>"


@dataclass(frozen=True)
class AnalysisOptions:
    """The parts of the configuration the analysis itself needs."""

    extend_autocast: FrozenSet[str] = frozenset()
    extend_distributions: FrozenSet[str] = frozenset()
    project: bool = False  # record what the cross-file walk needs, and read file-local framework regions
    autocast_aliases: Tuple[Tuple[object, ...], ...] = ()  # project spellings of autocast (`Config.autocast_aliases`)
    returns: Tuple["CallReturn", ...] = ()  # calls whose callee in another file returns a distribution
    arguments: Tuple["DistArgument", ...] = ()  # parameters that callers elsewhere give a distribution
    density_calls: Tuple["DensityCall", ...] = ()  # calls the walk resolved to a project density with no sites
    requests: Tuple["Constructor", ...] = ()  # constructors of this file to read for the fixer (`FileFacts.requested`)
    producers: FrozenSet[str] = frozenset()  # callees that return probabilities (`entry.ProbabilityCallees`)
    float32_reads: Tuple["Float32Reads", ...] = ()  # reads the project proved float32 (`entry.Float32Reads`)
    builds_distributions: bool = True  # the text may construct one (it says `distributions`): returns are read
    accelerators: Tuple["HeldAccelerator", ...] = ()  # receivers the project found bound to `Accelerator(...)`
    distribution_bases: Tuple[DistributionBase, ...] = ()  # the project's distribution classes' library bases


@dataclass
class RegionEntry:
    spec: RegionSpec
    line: int
    node: Optional[cst.CSTNode]  # None for a region in another file (project mode)
    label: str = "autocast region"  # how messages name it, e.g. 'Accelerator(mixed_precision="fp16") region'

    @property
    def info(self) -> RegionInfo:
        return self.spec.at(self.line)

    @property
    def is_float16(self) -> bool:
        return self.spec.enabled and self.spec.precision in FLOAT16_LIKE

    @property
    def policy(self) -> Optional[AutocastPolicy]:
        """Its device's autocast policy: which ops run in float32 whatever their inputs (CUDA's `softmax`,
        `exp`, `pow`...). None when it casts nothing, or its device is not a literal."""
        return policy_for(self.spec.device) if self.is_float16 else None


@dataclass
class DistRef:
    """A distribution constructor call visible in the same function."""

    ctor: cst.Call
    qualname: str
    binding: Optional[str]  # the local name it was reached through, if any
    components: List["DistRef"] = field(default_factory=list)
    inputs: List[cst.BaseExpression] = field(default_factory=list)  # tensor arguments
    has_star: bool = False
    built_in: Optional[Tuple[str, str]] = None  # (function, "line 14" or "model.py:14") when a callee builds it
    remote: bool = False  # built in another file: `ctor` and `inputs` are parsed from its text, not this tree
    remote_castable: bool = True  # remote: fix A can cast its inputs there (`ReturnedDist.castable`)
    built_at: Tuple["Constructor", ...] = ()  # remote: every constructor it may come from (one per caller)

    def castable(self) -> bool:
        """Can fix A cast every tensor it is built from, where it is built? (`amplint.facts.distrefs`)"""
        if self.remote:
            return self.remote_castable
        if self.has_star:
            return False
        from amplint import dtypes  # LibCST's: cached runs read this module without the parser

        held = {id(arg.value) for arg in dtypes.slot_args(self.qualname, self.ctor)}
        return not any(id(value) in held and not _derived(value) for value in self.inputs) and all(
            c.castable() for c in self.components)

    def all_inputs(self) -> List["cst.BaseExpression"]:
        """Its tensor inputs, its components' included."""
        return list(self.inputs) + [i for c in self.components for i in c.all_inputs()]


def _derived(node: "cst.BaseExpression") -> bool:
    """`Normal(a, b).expand(shape)`: a distribution made from one built in place, whose arguments fix A casts."""
    import libcst as cst

    from amplint import dtypes

    def method_call(expr: "cst.BaseExpression") -> bool:
        return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and (
            expr.func.attr.value in dtypes.DISTRIBUTION_METHODS)

    if not method_call(node):
        return False
    while method_call(node):
        node = node.func.value  # type: ignore[attr-defined]
    return isinstance(node, cst.Call)


@dataclass
class Site:
    """A probability computation, with the nodes the codemod rewrites."""

    call: cst.Call
    method: str
    dists: List[DistRef]
    values: List[cst.BaseExpression]
    statement: Optional[cst.SimpleStatementLine]
    # Its scope's names bound to float32 values: the scope's own set, which later bindings still add to. Not the
    # scope, which holds the site: a cycle would keep the tree until the cyclic collector ran.
    wide_names: Set[str]
    state: Optional[RegionEntry]
    uncast: List[cst.BaseExpression]
    tainted: List[Tuple[cst.BaseExpression, int]]  # (input, line of the region that made it)
    position: CodeRange
    kind: str = "distribution"  # which recognizer made it (`amplint.facts.sites`)
    # id(uncast input) -> where fix A casts it instead: the operand its probabilities were made from
    # (`probmath.producer_operand`), since a cast after float16 rounded them to 0 restores nothing.
    cast_at: Dict[int, cst.BaseExpression] = field(default_factory=dict)
    # Uncast inputs the region's policy computes in float32 anyway (CUDA's `softmax`, `exp`): still findings,
    # as float16-derived inputs with no cast, and the message says which device spares them.
    promoted: List[cst.BaseExpression] = field(default_factory=list)
    # Hand-written math on the probe activations under its region's policy (`amplint.facts.probes`), where the
    # policy alone does not spare it and its numbers are known: its risk says whether it holds on that device.
    probed: Optional[Probed] = None
    # With no region of its own: how each device's policy computes it, its parameters holding what a region
    # elsewhere gave (`mathsites._spared`); the finding's risk reads the reaching region's device.
    reached: Tuple[OnDevice, ...] = ()
    # Uncast inputs that are parameters of the site's function, never rebound there: in a region of that
    # function they hold what the caller gave, float32 data as often as not (`sites.parameter_inputs`).
    data: List[cst.BaseExpression] = field(default_factory=list)
    # Its own inputs are float32; `uncast` holds the float16 tensors its statement loses range from
    # (`mathsites._statement_inputs`: `torch.lgamma(a.float()) / s.exp()`).
    through_statement: bool = False

    @property
    def constructor_visible(self) -> bool:
        """Every distribution's constructor can be cast where it is built (here, or in another file)."""
        return bool(self.dists) and all(d.castable() for d in self.dists)

    def float16_inputs(self) -> List[cst.BaseExpression]:
        """The uncast inputs its own region makes float16: not the parameters it never rebinds (`data`)."""
        data = {id(node) for node in self.data}
        return [node for node in self.uncast if id(node) not in data]

    def local_uncast(self) -> List[cst.BaseExpression]:
        """The uncast inputs in this file's tree: not those of a distribution built in another file."""
        remote = {id(node) for ref in self.dists if ref.remote for node in ref.all_inputs()}
        return [node for node in self.uncast if id(node) not in remote]

    @property
    def label(self) -> str:
        if self.method == "kl_divergence":
            return "kl_divergence"
        if self.dists:
            return f"{self.dists[0].qualname.rsplit('.', 1)[-1]}.{self.method}"
        return self.method


@dataclass
class CallRecord:
    kind: str  # "name" (`f(...)`), "self" (`self.m(...)`/`cls.m(...)`), "attr" (any other dotted callee)
    # or "method" (`name` is the scope key of a method of this file's class the receiver is known to be)
    # or "instance" (single-file mode: `m(...)` where `m` holds an instance of class `name`)
    name: str
    state: Optional[RegionEntry]
    line: int
    protected: bool  # every argument already float32: the callee gets wide inputs
    column: int = 0
    callee: str = ""  # the dotted callee as written, e.g. "self.policy.act"
    text: str = ""  # the call as written, shortened (kept for calls in float16 regions: a chain starts there)
    receiver: Optional[Tuple[str, bool]] = None  # (class expression, exact) the callee's root is bound to
    root_local: bool = False  # the callee's root is a local name of the function (a parameter or assigned)
    density: bool = False  # the call is also a site: a call of the project's own density
    dist_args: Tuple[str, ...] = ()  # argument slots ("0", "dist") given a distribution (`facts.signatures`)
    given: Tuple[Tuple[str, "ReturnedDist"], ...] = ()  # those built from parameters not cast: slot, what
    # Made in the `with` of an accelerator the file does not build (`PendingAccel`): (receiver, the `with`'s line).
    accel: Union[Tuple[()], Tuple[str, int]] = ()
    opaque: bool = False  # the call is also a site: a distribution's method, no constructor of its receiver in sight


@dataclass
class AccelBinding:
    """A name bound to `Accelerator(...)` (rule A): the region its autocast/prepare gives, if any."""

    spec: Optional[RegionSpec]
    line: int
    node: cst.CSTNode
    label: str  # the construction as messages show it: 'Accelerator(mixed_precision="fp16")'


@dataclass(frozen=True)
class PendingAccel:
    """`x.autocast` where the file does not bind `x` to `Accelerator(...)`: a parameter, a `self.` attribute, a
    factory's result. The project's value flow says what `x` holds (`project.accelflow`, `HeldAccelerator`)."""

    receiver: str  # as written, a dotted name: "accelerator", "self.accelerator"


# What a name may be bound to that a `with` opens: an autocast factory, a region object, an accelerator's
# `autocast` method (`ctx = accelerator.autocast`), one whose receiver the project solve answers for.
Opener = Union[AutocastFactory, RegionSpec, AccelBinding, PendingAccel]


@dataclass
class Scope:
    """One function (or the module): its local region stack and bindings."""

    key: str
    display: str
    class_name: Optional[str]
    parent: Optional["Scope"]
    regions: List[RegionEntry] = field(default_factory=list)
    factories: Dict[str, Opener] = field(default_factory=dict)
    dist_bindings: Dict[str, DistRef] = field(default_factory=dict)
    # Constructors of other assignments that may reach too (another path; `facts.flowstate`).
    dist_alternatives: Dict[str, List[DistRef]] = field(default_factory=dict)
    wide_names: Set[str] = field(default_factory=set)
    bound: Set[str] = field(default_factory=set)  # names some path to here binds (parameters included)
    numbers: Set[str] = field(default_factory=set)  # wide names that may hold a Python number, not a tensor
    tainted: Dict[str, int] = field(default_factory=dict)
    nested: Dict[str, str] = field(default_factory=dict)
    sites: List[Site] = field(default_factory=list)
    calls: List[CallRecord] = field(default_factory=list)
    node: Optional[cst.CSTNode] = None  # the FunctionDef (the Module for MODULE_KEY): rescanned only on demand
    # Project mode only.
    params: Set[str] = field(default_factory=set)
    elements: Dict[str, str] = field(default_factory=dict)  # loop names over a container: "head" -> "self.heads[]"
    assigned: Set[str] = field(default_factory=set)
    instances: Dict[str, Tuple[str, bool]] = field(default_factory=dict)  # name -> (class expression, exact)
    accelerators: Dict[str, AccelBinding] = field(default_factory=dict)
    prepared: Dict[str, AccelBinding] = field(default_factory=dict)  # models returned by accelerator.prepare
    pending: List[Tuple[str, int]] = field(default_factory=list)  # the `PendingAccel` `with`s open here, innermost last
    accel_reads: List[Tuple[str, int]] = field(default_factory=list)  # every such `with`: (receiver, line)

    def child(self, name: str, container: str, enclosing_class: Optional[str],
              node: "Optional[cst.CSTNode]" = None) -> "Scope":
        """The scope of a `def name` written here: in a class body (`container` "class", the class being
        `enclosing_class`), in this function ("function"), or at the top level ("module")."""
        class_name: Optional[str]
        if container == "class":
            key = display = f"{enclosing_class}.{name}"
            class_name = enclosing_class
        elif container == "function":
            key = f"{self.key}.<locals>.{name}"
            display = f"{self.display}.{name}"
            class_name = self.class_name
            self.nested[name] = key
        else:
            key = display = name
            class_name = None
        return Scope(key, display, class_name, self, node=node)

    def find(self, name: str, table: str) -> object:
        """`name` in `table` (`instances`, ...) here or further out; a parameter or assignment without it hides
        outer ones."""
        scope: Optional[Scope] = self
        while scope is not None:
            found = getattr(scope, table).get(name)
            if found is not None:
                return found
            if name in scope.params or name in scope.assigned:
                return None
            scope = scope.parent
        return None

    def binds_locally(self, name: str) -> bool:
        """Is `name` a parameter or an assigned name of this function or an enclosing one (not the module)?"""
        each: Optional[Scope] = self
        while each is not None and each.key != MODULE_KEY:
            if name in each.params or name in each.assigned:
                return True
            each = each.parent
        return False

    def effective(self) -> Optional[RegionEntry]:
        """The region that decides autocast here; a disabled region for another device is transparent."""
        stack = self.regions
        for index in range(len(stack) - 1, -1, -1):
            entry = stack[index]
            if entry.spec.enabled:
                return entry
            outer = next((o for o in reversed(stack[:index]) if o.spec.enabled), None)
            if outer is None or entry.spec.device is None or outer.spec.device in (None, entry.spec.device):
                return entry
        return None

    def lookup_factory(self, name: str) -> Optional[Opener]:
        scope: Optional[Scope] = self
        while scope is not None:
            if name in scope.factories:
                return scope.factories[name]
            scope = scope.parent
        return None


class ReturnSummaries(Protocol):
    def summaries(self) -> Dict[str, Tuple["ReturnedDist", ...]]:
        """Per function key, the distributions it returns (the project summaries read them)."""


@dataclass(frozen=True)
class Requested:
    """A constructor another file's finding asked for (`AnalysisOptions.requests`), as this file reads it."""

    constructor: "Constructor"
    ref: DistRef
    scope: Scope  # where it is built: its `wide_names` say which inputs are float32 there


@dataclass
class FileFacts:
    """Everything the collector learnt about one file; computed once, read by every rule."""

    module: cst.Module
    imports: ImportTable
    scopes: Dict[str, Scope]
    class_bases: Dict[str, List[str]] = field(default_factory=dict)
    class_attrs: Dict[str, Dict[str, Tuple[str, bool]]] = field(default_factory=dict)  # project mode
    framework_calls: List[FrameworkCall] = field(default_factory=list)  # project mode
    class_items: Dict[str, Dict[str, Tuple[str, ...]]] = field(default_factory=dict)  # project mode: containers
    returns: Optional["ReturnSummaries"] = None  # what this file's functions return (`facts.returns.ReturnIndex`)
    requested: List["Requested"] = field(default_factory=list)  # at `AnalysisOptions.requests`: fix A casts them
    positions: Optional["Positions"] = None  # the collector's: an analysis of the same tree again reads them
    distributions: FrozenSet[str] = frozenset()  # the distribution classes read as configured: the fixer's too
    distribution_bases: Tuple[DistributionBase, ...] = ()  # the project's (and this file's own) among them

    def sites(self) -> List[Site]:
        """Every probability site, scope by scope in source order of their functions."""
        return [site for scope in self.scopes.values() for site in scope.sites]
