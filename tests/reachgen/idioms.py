"""Layers for idioms of real training code that the first hops did not name.

The first hops (`calls.py`) are the spellings one audit of real code listed.
These are the next ones any trainer writes: a dataclass that holds the model,
keyword arguments, `*args, **kwargs` forwarding, a property, `functools.partial`,
a base class's `__init__` reached through `super()`, a decorator, a dict of
functions, and a `super()` call of the method itself. They compose with every
other layer the same way: each takes the `Call` below it and returns a new one.
A mechanism general enough for the first hops should need nothing new for them.
"""
from __future__ import annotations

from typing import List, Tuple

from .codegen import MAX_MODULES, Module, Project, indent
from .units import Call, inline_or_named, signature

DOC = "Helpers that organise a training step."
IDIOMS = ("model_holder", "model_kwargs", "model_property", "model_partial", "model_super_init",
          "call_forward", "call_decorator", "call_registry", "call_super")


def _inner(inner: Call, mod: Module, m: str, a: str, b: str) -> List[str]:
    prelude, expr = inner.render(mod, m, a, b)
    return prelude + [f"return {expr}"]


def _upper(proj: Project, below: Module, role: str) -> Module:
    """A module above `below` (so it can import it): a new one while there is room; `below` itself when the
    project is full and nothing sits above it."""
    above = [m for m in proj.modules if m.level > below.level]
    if len(proj.modules) < MAX_MODULES and (not above or proj.rng.random() < 0.7):
        return proj.new_module(DOC, role=role)
    return proj.rng.choice(above) if above else below


def _function(proj: Project, inner: Call, mod: Module, names: Tuple[str, ...], doc: str) -> Tuple[str, str, str, str]:
    """A module-level `def fn(model, h, x)` in `mod` calling `inner`: (fn, model, h, x)."""
    model, h, x = signature(proj)
    fn = proj.name(*names)
    mod.add([f"def {fn}({model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:", f'    """{doc}"""',
             *indent(_inner(inner, mod, model, h, x))])
    return fn, model, h, x


