"""verify rebuilds the distribution check names, at the place check names, with what its slots hold (issue 53).

check quotes a constructor built in another file by its text; verify reads it there: a class picked at run time
(`get_dist_class(name)(**params)`, `DISTS[name](...)`), a local name in a slot (`MixtureSameFamily(mix, comp)`),
and a receiver that is a slot of it (`iid = dist.base_dist`). Each class it may be runs; the worst verdict is
reported. Nothing of the project is imported.
"""
from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Dict

import pytest

from amplint.config import Config
from amplint.risk import UNSEEN
from amplint.verify.targets import collect
from conftest import FIXTURES, run_amplint

torch = pytest.importorskip("torch")

from amplint.verify.devices import CPU  # noqa: E402
from amplint.verify.runner import RunSettings, verify_target  # noqa: E402
from amplint.verify.results import Verdict  # noqa: E402

PROJECT: Dict[str, str] = {
    "pyproject.toml": "[project]\nname = 'picked'\n",
    "pkg/__init__.py": "",
    "pkg/dists.py": """
        from torch.distributions import Laplace, Normal, StudentT


        class Mine(StudentT):
            pass


        def get_dist_class(name):
            if name == "normal":
                return Normal
            if name == "laplace":
                return Laplace
            return Mine


        REGISTRY = {"normal": Normal, "student": StudentT}
    """,
    "pkg/routine.py": """
        import torch
        from torch.distributions import Categorical, Independent, MixtureSameFamily

        from pkg.dists import REGISTRY, get_dist_class
        from pkg.metric import nll, quantile


        class Routine(torch.nn.Module):
            def __init__(self, model, family):
                super().__init__()
                self.model = model
                self.family = family

            def forward(self, x, y):
                with torch.autocast("cpu", dtype=torch.float16):
                    out = self.model(x)
                    params = {k: v for k, v in out.items()}
                    dist = Independent(get_dist_class(self.family)(**params), 1)
                    comp = Independent(REGISTRY[self.family](out["loc"], out["scale"]), 1)
                    mix = Categorical(torch.ones(comp.batch_shape))
                    return nll(dist, y) + nll(MixtureSameFamily(mix, comp), y) + quantile(dist, torch.full((1,), 0.9))
    """,
    "pkg/metric.py": """
        def nll(dist, y):
            return -dist.log_prob(y)


        def quantile(dist, q):
            if dist.event_shape:
                iid = dist.base_dist
            else:
                iid = dist
            return iid.icdf(q)
    """,
}


def _write(root: Path) -> Path:
    for name, text in PROJECT.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def _targets(root: Path):
    return {(Path(t.path).name, t.line): t for t in collect([str(root)]).targets}


def test_picked_classes_registries_local_slots_and_base_dist_are_read(tmp_path: Path) -> None:
    targets = _targets(_write(tmp_path))
    assert sorted(targets) == [("metric.py", 2), ("metric.py", 10)]
    nll, icdf = targets[("metric.py", 2)], targets[("metric.py", 10)]
    # `nll` is given the picked Independent (first built place) and the mixture: check joins them, verify reads
    # the first place check names, every class `get_dist_class` may return, `**params` feeding each.
    labels = [(s.qualname.rsplit(".", 1)[-1], [c.qualname.rsplit(".", 1)[-1] for c in s.components])
              for s in nll.alternatives]
    assert labels in ([("Independent", ["Normal"]), ("Independent", ["Laplace"]), ("Independent", ["Mine"])],
                      [("MixtureSameFamily", ["Categorical", "Independent"])] * 2)
    assert any("the class is picked at run time" in note for note in nll.alternative_notes)
    # The receiver of `icdf` is `dist.base_dist` or `dist`: the base classes, then the Independents.
    names = [s.qualname.rsplit(".", 1)[-1] for s in icdf.alternatives]
    assert names == ["Normal", "Laplace", "Mine", "Independent", "Independent", "Independent"]
    assert icdf.preferred
    assert icdf.alternative_notes[-1] == (
        "the receiver `iid` is `dist.base_dist` (line 7) or `dist` (line 9): each was run")
    normal = icdf.alternatives[0]
    assert normal.mapping is not None and normal.mapping.code == "params" and not normal.mapping.cast
    assert normal.qualname == "torch.distributions.Normal" and icdf.alternatives[2].qualname == "pkg.dists.Mine"


def test_each_alternative_runs_and_the_worst_verdict_is_reported(tmp_path: Path) -> None:
    targets = _targets(_write(tmp_path))
    settings = RunSettings(CPU, batch=2048, seed=0)
    report = verify_target(targets[("metric.py", 10)], settings)
    # icdf of a Normal or a Laplace runs; an Independent has no icdf (float64 raises too), Mine is the project's.
    assert report.verdict in (Verdict.CONFIRMED, Verdict.NOT_REPRODUCED)
    summary = report.notes[-1]
    assert summary.startswith("read the constructor where check says it is built; ran each of the 6 it may be (")
    assert ("unverifiable: Independent(Normal).icdf, Independent(Laplace).icdf (the rebuilt it raises in float64 "
            "too (NotImplementedError)") in summary
    assert ("Mine.icdf, Independent(Mine).icdf (`it` is not a torch.distributions or pyro.distributions class)"
            in summary)
    assert "`**params` (its keys are not in the code) fed Normal's tensor parameters: loc, scale" in report.notes


