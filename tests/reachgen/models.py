"""How the model object is built: which class, looked up how, instantiated where, wrapped in what.

The lookups (a registry dict, written out or filled by a registering decorator,
`getattr` on a module, `importlib`, a YAML file's `_target_:` that a helper builds through `importlib`, as
Hydra and latent diffusion do), a class passed as a parameter, a factory in another module and the wrappers
(`.to("cpu")`, a project module whose forward calls the inner one) compose;
`build` returns a function that renders the construction inside a caller.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Set, Tuple

from .codegen import Module, Project
from .sites import Support

Construct = Callable[[Module], Tuple[List[str], str]]


def wrapper_class(proj: Project) -> Tuple[Module, str]:
    """A project module that holds a head and forwards to it (created before anything that names it)."""
    mod = proj.place(role="wrapper", docstring="Wrappers that add bookkeeping around a model.")
    mod.need("torch", "nn")
    name = proj.name("Tracked", "CountingWrapper", "ModelShell", "Instrumented")
    mod.add([f"class {name}(nn.Module):", '    """Counts calls around a model without changing what it returns."""', "",
             "    def __init__(self, inner: nn.Module) -> None:", "        super().__init__()",
             "        self.inner = inner", "        self.calls = 0", "",
             "    def forward(self, h: torch.Tensor):", "        self.calls += 1", "        return self.inner(h)"])
    return mod, name


def reexport_chain(proj: Project, head_mod: Module, head: str) -> str:
    """`head` re-exported through a chain of 1 to 16 modules of a sub-package, each importing it from the one
    before (the first from `head_mod`); the dotted module a caller imports it from: the last link, or the
    sub-package, whose `__init__.py` re-exports it once more."""
    rng = proj.rng
    sub = proj.name("api", "public", "exports")
    stem = rng.choice(("compat", "legacy", "shim", "v"))
    package = f"{proj.package}.{sub}"
    source = f"..{head_mod.name}" if proj.relative else f"{proj.package}.{head_mod.name}"
    for i in range(1, rng.choice((1, 2, 3, 4, 10, 16)) + 1):  # a third longer than 8 (a bound once cut there)
        proj.extra[f"{proj.package}/{sub}/{stem}{i}.py"] = f"from {source} import {head}  # noqa: F401\n"
        source = f".{stem}{i}" if proj.relative else f"{package}.{stem}{i}"
    last = f"{package}.{source.lstrip('.').rpartition('.')[2]}"
    if rng.random() < 0.5:
        proj.extra[f"{proj.package}/{sub}/__init__.py"] = f"from {source} import {head}\n\n__all__ = [\"{head}\"]\n"
        return package
    proj.extra[f"{proj.package}/{sub}/__init__.py"] = ""
    return last


def configured_builder(proj: Project, sup: Support) -> Tuple[Module, str, str, str]:
    """A YAML file naming the head under one section and the other head under another, beside a module that
    reads it and builds a section's `_target_` through `importlib` (it imports neither head's module): the module,
    its loader and builder functions, and the head's section."""
    rng = proj.rng
    cmod = proj.place(role="builder", docstring="Builds objects from the targets of the configuration file.")
    cmod.need("importlib", "import os", "import yaml")
    stem = rng.choice(("experiment", "defaults", "model_config"))
    load, make = proj.name("load_config", "read_config"), proj.name("instantiate", "build_from_config")
    cmod.add([f"def {load}():", '    """The settings file next to this module."""',
              f'    with open(os.path.join(os.path.dirname(__file__), "{stem}.yaml")) as handle:',
              "        return yaml.full_load(handle)"])
    cmod.add([f"def {make}(section, *args):", '    """An instance of the class the section\'s `_target_` names."""',
              '    module, _, name = section["_target_"].rpartition(".")',
              "    return getattr(importlib.import_module(module), name)(*args)"])
    section, other = rng.choice(("model", "head", "network")), rng.choice(("baseline", "critic", "teacher"))
    module = f"{proj.package}.{sup.head_module.name}"
    blocks = [f"{section}:\n  _target_: {module}.{sup.head}\n", f"{other}:\n  _target_: {module}.{sup.other}\n"]
    rng.shuffle(blocks)
    proj.extra[f"{cmod.path.rpartition('/')[0]}/{stem}.yaml"] = "".join(blocks)
    return cmod, load, make, section


