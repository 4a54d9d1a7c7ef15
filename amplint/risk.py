"""How likely a finding is to produce -inf/NaN on its region's device, from measurements.

Why: the same `Normal(mu, sigma).log_prob(x)` on float16 heads gives -inf
under CPU float16 autocast and stays finite under CUDA's, which runs
`pow`, `log` and `exp` in float32 (amplint/policies.py); `Laplace` with a
`1e-3 * sigmoid` scale gives -inf under both. The answer comes from the
table `python -m amplint.verify.hazard_script` measured with torch and
stored in amplint/data/hazards.json, so the linter reads it without torch.

Levels: `high` — some measured regime of this computation (class, method,
parameter transforms) has non-finite values or raises under this device's
policy; `low` — every measured regime is finite under it (the message gives
the largest error relative to the float64 value, then the absolute one);
`unknown` — the device or dtype is not a literal, or the class/method is not
in the table, or the distribution is built out of sight. A project's subclass
of a measured class (`class TightLaplace(Laplace)`) is measured as that class
when the project's classes between them redefine neither the method nor
`__init__`: it then computes exactly what was measured.
Hand-written math is not in the table: its risk comes from the device's op
lists (`low` where the policy runs every op that loses range in float32),
else from float16 emulated on probe activations up to ±20
(amplint/facts/probes.py: `high` when some value is non-finite or off by
more than 1%, `low` when none is), else it is `unknown`.
A region with autocast disabled (AMP002) computes on float16 inputs with no
op promoted, which is what the CPU policy measures, whatever the device.
"""
from __future__ import annotations

import functools
import json
from dataclasses import replace
from importlib import resources
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from amplint.facts.probes import ENVELOPE
from amplint.model import ArgSpec, DistSpec, Finding, Precision, Probed, Risk, SiteSpec

LEVELS = ("unknown", "low", "high")
# --min-risk's order: low < high. `unknown` is on no rung of it (nothing measured applies, so the computation may
# well be high): a threshold keeps unknown findings, and `--hide-unknown` drops them.
MEASURED_ORDER = ("low", "high")
DEVICES = ("cuda", "cpu")
TRANSFORM_KINDS = ("exp", "softplus", "sigmoid", "softmax", "log_softmax")
UNSEEN = "the distribution is built where the analysis cannot see it"  # check's words, and verify's
# A measured row's `value` when its value was cast to float32 (`log_prob(y.float())`); a row without one
# measured a float16 value out of a head (`amplint.verify.hazard_script`).
VALUE_CAST = "float32"


