"""A distribution returned inside a dict or a data class is followed to where it is built.

`forward` often returns more than the distribution: `{"dist": d, "hidden": h}`, `Output(d, h)` of a
`@dataclass`, a `ModelOutput(dist=d)` of another file. The caller reads `out["dist"]` or `out.dist`. The
return index (`facts.returns`) keys such an element by its dict key or field, as a tuple's by position: the
site reads the constructor's parameters, fix A casts them where they are built, and one built from casts is
no finding (before, each was an opaque distribution: reported with risk unknown, cast or not, never fixable).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import check_json, run_recording_normals, write_package

OUTPUTS = '''\
from dataclasses import dataclass


@dataclass
class Prediction:
    dist: object
    hidden: object
'''
HEADS = '''\
from dataclasses import dataclass

from torch import nn
from torch.distributions import Normal

from pkg.outputs import Prediction


@dataclass
class Output:
    dist: Normal
    hidden: object


class Holder:
    def __init__(self, dist, hidden):
        self.inner = dist
        self.hidden = hidden


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def params(self, h):
        loc, raw = self.lin(h).chunk(2, dim=-1)
        return loc, raw.exp()


class FieldHead(Base):
    def forward(self, h):
        loc, scale = self.params(h)
        return Output(Normal(loc, scale), h)


class KeywordHead(Base):
    def forward(self, h):
        loc, scale = self.params(h)
        return Prediction(dist=Normal(loc, scale), hidden=h)


class DictHead(Base):
    def forward(self, h):
        loc, scale = self.params(h)
        return {"dist": Normal(loc, scale), "hidden": h}


class PlainHead(Base):
    def forward(self, h):
        loc, scale = self.params(h)
        return Holder(Normal(loc, scale), h)
'''
LOSS = '''\
def by_field(model, h, y):
    out = model(h)
    return -out.dist.log_prob(y).mean()


def by_keyword(model, h, y):
    return -model(h).dist.log_prob(y).mean()


def by_key(model, h, y):
    out = model(h)
    d = out["dist"]
    return -d.log_prob(y).mean()


def by_plain(model, h, y):
    return -model(h).inner.log_prob(y).mean()
'''
RUN = '''\
import torch
from pkg.heads import DictHead, FieldHead, KeywordHead, PlainHead
from pkg.loss import by_field, by_key, by_keyword, by_plain


def main(h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        return [by_field(FieldHead(), h, y.float()), by_keyword(KeywordHead(), h, y.float()),
                by_key(DictHead(), h, y.float()), by_plain(PlainHead(), h, y.float())]
'''
LOSS_CAST_VALUES = LOSS.replace("log_prob(y)", "log_prob(y.float())")


def _project(root: Path, heads: str = HEADS, loss: str = LOSS_CAST_VALUES) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (root / "run.py").write_text(RUN)
    write_package(root, {"outputs.py": OUTPUTS, "heads.py": heads, "loss.py": loss})
    return root


def test_the_element_read_finds_the_constructor_where_it_is_built(tmp_path: Path) -> None:
    findings = check_json(_project(tmp_path))
    found = {(f["line"], f["code"]): str(f["message"]) for f in findings}
    assert sorted(found) == [(3, "AMP001"), (7, "AMP001"), (13, "AMP001"), (17, "AMP001")]
    for line, owner in ((3, "FieldHead"), (7, "KeywordHead"), (13, "DictHead")):
        assert "`Normal.log_prob`" in found[(line, "AMP001")], found[(line, "AMP001")]
        assert f"built in `{owner}.forward` at pkg/heads.py" in found[(line, "AMP001")]
    # A plain class stores what it is given under any name: `inner` is not read as the constructor's.
    assert "risk unknown" in found[(17, "AMP001")]
    fixable = {f["line"]: f["fixable"] for f in findings}
    assert fixable == {3: True, 7: True, 13: True, 17: False}


def test_built_from_casts_they_are_no_finding(tmp_path: Path) -> None:
    heads = HEADS.replace("Normal(loc, scale)", "Normal(loc.float(), scale.float())")
    assert [(f["line"], f["code"]) for f in check_json(_project(tmp_path, heads))] == [(17, "AMP001")]


@pytest.mark.torch
def test_the_fix_casts_where_each_is_built_and_the_code_runs_in_float32(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    root = _project(tmp_path)
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--fix", "."], capture_output=True,
                          text=True, timeout=120, cwd=root)
    assert "Fixed 3 findings" in done.stdout, done.stdout + done.stderr
    assert (root / "pkg" / "heads.py").read_text().count("Normal(loc.float(), scale.float())") == 3
    assert [(f["line"], f["code"]) for f in check_json(root)] == [(17, "AMP001")]  # the plain class stays opaque
    seen, values = run_recording_normals(root, monkeypatch, torch.randn(8, 4), torch.randn(8, 1))
    # The three fixed run on float32 parameters; the plain class's distribution, not fixed, on float16 ones.
    assert seen == [torch.float32] * 3 + [torch.float16]
    assert all(bool(torch.isfinite(v)) for v in values[:3])
