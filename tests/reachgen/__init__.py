"""Generated multi-file PyTorch projects whose float16 truth comes from running them.

`generate(seed, dest)` writes a small project (a package, a pyproject.toml and
a `run.py` that runs one step on the CPU) and returns its `ProjectMeta`;
`score` runs each project under `amplint trace` and compares `amplint check`
with what the recorder saw. See tests/test_reachgen.py and benchmarks/reachgen.py.
"""
from .generate import generate
from .meta import HOP_KINDS, REGION_KINDS, REVEALING, SITE_KINDS, TWIN_KINDS, ProjectMeta

__all__ = ["generate", "ProjectMeta", "HOP_KINDS", "REGION_KINDS", "SITE_KINDS", "TWIN_KINDS", "REVEALING"]
