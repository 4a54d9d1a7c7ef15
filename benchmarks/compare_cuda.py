"""Compare the stored hazard table's CUDA-policy emulation with a run on a real GPU.

    python benchmarks/compare_cuda.py benchmarks/data/hazards-h200-torch2.11.json

The real run comes from `python -m amplint.verify.hazard_script --out FILE` on a machine where torch
sees CUDA (its `cuda` column); the stored table (`amplint/data/hazards.json`) has `cuda-emulated`.
A row agrees when both are finite, or both have non-finite values; the counts may differ between the
two (different torch builds and kernels), so they are listed for the rows where the verdicts differ.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

STORED = Path(__file__).resolve().parent.parent / "amplint" / "data" / "hazards.json"


def _bad(cell: dict) -> int:
    return cell["neg_inf"] + cell["pos_inf"] + cell["nan"]


def _key(row: dict) -> tuple:
    return row["dist"], row["method"], row["params"], row["regime"]


def main(real_path: str) -> None:
    stored = {_key(row): row for row in json.loads(STORED.read_text())["rows"]}
    real = json.loads(Path(real_path).read_text())
    agree = differ = unmeasured = failed = 0
    lines = []
    for row in real["rows"]:
        emulated = stored.get(_key(row), {}).get("cuda-emulated")
        cuda = row.get("cuda")
        if emulated is None or cuda is None:
            unmeasured += 1  # a row the stored table skips (with its reason)
            continue
        if emulated.get("error") or cuda.get("error") or emulated.get("emulation_limit"):
            failed += 1  # the computation raised, or the emulation cannot run it
            continue
        if (_bad(emulated) > 0) == (_bad(cuda) > 0):
            agree += 1
        else:
            differ += 1
            lines.append(f"| {row['dist']}.{row['method']} | {row['params']} | {_bad(emulated):,} | {_bad(cuda):,} |")
    print(f"torch {real['torch']} on a real GPU against the emulation: {agree} rows agree on finite/non-finite, "
          f"{differ} differ; {unmeasured} rows are skipped by the table, {failed} raise or hit an emulation limit")
    if lines:
        print("\n| computation | parameters | emulated non-finite | real CUDA non-finite |\n|---|---|---|---|")
        print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
