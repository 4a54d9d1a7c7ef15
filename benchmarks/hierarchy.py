"""A synthetic project whose class hierarchy makes the project walk's subclass search work hard.

Real monorepos (20k files) have many classes with the same short name (`Model`,
`Block`, `Head`) in different files. Looking for the overrides of a method on
an annotated parameter (`def step(m: Model, x)`) expands every project subclass
through the text index by that short name, so each of N such searches visits the
N files that subclass a `Model`: N x N class resolutions unless they are indexed.

Layout for `--files N`: `pkg/base.py` (an nn.Module base), and per i:
`pkg/m{i}.py` (`class Model(Base)` with a `log_prob` in `forward`),
`pkg/h{i}.py` (`class Head(Model)` importing `m{i}.Model`), and
`pkg/t{i}.py` (calls `m(x)` on a `Model`-annotated parameter in a float16 region).

Usage::

    python benchmarks/hierarchy.py --files 150 --out benchmarks/.work/hierarchy
    AMPLINT_NO_CACHE=1 python -m amplint check -j 1 benchmarks/.work/hierarchy
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

BASE = '''import torch.nn as nn


class Base(nn.Module):
    def forward(self, x):
        return x
'''
MODEL = '''from torch.distributions import Normal

from pkg.base import Base


class Model(Base):
    def forward(self, x):
        return Normal(x, 1.0).log_prob(x)
'''
HEAD = '''from pkg.m{i} import Model


class Head(Model):
    def forward(self, x):
        return x * 2
'''
TRAIN = '''import torch

from pkg.m{i} import Model


def step(m: Model, x):
    with torch.autocast("cuda"):
        return m(x)
'''


def build(out: Path, files: int) -> None:
    if out.exists():
        shutil.rmtree(out)
    pkg = out / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(BASE)
    for i in range(files):
        (pkg / f"m{i}.py").write_text(MODEL)
        (pkg / f"h{i}.py").write_text(HEAD.format(i=i))
        (pkg / f"t{i}.py").write_text(TRAIN.format(i=i))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=150, help="number of Model/Head/train triples")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / ".work" / "hierarchy"))
    args = parser.parse_args()
    build(Path(args.out), args.files)
    print(f"{args.out}: {3 * args.files + 2} files")


if __name__ == "__main__":
    main()
