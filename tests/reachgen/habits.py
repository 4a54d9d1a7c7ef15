"""Layers for a third batch of habits of real training code, written before amplint was tuned on them.

`idioms.py` was the second batch. These are the next ones trainers write:
a target network made with `copy.deepcopy`, a module switched with `.eval()`
(which returns the module), an object built by a `@classmethod` that returns
`cls(...)`, a module stored with `setattr` or `add_module`, a closure over the
model, a module-level global set through `global`, a loop or comprehension over
several models, a loss object called through `__call__`, a `@staticmethod`, and
a method picked with `getattr` by a name that arrives as an argument or that the
object keeps (a class attribute, a constructor argument, `getattr`'s default), and
an objective that a helper gives to an object (stored from outside, through a
setter, or by another class's method) beside a second object of a sibling class
that the same helper gives a decoy. Each takes the `Call` below it and returns a
new one, like every other layer.
"""
from __future__ import annotations

from typing import List, Tuple

from .codegen import DECOY, Module, Project, indent
from .units import Call, inline_or_named, signature

DOC = "Utilities around the training step."
HABITS = ("model_deepcopy", "model_eval", "model_classmethod", "model_setattr", "model_closure", "model_global",
          "model_iter", "call_dunder", "call_staticmethod", "call_getattr",
          "call_attach")


def _inner(inner: Call, mod: Module, m: str, a: str, b: str) -> List[str]:
    prelude, expr = inner.render(mod, m, a, b)
    return prelude + [f"return {expr}"]


def _function(proj: Project, inner: Call, mod: Module, names: Tuple[str, ...], doc: str) -> str:
    """A module-level `def fn(model, h, x)` in `mod` that returns `inner`'s value."""
    model, h, x = signature(proj)
    fn = proj.name(*names)
    mod.add([f"def {fn}({model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:", f'    """{doc}"""',
             *indent(_inner(inner, mod, model, h, x))])
    return fn


def _plain_call(proj: Project, mod: Module, fn: str) -> Call:
    return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({m}, {a}, {b})"), func=fn)


