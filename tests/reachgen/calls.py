"""Layers of code between the region and the computation, one per hop.

Each layer is a function or class in some module at or above the code it
calls, and returns a new `Call`: so layers stack in any order, and each adds
one way real code carries a model (a parameter, `self`, a dict, a list, an
`nn.ModuleDict`) or a call (a function value, a lambda, a nested def, a bound
method, a narrowing `assert isinstance`).
"""
from __future__ import annotations

from typing import List, Tuple

from . import habits, idioms
from .codegen import Module, Project, indent
from .units import Call, inline_or_named, signature

DOC = "How a training step reaches its objective."
LAYERS = ("model_param", "model_ctor_self", "model_dict", "model_list", "model_moduledict",
          "call_fn_value", "call_lambda", "call_nested_def", "call_bound_method", "call_isinstance") \
    + idioms.IDIOMS + habits.HABITS


def _pairs(extra: str) -> List[Tuple[str, str]]:
    """The `, "lr": 0.001` a dict display adds, as (quoted key, value) pairs."""
    return [(k.strip().strip('"'), v.strip()) for k, v in (p.split(":") for p in extra.split(",") if p.strip())]


def _inner(inner: Call, mod: Module, m: str, a: str, b: str) -> List[str]:
    """The body lines that call `inner` from `mod` and return its result."""
    prelude, expr = inner.render(mod, m, a, b)
    return prelude + [f"return {expr}"]


