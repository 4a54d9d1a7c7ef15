"""The scorer's summary as Markdown tables, to paste into benchmarks/RESULTS.md."""
from __future__ import annotations

from typing import Any, Dict, List, Optional


def _pct(value: Optional[float]) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _table(title: str, rows: Dict[str, Dict[str, Any]]) -> List[str]:
    lines = [f"### {title}", "",
             "| kind | projects | float16 projects | truth sites | found | recall | findings "
             "| findings on a truth site | precision |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for kind, row in rows.items():
        get = row.get
        lines.append(f"| `{kind}` | {get('projects', 0)} | {get('float16_projects', 0)} | {get('truth', 0)} | "
                     f"{get('matched', 0)} | {_pct(get('recall'))} | {get('findings', 0)} | {get('found', 0)} | "
                     f"{_pct(get('precision'))} |")
    return lines + [""]


def markdown(s: Dict[str, Any], title: str = "") -> str:
    """Overall numbers, then recall and precision per hop kind, region spelling, computation and variant;
    the projects and truth-site columns are the coverage of each kind."""
    lines = [f"## {title or 'Reach on generated projects'}", ""]
    lines += [
        "| projects | scored | truth sites (float16 probability statements, traced) | found | recall | "
        "findings | findings on a truth site | precision | generator inconsistencies | errors |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {s['projects']} | {s['scored']} | {s['truth']} | {s['matched']} | {_pct(s['recall'])} | "
        f"{s['findings']} | {s['found']} | {_pct(s['precision'])} | {len(s['inconsistencies'])} | "
        f"{len(s['errors'])} |",
        "",
    ]
    lines += _table("By hop kind (a project's truth sites count toward every hop it uses)", s["by_hop"])
    lines += _table("By region spelling", s["by_region"])
    lines += _table("By computation", s["by_site"])
    lines += _table("By variant (`float16`: built to compute in float16; the others are built not to, "
                    "so their findings are false positives)", s["by_variant"])
    for name in ("inconsistencies", "errors", "crashes"):
        items = s[name]
        if items:
            lines += [f"**{name}** ({len(items)}):", ""]
            lines += [f"- seed {item[0]}: {' '.join(str(x) for x in item[1:])}".replace("\n", " / ")
                      for item in items[:30]]
            lines.append("")
    return "\n".join(lines)
