"""Measure every torch.distributions class under each device's float16 autocast policy.

    python -m amplint.verify.hazard_script              # rewrite amplint/data/hazards.json
    python -m amplint.verify.hazard_script --check      # exit 1 if a fresh run differs from it
    python -m amplint.verify.hazard_script --batch 65536 --out /tmp/h.json   # the nightly size

Why a script and stored data: `amplint check` gives each finding a `risk` for
its region's device (amplint/risk.py), and the linter must not need torch, so
the measurements are made here, once, and shipped as package data.

Each row is one computation (class, method, how the parameters come out of
the model, input regime) built exactly as `amplint verify` builds a finding:
parameters are float16 outputs of a Linear inside the region, then the
head's transform (exp, softplus, 1e-3 * sigmoid, sigmoid/softmax for
probabilities) runs inside the region too; regimes are verify's recipes
(amplint/verify/recipes.py). Each row runs under CPU float16 autocast and
under CUDA's policy (real CUDA when present, else the emulation), and
records the non-finite counts where the float64 reference is finite, the
max error elsewhere (absolute, and relative to the reference: `relative_error`),
and which arithmetic ops ran in float16.

Deterministic: fixed seeds, one thread; the bad fraction does not depend on
the batch size (verify's measurement), so CI uses a small batch.
Nothing here is imported by the linter.
"""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import sys
import warnings
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from amplint.model import ArgSpec, DistSpec, SiteSpec  # noqa: E402
from amplint.risk import VALUE_CAST  # noqa: E402
from amplint.verify.devices import CPU, CUDA, CUDA_EMULATED, Device, emulation_limit, to_host  # noqa: E402
from amplint.verify.inputs import Synthesis, synthesize  # noqa: E402
from amplint.verify.recipes import GENERIC, Recipe, constraint_kind, generic_sampler, recipes_for  # noqa: E402
from amplint.verify.resolve import SitePlan, arg_constraints_of, plan_site  # noqa: E402
from amplint.verify.runner import ORIGINAL, capped_rows, compute, make_heads, run_version  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data" / "hazards.json"
BATCH, SEED = 4096, 0
METHODS = ("log_prob", "entropy", "cdf", "icdf", "kl_divergence")
POSITIVE_TRANSFORMS = ("exp", "softplus", "1e-3*sigmoid")
TRANSFORM_CODE = {"exp": "torch.exp({})", "softplus": "torch.nn.functional.softplus({})",
                  "1e-3*sigmoid": "1e-3 * torch.sigmoid({})"}
SCALE_WORDS = ("scale", "std", "sigma")
# Arguments that are not tensors in real code: literal values, as the analysis records them.
LITERALS = {"temperature": "0.5", "dim": "4", "total_count": "10.0", "reinterpreted_batch_ndims": "1"}
# Ops that move or view data without arithmetic: not counted as "ran in float16".
NO_ARITHMETIC = frozenset({
    "view", "_unsafe_view", "expand", "clone", "detach", "alias", "slice", "select", "unsqueeze", "squeeze",
    "t", "transpose", "permute", "reshape", "_to_copy", "copy_", "fill_", "lift_fresh", "empty_like",
    "zeros_like", "ones_like", "full_like", "new_empty", "new_zeros", "new_ones", "new_full", "index",
    "gather", "cat", "stack", "split", "split_with_sizes", "unbind", "diagonal", "diag_embed", "as_strided",
    "expand_as", "where", "masked_fill", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite",
    "scalar_tensor", "empty", "zeros", "ones", "full", "_local_scalar_dense", "sign", "unfold", "clamp",
    "clamp_min", "clamp_max", "max", "min", "amax", "amin", "argmax", "argmin", "abs", "neg", "floor", "ceil",
})


