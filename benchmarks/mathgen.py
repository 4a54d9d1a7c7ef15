"""AMP003/AMP004 against measured float16 truth on random density expressions, per device.

    python benchmarks/mathgen.py --count 10000 --seed 0 [--device cpu|cuda|both] [--json OUT] [--ref REV]

Generates `--count` expressions from `--seed` (tests/mathgen: expression i of
seed s is always the same), runs each under CPU float16 autocast and under
CUDA autocast's policy (emulated on CPU, amplint/verify/devices.py) against
float32 on six input regimes, asks amplint (`check_source`, what `amplint
check` runs) about the same source with a CPU or a CUDA region, and prints
recall and precision overall and per density shape, top-level op, cast
placement, floor, naming, op and measured cause, as Markdown. `--json`
writes the summary and every miss and false alarm (source, measurement,
findings) for the rule authors. `--ref REV` scores the amplint of a commit
(`git archive` of amplint/ and rules/ into a temporary directory, first on
`sys.path`) instead of the working tree's, so a run measures one version even
while the tree changes; the generator and the truth are the working tree's.
One thread; about 10-20 ms per expression for both devices.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # first: this file's own name must not hide the package

DEVICES = ("cpu", "cuda")


def checkout(rev: str, into: Path) -> str:
    """amplint (with its rules, as `amplint.rules`) as committed at `rev`, under `into`; the tree is untouched."""
    for folder, dest in (("amplint", into), ("rules", into / "amplint")):
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", f"{rev}:{folder}"], capture_output=True,
                                 check=True)
        (dest / folder).mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "-x", "-C", str(dest / folder)], input=archive.stdout, check=True)
    return str(into)


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="how many expressions (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="the seed (default 0)")
    parser.add_argument("--device", choices=("cpu", "cuda", "both"), default="both",
                        help="whose truth: CPU float16 autocast, CUDA's policy (emulated), or both (default)")
    parser.add_argument("--json", metavar="OUT", help="also write the summary and every misclassified expression")
    parser.add_argument("--examples", type=int, default=3, help="shortest misses/false alarms shown per device")
    parser.add_argument("--ref", metavar="REV", help="score the amplint of this commit, not the working tree's")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mathgen-ref-") as tmp:
        if args.ref:
            sys.path.insert(0, checkout(args.ref, Path(tmp)))  # before anything imports amplint
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    import amplint
    import torch

    from mathgen.report import markdown
    from mathgen.score import misclassified, score, summarize

    print(f"amplint from {Path(amplint.__file__).parent}", file=sys.stderr)
    torch.set_num_threads(1)
    devices = DEVICES if args.device == "both" else (args.device,)
    started = time.monotonic()

    def progress(done: int) -> None:
        if done % 500 == 0 or done == args.count:
            print(f"{done}/{args.count} expressions, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    results = score(args.seed, args.count, devices, progress)
    summary = summarize(results)
    wall = time.monotonic() - started
    title = f"AMP003/AMP004 on {args.count:,} random expressions (seed {args.seed})"
    if args.ref:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.ref], capture_output=True, text=True)
        short = sha.stdout.strip()
        title += f", amplint at {args.ref}" + ("" if args.ref.startswith(short) else f" ({short})")
    print(markdown(summary, results, title, args.examples))
    print(f"torch {torch.__version__}; wall time {wall:.0f} s, one thread.")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "wall_seconds": wall, "count": args.count,
                                               "seed": args.seed, "misclassified": misclassified(results)},
                                              indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
