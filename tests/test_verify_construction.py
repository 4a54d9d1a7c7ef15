"""verify rebuilds a distribution built out of the site's sight from its constructor (ast only, nothing runs)."""
from __future__ import annotations

import textwrap

from amplint.config import Config
from amplint.model import ArgSpec, SiteSpec
from amplint.verify.construction import rebuild
from amplint.verify.targets import collect
from conftest import FIXTURES

VALUE = (ArgSpec(None, 0, "x", False, False),)


def _rebuild(source: str, line: int, column: int):
    return rebuild(textwrap.dedent(source), line, column, SiteSpec("log_prob", (), VALUE))


def test_a_parameter_is_rebuilt_from_the_callers_argument() -> None:
    found = _rebuild("""
        import torch
        import torch.distributions as D

        def score(dist, x):
            return dist.log_prob(x)

        def step(model, h, x):
            with torch.autocast("cuda"):
                mu, log_s = model(h)
                return score(D.Normal(mu, torch.exp(log_s)), x)
    """, 6, 12)
    assert found is not None and found.note == "rebuilt `dist` from its construction at line 11"
    [dist] = found.site.dists
    assert dist.qualname == "torch.distributions.Normal"
    assert [(a.position, a.code, a.cast) for a in dist.args] == [(0, "mu", False), (1, "torch.exp(log_s)", False)]
    assert found.site.values == VALUE


def test_an_attribute_a_method_argument_and_a_local_name() -> None:
    found = _rebuild("""
        from torch.distributions import Independent, Normal

        class Head:
            def __init__(self, loc, scale):
                self.dist = Independent(Normal(loc, scale.float()), 1)

            def score(self, x):
                return self.dist.log_prob(x)

        class Other:
            def nll(self, d, x):
                return d.log_prob(x)

            def run(self, mu, s, x):
                made = Normal(loc=mu, scale=s)
                return self.nll(made, x) + self.nll(Normal(mu, s * 2), x)
    """, 9, 16)
    assert found is not None and found.note == "rebuilt `self.dist` from its construction at line 6"
    [dist] = found.site.dists
    assert dist.qualname.endswith("Independent") and [a.code for a in dist.args] == ["1"]
    [normal] = dist.components
    assert [(a.code, a.cast) for a in normal.args] == [("loc", False), ("scale.float()", True)]
    method = _rebuild("""
        from torch.distributions import Normal

        class Other:
            def nll(self, d, x):
                return d.log_prob(x)

            def run(self, mu, s, x):
                made = Normal(loc=mu, scale=s)
                return self.nll(made, x) + self.nll(Normal(mu, s * 2), x)
    """, 6, 16)
    assert method is not None and method.note.endswith("(the first of 2 constructions that reach it)")
    assert [(a.name, a.code) for a in method.site.dists[0].args] == [("loc", "mu"), ("scale", "s")]


def test_nothing_to_find() -> None:
    assert _rebuild("""
        def nll(dist, x):
            return dist.log_prob(x)
    """, 3, 12) is None
    assert _rebuild("""
        import foo

        def f(x):
            m = foo.Model()
            return m.log_prob(x)
    """, 6, 12) is None


def test_collect_uses_it_on_real_findings() -> None:
    by_line = {t.line: t for t in collect([str(FIXTURES / "fix" / "cast" / "helpers.in.py")]).targets}
    assert by_line[12].site is not None and by_line[12].site.dists[0].qualname == "torch.distributions.Normal"
    # Project mode joins `score(D.Normal(...), x)` to `dist` itself, so verify has nothing to rebuild.
    assert by_line[12].notes == ()
    no_project = {t.line: t for t in collect([str(FIXTURES / "fix" / "cast" / "helpers.in.py")],
                                             Config(project=False)).targets}
    assert no_project[12].notes == ("rebuilt `dist` from its construction at line 19",)
    assert no_project[12].site == by_line[12].site
    assert all(a.cast for a in by_line[12].site.dists[0].args)  # the caller casts: verify runs what it wrote