def layer(proj: Project, kind: str, inner: Call) -> Call:
    """`inner` wrapped in one idiom of `kind` (one of `IDIOMS`)."""
    rng = proj.rng
    mod = proj.place(inner.module, role="layer", docstring=DOC)
    mod.need("torch")
    model, h, x = signature(proj)
    sig = f"{h}: torch.Tensor, {x}: torch.Tensor"

    if kind == "model_holder":  # a dataclass holds the model; the step reads `state.model`
        mod.need("from dataclasses import dataclass")
        cls = proj.name("TrainState", "StepState", "Setup", "Context")
        field = rng.choice(("model", "net", "policy"))
        state = proj.name("state", "ctx", "setup")
        fn = proj.name("step_on", "loss_with_state", "evaluate_state")
        body = ([f"{model} = {state}.{field}"] + _inner(inner, mod, model, h, x) if rng.random() < 0.5
                else _inner(inner, mod, f"{state}.{field}", h, x))
        mod.add([f"@dataclass\nclass {cls}:", '    """What one step needs, passed around as one object."""', "",
                 f"    {field}: object", "    step: int = 0"])
        mod.add([f"def {fn}({state}: {cls}, {sig}) -> torch.Tensor:", '    """One step on the state\'s model."""',
                 *indent(body)])

        def render_holder(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            built = rng.choice((f"{proj.ref(c, mod, cls)}({m})", f"{proj.ref(c, mod, cls)}({field}={m}, step=1)"))
            var = proj.name("state_", "run_state", "st")
            return [f"{var} = {built}"], f"{proj.ref(c, mod, fn)}({var}, {a}, {b})"
        return Call(mod, render_holder)

    if kind == "model_kwargs":  # the model arrives as a keyword in **kwargs
        fn = proj.name("step_kw", "loss_from_kwargs", "run_with")
        key = rng.choice(("model", "net", "module"))
        read = rng.choice((f'kwargs["{key}"]', f'kwargs.get("{key}")', f'kwargs.pop("{key}")'))
        mod.add([f"def {fn}({sig}, **kwargs) -> torch.Tensor:", '    """Takes the model among other options."""',
                 f"    {model} = {read}", *indent(_inner(inner, mod, model, h, x))])
        extra = rng.choice(("", ", verbose=False", ", step=3"))
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({a}, {b}, {key}={m}{extra})"))

    if kind == "model_property":  # a read-only property returns the stored model
        cls = proj.name("Holder", "ModelBox", "Owner")
        attr = rng.choice(("model", "net", "backbone"))
        meth = proj.name("run_step", "evaluate_on", "apply_to")
        mod.add([f"class {cls}:", '    """Keeps the model private behind a property."""', "",
                 f"    def __init__(self, {model}) -> None:", f"        self._{attr} = {model}", "",
                 "    @property", f"    def {attr}(self):", f"        return self._{attr}", "",
                 f"    def {meth}(self, {sig}) -> torch.Tensor:",
                 *indent(_inner(inner, mod, f"self.{attr}", h, x), 2)])

        def render_property(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            obj = proj.name("holder", "box", "owner")
            return [f"{obj} = {proj.ref(c, mod, cls)}({m})"], f"{obj}.{meth}({a}, {b})"
        return Call(mod, render_property)

    if kind == "model_partial":  # functools.partial binds the model
        fn, _, _, _ = _function(proj, inner, mod, ("objective_for", "bound_loss", "loss_of"), "The objective.")

        def render_partial(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            c.need("import functools")
            var = proj.name("step_fn_", "bound", "objective_")
            return [f"{var} = functools.partial({proj.ref(c, mod, fn)}, {m})"], f"{var}({a}, {b})"
        return Call(mod, render_partial, func=fn)

    if kind == "model_super_init":  # a base class stores the model; a subclass passes it up through super()
        base = proj.name("StepBase", "RunnerBase", "EngineBase")
        meth = proj.name("run_batch", "evaluate_batch_", "step_batch")
        mod.add([f"class {base}:", '    """Stores the model; subclasses add their settings."""', "",
                 f"    def __init__(self, {model}) -> None:", f"        self.{model} = {model}", "",
                 f"    def {meth}(self, {sig}) -> torch.Tensor:",
                 *indent(_inner(inner, mod, f"self.{model}", h, x), 2)])
        sub_mod = _upper(proj, mod, "layer")
        sub = proj.name("ScaledStep", "ClippedRunner", "LoggedEngine")
        arg = rng.choice(("model", "net", "inner"))
        sub_mod.add([f"class {sub}({proj.ref(sub_mod, mod, base)}):", '    """Adds a setting of its own."""', "",
                     f"    def __init__(self, {arg}, scale: float = 1.0) -> None:",
                     rng.choice((f"        super().__init__({arg})", f"        super().__init__({model}={arg})")),
                     "        self.scale = scale"])

        def render_sub(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            obj = proj.name("engine", "stepper", "runner_")
            return [f"{obj} = {proj.ref(c, sub_mod, sub)}({m})"], f"{obj}.{meth}({a}, {b})"
        return Call(sub_mod, render_sub)

    if kind == "call_forward":  # *args/**kwargs passed straight through to the function underneath
        target = inner.func
        if target is None:
            target, _, _, _ = _function(proj, inner, mod, ("plain_step", "base_objective", "core_loss"),
                                        "The objective as a plain function.")
            inner = Call(mod, inner.render, func=target)
        fn = proj.name("logged_step", "guarded_loss", "checked_step")
        ref = proj.ref(mod, inner.module, target)
        mod.add([f"def {fn}(*args, **kwargs) -> torch.Tensor:",
                 '    """Runs the objective with whatever it is given."""',
                 f"    return {ref}(*args, **kwargs)"])
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({m}, {a}, {b})"))

    if kind == "call_decorator":  # a project decorator, from another module, wraps the step
        below = [m for m in proj.modules if m.level < mod.level]
        deco_mod = rng.choice(below) if below and rng.random() < 0.7 else mod
        deco = proj.name("traced", "timed", "counted")
        deco_mod.need("import functools")
        deco_mod.add([f"def {deco}(fn):", '    """Wraps a step function; the wrapper returns what it returns."""', "",
                      "    @functools.wraps(fn)", "    def wrapper(*args, **kwargs):",
                      "        return fn(*args, **kwargs)", "", "    return wrapper"])
        fn = proj.name("wrapped_step", "decorated_loss", "tracked_step")
        mod.add([f"@{proj.ref(mod, deco_mod, deco)}",
                 f"def {fn}({model}, {sig}) -> torch.Tensor:", '    """One step."""',
                 *indent(_inner(inner, mod, model, h, x))])
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({m}, {a}, {b})"))

    if kind == "call_registry":  # a dict of functions, looked up by name
        fn, _, _, _ = _function(proj, inner, mod, ("nll_objective", "density_objective", "main_objective"),
                                "The objective of the main experiment.")
        other = proj.name("squared_objective", "mse_objective", "plain_objective_")
        mod.add([f"def {other}({model}, {sig}) -> torch.Tensor:", '    """A baseline objective."""',
                 f"    return ({model}({h}) - {x}).pow(2).mean()"])
        table = proj.name("OBJECTIVES", "LOSSES", "CRITERIA")
        key = rng.choice(("nll", "density", "likelihood"))
        entries = [f'    "{key}": {fn},', f'    "mse": {other},']
        rng.shuffle(entries)
        mod.add([f"{table} = {{", *entries, "}"])
        run = proj.name("run_objective_", "dispatch", "by_name")
        name = rng.choice(("name", "kind", "which"))
        get = rng.choice((f"{table}[{name}]", f"{table}.get({name})"))
        mod.add([f"def {run}({name}: str, {model}, {sig}) -> torch.Tensor:", '    """Runs the objective named."""',
                 f"    return {get}({model}, {h}, {x})"])
        return Call(mod, lambda c, m, a, b: ([], f'{proj.ref(c, mod, run)}("{key}", {m}, {a}, {b})'))

    # call_super: a subclass's override calls the base method through super()
    base = proj.name("BaseStep", "DefaultStep", "StepImpl")
    meth = proj.name("compute_loss", "loss_value", "batch_objective")
    mod.add([f"class {base}:", '    """The default step."""', "",
             f"    def {meth}(self, {model}, {sig}) -> torch.Tensor:", *indent(_inner(inner, mod, model, h, x), 2)])
    sub_mod = _upper(proj, mod, "layer")
    sub = proj.name("WeightedStep", "ScaledStep_", "AuxStep")
    weight = rng.choice(("1.0", "0.5", "2.0"))
    sub_mod.need("torch")
    sub_mod.add([f"class {sub}({proj.ref(sub_mod, mod, base)}):", '    """Scales the default loss."""', "",
                 f"    def {meth}(self, {model}, {sig}) -> torch.Tensor:",
                 f"        return super().{meth}({model}, {h}, {x}) * {weight}"])

    return Call(sub_mod, lambda c, m, a, b: inline_or_named(
        proj, f"{proj.ref(c, sub_mod, sub)}()", ("step_obj", "impl", "stepper_"),
        lambda e: f"{e}.{meth}({m}, {a}, {b})"))
