"""The function or class that holds the computation, and the class hierarchies around it.

A `Call` is how other code invokes a piece of generated code with a model,
features and a target: `render(caller, model, h, x)` adds the imports the
caller needs and returns the statements to run first and the expression.
Hosts: a module-level function, a method, or a pair of methods where one
stores the distribution on `self` and the other uses it. With inheritance the
method sits in a base class or a mixin in one file, and 1-30 sibling
subclasses in another file override it; one subclass is constructed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from .codegen import DECOY, SITE, Module, Project, indent
from .sites import SiteSpec, Support, compute, obtain, plain

Render = Callable[[Module, str, str, str], Tuple[List[str], str]]

MODEL_NAMES = ("model", "net", "head", "policy", "module")
H_NAMES = ("h", "feats", "inputs", "z")
X_NAMES = ("x", "target", "y", "obs")
CLASS_PREFIX = ("Gaussian", "Robust", "Weighted", "Scaled", "Masked", "Sparse", "Tempered", "Smoothed", "Clipped",
                "Shared", "Local", "Global", "Residual", "Mixed", "Joint", "Marginal", "Causal", "Dense")
CLASS_SUFFIX = ("Objective", "Loss", "Critic", "Scorer", "Criterion")


@dataclass
class Call:
    """How to invoke generated code with (model, h, x) from a function in another module."""

    module: Module
    render: Render
    func: Optional[str] = None  # set when it is a plain module-level function taking (model, h, x)


def inline_or_named(proj: Project, made: str, names: Tuple[str, ...],
                    use: Callable[[str], str]) -> Tuple[List[str], str]:
    """`use(made)` written inline, or `made` bound to a fresh name first: real code writes both (one draw)."""
    if proj.rng.random() < 0.5:
        return [], use(made)
    var = proj.name(*names)
    return [f"{var} = {made}"], use(var)


def signature(proj: Project) -> Tuple[str, str, str]:
    rng = proj.rng
    return rng.choice(MODEL_NAMES), rng.choice(H_NAMES), rng.choice(X_NAMES)


def _body(proj: Project, mod: Module, spec: SiteSpec, sup: Support, model: str, h: str, x: str,
          what: str) -> List[str]:
    """obtain + compute (`what` = "site" or "decoy") or obtain + a squared error ("plain")."""
    lines, names = obtain(proj, mod, spec, sup, model, h)
    vals = {n: n for n in names}
    if what == "plain":
        return lines + plain(spec, vals, x)
    return lines + compute(proj, mod, spec, vals, x, SITE if what == "site" else DECOY)


def _split(proj: Project, mod: Module, spec: SiteSpec, sup: Support, model: str, h: str,
           x: str, what: str) -> Tuple[List[str], List[str]]:
    """The attribute host: lines of observe (stores on self) and of score (reads from self)."""
    lines, names = obtain(proj, mod, spec, sup, model, h)
    lines += [f"self.{n} = {n}" for n in names]
    vals: Dict[str, str] = {n: f"self.{n}" for n in names}
    if what == "plain":
        return lines, plain(spec, vals, x)
    return lines, compute(proj, mod, spec, vals, x, SITE if what == "site" else DECOY)


def _sibling_body(proj: Project, x: str) -> List[str]:
    """What a sibling subclass computes instead: no probability in it."""
    scale = proj.rng.choice((0.5, 2.0, 0.1))
    return [proj.rng.choice((
        f"return {x}.pow(2).mean()", f"return {x}.abs().mean() * {scale}", "raise NotImplementedError",
        "return torch.zeros(())", f"return ({x} - {x}.mean()).pow(2).mean()"))]


def function_unit(proj: Project, spec: SiteSpec, sup: Support) -> Call:
    mod = proj.place(sup.dists, role="unit", docstring=proj.rng.choice(("Objectives.", "Loss functions for training.")))
    mod.need("torch")
    fn = proj.name("nll", "neg_log_lik", "objective", "score_batch", "compute_loss")
    model, h, x = signature(proj)
    mod.add([f"def {fn}({model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:",
             '    """The training objective for one batch."""',
             *indent(_body(proj, mod, spec, sup, model, h, x, "site"))])
    return Call(mod, lambda caller, m, a, b: ([], f"{proj.ref(caller, mod, fn)}({m}, {a}, {b})"), func=fn)


def _method_call(proj: Project, mod: Module, cls: str, method: str, attr: bool) -> Render:
    def render(caller: Module, m: str, a: str, b: str) -> Tuple[List[str], str]:
        ref = proj.ref(caller, mod, cls)
        if attr:
            obj = proj.name("critic", "scorer", "judge")
            return [f"{obj} = {ref}()", f"{obj}.observe({m}, {a})"], f"{obj}.score({b})"
        if proj.rng.random() < 0.5:
            return [], f"{ref}().{method}({m}, {a}, {b})"
        obj = proj.name("objective", "criterion", "crit")
        return [f"{obj} = {ref}()"], f"{obj}.{method}({m}, {a}, {b})"
    return render


def class_unit(proj: Project, spec: SiteSpec, sup: Support, attr: bool, inherit: Optional[str],
               decoy: bool) -> Call:
    """A class host; with `inherit` ("call_inherit" or "call_mixin") a hierarchy over two files.

    `decoy`: one sibling subclass that is never constructed holds the float16 computation."""
    rng = proj.rng
    model, h, x = signature(proj)
    method = "score" if attr else proj.name("loss", "evaluate", "forward_loss", "criterion_value")
    built = "plain" if spec.decoy_only else "site"

    def methods(mod: Module, what: str) -> List[str]:
        """The host methods, for the class body, computing `what`."""
        mod.need("torch")
        if attr:
            observe, score = _split(proj, mod, spec, sup, model, h, x, what)
            return ([f"def observe(self, {model}, {h}: torch.Tensor) -> None:", *indent(observe), "",
                     f"def score(self, {x}: torch.Tensor) -> torch.Tensor:", *indent(score)])
        return [f"def {method}(self, {model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:",
                *indent(_body(proj, mod, spec, sup, model, h, x, what))]

    def override(mod: Module, what: str) -> List[str]:
        """Only the method a subclass overrides (score for the attribute host)."""
        mod.need("torch")
        if attr:
            if what == "simple":
                return [f"def score(self, {x}: torch.Tensor) -> torch.Tensor:",
                        *indent(_sibling_body(proj, x))]
            _, score = _split(proj, mod, spec, sup, model, h, x, what)
            return [f"def score(self, {x}: torch.Tensor) -> torch.Tensor:", *indent(score)]
        if what == "simple":
            return [f"def {method}(self, {model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:",
                    *indent(_sibling_body(proj, x))]
        return [f"def {method}(self, {model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:",
                *indent(_body(proj, mod, spec, sup, model, h, x, what))]

    def abstract() -> List[str]:
        if attr:
            return [f"def score(self, {x}: torch.Tensor) -> torch.Tensor:", "    raise NotImplementedError"]
        return [f"def {method}(self, {model}, {h}: torch.Tensor, {x}: torch.Tensor) -> torch.Tensor:",
                "    raise NotImplementedError"]

    base_mod = proj.place(sup.dists, role="unit", docstring=rng.choice(("Objectives.", "Base classes for objectives.")))
    suffix = rng.choice(CLASS_SUFFIX)
    if inherit is None:
        cls = proj.name(*(p + suffix for p in CLASS_PREFIX))
        base_mod.add([f"class {cls}:", '    """Scores a batch against the model\'s prediction."""', "",
                      *indent(methods(base_mod, built))])
        return Call(base_mod, _method_call(proj, base_mod, cls, method, attr))

    sub_mod = proj.place(base_mod, fresh=1.0, role="sub", docstring="Concrete objectives.")
    if sub_mod is base_mod:  # no room for another file: the next module up
        sub_mod = min((m for m in proj.modules if m.level > base_mod.level), key=lambda m: m.level)
    base = proj.name("Base" + suffix, suffix + "Base", "Abstract" + suffix)
    names = [proj.name(*(p + suffix for p in CLASS_PREFIX)) for _ in range(rng.choice((1, 2, 3, 4, 6, 10, 20, 30)) + 1)]
    chosen, siblings = names[0], names[1:]
    overriding = inherit == "call_inherit" and rng.random() < 0.5  # the constructed class overrides the base's method
    attr_observe = attr and overriding
    if inherit == "call_mixin":
        mixin = proj.name("LikelihoodMixin", "DensityMixin", "ScoreMixin")
        base_mod.add([f"class {mixin}:", '    """Adds the scoring methods to any objective it is mixed into."""', "",
                      *indent(methods(base_mod, built))])
        sub_mod.add([f"class {base}:", '    """The interface every objective implements."""', "", *indent(abstract())])
        parents_chosen = f"{proj.ref(sub_mod, base_mod, mixin)}, {base}"
        parent = base
    elif overriding:
        base_lines = abstract()
        if attr_observe:
            observe, _ = _split(proj, base_mod, spec, sup, model, h, x, "plain")
            base_lines = [f"def observe(self, {model}, {h}: torch.Tensor) -> None:", *indent(observe), ""] + base_lines
        base_mod.need("torch")
        base_mod.add([f"class {base}:", '    """The interface every objective implements."""', "", *indent(base_lines)])
        parent = parents_chosen = proj.ref(sub_mod, base_mod, base)
    else:
        base_mod.add([f"class {base}:", '    """The default scoring, shared by most objectives."""', "",
                      *indent(methods(base_mod, built))])
        parent = parents_chosen = proj.ref(sub_mod, base_mod, base)
    decoy_at = rng.randrange(len(siblings)) if decoy else -1
    blocks: List[List[str]] = []
    for index, name in enumerate(siblings):
        what = "decoy" if index == decoy_at else "simple"
        blocks.append([f"class {name}({parent}):", f'    """A variant with its own {method}."""', "",
                       *indent(override(sub_mod, what))])
    if overriding:
        chosen_body = override(sub_mod, built)
    else:
        chosen_body = [f"weight = {rng.choice((1.0, 0.5, 2.0))}"]
    position = rng.randrange(len(blocks) + 1)
    blocks.insert(position, [f"class {chosen}({parents_chosen}):", '    """The objective used for training."""', "",
                             *indent(chosen_body)])
    for block in blocks:
        sub_mod.add(block)
    return Call(sub_mod, _method_call(proj, sub_mod, chosen, method, attr))