def layer(proj: Project, kind: str, inner: Call) -> Call:  # noqa: C901 - one branch per habit, like idioms.layer
    """`inner` wrapped in one habit of `kind` (one of `HABITS`)."""
    rng = proj.rng
    mod = proj.place(inner.module, role="layer", docstring=DOC)
    mod.need("torch")
    model, h, x = signature(proj)
    sig = f"{h}: torch.Tensor, {x}: torch.Tensor"

    if kind in ("model_deepcopy", "model_eval"):  # a copy of the model, or the model `.eval()` returns
        if kind == "model_deepcopy":
            if rng.random() < 0.5:
                mod.need("import copy")
                made = f"copy.deepcopy({model})"
            else:
                mod.need("from copy import deepcopy")
                made = f"deepcopy({model})"
            var, doc = proj.name("target_net", "frozen", "ema_model"), "Scores with a frozen copy of the model."
        else:
            made = rng.choice((f"{model}.eval()", f"{model}.train(False)", f"{model}.requires_grad_(False)",
                               f"{model}.eval().requires_grad_(False)"))
            var, doc = proj.name("evaluated", "net_eval", "inference_net"), "Scores in evaluation mode."
        fn = proj.name("score_copy", "evaluate_frozen", "target_loss")
        mod.add([f"def {fn}({model}, {sig}) -> torch.Tensor:", f'    """{doc}"""', f"    {var} = {made}",
                 *indent(_inner(inner, mod, var, h, x))])
        return _plain_call(proj, mod, fn)

    if kind == "model_classmethod":  # an alternative constructor returns cls(...)
        cls = proj.name("Session", "Experiment", "Pipeline")
        maker = proj.name("create", "from_model", "build")
        meth = proj.name("run_step", "evaluate_batch", "step")
        made = rng.choice(([f"        return cls({model})"],
                           [f"        obj = cls({model})", "        obj.steps = 0", "        return obj"]))
        mod.add([f"class {cls}:", '    """Holds the model for a run."""', "",
                 f"    def __init__(self, {model}) -> None:", f"        self.{model} = {model}", "",
                 "    @classmethod", f"    def {maker}(cls, {model}):", '        """The usual way to start."""', *made,
                 "", f"    def {meth}(self, {sig}) -> torch.Tensor:",
                 *indent(_inner(inner, mod, f"self.{model}", h, x), 2)])

        return Call(mod, lambda c, m, a, b: inline_or_named(
            proj, f"{proj.ref(c, mod, cls)}.{maker}({m})", ("session", "exp", "pipe"),
            lambda e: f"{e}.{meth}({a}, {b})"))

    if kind == "model_setattr":  # stored by setattr or add_module, under a literal name or a computed one
        cls = proj.name("Slots", "Registry_", "Carrier")
        attr = rng.choice(("net", "backbone", "body"))
        as_module = rng.random() < 0.5
        spelling = rng.choice(("literal", "parameter", "formatted"))
        param, keep, read = "", [], f"self.{attr}"
        if spelling == "literal":
            name = f'"{attr}"'
        elif spelling == "parameter":  # the name a parameter's default: `setattr(self, name, model)`
            name, param = "name", f', name: str = "{attr}"'
        else:  # under a prefix, read back with `getattr` and the same f-string
            name, param, keep = 'f"slot_{name}"', f', name: str = "{attr}"', ["        self.name = name"]
            read = 'getattr(self, f"slot_{self.name}")'
        if as_module:
            mod.need("nn")
            lines = [f"class {cls}(nn.Module):", '    """Registers the model as a submodule."""', "",
                     f"    def __init__(self, {model}: nn.Module{param}) -> None:", "        super().__init__()", *keep,
                     f"        self.add_module({name}, {model})", "",
                     f"    def forward(self, {sig}) -> torch.Tensor:", *indent(_inner(inner, mod, read, h, x), 2)]
        else:
            lines = [f"class {cls}:", '    """Keeps the model under a configurable name."""', "",
                     f"    def __init__(self, {model}{param}) -> None:", *keep,
                     f"        setattr(self, {name}, {model})", "",
                     f"    def run(self, {sig}) -> torch.Tensor:", *indent(_inner(inner, mod, read, h, x), 2)]
        mod.add(lines)
        call = "" if as_module else ".run"
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, cls)}({m}){call}({a}, {b})"))

    if kind == "model_closure":  # a nested function closes over the model
        maker = proj.name("make_step", "bind_model", "step_for")
        step = rng.choice(("step", "run", "closure"))
        mod.add([f"def {maker}({model}):", '    """A step function with the model bound in."""', "",
                 f"    def {step}({sig}) -> torch.Tensor:", *indent(_inner(inner, mod, model, h, x), 2), "",
                 f"    return {step}"])

        return Call(mod, lambda c, m, a, b: inline_or_named(
            proj, f"{proj.ref(c, mod, maker)}({m})", ("step_fn", "bound_step", "run_fn"), lambda e: f"{e}({a}, {b})"))

    if kind == "model_global":  # a module-level global, set through `global` by one function, read by another
        glob = proj.name("_MODEL", "CURRENT_MODEL", "_ACTIVE")
        setter = proj.name("install", "set_model", "register_model")
        fn = proj.name("current_loss", "global_step", "loss_now")
        mod.add([f"{glob} = None"])
        mod.add([f"def {setter}({model}) -> None:", '    """Makes the model the current one."""',
                 f"    global {glob}", f"    {glob} = {model}"])
        mod.add([f"def {fn}({sig}) -> torch.Tensor:", '    """The objective of the current model."""',
                 *indent(_inner(inner, mod, glob, h, x))])
        return Call(mod, lambda c, m, a, b: ([f"{proj.ref(c, mod, setter)}({m})"],
                                             f"{proj.ref(c, mod, fn)}({a}, {b})"))

    if kind == "model_iter":  # several models passed in, iterated by a loop or a comprehension
        models = rng.choice(("models", "nets", "members"))
        each = proj.name("member", "one", "net_i")
        fn = proj.name("ensemble_loss", "total_loss", "sum_over_models")
        if rng.random() < 0.5:
            prelude, expr = inner.render(mod, each, h, x)
            body = ["total = 0.0", f"for {each} in {models}:", *indent(prelude), f"    total = total + {expr}",
                    "return total"]
        else:
            one = _function(proj, inner, mod, ("member_loss", "one_loss", "single_loss"), "One model's objective.")
            body = [f"return torch.stack([{one}({each}, {h}, {x}) for {each} in {models}]).sum(0)"]
        mod.add([f"def {fn}({models}, {sig}) -> torch.Tensor:", '    """Sums the objective over the models."""',
                 *indent(body)])
        wrap = rng.choice(("[{}]", "({},)"))
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({wrap.format(m)}, {a}, {b})"))

    if kind == "call_dunder":  # a loss object called like a function
        cls = proj.name("Criterion_", "LossFn", "Objective_")
        mod.add([f"class {cls}:", '    """A loss object, called like a function."""', "",
                 "    def __init__(self, weight: float = 1.0) -> None:", "        self.weight = weight", "",
                 f"    def __call__(self, {model}, {sig}) -> torch.Tensor:",
                 *indent(_inner(inner, mod, model, h, x), 2)])

        def render_dunder(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            if rng.random() < 0.5:
                return [], f"{proj.ref(c, mod, cls)}()({m}, {a}, {b})"
            obj = proj.name("loss_fn", "crit_", "objective_fn")
            return [f"{obj} = {proj.ref(c, mod, cls)}(weight=1.0)"], f"{obj}({m}, {a}, {b})"
        return Call(mod, render_dunder)

    if kind == "call_staticmethod":  # a static method of a namespace class
        cls = proj.name("Losses", "Objectives_", "Criteria_")
        meth = proj.name("nll_of", "density_loss", "main_loss")
        mod.add([f"class {cls}:", '    """The objectives, grouped."""', "", "    @staticmethod",
                 f"    def {meth}({model}, {sig}) -> torch.Tensor:", *indent(_inner(inner, mod, model, h, x), 2)])
        on = rng.choice(("", "()"))
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, cls)}{on}.{meth}({m}, {a}, {b})"))

    if kind == "call_attach":
        return _attach(proj, mod, inner)

    # call_getattr: a method picked by a name that arrives as an argument, or that the object keeps: a class
    # attribute, a constructor argument stored on `self`, or `getattr`'s default. A sibling method computes a
    # float16-prone log of probabilities and never runs: it is entered only where the name is not read.
    cls = proj.name("Objectives", "LossTable", "Criteria")
    meth = rng.choice(("nll", "likelihood", "density"))
    held = rng.choice(("argument", "class_attribute", "constructor", "default"))
    unused = proj.name("calibrated", "smoothed_nll", "entropy_bonus")
    attr = proj.name("loss_name", "objective_name", "criterion_")
    body = [f"    {attr} = \"{meth}\"", ""] if held == "class_attribute" else [
        f"    def __init__(self, {attr}: str = \"mse\") -> None:", f"        self.{attr} = {attr}", ""] \
        if held == "constructor" else []
    lines = [f"class {cls}:", '    """Objectives by name."""', "", *body,
             f"    def {meth}(self, {model}, {sig}) -> torch.Tensor:", *indent(_inner(inner, mod, model, h, x), 2), "",
             f"    def mse(self, {model}, {sig}) -> torch.Tensor:",
             f"        return ({model}({h}) - {x}).pow(2).mean()", "",
             f"    def {unused}(self, {model}, {sig}) -> torch.Tensor:",
             f"        probs = torch.softmax({model}({h}), dim=-1)",
             f"        return -torch.log(probs + 1e-10).mean(){DECOY}"]
    if held != "argument":
        picked = f'getattr(self, "{attr}", "{meth}")' if held == "default" else f"self.{attr}"
        mod.add(lines + ["", f"    def run(self, {model}, {sig}) -> torch.Tensor:",
                         '        """Runs the objective it names."""',
                         f"        return getattr(self, {picked})({model}, {h}, {x})"])
        given = f'"{meth}"' if held == "constructor" else ""
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, cls)}({given}).run({m}, {a}, {b})"))
    mod.add(lines)
    run = proj.name("run_named", "by_name_", "dispatch_")
    name = rng.choice(("name", "which", "loss_name"))
    pick = rng.choice(([f"return getattr({cls}(), {name})({model}, {h}, {x})"],
                       [f"method = getattr({cls}(), {name})", f"return method({model}, {h}, {x})"]))
    mod.add([f"def {run}({name}: str, {model}, {sig}) -> torch.Tensor:", '    """Runs the objective named."""',
             *indent(pick)])
    return Call(mod, lambda c, m, a, b: ([], f'{proj.ref(c, mod, run)}("{meth}", {m}, {a}, {b})'))


