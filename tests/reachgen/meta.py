"""The vocabulary of the generator and what it records about each project.

The kinds are the axes the scorer reports recall on: the ways real code
carries a model or a distribution from a float16 region to a probability
computation (hops), the spellings of the region, the computations, and the
changes that make a project run in float32 without changing its shape
(twins). The names here never reach a generated file: they live in
`ProjectMeta` and in the scorer's manifest, outside the project directory.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

# How a model travels from where it is built to the code that calls it.
MODEL_HOPS = (
    "model_param",       # passed as a function parameter
    "model_ctor_self",   # a constructor argument stored on self
    "model_dict",        # inside a dict (a display, or filled by a store) that is passed in, then indexed
    "model_list",        # inside a list or tuple (or a list filled by append) passed in, then indexed or unpacked
    "model_factory",     # returned by a factory function in another module
    "model_registry",    # its class picked from a registry dict of classes
    "model_getattr",     # its class looked up with getattr on a module
    "model_importlib",   # its class found through importlib.import_module
    "model_config",      # its class named by a YAML file's `_target_:`, built by a helper through importlib
    "model_reexport",    # its class imported through a chain of 1 to 16 re-exporting modules of a sub-package
    "model_class_param",  # its class passed as a parameter and instantiated there
    "model_to",          # wrapped by .to("cpu")
    "model_wrapper",     # held by a project wrapper module whose forward calls it
    "model_moduledict",  # in an nn.ModuleDict iterated with .items()
    "model_holder",      # a field of a dataclass instance that is passed in
    "model_kwargs",      # a keyword argument read from **kwargs
    "model_property",    # stored privately and read through a @property
    "model_partial",     # bound by functools.partial
    "model_super_init",  # stored by a base class's __init__, reached through super().__init__
    "model_deepcopy",    # a copy.deepcopy of it is what runs (a target network)
    "model_eval",        # what .eval() / .train(False) / .requires_grad_(False) returns
    "model_classmethod",  # held by an object a @classmethod builds with cls(...)
    "model_setattr",     # stored by setattr or add_module, under a literal name or a computed one
    "model_closure",     # closed over by a nested function that is returned
    "model_global",      # a module global set by a `global` statement in another function
    "model_iter",        # one of several models in a list, looped over or in a comprehension
)
# How the call reaches the function that holds the probability computation.
CALL_HOPS = (
    "call_inherit",      # a method of a base class in another file, sibling subclasses override it
    "call_mixin",        # the same through a mixin in another file
    "call_fn_value",     # a function passed as an argument and called there
    "call_lambda",       # a lambda passed as an argument
    "call_nested_def",   # a nested def passed as an argument
    "call_bound_method",  # a bound method stored in a name, then called
    "call_isinstance",   # `assert isinstance` narrows a parameter before the call
    "call_forward",      # a function that passes *args, **kwargs straight through
    "call_decorator",    # a project decorator (functools.wraps) around the calling function
    "call_registry",     # a dict of functions, one looked up by name and called
    "call_super",        # a subclass override that calls the base method through super()
    "call_dunder",       # a loss object whose __call__ runs the computation
    "call_staticmethod",  # a @staticmethod of a namespace class
    "call_getattr",      # a method picked by getattr with a name passed in as an argument
    "call_attach",       # an objective a helper gives to an object, a decoy to a sibling class's object
)
# How the distribution (or the parameters of hand-written math) reach the computation.
DIST_HOPS = (
    "dist_forward",      # returned from the head's forward
    "dist_helper",       # built by a helper in another module from the raw output
    "dist_tuple",        # returned in a tuple
    "dist_dict",         # returned in a dict, read by key
    "dist_output",       # returned in a dataclass, read as a field
    "dist_independent",  # wrapped again in Independent(d, 1)
    "dist_wrapper",      # held in a project wrapper class
    "dist_rebound",      # a name bound in both branches of an if/else
    "dist_attr_method",  # an attribute assigned in another method than the one that uses it
    "dist_subclass",     # built as a project subclass of the torch distribution (`class Squashed(Normal)`)
    "params_tuple",      # hand-written math: (mu, sigma) returned in a tuple
    "params_helper",     # hand-written math: parameters made by a helper in another module
)
HOP_KINDS = MODEL_HOPS + CALL_HOPS + DIST_HOPS

REGION_KINDS = (
    "with",         # with torch.autocast("cpu", dtype=torch.float16):
    "named_ctx",    # the context manager held in a name, then entered
    "cond_ctx",     # ctx = torch.autocast(...) if amp else nullcontext()
    "decorator",    # @torch.autocast(...) on a function
    "base_hook",    # a base-class method opens the region and calls an overridden hook
    "helper",       # a project function returns the autocast (or enters it around a yield); `with helper():`
    "exit_stack",   # stack.enter_context(torch.autocast(...)) in a `with contextlib.ExitStack() as stack:`
    "kwargs_dict",  # torch.autocast(**amp_kwargs), the arguments in a dict
    "self_ctx",     # the context (or a partial of torch.autocast) kept on self in __init__, entered in a method
)
DIST_SITES = ("log_prob", "entropy", "cdf", "kl_divergence")
HAND_SITES = ("log_p_class", "log_softmax", "gauss_nll", "log_eps")
SITE_KINDS = DIST_SITES + HAND_SITES

TWIN_KINDS = (
    "cast",           # parameters and value cast to float32 before the computation
    "bf16",           # the region runs in bfloat16
    "disabled_cast",  # autocast(enabled=False) around the computation, with the casts
    "outside",        # the computation runs only after the region has closed
    "sibling",        # float16 code only in a sibling subclass that is never constructed
)

# Words that would give the answer away; no generated file may contain them (any case).
REVEALING = ("safe", "unsafe", "hazard", "twin", "truth", "bug")

Location = Tuple[str, int]


@dataclass
class ProjectMeta:
    """What the generator built, for scoring; never written inside the project directory."""

    seed: int
    package: str
    modules: List[str]
    hops: List[str]
    region: str
    site: str
    twin: Optional[str]                 # None: built so the computation runs on float16 inputs
    sites: List[Location] = field(default_factory=list)   # lines of the computation that runs
    decoys: List[Location] = field(default_factory=list)  # float16-prone code that never runs
    files: Dict[str, str] = field(default_factory=dict)   # relative path -> text

    @property
    def built_safe(self) -> bool:
        """Whether the project was built so that no probability computation sees float16."""
        return self.twin is not None

    def summary(self) -> Dict[str, object]:
        """The manifest entry: everything but the file texts."""
        data = asdict(self)
        data.pop("files")
        data["files"] = sorted(self.files)
        data["sites"] = [list(loc) for loc in self.sites]
        data["decoys"] = [list(loc) for loc in self.decoys]
        return data
