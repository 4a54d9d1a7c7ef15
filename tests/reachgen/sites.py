"""The probability computation at the end of a project, and the head and helpers that feed it.

The head is an `nn.Linear` network: inside a float16 CPU autocast region its
output is float16, so whatever is built from it (a distribution, or the mu
and sigma of hand-written math) is float16 unless something casts it. Where
the distribution is built (forward, a helper, a tuple, a holder class, an
if/else) is decided here; how the call reaches the computation is not (see
`units` and `calls`).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from .codegen import DECOY, SITE, Module, Project, indent
from .meta import DIST_SITES

POSITIVE = ("F.softplus({raw}) + 1e-3", "{raw}.exp()", "torch.exp({raw})")


@dataclass
class SiteSpec:
    """Every choice about the computation and where its inputs come from."""

    kind: str
    source: str                      # "forward", "tuple", "helper"; a distribution also "dict" or "output"
    families: Tuple[str, ...] = ("Normal",)
    independent: Optional[str] = None  # None, "construct" or "site"
    holder: Optional[str] = None       # None, "construct" or "site"
    subclass: bool = False             # built as a project subclass of each family
    delegate: bool = False             # the holder's own method calls the torch method
    cast: bool = False                 # .float() on the parameters and the value
    disabled: bool = False             # autocast(enabled=False) around the computation
    decoy_only: bool = False           # the computation lives only in code that never runs
    positive: str = POSITIVE[0]
    probs: str = "sigmoid"             # log_eps: how probabilities are made

    @property
    def is_dist(self) -> bool:
        return self.kind in DIST_SITES


def plan(rng: random.Random, kind: str, twin: Optional[str], extra: List[str]) -> Tuple[SiteSpec, List[str]]:
    """A spec for `kind`, using the distribution hops in `extra`; returns it and the hop kinds it used."""
    hops: List[str] = []
    source = rng.choice(("forward", "tuple", "helper") + (("dict", "output") if kind in DIST_SITES else ()))
    spec = SiteSpec(kind=kind, source=source, positive=rng.choice(POSITIVE), probs=rng.choice(("sigmoid", "softmax")))
    if spec.is_dist:
        hops.append(f"dist_{source}")
        fam = "Laplace" if rng.random() < 0.3 else "Normal"
        spec.families = (fam,)
        if "dist_rebound" in extra:
            spec.families = ("Normal", "Laplace") if rng.random() < 0.5 else ("Laplace", "Normal")
            hops.append("dist_rebound")
        if "dist_independent" in extra and kind != "cdf":
            spec.independent = rng.choice(("construct", "site"))
            hops.append("dist_independent")
        if "dist_subclass" in extra:
            spec.subclass = True
            hops.append("dist_subclass")
        if "dist_wrapper" in extra:
            spec.holder = rng.choice(("construct", "site"))
            spec.delegate = rng.random() < 0.5
            if spec.holder == "construct" and spec.independent == "site":
                spec.independent = "construct"
            hops.append("dist_wrapper")
    elif source != "forward":
        hops.append(f"params_{source}")
    spec.cast = twin in ("cast", "disabled_cast")
    spec.disabled = twin == "disabled_cast"
    spec.decoy_only = twin == "sibling"
    return spec, hops


@dataclass
class Support:
    """The head class and the helpers the computation uses, with the modules that hold them."""

    head_module: Module
    head: str
    other: str
    dists: Optional[Module] = None
    helper: Optional[str] = None
    holder: Optional[str] = None
    density: Optional[str] = None
    output: Optional[str] = None  # the dataclass a head's forward returns its distribution in
    subclasses: Dict[str, str] = field(default_factory=dict)  # family -> the project subclass built instead
    family_default: Dict[str, str] = field(default_factory=dict)


def _construct(proj: Project, mod: Module, spec: SiteSpec, sup: Support, loc: str, scale: str,
               cond: str, target: str = "d") -> List[str]:
    """Lines that bind `target` to the distribution (two branches when the name is rebound)."""
    if spec.cast:
        loc, scale = f"{loc}.float()", f"{scale}.float()"

    def one(fam: str) -> str:
        cls = proj.ref(mod, sup.dists, sup.subclasses[fam]) if fam in sup.subclasses else proj.dist(mod, fam)
        expr = f"{cls}({loc}, {scale})"
        if spec.independent == "construct":
            expr = f"{proj.dist(mod, 'Independent')}({expr}, 1)"
        if spec.holder == "construct":
            expr = f"{proj.ref(mod, sup.dists, sup.holder)}({expr})"
        return expr

    if len(spec.families) == 1:
        return [f"{target} = {one(spec.families[0])}"]
    first, second = spec.families
    return [f'if {cond} == "{first.lower()}":', f"    {target} = {one(first)}", "else:",
            f"    {target} = {one(second)}"]


def _params(spec: SiteSpec, out: str) -> List[str]:
    """mu/loc and a positive scale from the raw output `out`."""
    return ["loc, raw = " + f"{out}.chunk(2, dim=-1)", "scale = " + spec.positive.format(raw="raw")]


def build_support(proj: Project, spec: SiteSpec, d_in: int, k: int) -> Support:
    """The helper module (when one is needed) and the head module, in import order."""
    rng = proj.rng
    dists: Optional[Module] = None
    needs_dists = spec.source == "helper" or spec.holder or spec.kind == "log_p_class" or spec.subclass
    if needs_dists:
        dists = proj.place(role="dists", docstring=rng.choice((
            "Distributions and densities shared by the heads and the objectives.",
            "Helpers that turn raw network outputs into densities.")))
    head_mod = proj.place(dists, role="heads", docstring=rng.choice((
        "Network heads: small linear maps from features to parameters.", "Model heads.")))
    head = proj.name("GaussHead", "PolicyHead", "DecoderHead", "ActorHead", "OutputHead", "DensityHead")
    other = proj.name("PlainHead", "LinearHead", "ProbeHead", "RegressionHead")
    sup = Support(head_mod, head, other, dists=dists)
    if dists is not None:
        _fill_dists(proj, spec, sup)
    _fill_head(proj, spec, sup, d_in, k)
    return sup


def _fill_dists(proj: Project, spec: SiteSpec, sup: Support) -> None:
    mod = sup.dists
    assert mod is not None
    mod.need("torch")
    for fam in spec.families if spec.subclass else ():
        name = sup.subclasses[fam] = proj.name(f"Squashed{fam}", f"Clipped{fam}", f"Tempered{fam}")
        extra = proj.rng.choice((["        self.low = -1.0"], ["        self.steps = 0"], []))
        mod.add([f"class {name}({proj.dist(mod, fam)}):", f'    """A {fam} with the bookkeeping the agent needs."""',
                 "", "    def __init__(self, loc: torch.Tensor, scale: torch.Tensor) -> None:",
                 "        super().__init__(loc, scale)", *extra])
    if spec.holder:
        sup.holder = proj.name("Posterior", "Belief", "Predictive")
        lines = [f"class {sup.holder}:",
                 '    """Keeps a distribution together with the methods the objectives call on it."""',
                 "", "    def __init__(self, dist) -> None:", "        self.dist = dist"]
        if spec.delegate:
            mark = DECOY if spec.decoy_only else SITE
            body = {
                "log_prob": ["def log_prob(self, x: torch.Tensor) -> torch.Tensor:",
                             f"    return self.dist.log_prob(x){mark}"],
                "entropy": ["def entropy(self) -> torch.Tensor:", f"    return self.dist.entropy(){mark}"],
                "cdf": ["def cdf(self, x: torch.Tensor) -> torch.Tensor:", f"    return self.dist.cdf(x){mark}"],
                "kl_divergence": [f"def kl(self, other: \"{sup.holder}\") -> torch.Tensor:",
                                  f"    return {proj.dist(mod, 'kl_divergence')}(self.dist, other.dist){mark}"],
            }[spec.kind]
            lines += [""] + indent(body)
        mod.add(lines)
    if spec.kind == "log_p_class":
        mod.need("math")
        sup.density = proj.name("DiagGaussian", "GaussianDensity", "NormalDensity")
        mark = DECOY if spec.decoy_only else SITE
        mod.add([f"class {sup.density}:",
                 '    """A diagonal Gaussian written out, for objectives that need only its density."""',
                 "", "    def __init__(self, mu: torch.Tensor, sigma: torch.Tensor) -> None:",
                 "        self.mu = mu", "        self.sigma = sigma", "",
                 "    def log_p(self, x: torch.Tensor) -> torch.Tensor:",
                 "        return -0.5 * ((x - self.mu) / self.sigma) ** 2 - torch.log(self.sigma) - 0.5 * math.log("
                 f"2 * math.pi){mark}"])
    if spec.source == "helper":
        mod.need("F")
        if spec.is_dist:
            sup.helper = proj.name("make_dist", "to_distribution", "build_dist", "dist_from_output")
            default = spec.families[0].lower() if len(spec.families) > 1 else ""
            sig = f"out: torch.Tensor, family: str = \"{default}\"" if default else "out: torch.Tensor"
            body = _params(spec, "out") + _construct(proj, mod, spec, sup, "loc", "scale", "family") + ["return d"]
            mod.add([f"def {sup.helper}({sig}):", '    """Splits the raw output into location and a positive scale."""',
                     *indent(body)])
        elif spec.kind in ("gauss_nll", "log_p_class"):
            sup.helper = proj.name("split_params", "mean_and_scale", "to_params")
            body = ["mu, raw = out.chunk(2, dim=-1)", "return mu, " + spec.positive.format(raw="raw")]
            mod.add([f"def {sup.helper}(out: torch.Tensor):",
                     '    """Location and a positive scale from raw output."""',
                     *indent(body)])
        elif spec.kind == "log_softmax":
            sup.helper = proj.name("to_logits", "tempered")
            mod.add([f"def {sup.helper}(out: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:",
                     '    """Logits at a temperature, so callers can sharpen or flatten them."""',
                     "    return out / temperature"])
        else:
            sup.helper = proj.name("to_probs", "probabilities")
            expr = "torch.sigmoid(out)" if spec.probs == "sigmoid" else "torch.softmax(out, dim=-1)"
            mod.add([f"def {sup.helper}(out: torch.Tensor) -> torch.Tensor:",
                     '    """Probabilities from raw output."""', f"    return {expr}"])


def _fill_head(proj: Project, spec: SiteSpec, sup: Support, d_in: int, k: int) -> None:
    mod = sup.head_module
    mod.need("torch", "nn", "F")
    width = "2 * k" if spec.is_dist or spec.kind in ("gauss_nll", "log_p_class") else "k + 1"
    rebound_here = spec.is_dist and len(spec.families) > 1 and spec.source != "helper"
    init_sig = "self, d_in: int, k: int"
    init = ["super().__init__()", f"self.lin = nn.Linear(d_in, {width})"]
    if rebound_here:
        init_sig += f', family: str = "{spec.families[0].lower()}"'
        init.append("self.family = family")
    if spec.is_dist and spec.source != "helper":
        fwd = ["out = self.lin(h)"] + _params(spec, "out")
        fwd += _construct(proj, mod, spec, sup, "loc", "scale", "self.family")
        if spec.source == "output":
            mod.need("from dataclasses import dataclass")
            sup.output = proj.name("HeadOutput", "Prediction", "ForwardResult")
            mod.add([f"@dataclass\nclass {sup.output}:",
                     '    """What the head returns: the prediction and a summary."""', "",
                     "    dist: object", "    loc: torch.Tensor"])
        fwd.append({"tuple": "return d, loc", "dict": 'return {"dist": d, "loc": loc}',
                    "output": f"return {sup.output}(d, loc)"}.get(spec.source, "return d"))
    elif spec.kind in ("gauss_nll", "log_p_class") and spec.source == "tuple":
        fwd = ["mu, raw = self.lin(h).chunk(2, dim=-1)", "return mu, " + spec.positive.format(raw="raw")]
    elif spec.source == "tuple":
        fwd = ["logits = self.lin(h)", "return logits, logits.argmax(dim=-1)"]
    else:
        fwd = ["return self.lin(h)"]
    mod.add([f"class {sup.head}(nn.Module):", '    """A linear head; its output parameterises the prediction."""', "",
             f"    def __init__({init_sig}) -> None:", *indent(init, 2), "",
             "    def forward(self, h: torch.Tensor):", *indent(fwd, 2)])
    mod.add([f"class {sup.other}(nn.Module):", '    """A point prediction, for tasks without a likelihood."""', "",
             "    def __init__(self, d_in: int, k: int) -> None:", "        super().__init__()",
             "        self.lin = nn.Linear(d_in, k)", "", "    def forward(self, h: torch.Tensor) -> torch.Tensor:",
             "        return self.lin(h)"])


def obtain(proj: Project, mod: Module, spec: SiteSpec, sup: Support, model: str, h: str) -> Tuple[List[str], List[str]]:
    """Lines (in `mod`) that get the computation's inputs from `model(h)`, and the names they bind."""
    if spec.is_dist:
        if spec.kind == "kl_divergence":
            first, names_a = _obtain_dist(proj, mod, spec, sup, model, h, "q")
            second, names_b = _obtain_dist(proj, mod, spec, sup, model, f"{h}.flip(0)", "p")
            return first + second, names_a + names_b
        return _obtain_dist(proj, mod, spec, sup, model, h, "d")
    lines: List[str] = []
    call = f"{model}({h})"
    if spec.kind in ("gauss_nll", "log_p_class"):
        if spec.source == "tuple":
            lines.append(f"mu, sigma = {call}")
        elif spec.source == "helper":
            lines.append(f"mu, sigma = {proj.ref(mod, sup.dists, sup.helper)}({call})")
        else:
            mod.need("F", "torch")
            lines += [f"mu, raw = {call}.chunk(2, dim=-1)", "sigma = " + spec.positive.format(raw="raw")]
        if spec.cast:
            lines.append("mu, sigma = mu.float(), sigma.float()")
        if spec.kind == "log_p_class":
            lines.append(f"dens = {proj.ref(mod, sup.dists, sup.density)}(mu, sigma)")
            return lines, ["dens"]
        return lines, ["mu", "sigma"]
    name = "logits"
    if spec.source == "tuple":
        lines.append(f"logits, _ = {call}")
    elif spec.source == "helper" and spec.kind == "log_eps":
        lines.append(f"p = {proj.ref(mod, sup.dists, sup.helper)}({call})")
        name = "p"
    elif spec.source == "helper":
        lines.append(f"logits = {proj.ref(mod, sup.dists, sup.helper)}({call})")
    else:
        lines.append(f"logits = {call}")
    if spec.cast:
        lines.append(f"{name} = {name}.float()")
    if spec.kind == "log_eps" and name == "logits":
        mod.need("torch")
        expr = "torch.sigmoid(logits)" if spec.probs == "sigmoid" else "torch.softmax(logits, dim=-1)"
        lines.append(f"p = {expr}")
        name = "p"
    return lines, [name]