def _attach(proj: Project, mod: Module, inner: Call) -> Call:
    """The objective held by an object, given to it by a helper: a function that stores it from outside, one that
    calls the holder's setter, or a method of another class that stores it. The same helper gives a second holder,
    of a sibling class that never runs, an objective computing a float16-prone log of probabilities (a decoy):
    read once for all its callers, the helper hands the decoy to the first holder too."""
    rng = proj.rng
    model, h, x = signature(proj)
    sig = f"{h}: torch.Tensor, {x}: torch.Tensor"
    base, runner, other = (proj.name("Stage", "Component", "Slot_"), proj.name("Learner", "Fitter", "Runner_"),
                           proj.name("Evaluator_", "Monitor", "Auditor"))
    main, spare = proj.name("MainObjective", "Primary", "FitLoss"), proj.name("SpareObjective", "Diagnostic", "Probe_")
    attr = rng.choice(("loss_fn", "objective", "criterion"))
    holder, fn = rng.choice(("holder", "target", "obj")), rng.choice(("fn", "loss", "objective_"))
    how = rng.choice(("store", "setter", "method"))
    store = f"{holder}.set_{attr}({fn})" if how == "setter" else f"{holder}.{attr} = {fn}"
    mod.add([f"class {main}:", '    """The objective the learner trains with."""', "",
             f"    def __call__(self, {model}, {sig}) -> torch.Tensor:", *indent(_inner(inner, mod, model, h, x), 2)])
    mod.add([f"class {spare}:", '    """A diagnostic objective, kept for the evaluator."""', "",
             f"    def __call__(self, {model}, {sig}) -> torch.Tensor:",
             f"        probs = torch.softmax({model}({h}), dim=-1)",
             f"        return -torch.log(probs + 1e-10).mean(){DECOY}"])
    mod.add([f"class {base}:", '    """Runs the objective a helper gives it."""', "",
             f"    def set_{attr}(self, {fn}) -> None:", f"        self.{attr} = {fn}", "",
             f"    def step(self, {model}, {sig}) -> torch.Tensor:", f"        return self.{attr}({model}, {h}, {x})"])
    mod.add([f"class {runner}({base}):", '    """Trains with its objective."""'])
    mod.add([f"class {other}({base}):", '    """Evaluates with its objective."""'])
    if how == "method":
        wiring, give = proj.name("Wiring", "Assembler", "Builder_"), proj.name("install", "wire", "equip")
        mod.add([f"class {wiring}:", '    """Gives each holder its objective."""', "",
                 f"    def {give}(self, {holder}, {fn}) -> None:", f"        {store}"])
    else:
        wiring, give = "", proj.name("attach", "equip", "give_objective")
        mod.add([f"def {give}({holder}, {fn}) -> None:", '    """Gives the holder its objective."""', f"    {store}"])
    keywords = rng.random() < 0.5

    def render(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
        first, second = proj.name("learner", "fitter", "trainer_"), proj.name("evaluator", "monitor_", "auditor")
        prelude: List[str] = []
        if wiring:
            tool = proj.name("wiring", "assembler", "builder")
            prelude.append(f"{tool} = {proj.ref(c, mod, wiring)}()")
            helper = f"{tool}.{give}"
        else:
            helper = proj.ref(c, mod, give)
        prelude += [f"{first} = {proj.ref(c, mod, runner)}()", f"{second} = {proj.ref(c, mod, other)}()"]
        for obj, made in ((first, main), (second, spare)):
            made = f"{proj.ref(c, mod, made)}()"
            prelude.append(f"{helper}({fn}={made}, {holder}={obj})" if keywords else f"{helper}({obj}, {made})")
        return prelude, f"{first}.step({m}, {a}, {b})"
    return Call(mod, render)