def test_a_picked_class_through_the_cli_is_confirmed(tmp_path: Path) -> None:
    root = _write(tmp_path)
    result = run_amplint(["verify", "--timing-runs", "0", "--device", "cpu", "--batch", "2048", "--format", "json",
                          str(root)])
    reports = {report["line"]: report for report in json.loads(result.stdout)}
    assert reports[2]["verdict"] == "confirmed", reports[2]
    assert reports[2]["computation"].startswith("Independent(")
    assert all(report["verdict"] != "unverifiable" for report in reports.values())


ATTRIBUTE = """\
import torch
from torch.distributions import Normal


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)

    def forward(self, x, y):
        with torch.autocast("cpu", dtype=torch.float16):
            out = self.lin(x)
            self.dist = Normal(out[:, 0], out[:, 1].exp())
            return self.score(y)

    def score(self, y):
        return self.dist.log_prob(y)
"""


def test_an_attribute_is_one_construction_for_check_and_verify(tmp_path: Path) -> None:
    """Issue 53: check once said `self.dist` was built out of its sight while verify rebuilt it; now both read
    the class's `self.dist = Normal(...)`, and name line 13."""
    (tmp_path / "head.py").write_text(ATTRIBUTE)
    check = run_amplint(["check", "--format", "json", str(tmp_path)])
    [finding] = json.loads(check.stdout)
    assert (finding["line"], finding["column"], finding["code"], finding["fixable"]) == (17, 16, "AMP001", True)
    assert "`out[:, 0]`, `out[:, 1].exp()`, `y` (the distribution is built in `Head.forward` at line 13)" in (
        finding["message"])
    verify = run_amplint(["verify", "--timing-runs", "0", "--device", "cpu", "--batch", "2048", "--format", "json",
                          str(tmp_path)])
    [report] = json.loads(verify.stdout)
    assert (report["line"], report["verdict"], report["computation"]) == (17, "confirmed", "Normal.log_prob")
    assert f"rebuilt from `Normal(out[:, 0], out[:, 1].exp())`, built at {tmp_path / 'head.py'}:13 as check reports" \
        in report["notes"]


def test_without_project_mode_verify_says_what_check_says() -> None:
    """`score(dist, x)` is given its distribution by a caller only project mode follows: both say so alike."""
    path = str(FIXTURES / "fix" / "cast" / "helpers.in.py")
    [target] = [t for t in collect([path], Config(project=False)).targets if t.line == 12]
    report = verify_target(target, RunSettings(CPU, batch=1024, seed=0))
    assert report.verdict is Verdict.UNVERIFIABLE and report.reason is not None
    assert report.reason.startswith(UNSEEN + ", as check says")
    assert target.site is not None and not target.site.dists


def test_the_bound_on_alternatives_is_said(tmp_path: Path) -> None:
    """Two picked slots of six classes each are 36 alternatives: the first 32 run, and the note says so."""
    from amplint.verify.sliceimports import Finder
    from amplint.verify.slicer import Slicer
    from amplint.verify.slots import MAX_ALTERNATIVES, read_built

    (tmp_path / "mix.py").write_text(textwrap.dedent("""
        import torch.distributions as D

        MIXES = {"a": D.Categorical, "b": D.OneHotCategorical, "c": D.Binomial, "d": D.Geometric,
                 "e": D.Poisson, "f": D.Bernoulli}
        COMPS = {"a": D.Normal, "b": D.Laplace, "c": D.Cauchy, "d": D.Gumbel, "e": D.LogNormal, "f": D.StudentT}


        def build(m, c, logits, loc, scale):
            return D.MixtureSameFamily(MIXES[m](logits=logits), COMPS[c](loc, scale))
    """))
    found = read_built(Slicer(Finder((str(tmp_path),))), str(tmp_path / "mix.py"), 10)
    assert found is not None and len(found.specs) == MAX_ALTERNATIVES == 32
    assert found.notes[-1] == "more than 32 alternatives: ran the first 32 (the bound on verify's work)"
    assert [c.qualname for c in found.specs[0].components] == ["torch.distributions.Categorical",
                                                               "torch.distributions.Normal"]


def test_the_inputs_read_where_the_constructor_is_built_say_which_are_cast(tmp_path: Path) -> None:
    """An argument cast to float32 there, a name bound once to a cast or a float32 factory, or a number is
    float32 (`ArgSpec.cast`); a float16 head output is not (`facts.astnodes.is_wide`, as check reads them)."""
    from amplint.verify.sliceimports import Finder
    from amplint.verify.slicer import Slicer
    from amplint.verify.slots import read_built

    (tmp_path / "heads.py").write_text(textwrap.dedent("""
        import torch
        from torch.distributions import Normal


        def build(out):
            scale = out[:, 1].float().exp()
            zero = torch.zeros(3)
            first = Normal(out[:, 0], scale)
            second = Normal(loc=zero + 1.0, scale=out.double()[:, 1] * 2.0)
            return first, second
    """))
    slicer = Slicer(Finder((str(tmp_path),)))
    specs = [read_built(slicer, str(tmp_path / "heads.py"), line) for line in (9, 10)]
    assert all(found is not None and len(found.specs) == 1 for found in specs)
    assert [[(a.name, a.code, a.cast) for a in found.specs[0].args] for found in specs] == [  # type: ignore
        [(None, "out[:, 0]", False), (None, "scale", True)],
        [("loc", "zero + 1.0", True), ("scale", "out.double()[:, 1] * 2.0", True)]]
