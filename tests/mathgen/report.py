"""The scorer's summary as Markdown: overall per device, then each breakdown with the devices side by side."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .score import CaseResult

TITLES = {
    "family": "By density shape (family)",
    "top_op": "By top-level op (the returned value's outermost op, casts and negation aside)",
    "cast": "By cast placement (`head`: the head's output; `leaf`: the location/scale/logits where read; "
            "`inner`: some intermediate value; `late`: only the result, after the math)",
    "eps": "By floor (`vanishing`: below 2**-24, 0 in float16; `subnormal`: 6e-8 to 6.1e-5; `normal`: above)",
    "bound": "By whether intermediate values are bound to local names",
    "op": "By op used anywhere in the expression (an expression counts under each of its ops)",
    "cause": "By measured cause (`error`: finite but off by more than 1e-2)",
    "codes": "By what amplint reported",
    "family_claims": "By density shape, counting only findings that say the expression fails on the device "
                     "(risk not `low`)",
}


def _pct(value: Optional[float]) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _overall(summary: Dict[str, Any]) -> List[str]:
    """One row per device and count: every finding (the static rule), then only those that say the expression
    fails on that device (risk not `low`, what `--min-risk high` keeps)."""
    lines = ["| device | counted | expressions | scored | hazardous | reported | caught | missed | false alarms "
             "| recall | precision | agreement |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for device, s in summary.items():
        for key, counted in (("overall", "every finding"), ("claims", "fails on the device")):
            o = s[key]
            lines.append(f"| {device} | {counted} | {o['expressions']:,} | {o['scored']:,} | {o['hazardous']:,} "
                         f"| {o['reported']:,} | {o['tp']:,} | {o['fn']:,} | {o['fp']:,} | {_pct(o['recall'])} "
                         f"| {_pct(o['precision'])} | {_pct(o['agreement'])} |")
    return lines + [""]


def _breakdown(summary: Dict[str, Any], name: str) -> List[str]:
    devices = list(summary)
    kinds: List[str] = []
    for device in devices:
        kinds += [k for k in summary[device][name] if k not in kinds]
    head = "| kind | expressions | " + " | ".join(
        f"{d} hazardous | {d} caught | {d} false alarms | {d} recall | {d} precision" for d in devices) + " |"
    lines = [f"### {TITLES[name]}", "", head, "|---|---:|" + "---:|" * (5 * len(devices))]
    for kind in kinds:
        cells = []
        n = 0
        for device in devices:
            c = summary[device][name].get(kind)
            if c is None:
                cells.append("– | – | – | – | –")
                continue
            n = max(n, c["expressions"])
            cells.append(f"{c['hazardous']:,} | {c['tp']:,} | {c['fp']:,} | {_pct(c['recall'])} | "
                         f"{_pct(c['precision'])}")
        lines.append(f"| `{kind}` | {n:,} | " + " | ".join(cells) + " |")
    return lines + [""]


def _examples(results: Sequence[CaseResult], device: str, outcome: str, limit: int) -> List[str]:
    """The shortest expressions with `outcome`, one per (family, ops): the same text often recurs."""
    ordered = sorted((r for r in results if r.device == device and r.outcome == outcome),
                     key=lambda r: (sum(len(line) for line in r.case.body), r.case.index))
    chosen: List[CaseResult] = []
    seen = set()
    for r in ordered:
        kind = (r.case.family, r.case.ops)
        if kind not in seen and len(chosen) < limit:
            seen.add(kind)
            chosen.append(r)
    lines = []
    for r in chosen:
        worst = r.truth.worst
        measured = ("not hazardous" if not r.truth.hazardous else
                    f"{worst.nonfinite} non-finite, max error {worst.max_rel_error:.2g} ({worst.regime})"
                    if worst else "")
        lines.append(f"- {r.case.family}, index {r.case.index}: `{'; '.join(r.case.body)}` — measured "
                     f"{measured}; amplint: {'+'.join(r.verdict.codes) or 'nothing'}")
    return lines


def markdown(summary: Dict[str, Any], results: Sequence[CaseResult], title: str, examples: int = 3) -> str:
    lines = [f"## {title}", ""] + _overall(summary)
    regimes = {device: s["hazardous_by_regime"] for device, s in summary.items()}
    lines += ["Expressions each regime makes hazardous: " + "; ".join(
        f"{device}: " + ", ".join(f"{name} {n:,}" for name, n in counts.items()) for device, counts in regimes.items())
        + ". Rows left out because the float32 reference is itself non-finite: " + ", ".join(
        f"{device} {s['dropped_rows']:,}" for device, s in summary.items()) + ".", ""]
    for name in TITLES:
        lines += _breakdown(summary, name)
    if examples:
        for device in summary:
            for outcome, label in (("fn", "misses"), ("fp", "false alarms")):
                found = _examples(results, device, outcome, examples)
                if found:
                    lines += [f"Shortest {label} on {device}:", ""] + found + [""]
    for device, s in summary.items():
        if s["errors"]:
            lines += [f"Not scored on {device} ({len(s['errors'])}): " + "; ".join(
                f"{index}: {error}" for index, error in s["errors"][:10]), ""]
    return "\n".join(lines)