class Float16Ops(TorchDispatchMode):
    """Records the arithmetic aten ops whose output is float16 (what can overflow or underflow)."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: set = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if name not in NO_ARITHMETIC and any(isinstance(o, torch.Tensor) and o.dtype == torch.float16
                                             for o in outs):
            self.ops.add(name.rstrip("_"))
        return out


# --- what to measure -----------------------------------------------------------------------------------

def _arg(name: str, code: str, literal: bool = False) -> ArgSpec:
    return ArgSpec(name, None, code, False, literal)


def _param_code(param: str, kind: str, positive: str) -> str:
    head = f"{param}_head"
    if kind == "positive":
        transform = positive if positive != "1e-3*sigmoid" or any(w in param for w in SCALE_WORDS) else "exp"
        return TRANSFORM_CODE[transform].format(head)
    if kind == "unit":
        return f"torch.sigmoid({head})"
    if kind == "simplex":
        return f"torch.softmax({head}, -1)"
    return head


def _simple_spec(cls: type, positive: str, probs: str) -> Optional[DistSpec]:
    """A constructor call the way a model head writes it, or None when no tensor parameter is left."""
    constraints = arg_constraints_of(cls)
    params = [p for p in inspect.signature(cls.__init__).parameters.values()
              if p.name not in ("self", "validate_args") and p.kind is not p.VAR_KEYWORD]
    names = {p.name for p in params}
    args: List[ArgSpec] = []
    for p in params:
        if p.name in LITERALS and (p.default is inspect.Parameter.empty or p.name == "total_count"):
            args.append(_arg(p.name, LITERALS[p.name], literal=True))
        elif p.name in ("probs", "logits"):
            if p.name == probs or (probs not in names and p.name == "logits"):
                args.append(_arg(p.name, _param_code(p.name, constraint_kind(constraints[p.name])[0], positive)))
        elif p.name in ("covariance_matrix", "precision_matrix"):
            continue  # scale_tril is the parametrisation heads produce
        elif p.name in constraints and (p.default is inspect.Parameter.empty or p.default is None
                                        or isinstance(p.default, float)):
            args.append(_arg(p.name, _param_code(p.name, constraint_kind(constraints[p.name])[0], positive)))
        elif p.default is inspect.Parameter.empty:
            return None  # a required argument that is neither a tensor parameter nor a known literal
    return DistSpec(f"torch.distributions.{cls.__name__}", tuple(args)) if args else None


def _composite_specs(name: str, positive: str) -> Optional[DistSpec]:
    normal = _simple_spec(torch.distributions.Normal, positive, "logits")
    assert normal is not None
    if name == "Independent":
        return DistSpec("torch.distributions.Independent", (_arg("reinterpreted_batch_ndims", "1", True),), (normal,))
    if name == "MixtureSameFamily":
        categorical = DistSpec("torch.distributions.Categorical", (_arg("logits", "logits_head"),))
        return DistSpec("torch.distributions.MixtureSameFamily", (), (categorical, normal))
    return None


def distribution_classes() -> List[type]:
    td = torch.distributions
    abstract = (td.Distribution, td.ExponentialFamily)
    return [c for c in (getattr(td, n) for n in td.__all__)
            if inspect.isclass(c) and issubclass(c, td.Distribution) and c not in abstract]


def positional_params(cls: type) -> List[str]:
    """The constructor's positional parameter names: amplint.risk binds `Normal(mu, sigma)` with them."""
    return [p.name for p in inspect.signature(cls.__init__).parameters.values()
            if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _has_kl(cls: type) -> bool:
    from torch.distributions.kl import _KL_REGISTRY

    return (cls, cls) in _KL_REGISTRY


@dataclasses.dataclass(frozen=True)
class Case:
    dist: str
    method: str
    params: str  # how the parameters are made, e.g. "loc=loc_head, scale=torch.exp(scale_head)"
    spec: Optional[SiteSpec]
    skip: Optional[str] = None  # why there is no measurement
    value_cast: bool = False  # the value is cast to float32 (`log_prob(y.float())`, float32 data): a row of its own


def _variants(cls: type) -> List[Tuple[str, str]]:
    """(positive transform, probs-or-logits) pairs that give different constructor calls."""
    constraints = arg_constraints_of(cls)
    kinds = {constraint_kind(c)[0] for c in constraints.values()}
    positives = POSITIVE_TRANSFORMS if "positive" in kinds or cls.__name__ in ("Independent", "MixtureSameFamily") \
        else ("exp",)
    probs = ("logits", "probs") if "logits" in constraints and "probs" in constraints else ("logits",)
    return [(pos, prob) for pos in positives for prob in probs]


def cases(only: Sequence[str] = ()) -> Iterator[Case]:
    """Every (class, method, parameter variant) the table covers, skips included with their reason."""
    for cls in distribution_classes():
        name = cls.__name__
        if only and name not in only:
            continue
        seen = set()
        for positive, probs in _variants(cls):
            dist = _composite_specs(name, positive) or _simple_spec(cls, positive, probs)
            if dist is None:
                for method in METHODS:
                    yield Case(name, method, "", None, "its constructor takes no tensor a model head produces")
                break
            params = ", ".join(f"{a.name}={a.code}" for a in dist.args) + "".join(
                f"; {c.qualname.rsplit('.', 1)[1]}({', '.join(f'{a.name}={a.code}' for a in c.args)})"
                for c in dist.components)
            if params in seen:
                continue
            seen.add(params)
            for method in METHODS:
                if method == "kl_divergence":
                    if not _has_kl(cls):
                        if (positive, probs) == _variants(cls)[0]:
                            yield Case(name, method, params, None, "torch registers no KL for this pair")
                        continue
                    spec = SiteSpec(method, (dist, dist), ())
                elif method != "entropy":  # the value as a head makes it, and cast to float32
                    head = _arg(None, "value_head")  # type: ignore[arg-type]
                    yield Case(name, method, params, SiteSpec(method, (dist,), (head,)))
                    spec = SiteSpec(method, (dist,), (ArgSpec(None, None, "value_head.float()", True, False),))
                    yield Case(name, method, params, spec, value_cast=True)
                    continue
                else:
                    spec = SiteSpec(method, (dist,), ())
                yield Case(name, method, params, spec)


# --- measuring -----------------------------------------------------------------------------------------

def devices() -> List[Device]:
    cuda_like = CUDA if torch.cuda.is_available() else CUDA_EMULATED
    return [dataclasses.replace(CPU, measures_grads=False), cuda_like]


def _recipes(plan: SitePlan) -> Tuple[Recipe, ...]:
    return recipes_for(plan.dists[0].cls) if plan.method != "icdf" else (GENERIC,)


def _transforms(plan: SitePlan) -> dict:
    """parameter -> the head transform the row applies ("exp", "sigmoid", "" for none): what risk matches on."""
    out = {}
    for dist in plan.dists[:1]:
        for owner in [dist] + [component for _, component in dist.components]:
            for arg in owner.tensors:
                kinds = [s.kind for s in arg.chain.steps if s.kind not in ("cast", "scale", "shift")]
                out[arg.param] = kinds[-1] if kinds else ""
    return out


def _reachable(plan: SitePlan, recipe: Recipe) -> bool:
    """False when a bounded transform (1e-3 * sigmoid) cannot make the regime's parameter values."""
    for dist in plan.dists:
        for arg in dist.tensors:
            bounded = [s.constant for s in arg.chain.steps if s.kind == "scale"]
            if not bounded or not any(s.kind == "sigmoid" for s in arg.chain.steps):
                continue
            constraint = arg_constraints_of(dist.cls)[arg.param]
            sampler = recipe.params.get(arg.param) or generic_sampler(arg.param, constraint)
            if sampler is None:
                continue
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(0)
                if float(sampler((256,), {}).max()) > bounded[0]:
                    return False
    return True


def _round(value: Optional[float]) -> Optional[float]:
    return None if value is None else float(f"{value:.3g}")


def measure(case: Case, batch: int, seed: int) -> List[dict]:
    """One row per input regime of `case`, each with a cell per device; [] and a reason when not runnable."""
    assert case.spec is not None
    plan = plan_site(case.spec)
    if not isinstance(plan, SitePlan):
        return [_skip_row(case, plan.reason)]
    low = torch.float16
    rows = []
    for recipe in _recipes(plan):
        if not _reachable(plan, recipe):
            continue
        n = capped_rows(plan, recipe, batch, low)
        synthesis = synthesize(plan, recipe, n, seed, low)
        if not hasattr(synthesis, "heads"):
            rows.append(_skip_row(case, synthesis.reason, recipe.name))  # type: ignore[union-attr]
            continue
        if isinstance(synthesis.reference, str):
            reason = synthesis.reference.split(":")[0]
            rows.append(_skip_row(case, f"the float64 reference raised {reason}: {synthesis.reference[:120]}",
                                  recipe.name))
            continue
        row = {"dist": case.dist, "method": case.method, "params": case.params, "regime": recipe.name, "rows": n,
               "transforms": _transforms(plan)}
        if case.value_cast:
            row["value"] = VALUE_CAST
        for device in devices():
            with device.session():
                heads = make_heads(synthesis, device, low)
                tracer = Float16Ops()
                with tracer:
                    result = run_version(plan, synthesis, heads, device, ORIGINAL, low, False)
                relative = None if result.error else relative_error(plan, synthesis, heads, device, low)
            row[device.name] = {
                "dtype": result.dtype, "neg_inf": result.neg_inf, "pos_inf": result.pos_inf, "nan": result.nan,
                "max_abs_error": _round(result.max_abs_error), "max_rel_error": _round(relative),
                "error": result.error,
                "emulation_limit": emulation_limit(device, result.error),
                "float16_ops": sorted(tracer.ops),
            }
        rows.append(row)
    return rows


def relative_error(plan: SitePlan, synthesis: Synthesis, heads: Dict[str, torch.Tensor], device: Device,
                   low: torch.dtype) -> Optional[float]:
    """The largest |result - float64 reference| / max(|reference|, 1) over the entries finite in both.

    Why: a `low` risk's absolute error reads as a contradiction next to its level (1.6e+02 on a log-density
    of -1e5 is 1.6e-3 of it); relative to the value it is float16's rounding, or more. Values under 1 in
    magnitude count their error as is, so a log-density near 0 does not divide by almost nothing. The
    computation runs again, as `run_version` ran it, outside the op tracer: the same kernels, the same output.
    """
    reference = synthesis.reference
    if not isinstance(reference, torch.Tensor):
        return None
    try:
        with torch.no_grad(), device.autocast(True, low):
            out = compute(plan, heads, synthesis.heads, ORIGINAL.casts)
    except Exception:  # run_version ran it without raising: not expected, and no error to quote then
        return None
    values = to_host(out).double()
    if values.shape != reference.shape:
        return None
    both = torch.isfinite(reference) & torch.isfinite(values)
    if not bool(both.any()):
        return None
    wanted = reference[both]
    return float(((values[both] - wanted).abs() / wanted.abs().clamp(min=1.0)).max())


def _skip_row(case: Case, reason: str, regime: Optional[str] = None) -> dict:
    return {"dist": case.dist, "method": case.method, "params": case.params, "regime": regime, "skipped": reason}


def build_table(batch: int = BATCH, seed: int = SEED, only: Sequence[str] = ()) -> dict:
    """The whole table (or the classes in `only`), as stored in amplint/data/hazards.json."""
    torch.set_num_threads(1)  # float16 reductions: one summation order, the same counts everywhere
    rows: List[dict] = []
    for case in cases(only):
        if case.spec is None:
            rows.append(_skip_row(case, case.skip or "not measured"))
        elif case.method in ("cdf", "icdf", "entropy") and not _implements(case):
            if not case.value_cast:  # its twin with the value as a head says so
                rows.append(_skip_row(case, f"torch's {case.dist} does not implement {case.method}"))
        else:
            try:
                measured = measure(case, batch, seed)
            except Exception as exc:  # one class the machinery cannot build must not stop the table
                measured = [_skip_row(case, f"the run raised {type(exc).__name__}: {str(exc)[:120]}")]
            rows.extend(row for row in measured if not (case.value_cast and "skipped" in row))
    return {
        "torch": torch.__version__.split("+")[0],
        "batch": batch,
        "seed": seed,
        "command": "python -m amplint.verify.hazard_script" + (f" --batch {batch}" if batch != BATCH else ""),
        "devices": [device.name for device in devices()],
        "positional": {cls.__name__: positional_params(cls) for cls in distribution_classes()
                       if not only or cls.__name__ in only},
        "rows": rows,
    }


def _implements(case: Case) -> bool:
    cls = getattr(torch.distributions, case.dist)
    method = getattr(cls, case.method, None)
    return method is not None and method is not getattr(torch.distributions.Distribution, case.method)


def dumps(table: dict) -> str:
    return json.dumps(table, indent=1, sort_keys=True) + "\n"


def _cell(rows: List[dict], column: str) -> str:
    """The worst measured row of a (class, method) for one device: `532 / 4,096 -inf` or `finite`."""
    def bad(row: dict) -> int:
        cell = row[column]
        return cell["neg_inf"] + cell["pos_inf"] + cell["nan"]

    if all(row[column].get("emulation_limit") for row in rows):
        return "not emulated"
    rows = [row for row in rows if not row[column].get("emulation_limit")]
    raised = [row for row in rows if row[column]["error"]]
    if raised:
        return f"raises {raised[0][column]['error'].split(':')[0]}"
    worst = max(rows, key=lambda row: bad(row) / row["rows"])
    if not bad(worst):
        return "finite"
    cell = worst[column]
    kinds = "/".join(k for k, key in (("-inf", "neg_inf"), ("+inf", "pos_inf"), ("NaN", "nan")) if cell[key])
    return f"**{bad(worst):,} / {worst['rows']:,}** {kinds} ({_short_params(worst['params'])})"


def _short_params(params: str) -> str:
    for code, short in (("torch.nn.functional.softplus", "softplus"), ("torch.", ""), ("_head", "")):
        params = params.replace(code, short)
    return params


def _ops(rows: List[dict], column: str) -> str:
    ops = sorted({op for row in rows for op in row[column]["float16_ops"]})
    return ", ".join(ops) if ops else "none"


def markdown(table: dict) -> str:
    """One line per (class, method): the worst regime per device, and the ops that ran in float16."""
    columns = table["devices"]
    head = ["class", "method", "regimes"] + [f"{c}: worst non-finite" for c in columns] + \
        [f"{c}: float16 ops" for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    groups: dict = {}
    for row in table["rows"]:
        method = row["method"] + (f" (value {row['value']})" if "value" in row else "")
        groups.setdefault((row["dist"], method), []).append(row)
    skipped = []
    for (dist, method), rows in groups.items():
        measured = [row for row in rows if "skipped" not in row]
        if not measured:
            skipped.append(f"{dist}.{method}: {rows[0]['skipped']}")
            continue
        cells = [dist, method, str(len(measured))] + [_cell(measured, c) for c in columns] + \
            [_ops(measured, c) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Not measured: " + "; ".join(skipped) + ".")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--only", default="", help="comma-separated class names (default: every class)")
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--check", action="store_true", help="compare with --out instead of writing it")
    parser.add_argument("--markdown", action="store_true", help="print --out as a markdown summary; measure nothing")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(args.out.read_text(encoding="utf-8"))))
        return 0
    only = tuple(name for name in args.only.split(",") if name)
    table = build_table(args.batch, args.seed, only)
    if not args.check:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(dumps(table), encoding="utf-8")
        print(f"wrote {len(table['rows'])} rows to {args.out}")
        return 0
    stored = json.loads(args.out.read_text(encoding="utf-8"))
    stored_rows = [row for row in stored["rows"] if not only or row["dist"] in only]
    if stored_rows == table["rows"] and stored["batch"] == table["batch"]:
        print(f"{len(stored_rows)} rows match {args.out}")
        return 0
    print(f"{args.out} differs from a fresh run", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