@functools.lru_cache(maxsize=1)
def load_table() -> Dict[str, object]:
    """The stored hazard table (package data)."""
    text = resources.files("amplint").joinpath("data/hazards.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.lru_cache(maxsize=1)
def _index() -> Dict[Tuple[str, str], List[dict]]:
    """Measured rows by (class, method)."""
    index: Dict[Tuple[str, str], List[dict]] = {}
    for row in load_table()["rows"]:  # type: ignore[index]
        index.setdefault((row["dist"], row["method"]), []).append(row)
    return index


def _transform(code: str) -> str:
    """The head transform an argument applies ("exp", "sigmoid", "" for a head used as is)."""
    from amplint.transforms import parse_chain  # ast only: no torch

    kinds = [step.kind for step in parse_chain(code).steps if step.kind in TRANSFORM_KINDS]
    return kinds[-1] if kinds else ""


def _finding_transforms(site: SiteSpec, name: str) -> Dict[str, str]:
    """param -> transform for the arguments of the finding's first constructor (positions bound by the
    parameters of `name`, the class measured for it)."""
    positional = load_table().get("positional", {}).get(name, [])  # type: ignore[union-attr]
    out = {}
    for arg in _args(site):
        param = arg.name
        if param is None and arg.position is not None and arg.position < len(positional):
            param = positional[arg.position]
        if param is not None and not arg.cast and not arg.literal:
            out[param] = _transform(arg.code)
    return out


def _args(site: SiteSpec) -> Sequence[ArgSpec]:
    return site.dists[0].args if site.dists else ()


def _matching(rows: List[dict], site: SiteSpec, name: str) -> List[dict]:
    """The rows built the way the finding's constructor is (same transform on every named parameter)."""
    wanted = _finding_transforms(site, name)
    if not wanted:
        return rows
    chosen = [row for row in rows if all(row["transforms"].get(p) == t for p, t in wanted.items())]
    return chosen or rows


# The table measures `torch.distributions`; hand-written math (`amplint.facts.mathsites`) is not in it.
DISTRIBUTION_METHODS = frozenset({"log_prob", "cdf", "icdf", "entropy", "kl_divergence"})
HANDWRITTEN = {
    "": "hand-written math: the measured table covers torch.distributions only",
    "epsilon": "the floor is 0 in float16 whatever the device (an add or clamp runs in its inputs' dtype); "
               "the measured table covers torch.distributions only",
}


def _unknown(reason: str, device: Optional[str] = None) -> Risk:
    return Risk("unknown", device, reason)


def assess(finding: Finding) -> Risk:
    """The finding's risk on its region's device (see the module docstring for the levels)."""
    region, site = finding.region, finding.site
    if region is None or site is None:
        return _unknown("no autocast region or computation recorded")
    if region.enabled and region.precision is not Precision.FLOAT16:
        return _unknown("the region's dtype is not a literal float16", region.device)
    device = (region.device or "").split(":", 1)[0]
    if device not in DEVICES:
        return _unknown("the region's device is not a literal", region.device)
    if site.method not in DISTRIBUTION_METHODS:
        reached = next((d for d in site.reached if d.device == device), None)  # no region of its own
        if (site.spared or reached is not None and reached.spared) and region.enabled:
            return Risk("low", device, f"{device.upper()} autocast runs every range-losing op of it in float32 "
                        "(read from its op lists, amplint/policies.py; not measured)")
        probed = site.probed or (reached.probed if reached is not None else None)
        if probed is not None and region.enabled:
            return _probed(probed, device, reached is not None and site.probed is None)
        return _unknown(HANDWRITTEN.get(site.method, HANDWRITTEN[""]), device)
    if not site.dists:
        return _unknown(UNSEEN, device)
    classes = {spec.qualname.rsplit(".", 1)[-1] for spec in site.dists}
    name = site.dists[0].qualname.rsplit(".", 1)[-1]
    if len(classes) != 1:
        return _unknown(f"the value may be one of {', '.join(sorted(classes))} (one per branch)", device)
    qualname, through = measured_as(site.dists[0], site.method)
    if not qualname.startswith("torch.distributions."):
        return _unknown(f"{through}: not measured" if through else f"{name}.{site.method} is not in the measured table",
                        device)
    measured = qualname.rsplit(".", 1)[-1]
    rows = _value_rows([row for row in _index().get((measured, site.method), []) if "skipped" not in row], site)
    if not rows:
        return _unknown(f"{measured}.{site.method} is not in the measured table", device)
    column = _column(device, region.enabled)
    rows = [row for row in _matching(rows, site, measured) if not row[column].get("emulation_limit")]
    if not rows:
        return _unknown(f"the CUDA-policy emulation cannot run {measured}.{site.method} on a CPU build", device)
    risk = _judge(rows, column, device, not region.enabled)
    return replace(risk, detail=f"{through}: {risk.detail}") if through else risk


def _value_rows(rows: List[dict], site: SiteSpec) -> List[dict]:
    """The rows measured with the value as the site has it: cast to float32 where every value argument is,
    else a float16 value out of a head (what an uncast one may be). A cast value can undo the hazard:
    `Laplace.log_prob` divides `|value - loc|` by the scale in float32 then."""
    cast = bool(site.values) and all(value.cast for value in site.values)
    return [row for row in rows if (row.get("value") == VALUE_CAST) == cast]


def measured_as(spec: DistSpec, method: str) -> Tuple[str, str]:
    """The class whose measurements stand for `spec`'s `method`: its own, or, for a project subclass that
    leaves the method and the constructor as its library base computes them, that base (with the words that
    say so); for one that redefines either, "" and which it redefines."""
    derived = spec.derived
    if derived is None or not derived.base:
        return spec.qualname, ""
    name, base = spec.qualname.rsplit(".", 1)[-1], derived.base.rsplit(".", 1)[-1]
    changed = [m for m in ("__init__", method) if m in derived.defines]
    if changed:
        redefined = " and ".join(f"`{m}`" for m in changed)
        return "", f"the project's classes from {name} to {base} redefine {redefined}"
    return derived.base, f"measured as {base}, whose `{method}` and `__init__` {name} keeps"


def _probed(probed: Probed, device: str, reached: bool = False) -> Risk:
    """Hand-written math judged by float16 on the probe activations (amplint/facts/probes.py). `reached`: in a
    function a region elsewhere enters, whose parameters are taken as that region's activations."""
    given = ", its parameters taken as the region's activations" if reached else ""
    where = (f"on activations up to ±{ENVELOPE:g}{given} under {device.upper()} autocast's policy (float16 emulated "
             "on probes, amplint/facts/probes.py; not measured)")
    if probed.holds:
        return Risk("low", device, f"every value stays within float16's range, largest error "
                    f"{probed.max_error:.2g}, {where}")
    lost = (f"{probed.nonfinite} of {probed.values} probe values are non-finite" if probed.nonfinite else
            f"the largest error is {probed.max_error:.2g}")
    return Risk("high", device, f"{lost} {where}", nonfinite=probed.nonfinite)


def _column(device: str, enabled: bool) -> str:
    if not enabled or device == "cpu":
        return "cpu"
    devices = load_table()["devices"]  # type: ignore[index]
    return "cuda" if "cuda" in devices else "cuda-emulated"


def _nonfinite(cell: dict) -> int:
    return int(cell["neg_inf"]) + int(cell["pos_inf"]) + int(cell["nan"])


def _judge(rows: List[dict], column: str, device: str, disabled: bool) -> Risk:
    bad = [row for row in rows if row[column]["error"] or _nonfinite(row[column])]
    if bad:
        worst = max(bad, key=lambda row: (bool(row[column]["error"]), _nonfinite(row[column]) / row["rows"]))
        cell = worst[column]
        if cell["error"]:
            what = f"raises {cell['error'].split(':')[0]}"
        else:
            kinds = [k for k, key in (("-inf", "neg_inf"), ("+inf", "pos_inf"), ("NaN", "nan")) if cell[key]]
            what = f"{_nonfinite(cell):,} of {worst['rows']:,} {'/'.join(kinds)} measured"
        return Risk("high", device, f"{what} ({worst['regime']}{_cast_words(worst)})", nonfinite=_nonfinite(cell),
                    rows=worst["rows"], measured_as=column, params=worst["params"], disabled=disabled)
    error = _largest(rows, column, "max_abs_error")
    relative = _largest(rows, column, "max_rel_error")
    return Risk("low", device, low_detail(len(rows), error, relative) + _cast_words(rows[0]), nonfinite=0,
                rows=rows[0]["rows"], measured_as=column, max_abs_error=error, disabled=disabled,
                max_rel_error=relative)


def _cast_words(row: dict) -> str:
    return ", the value cast to float32" if row.get("value") == VALUE_CAST else ""


def _largest(rows: List[dict], column: str, key: str) -> Optional[float]:
    found = [row[column][key] for row in rows if row[column].get(key) is not None]
    return max(found) if found else None


def low_detail(regimes: int, error: Optional[float], relative: Optional[float]) -> str:
    """What `low` means, said in the message: every measured regime finite in float16, and how far off it is.

    An absolute error alone read as a contradiction (`low` next to `max error 1.6e+02`): on log-densities of
    -1e5 that is 1e-3 of the value, float16's rounding. So the relative error leads (`hazard_script
    .relative_error`: the error over the float64 value, a value under 1 counting as 1), the absolute follows.
    """
    which = f"all {regimes} measured regimes" if regimes != 1 else "the 1 measured regime"
    detail = f"{which} finite in float16"
    if relative is not None:
        detail += f", max relative error {relative:.1e} vs float64"
        return detail + (f" (absolute {error:.2g})" if error is not None else "")
    return detail + (f", max error {error:.2g}" if error is not None else "")


def with_risk(finding: Finding) -> Finding:
    """The finding with its `risk`, and the risk quoted at the end of its message."""
    risk = assess(finding)
    return replace(finding, risk=risk, message=f"{finding.message}; {risk.text()}")


def at_least(findings: Iterable[Finding], minimum: Optional[str], hide_unknown: bool = False) -> List[Finding]:
    """Findings whose measured risk is `minimum` or above (None: any), and those of unknown risk unless hidden.

    `unknown` is not below `low`: it says nothing was measured, so `--min-risk high` must not drop a finding that
    may be high (before, `--min-risk low` dropped every unknown one).
    """
    floor = MEASURED_ORDER.index(minimum) if minimum else 0
    kept = []
    for finding in findings:
        level = finding.risk.level if finding.risk else "unknown"
        if level == "unknown" and not hide_unknown or level != "unknown" and MEASURED_ORDER.index(level) >= floor:
            kept.append(finding)
    return kept