def _obtain_dist(proj: Project, mod: Module, spec: SiteSpec, sup: Support, model: str, h: str,
                 name: str) -> Tuple[List[str], List[str]]:
    rng = proj.rng
    call = f"{model}({h})"
    if spec.source == "tuple":
        lines = [rng.choice((f"{name}, _ = {call}", f"{name} = {call}[0]"))]
    elif spec.source in ("dict", "output"):
        read = '["dist"]' if spec.source == "dict" else ".dist"
        lines = [f"{name} = {call}{read}"] if rng.random() < 0.5 else [f"out = {call}", f"{name} = out{read}"]
    elif spec.source == "helper":
        helper = proj.ref(mod, sup.dists, sup.helper)
        lines = [f"{name} = {helper}({call})"] if rng.random() < 0.5 else [f"out = {call}", f"{name} = {helper}(out)"]
    else:
        lines = [f"{name} = {call}"]
    if spec.independent == "site":
        lines.append(f"{name} = {proj.dist(mod, 'Independent')}({name}, 1)")
    if spec.holder == "site":
        lines.append(f"{name} = {proj.ref(mod, sup.dists, sup.holder)}({name})")
    return lines, [name]


def compute(proj: Project, mod: Module, spec: SiteSpec, vals: Dict[str, str], x: str, mark: str) -> List[str]:
    """The computation itself, ending in a return; `mark` tags the line that calls the torch op."""
    value = f"{x}.float()" if spec.cast else x
    inner = "" if (spec.holder and spec.delegate) or spec.kind == "log_p_class" else mark
    if spec.is_dist:
        if spec.kind == "kl_divergence":
            q, p = vals["q"], vals["p"]
            if spec.holder and spec.delegate:
                expr = f"{q}.kl({p})"
            elif spec.holder:
                expr = f"{proj.dist(mod, 'kl_divergence')}({q}.dist, {p}.dist)"
            else:
                expr = f"{proj.dist(mod, 'kl_divergence')}({q}, {p})"
        else:
            d = vals["d"] + (".dist" if spec.holder and not spec.delegate else "")
            arg = "" if spec.kind == "entropy" else value
            expr = f"{d}.{spec.kind}({arg})"
        stmt, result = f"value = {expr}", proj.rng.choice(("value.mean()", "-value.mean()"))
    elif spec.kind == "gauss_nll":
        mod.need("torch", "math")
        mu, sigma = vals["mu"], vals["sigma"]
        stmt = (f"nll = 0.5 * (({value} - {mu}) / {sigma}) ** 2 + torch.log({sigma}) + 0.5 * math.log(2 * math.pi)")
        result = "nll.sum(-1).mean()"
    elif spec.kind == "log_p_class":
        stmt, result = f"value = {vals['dens']}.log_p({value})", "-value.mean()"
    elif spec.kind == "log_softmax":
        mod.need("torch")
        stmt, result = f"logp = torch.log(torch.softmax({vals['logits']}, dim=-1))", "-logp.mean()"
    else:
        mod.need("torch")
        stmt, result = f"logp = torch.log({vals['p']} + 1e-10)", "-logp.mean()"
    if spec.disabled:
        mod.need("torch")
        return ['with torch.autocast("cpu", enabled=False):', f"    {stmt}{inner}", f"return {result}"]
    return [f"{stmt}{inner}", f"return {result}"]


def plain(spec: SiteSpec, vals: Dict[str, str], x: str) -> List[str]:
    """A computation on the same inputs with no probability in it (a squared error)."""
    if spec.is_dist:
        suffix = ".dist" if spec.holder else ""
        if spec.kind == "kl_divergence":
            return [f"return ({vals['q']}{suffix}.mean - {vals['p']}{suffix}.mean).pow(2).mean()"]
        return [f"return ({vals['d']}{suffix}.mean - {x}).pow(2).mean()"]
    if spec.kind == "gauss_nll":
        return [f"return ({vals['mu']} - {x}).pow(2).mean()"]
    if spec.kind == "log_p_class":
        return [f"return ({vals['dens']}.mu - {x}).pow(2).mean()"]
    name = vals.get("logits") or vals["p"]
    return [f"return {name}.pow(2).mean()"]
