"""How far amplint's static reach generalises: generated projects scored against what they compute.

    python benchmarks/reachgen.py --count 1000 --seed 0 [--jobs 2] [--json OUT] [--keep DIR] [--ref REV]

Generates `--count` projects from consecutive seeds (tests/reachgen), runs
each under `amplint trace` for the truth and `amplint check` for the findings,
and prints recall and precision overall and per hop kind, region spelling,
computation and variant as Markdown. Each project imports torch twice (about
2 s of CPU); two run at a time. Needs torch (the dev extra). `--ref REV` scores
the amplint of a commit (`git archive` into a temporary directory, first on
PYTHONPATH) instead of the working tree's, so a long run measures one
version even while the tree changes; the matcher is the working tree's.
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

from reachgen.report import markdown  # noqa: E402
from reachgen.score import TIMEOUT, ProjectResult, score, summarize  # noqa: E402


def checkout(rev: str, into: Path) -> str:
    """amplint as committed at `rev`, extracted (and compiled once) under `into`; the working tree is untouched."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "amplint"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into / "amplint")], check=True)
    return str(into)


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200, help="how many projects (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="the first seed (default 0)")
    parser.add_argument("--jobs", type=int, default=2, help="projects at a time, at most 2 (default 2)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per project (default 60)")
    parser.add_argument("--json", metavar="OUT", help="also write the summary and every project's result here")
    parser.add_argument("--keep", metavar="DIR", help="generate into DIR and keep the projects and traces")
    parser.add_argument("--ref", metavar="REV", help="score the amplint of this commit, not the working tree's")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="reachgen-ref-") as tmp:
        return _main(args, checkout(args.ref, Path(tmp)) if args.ref else None)


def _main(args: argparse.Namespace, amplint: "str | None") -> int:
    done = [0]
    started = time.monotonic()

    def progress(result: ProjectResult) -> None:
        done[0] += 1
        if done[0] % 25 == 0 or done[0] == args.count:
            print(f"{done[0]}/{args.count} projects, {time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)

    results = score(range(args.seed, args.seed + args.count), jobs=args.jobs, timeout=args.timeout,
                    work=Path(args.keep) if args.keep else None, progress=progress, amplint=amplint)
    summary = summarize(results)
    wall = time.monotonic() - started
    title = f"Reach on {args.count} generated projects (seeds {args.seed}-{args.seed + args.count - 1})"
    if args.ref:
        sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.ref], capture_output=True, text=True)
        title += f", amplint at {args.ref} ({sha.stdout.strip()})"
    print(markdown(summary, title))
    print(f"Wall time {wall:.0f} s with {args.jobs} job(s).")
    if args.json:
        from dataclasses import asdict

        Path(args.json).write_text(json.dumps({"summary": summary, "wall_seconds": wall,
                                               "projects": [asdict(r) for r in results]}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