def build(proj: Project, sup: Support, chosen: Set[str], wrapper: Optional[Tuple[Module, str]],
          d_in: str, k: str, hops: List[str]) -> Construct:
    """The construction of the model, with the model hops in `chosen`; appends those used to `hops`."""
    rng = proj.rng
    head_mod, head = sup.head_module, sup.head
    lookup = next((kind for kind in ("model_registry", "model_getattr", "model_importlib", "model_reexport",
                                     "model_config") if kind in chosen), None)
    below: List[Module] = [head_mod]
    registry: Optional[Tuple[Module, str, str]] = None
    if lookup:
        hops.append(lookup)
    exported = reexport_chain(proj, head_mod, head) if lookup == "model_reexport" else None
    if lookup == "model_registry":
        reg = proj.place(head_mod, role="lookup", docstring="Heads by name, so a config can pick one.")
        table = proj.name("HEADS", "REGISTRY", "HEAD_TYPES")
        key = rng.choice(("gaussian", "density", "stochastic"))
        other = rng.choice(("linear", "point", "plain"))
        entries = [(key, proj.ref(reg, head_mod, head)), (other, proj.ref(reg, head_mod, sup.other))]
        rng.shuffle(entries)
        if rng.random() < 0.5:  # a dict display
            reg.add([f"{table} = {{", *[f'    "{a}": {b},' for a, b in entries], "}"])
        else:  # filled by a registering decorator, applied to a subclass of each head
            register = proj.name("register", "register_head", "registered")
            reg.add([f"{table} = {{}}"])
            reg.add([f"def {register}(name: str):", '    """Stores the class it decorates under `name`."""', "",
                     "    def deco(cls):", f"        {table}[name] = cls", "        return cls", "", "    return deco"])
            for a, b in entries:
                reg.add([f'@{register}("{a}")', f"class {proj.name(a.capitalize() + 'Entry')}({b}):",
                         '    """The head, under its registered name."""'])
        registry = (reg, table, key)
        below.append(reg)
    configured = configured_builder(proj, sup) if lookup == "model_config" else None
    if configured:
        below.append(configured[0])
    builder: Optional[Tuple[Module, str]] = None
    if "model_class_param" in chosen:
        hops.append("model_class_param")
        bmod = proj.place(role="builder", docstring="Construction helpers.")
        fn = proj.name("build", "instantiate", "construct")
        bmod.add([f"def {fn}(cls, d_in: int, k: int):",
                  '    """Instantiates any head class with the standard sizes."""', "    return cls(d_in, k)"])
        builder = (bmod, fn)
        below.append(bmod)
    wrappers = [w for w in ("model_to", "model_wrapper") if w in chosen]
    rng.shuffle(wrappers)
    hops.extend(wrappers)
    if wrapper:
        below.append(wrapper[0])

    def class_expr(caller: Module) -> Tuple[List[str], str]:
        if registry:
            reg, table, key = registry
            ref = proj.ref(caller, reg, table)
            if rng.random() < 0.5:
                return [], f'{ref}["{key}"]'
            var = proj.name("head_name", "kind", "choice")
            return [f'{var} = "{key}"'], f"{ref}[{var}]"
        if lookup == "model_getattr":
            return [], f'getattr({proj.module_ref(caller, head_mod)}, "{head}")'
        if lookup == "model_importlib":
            caller.need("importlib")
            found = f'importlib.import_module("{proj.package}.{head_mod.name}")'
            return [], rng.choice((f"{found}.{head}", f'getattr({found}, "{head}")'))
        if exported is not None and caller is not head_mod:  # the chain imports `head_mod`: it cannot import the chain
            caller.need(f"from {exported} import {head}")
            return [], head
        return [], proj.ref(caller, head_mod, head)

    def instance(caller: Module, d: str, kk: str) -> Tuple[List[str], str]:
        if configured:  # the class is named by the config file only
            cmod, load, make, section = configured
            var = proj.name("cfg", "conf", "settings")
            return [f"{var} = {proj.ref(caller, cmod, load)}()"], \
                f'{proj.ref(caller, cmod, make)}({var}["{section}"], {d}, {kk})'
        prelude, cls = class_expr(caller)
        if builder:
            expr = f"{proj.ref(caller, builder[0], builder[1])}({cls}, {d}, {kk})"
        else:
            expr = f"{cls}({d}, {kk})"
        for kind in wrappers:
            if kind == "model_to":
                expr = f'{expr}.to("cpu")'
            else:
                assert wrapper is not None
                expr = f"{proj.ref(caller, wrapper[0], wrapper[1])}({expr})"
        return prelude, expr

    if "model_factory" not in chosen:
        return lambda caller: instance(caller, d_in, k)
    hops.append("model_factory")
    top = proj.above(*below)
    fmod = proj.place(top, strict=lookup in ("model_getattr", "model_reexport"), role="builder",
                      docstring="Builds the model from the configuration.")
    fn = proj.name("make_model", "build_model", "create_head")
    prelude, expr = instance(fmod, "d_in", "k")
    fmod.add([f"def {fn}(d_in: int, k: int):", '    """The model the training script uses."""',
              *["    " + line for line in prelude], f"    model = {expr}", "    return model"])
    return lambda caller: ([], f"{proj.ref(caller, fmod, fn)}({d_in}, {k})")
