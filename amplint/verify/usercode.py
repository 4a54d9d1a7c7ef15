"""`amplint verify --run-user-code`: a verdict for hand-written math and the project's own densities.

Without the flag such a finding is `unverifiable` (verify never runs the
user's code). With it, the computation's *slice* (slicer.py) runs in a child
process (sandbox.py) on inputs built as verify builds a distribution's, and the
three versions are judged as any finding's are. Anything that stops the slice
(an import it may not have, a constructor that needs arguments, a timeout, the
memory limit, `SystemExit`) is an `unverifiable` verdict that says which.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from amplint.verify.devices import emulation_limit
from amplint.verify.resolve import METHODS
from amplint.verify.results import FindingReport, Verdict, VersionResult
from amplint.verify.runner import RunSettings, _device_notes, computes_disabled, judge, low_dtype, verify_target
from amplint.verify.sandbox import Limits, run_child
from amplint.verify.sliceimports import Finder
from amplint.verify.slicer import Slicer
from amplint.verify.targets import Target
from amplint.verify.userentry import locate
from amplint.verify.userjob import Candidate, UserJob

VERSION_NAMES = ("original", "fix_cast", "fix_disable")


@dataclass(frozen=True)
class UserCode:
    """`--run-user-code`: the folders a slice may read (the paths given), and the child's limits."""

    bases: Tuple[str, ...]
    limits: Limits = field(default_factory=Limits)


def runs_user_code(target: Target) -> bool:
    """A finding whose computation is the user's own code (not a torch.distributions call)."""
    return target.site is not None and target.site.method not in METHODS


def verify_finding(target: Target, settings: RunSettings, user: Optional[UserCode]) -> FindingReport:
    """The rebuild for distributions; with `user`, a slice of the user's code for everything else."""
    if user is not None and runs_user_code(target):
        return verify_user_code(target, settings, user)
    return verify_target(target, settings)


def verify_user_code(target: Target, settings: RunSettings, user: UserCode) -> FindingReport:
    """Slice, run in the child, judge; never raises for what the user's code does."""
    started = time.perf_counter()
    assert target.site is not None
    low, notes = low_dtype(target.region)
    base: Dict[str, object] = dict(
        path=target.path, line=target.line, column=target.column, code=target.code, device=settings.device.name,
        batch=settings.batch, seed=settings.seed, computation=target.site.method,
        precision=str(low).replace("torch.", ""))
    if os.name != "posix":  # the child's limits are `resource` limits, its cleanup a process group
        return _unverifiable("--run-user-code needs a POSIX system (Linux, macOS): its child process is limited "
                             "with `resource` and stopped through its process group", base, started)
    job = locate(target.path, target.line, target.column, target.end, target.site.method, target.site.kind,
                 Slicer(Finder(user.bases)))
    if isinstance(job, str):
        return _unverifiable(job, base, started)
    base["computation"] = job.label
    payload = dict(job.to_json(), device=settings.device.name, low=base["precision"],
                   disabled=computes_disabled(target), batch=settings.batch, seed=settings.seed)
    outcome = run_child(payload, user.limits)
    result = outcome.result or {}
    if outcome.failure is not None or "unverifiable" in result:
        return _unverifiable(outcome.failure or str(result["unverifiable"]), base, started)
    versions = {name: VersionResult(**result["versions"][name]) for name in VERSION_NAMES}
    limits = [v.error for v in versions.values() if emulation_limit(settings.device, v.error)]
    if limits:
        return _unverifiable(f"the CUDA-policy emulation cannot run the slice on a CPU-only torch ({limits[0]}); run "
                             "it on a GPU (--device cuda) or under CPU semantics (--device cpu)", base, started)
    candidate = job.candidates[int(result.get("candidate", 0))]
    notes = notes + target.notes + _slice_notes(job, candidate, user.limits, outcome.seconds) + _device_notes(
        target, settings.device)
    if result.get("reference"):
        notes = notes + (f"float64 reference failed ({result['reference']}): no max error",)
    shape = result["shape"]
    base["batch"] = shape[0]
    return FindingReport(
        verdict=judge(versions["original"], versions["fix_cast"], versions["fix_disable"]),
        recipe=f"{result['recipe']}; each input {tuple(shape)}", notes=notes, original=versions["original"],
        fix_cast=versions["fix_cast"], fix_disable=versions["fix_disable"], seconds=time.perf_counter() - started,
        **base,  # type: ignore[arg-type]
    )


def _unverifiable(reason: str, base: Dict[str, object], started: float) -> FindingReport:
    return FindingReport(verdict=Verdict.UNVERIFIABLE, reason=reason, seconds=time.perf_counter() - started,
                         **base)  # type: ignore[arg-type]


def _slice_notes(job: UserJob, candidate: Candidate, limits: Limits, seconds: float) -> Tuple[str, ...]:
    modules = ", ".join(module.name for module in job.modules)
    inputs = ", ".join(f"{tensor.key}{list(tensor.items) if tensor.items else ''} {tensor.role}"
                       for tensor in candidate.inputs) or "none"
    ran = f"ran your code: a slice of {len(job.modules)} project module(s) ({modules})"
    if candidate.note:
        ran += f", {candidate.note}"
    return (f"{ran}, in a child process (python -I, empty environment, limits {limits.seconds:g} s and "
            f"{limits.memory_mib} MiB), {seconds:.1f} s",
            f"tensor inputs (float16 heads, by role): {inputs}; not timed")
