"""`generate(seed, dest)`: one small multi-file PyTorch project, the same for the same seed.

Choices are drawn, in a fixed order, from one `random.Random(seed)`: the
computation, the region spelling, whether (and how) the project is built so
that nothing runs in float16, and 1-4 optional hops. The project is then built
from the computation outwards: helpers and head, the host of the computation,
the layers of calls, the model's construction, and the script with the region.
"""
from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Iterable, List, Optional

from . import calls, models, regions, units
from .codegen import MIN_MODULES, Project
from .meta import CALL_HOPS, DIST_SITES, MODEL_HOPS, REGION_KINDS, SITE_KINDS, TWIN_KINDS, ProjectMeta
from .sites import build_support, plan

SAFE_SHARE = 0.4
LOOKUPS = ("model_registry", "model_getattr", "model_importlib", "model_reexport", "model_config")
INHERIT = ("call_inherit", "call_mixin")
CONFIG_NAMES = ("config", "settings", "hparams")


def choose_hops(rng: random.Random, site: str, twin: Optional[str]) -> List[str]:
    """1-4 distinct optional hops, at most one class lookup and one kind of inheritance."""
    pool = list(MODEL_HOPS + CALL_HOPS) + ["dist_attr_method"]
    if site in DIST_SITES:
        pool += ["dist_wrapper", "dist_rebound", "dist_subclass"] + ([] if site == "cdf" else ["dist_independent"])
    chosen: List[str] = []
    want = rng.randint(1, 4)
    while len(chosen) < want:
        kind = rng.choice(pool)
        clash = (kind in chosen or (kind in LOOKUPS and any(k in LOOKUPS for k in chosen))
                 or (kind in INHERIT and any(k in INHERIT for k in chosen)))
        if not clash:
            chosen.append(kind)
    if twin == "sibling" and not any(k in INHERIT for k in chosen):
        kind = rng.choice(INHERIT)
        if len(chosen) == 4:
            chosen[rng.randrange(4)] = kind
        else:
            chosen.append(kind)
    return chosen


def generate(seed: int, dest: Path) -> ProjectMeta:
    """Writes the project for `seed` under `dest` (created) and returns what was built."""
    rng = random.Random(seed)
    site = rng.choice(SITE_KINDS)
    region = rng.choice(REGION_KINDS)
    twin = rng.choice(TWIN_KINDS) if rng.random() < SAFE_SHARE else None
    chosen = choose_hops(rng, site, twin)
    proj = Project(rng, dist_style=rng.choice(("from", "alias", "full")))
    proj.run.docstring = rng.choice(("One training step on random data.",
                                     "Runs a single step of the model on the CPU."))
    sizes = regions.Sizes(batch=rng.choice((8, 16, 32, 64)), d_in=rng.randint(4, 32), k=rng.randint(1, 4),
                          seed=rng.randrange(10_000))
    hops: List[str] = []
    spec, used = plan(rng, site, twin, chosen)
    hops += used
    sup = build_support(proj, spec, sizes.d_in, sizes.k)
    wrapper = models.wrapper_class(proj) if "model_wrapper" in chosen else None

    inherit = next((k for k in chosen if k in INHERIT), None)
    attr = "dist_attr_method" in chosen
    if inherit or attr or twin == "sibling" or rng.random() < 0.3:
        decoy = twin == "sibling" or (inherit is not None and rng.random() < 0.25)
        call = units.class_unit(proj, spec, sup, attr=attr, inherit=inherit, decoy=decoy)
        hops += [k for k in (inherit, "dist_attr_method" if attr else None) if k]
    else:
        call = units.function_unit(proj, spec, sup)

    layers = [k for k in chosen if k in calls.LAYERS]
    rng.shuffle(layers)
    model_cls = wrapper or (sup.head_module, sup.head)
    for kind in layers:
        call = calls.layer(proj, kind, call, model_cls, hops)

    names = ("D_IN", "N_OUT", "BATCH")
    values = (sizes.d_in, sizes.k, sizes.batch)
    if len(proj.modules) < MIN_MODULES:
        cfg = proj.new_module("Sizes shared by the script and the package.", name=rng.choice(CONFIG_NAMES))
        cfg.add([f"{n} = {v}" for n, v in zip(names, values)])
        consts = tuple(proj.ref(proj.run, cfg, n) for n in names)
    else:
        proj.run.add([f"{n} = {v}" for n, v in zip(names, values)])
        consts = names
    construct = models.build(proj, sup, set(chosen), wrapper, consts[0], consts[1], hops)
    regions.build(proj, region, twin, call, construct, sizes, consts)  # type: ignore[arg-type]

    files, sites, decoys = proj.render()
    files["pyproject.toml"] = f'[project]\nname = "{proj.package}-experiments"\nversion = "0.1.0"\n'
    dest.mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ProjectMeta(seed=seed, package=proj.package, modules=[m.path for m in proj.modules], hops=sorted(set(hops)),
                       region=region, site=site, twin=twin, sites=sites, decoys=decoys, files=files)


def digest(seeds: Iterable[int], root: Path) -> str:
    """One hash of every file the seeds write under `root`, read back from disk (for determinism checks)."""
    h = hashlib.sha256()
    for seed in seeds:
        folder = root / f"p{seed}"
        generate(seed, folder)
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()
