"""Run a finding three ways (original, fix A, fix C) under its region's autocast, and judge.

Every tensor the computation sees comes from inputs.py through an identity
`nn.Linear` made here; every callable is a distribution class resolve.py
allowed, a cast, or an allowlisted transform. Nothing of the user's runs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Tuple, Union

import torch
import torch.nn.functional as F

from amplint.model import Precision, RegionInfo
from amplint.rulebase import DISABLED_REGION
from amplint.rules import rule_for
from amplint.verify.chains import apply_chain
from amplint.verify.devices import Device, emulation_limit, to_host
from amplint.verify.inputs import Head, Synthesis, reference_output, synthesize
from amplint.verify.measure import grads_finite as _grads_finite, measure
from amplint.verify.recipes import Recipe, recipes_for_plan
from amplint.verify.resolve import DistPlan, SitePlan, Unverifiable, plan_site, qualnames_in, spec_label
from amplint.verify.results import TIMING_THREADS, FindingReport, Timing, Verdict, VersionResult
from amplint.verify.timing import WARMUPS, median_seconds
from amplint.verify.targets import Target  # noqa: F401 - defined there, torch-free; re-exported
from amplint.transforms import Chain


MAX_ELEMENTS = 1 << 21  # largest input tensor a run builds (2,097,152 elements)


@dataclass(frozen=True)
class Version:
    """How a version differs from the original: casts added, autocast disabled around the call."""

    name: str
    casts: bool
    disable: bool


ORIGINAL = Version("original", casts=False, disable=False)
FIX_CAST = Version("fix A (cast)", casts=True, disable=False)
FIX_DISABLE = Version("fix C (disable autocast + cast)", casts=True, disable=True)


@dataclass(frozen=True)
class RunSettings:
    """How to run a finding. `timing_runs`: timed repetitions per version (0: no timing, the library default;
    the CLI's `--timing-runs` defaults to 5), so a caller that wants only verdicts pays nothing for timing."""

    device: Device
    batch: int
    seed: int
    timing_runs: int = 0


def low_dtype(region: Optional[RegionInfo]) -> Tuple[torch.dtype, Tuple[str, ...]]:
    """The autocast dtype to run: the region's, float16 when it is not a literal."""
    if region is not None and region.precision is Precision.BFLOAT16:
        return torch.bfloat16, ()
    if region is not None and region.precision is Precision.MAYBE_FLOAT16:
        return torch.float16, ("the region's dtype is not a literal: ran float16, the case that can fail",)
    return torch.float16, ()


def computes_disabled(target: Target) -> bool:
    """Inputs made under autocast, the computation in a disabled region: the rule's recipe, or the region says so."""
    rule = rule_for(target.code)
    return (rule is not None and rule.verify_recipe == DISABLED_REGION) or (
        target.region is not None and not target.region.enabled)


def verify_target(target: Target, settings: RunSettings) -> FindingReport:
    """Rebuild, synthesize, run the three versions and give the verdict; never raises for user input.

    When check's text of the distribution cannot be rebuilt and the constructor at the place check names
    could be read (`Target.alternatives`), each class it may be runs, and the worst verdict is reported."""
    plan = plan_site(target.site)
    if target.alternatives and target.site is not None and (isinstance(plan, Unverifiable) or target.preferred):
        return _verify_alternatives(target, settings)
    return _verify_plan(target, plan, settings)


# The verdict reported of several alternatives: the one that says most about the fix, then the first.
VERDICT_RANK = (Verdict.FIX_INSUFFICIENT, Verdict.CONFIRMED, Verdict.NOT_REPRODUCED, Verdict.UNVERIFIABLE)


def _verify_alternatives(target: Target, settings: RunSettings) -> FindingReport:
    assert target.site is not None
    reports = []
    for spec in target.alternatives:
        site = replace(target.site, dists=(spec,))
        report = _verify_plan(replace(target, site=site), plan_site(site), settings)
        reports.append(replace(report, computation=f"{spec_label(spec)}.{site.method}")
                       if report.verdict is Verdict.UNVERIFIABLE else report)
    chosen = min(reports, key=lambda report: VERDICT_RANK.index(report.verdict))
    if len(reports) == 1:
        summary = f"ran {chosen.computation}"
    else:
        groups: Dict[Tuple[Verdict, str], List[str]] = {}  # (verdict, reason with the label as "it") -> labels
        for spec, report in zip(target.alternatives, reports):
            reason = report.reason or ""
            names = (report.computation, report.computation.rsplit(".", 1)[0], *qualnames_in(spec))
            for name in sorted(names, key=len, reverse=True):
                reason = reason.replace(name, "it")
            groups.setdefault((report.verdict, reason), []).append(report.computation)
        ran = "; ".join(f"{verdict.value}: {', '.join(labels)}" + (f" ({reason})" if reason else "")
                        for verdict in VERDICT_RANK for (each, reason), labels in groups.items() if each is verdict)
        summary = f"ran each of the {len(reports)} it may be ({ran}), and reports {chosen.computation}"
    notes = target.alternative_notes + (f"read the constructor where check says it is built; {summary}",)
    return replace(chosen, notes=chosen.notes + notes)


def _verify_plan(target: Target, plan: Union[SitePlan, Unverifiable], settings: RunSettings) -> FindingReport:
    started = time.perf_counter()
    low, notes = low_dtype(target.region)
    label = plan.label if isinstance(plan, SitePlan) else (target.site.method if target.site else "?")
    base = dict(path=target.path, line=target.line, column=target.column, code=target.code,
                device=settings.device.name, batch=settings.batch, seed=settings.seed, computation=label,
                precision=str(low).replace("torch.", ""))
    if isinstance(plan, Unverifiable):
        return FindingReport(verdict=Verdict.UNVERIFIABLE, reason=plan.reason, **base)  # type: ignore[arg-type]
    notes = notes + target.notes + plan.notes + _device_notes(target, settings.device)
    disabled = computes_disabled(target)
    device = settings.device
    chosen: Optional[Tuple[Recipe, Synthesis, Dict[str, torch.Tensor], VersionResult, int]] = None
    with device.session():
        for recipe in recipes_for_plan(plan.dists[0]):
            rows = capped_rows(plan, recipe, settings.batch, low)
            synthesis = synthesize(plan, recipe, rows, settings.seed, low)
            if isinstance(synthesis, Unverifiable):
                return FindingReport(verdict=Verdict.UNVERIFIABLE, reason=synthesis.reason, **base)  # type: ignore
            heads = make_heads(synthesis, device, low)
            original = run_version(plan, synthesis, heads, device, ORIGINAL, low, disabled)
            if chosen is None or original.failed:
                chosen = (recipe, synthesis, heads, original, rows)
            if original.failed:
                break
        assert chosen is not None  # recipes_for_plan never returns an empty tuple
        recipe, synthesis, heads, original, rows = chosen
        fix_cast = run_version(plan, synthesis, heads, device, FIX_CAST, low, disabled)
        fix_disable = run_version(plan, synthesis, heads, device, FIX_DISABLE, low, disabled)
        limits = [r.error for r in (original, fix_cast, fix_disable) if emulation_limit(device, r.error)]
        timing = None if limits or not settings.timing_runs else time_versions(
            plan, synthesis, heads, device, low, disabled, settings.timing_runs,
            backward=any(r.grads_finite is not None for r in (original, fix_cast, fix_disable)))
    if limits:  # the emulation's limit, not the computation's failure: no verdict from it
        return FindingReport(verdict=Verdict.UNVERIFIABLE, reason=(
            f"the CUDA-policy emulation cannot run {plan.label} on a CPU-only torch ({limits[0]}); "
            "run it on a GPU (--device cuda) or under CPU semantics (--device cpu)"), **base)  # type: ignore
    if isinstance(synthesis.reference, str) and all(r.error for r in (original, fix_cast, fix_disable)):
        return FindingReport(verdict=Verdict.UNVERIFIABLE, reason=(
            f"the rebuilt {plan.label} raises in float64 too ({synthesis.reference.rstrip(': ')}): "
            "the rebuild is not the code's computation, so it says nothing about float16"), **base)  # type: ignore
    if rows < settings.batch:
        notes = notes + (f"ran {rows:,} rows, not {settings.batch:,}: each row has {MAX_ELEMENTS // rows:,}+ "
                         "elements, and the bad-row fraction does not depend on the batch size",)
    base["batch"] = rows
    if isinstance(synthesis.reference, str):
        notes = notes + (f"float64 reference failed ({synthesis.reference}): no max error",)
    return FindingReport(
        verdict=judge(original, fix_cast, fix_disable), recipe=recipe.name, notes=notes, original=original,
        fix_cast=fix_cast, fix_disable=fix_disable, seconds=time.perf_counter() - started, timing=timing,
        **base,  # type: ignore[arg-type]
    )


def capped_rows(plan: SitePlan, recipe: Recipe, batch: int, low: torch.dtype) -> int:
    """Rows to run so no input exceeds MAX_ELEMENTS (e.g. Independent over 256 dims).

    Measured: the fraction of bad rows does not change with batch size, so a
    cap keeps a finding near the 2 s budget without changing the verdict.
    """
    probe = synthesize(plan, recipe, 1, 0, low)
    if isinstance(probe, Unverifiable):
        return batch
    per_row = max([h.data.numel() for h in probe.heads.values()] or [1])
    return max(1, min(batch, MAX_ELEMENTS // per_row))


def judge(original: VersionResult, fix_cast: VersionResult, fix_disable: VersionResult) -> Verdict:
    if not original.failed:
        return Verdict.NOT_REPRODUCED
    if fix_cast.failed or fix_disable.failed:
        return Verdict.FIX_INSUFFICIENT
    return Verdict.CONFIRMED


def _device_notes(target: Target, device: Device) -> Tuple[str, ...]:
    region_device = target.region.device if target.region is not None else None
    if device.name == "cpu" and region_device == "cuda":
        return ("the region is CUDA autocast but ran CPU semantics, which keep more ops in float16; "
                "--device cuda-emulated gives CUDA's dtype policy",)
    return ()


def make_heads(synthesis: Synthesis, device: Device, low: torch.dtype) -> Dict[str, torch.Tensor]:
    """Every head as the output of an identity `nn.Linear(1, 1)` under the region's autocast.

    The outputs are detached into leaves so each version's gradient is taken
    at the head (the Linear output), shared by the three versions; the f16
    Linear on CPU is slow, so it runs once per recipe, not once per version.
    """
    heads: Dict[str, torch.Tensor] = {}
    with device.autocast(True, low):
        for key, head in synthesis.heads.items():
            data = device.put(head.data)
            if head.through_linear:
                weight, bias = device.put(torch.ones(1, 1)), device.put(torch.zeros(1))
                data = F.linear(data.reshape(-1, 1), weight, bias).reshape(head.data.shape)
                if device.measures_grads:
                    data = data.detach().requires_grad_(True)
            heads[key] = data
    return heads


def run_version(plan: SitePlan, synthesis: Synthesis, heads: Dict[str, torch.Tensor], device: Device,
                version: Version, low: torch.dtype, disabled: bool) -> VersionResult:
    """One version under the region's autocast: the computation as the version writes it."""
    try:
        out = forward(plan, synthesis, heads, device, version, low, disabled)
    except Exception as exc:  # the original raising is a failure of the original, named in the report
        return VersionResult(dtype=None, error=f"{type(exc).__name__}: {_first_line(exc)}")
    leaves = [t for t in heads.values() if t.requires_grad]
    grads = _grads_finite(out, leaves) if device.measures_grads else None
    return measure(to_host(out), synthesis.reference, grads)


def forward(plan: SitePlan, synthesis: Synthesis, heads: Dict[str, torch.Tensor], device: Device, version: Version,
            low: torch.dtype, disabled: bool) -> torch.Tensor:
    """The version's output under the region's autocast (raises what the computation raises)."""
    with device.autocast(True, low):
        if disabled or version.disable:
            with device.autocast(False):
                return compute(plan, heads, synthesis.heads, version.casts)
        return compute(plan, heads, synthesis.heads, version.casts)


def time_versions(plan: SitePlan, synthesis: Synthesis, heads: Dict[str, torch.Tensor], device: Device,
                  low: torch.dtype, disabled: bool, runs: int, backward: bool) -> Timing:
    """Median seconds of each version on the heads the verdict ran on: the recipe's batch shapes.

    `backward` where the run measured gradients: each timed call then also takes the gradient of
    -out.mean() at the heads, as a training step would, since a cast adds work to both passes.
    """
    leaves = [tensor for tensor in heads.values() if tensor.requires_grad]

    def step(version: Version) -> Callable[[], None]:
        def once() -> None:
            out = forward(plan, synthesis, heads, device, version, low, disabled)
            if backward and out.requires_grad:
                torch.autograd.grad(-out.mean(), leaves, allow_unused=True)
        return once

    synchronize = torch.cuda.synchronize if device.name == "cuda" else (lambda: None)
    threads = torch.get_num_threads()
    torch.set_num_threads(TIMING_THREADS)
    try:
        medians = median_seconds({v.name: step(v) for v in (ORIGINAL, FIX_CAST, FIX_DISABLE)}, runs, synchronize)
    finally:
        torch.set_num_threads(threads)
    seconds = medians.seconds
    return Timing(runs=runs, warmups=WARMUPS, calls=medians.calls, device=device.name, emulated=device.emulated,
                  backward=backward, original=seconds[ORIGINAL.name], fix_cast=seconds[FIX_CAST.name],
                  fix_disable=seconds[FIX_DISABLE.name])


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""


def compute(plan: SitePlan, tensors: Dict[str, torch.Tensor], heads: Dict[str, Head], casts: bool) -> torch.Tensor:
    """The computation as written (casts=False) or as the codemod rewrites it (casts on every head)."""
    def chain(base: Chain) -> Chain:
        return base.with_leaf_cast() if casts else base

    def build(dist: DistPlan, key: str) -> torch.distributions.Distribution:
        kwargs: Dict[str, object] = dict(dist.literals)
        for name, component in dist.components:
            kwargs[name] = build(component, f"{key}.{name}")
        for arg in dist.tensors:
            head_key = f"{key}.{arg.param}"
            kwargs[arg.param] = apply_chain(chain(heads[head_key].chain), tensors[head_key])
        return dist.cls(**kwargs)

    dists = [build(dist, str(i)) for i, dist in enumerate(plan.dists)]
    value = None
    if plan.value is not None:  # as fix A writes it: an index, a label or a count keeps its dtype
        value_chain = heads["value"].chain
        value = apply_chain(value_chain if plan.discrete_value else chain(value_chain), tensors["value"])
    return reference_output(plan.method, dists, value)
