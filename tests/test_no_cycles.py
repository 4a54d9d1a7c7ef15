"""A file's facts hold no reference cycle, so reference counting frees its trees as soon as the run drops them.

`amplint.collection` lets the cyclic collector run only every million
allocations. That costs no memory only while nothing a file leaves behind is
a cycle: a cycle through a scope, a site or a recursive closure would keep the
file's whole tree (CPython's or LibCST's) until a collection. Each reader is
run here with the collector off, and whatever only the collector could free is
listed.
"""
from __future__ import annotations

import ast
import gc
from typing import Callable, List

import libcst as cst

from amplint.config import Config
from amplint.cpython_trees import parse
from amplint.facts.astcalls import ast_facts
from amplint.pipeline import analyze_source

# A region calls into helpers and methods (call records in nested and class scopes), and builds a mixture whose
# components the site spec reads recursively.
REGION = """\
import torch
from torch import nn
from torch.distributions import Categorical, MixtureSameFamily, Normal


class Head(nn.Module):
    def forward(self, h):
        with torch.autocast("cpu", dtype=torch.float16):
            return self.nll(h)

    def nll(self, h):
        return self.mu(h), self.sigma(h).exp()


def step(head, h, x, w):
    def inner(v):
        return v

    with torch.autocast("cpu", dtype=torch.float16):
        mu, sigma = head(h)
        mix = MixtureSameFamily(Categorical(logits=w), Normal(mu, sigma))
        return -mix.log_prob(inner(x)).mean()
"""

# No site: the summary reader reads it on CPython's tree.
NO_SITE = """\
import torch


class Model:
    def run(self, batch):
        with torch.autocast("cuda"):
            return self.helper(batch), helper(batch)

    def helper(self, batch):
        return batch


def helper(batch):
    def nested(b):
        return b
    return nested(batch)
"""


def _left_to_collector(build: Callable[[], object]) -> List[str]:
    """What `build()` leaves that only the cyclic collector frees: trees' nodes and amplint's own objects."""
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        build()
        gc.collect()
        return sorted({type(o).__qualname__ for o in gc.garbage
                       if isinstance(o, (ast.AST, cst.CSTNode)) or type(o).__module__.startswith("amplint")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.collect()
        if enabled:
            gc.enable()


def test_summary_from_cpython_tree_leaves_no_cycle() -> None:
    def build() -> None:
        tree, imports = parse(NO_SITE)
        facts = ast_facts(tree, NO_SITE, imports, frozenset(), ())
        assert facts is not None and facts.scopes["Model.run"].calls  # read whole, with call records

    assert _left_to_collector(build) == []


def test_project_analysis_leaves_no_cycle() -> None:
    def build() -> None:
        result = analyze_source(REGION, "head.py", Config(), project=True)
        assert [(f.line, f.column, f.code) for f in result.findings] == [(22, 17, "AMP001")]  # type: ignore[union-attr]

    assert _left_to_collector(build) == []


def test_single_file_analysis_leaves_no_cycle() -> None:
    def build() -> None:
        result = analyze_source(REGION, "head.py", Config())
        assert [(f.line, f.column, f.code) for f in result.findings] == [(22, 17, "AMP001")]  # type: ignore[union-attr]

    assert _left_to_collector(build) == []