def layer(proj: Project, kind: str, inner: Call, model_cls: Tuple[Module, str], hops: List[str]) -> Call:
    """`inner` wrapped in a layer of `kind`; appends to `hops` the kind actually built (a function value
    needs a plain function underneath, a lambda an inline call: otherwise either becomes a nested def,
    which for a lambda is known only once the caller renders it)."""
    rng = proj.rng
    if kind in idioms.IDIOMS:
        hops.append(kind)
        return idioms.layer(proj, kind, inner)
    if kind in habits.HABITS:
        hops.append(kind)
        return habits.layer(proj, kind, inner)
    if kind == "call_isinstance":
        mod = proj.place(proj.above(inner.module, model_cls[0]), role="layer", docstring=DOC)
    else:
        mod = proj.place(inner.module, role="layer", docstring=DOC)
    mod.need("torch")
    if kind not in ("call_lambda",):
        hops.append(kind)
    model, h, x = signature(proj)
    sig = f"{h}: torch.Tensor, {x}: torch.Tensor"

    if kind == "model_param":
        fn = proj.name("run_objective", "apply_head", "evaluate_batch", "batch_loss")
        mod.add([f"def {fn}({model}, {sig}) -> torch.Tensor:", '    """One evaluation of the objective."""',
                 *indent(_inner(inner, mod, model, h, x))])
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({m}, {a}, {b})"), func=fn)

    if kind == "call_isinstance":
        fn = proj.name("checked_loss", "typed_step", "head_loss")
        cls = proj.ref(mod, model_cls[0], model_cls[1])
        mod.add([f"def {fn}({model}: object, {sig}) -> torch.Tensor:",
                 '    """Accepts any object; the assert documents (and checks) what it must be."""',
                 f"    assert isinstance({model}, {cls})", *indent(_inner(inner, mod, model, h, x))])
        return Call(mod, lambda c, m, a, b: ([], f"{proj.ref(c, mod, fn)}({m}, {a}, {b})"), func=fn)

    if kind in ("model_ctor_self", "call_bound_method"):
        cls = proj.name("Runner", "Evaluator", "StepRunner", "Learner", "Scorer", "Worker")
        meth = proj.name("step", "run", "evaluate", "compute")
        as_module = kind == "model_ctor_self" and rng.random() < 0.4
        if as_module:
            mod.need("nn")
            lines = [f"class {cls}(nn.Module):", '    """Owns the model so callers pass only the batch."""', "",
                     f"    def __init__(self, {model}: nn.Module) -> None:", "        super().__init__()",
                     f"        self.{model} = {model}", "", f"    def forward(self, {sig}) -> torch.Tensor:",
                     *indent(_inner(inner, mod, f"self.{model}", h, x), 2)]
            meth = "forward"
        else:
            lines = [f"class {cls}:", '    """Owns the model so callers pass only the batch."""', "",
                     f"    def __init__(self, {model}) -> None:", f"        self.{model} = {model}", "",
                     f"    def {meth}(self, {sig}) -> torch.Tensor:",
                     *indent(_inner(inner, mod, f"self.{model}", h, x), 2)]
        mod.add(lines)

        def render(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            ref = proj.ref(c, mod, cls)
            obj = proj.name("runner", "evaluator", "learner")
            if kind == "call_bound_method":
                fn = proj.name("step_fn", "evaluate_fn", "run_step")
                if rng.random() < 0.5:
                    return [f"{fn} = {ref}({m}).{meth}"], f"{fn}({a}, {b})"
                return [f"{obj} = {ref}({m})", f"{fn} = {obj}.{meth}"], f"{fn}({a}, {b})"
            if as_module:
                return [f"{obj} = {ref}({m})"], f"{obj}({a}, {b})"
            if rng.random() < 0.5:
                return [], f"{ref}({m}).{meth}({a}, {b})"
            return [f"{obj} = {ref}({m})"], f"{obj}.{meth}({a}, {b})"
        return Call(mod, render)

    if kind == "model_dict":
        fn = proj.name("loss_from_parts", "run_parts", "step_with")
        key = rng.choice(("model", "head", "policy", "net"))
        parts = proj.name("parts", "components", "bundle")
        get = rng.choice((f'{parts}["{key}"]', f'{parts}.get("{key}")'))
        mod.add([f"def {fn}({parts}: dict, {sig}) -> torch.Tensor:",
                 '    """Takes the pieces of the setup in one mapping, as configs tend to build them."""',
                 f"    {model} = {get}", *indent(_inner(inner, mod, model, h, x))])
        extra = rng.choice(("", ', "lr": 0.001', ', "steps": 1'))

        def render_dict(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            ref = proj.ref(c, mod, fn)
            if rng.random() < 1 / 3:  # an empty dict filled by a store under the key
                var = proj.name("setup", "bundle_in", "comps")
                stores = [f'{var}["{k}"] = {v}' for k, v in [(key, m), *_pairs(extra)]]
                return [f"{var} = {rng.choice(('{}', 'dict()'))}", *stores], f"{ref}({var}, {a}, {b})"
            return inline_or_named(proj, f'{{"{key}": {m}{extra}}}', ("setup", "bundle_in", "comps"),
                                   lambda e: f"{ref}({e}, {a}, {b})")
        return Call(mod, render_dict)

    if kind == "model_list":
        fn = proj.name("loss_of_first", "run_heads", "lead_loss")
        seq = proj.name("heads", "models", "members")
        take = rng.choice((f"{model}, = {seq}", f"{model} = {seq}[0]", f"{model}, *_ = {seq}", f"{model} = {seq}[-1]"))
        mod.add([f"def {fn}({seq}, {sig}) -> torch.Tensor:", '    """Evaluates the lead model of an ensemble."""',
                 f"    {take}", *indent(_inner(inner, mod, model, h, x))])
        shape = rng.choice(("[{}]", "({},)", "append"))

        def render_list(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            ref = proj.ref(c, mod, fn)
            if shape != "append":
                return [], f"{ref}({shape.format(m)}, {a}, {b})"
            var = proj.name("heads", "members", "ensemble")  # an empty list filled by `append`
            return [f"{var} = []", f"{var}.append({m})"], f"{ref}({var}, {a}, {b})"
        return Call(mod, render_list)

    if kind == "model_moduledict":
        mod.need("nn")
        cls = proj.name("HeadSet", "Ensemble", "MultiHead")
        meth = proj.name("total_loss", "loss_sum", "combined")
        key, name = rng.choice(("main", "gauss", "primary")), proj.name("name", "key", "label")
        lines = [f"class {cls}(nn.Module):", '    """Named heads evaluated together; their losses add up."""', "",
                 "    def __init__(self, heads: dict) -> None:", "        super().__init__()",
                 "        self.heads = nn.ModuleDict(heads)", "",
                 f"    def {meth}(self, {sig}) -> torch.Tensor:", "        total = torch.zeros(())",
                 f"        for {name}, {model} in self.heads.items():"]
        prelude, expr = inner.render(mod, model, h, x)
        lines += indent(prelude, 3) + [f"            total = total + {expr}", "        return total"]
        mod.add(lines)

        def render_md(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
            obj = proj.name("heads", "ensemble", "multi")
            return [f'{obj} = {proj.ref(c, mod, cls)}({{"{key}": {m}}})'], f"{obj}.{meth}({a}, {b})"
        return Call(mod, render_md)

    # a callable passed as an argument
    if kind == "call_fn_value" and inner.func is None:  # a module-level function to pass as the value
        shim = proj.name("default_objective", "objective_of", "plain_objective")
        mod.add([f"def {shim}({model}, {sig}) -> torch.Tensor:", '    """The objective as a plain function."""',
                 *indent(_inner(inner, mod, model, h, x))])
        inner = Call(mod, inner.render, func=shim)
    fn = proj.name("apply_objective", "with_objective", "call_loss")
    fname = rng.choice(("fn", "objective", "loss_fn"))
    mod.add([f"def {fn}({fname}, {model}, {sig}) -> torch.Tensor:",
             '    """Calls whichever objective it is given, so callers can swap it."""',
             f"    return {fname}({model}, {h}, {x})"])

    def render_callable(c: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
        ref = proj.ref(c, mod, fn)
        if kind == "call_fn_value":
            return [], f"{ref}({proj.ref(c, inner.module, inner.func)}, {m}, {a}, {b})"
        pm, ph, px = "m", "feats_", "x_"
        prelude, expr = inner.render(c, pm, ph, px)
        if kind == "call_lambda":
            hops.append("call_lambda" if not prelude else "call_nested_def")
        if kind == "call_lambda" and not prelude:
            return [], f"{ref}(lambda {pm}, {ph}, {px}: {expr}, {m}, {a}, {b})"
        local = proj.name("inner_loss", "objective_fn", "local_loss")
        return ([f"def {local}({pm}, {ph}, {px}):", *indent(prelude + [f"return {expr}"])],
                f"{ref}({local}, {m}, {a}, {b})")
    return Call(mod, render_callable)
