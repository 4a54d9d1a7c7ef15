"""Reach through objects whose class the code does not name (`fixtures/reach`), and returned distributions.

Issue 13: a class picked by configuration, typed by an annotation, or known
only by its method's name; a distribution built in `forward` and used by the
caller, whose parameters stay float16 when only the value is cast.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List

import pytest

from amplint.config import Config
from amplint.engine import check_paths
from conftest import FIXTURES, expected_lines

PROJECT = FIXTURES / "reach"


def _findings(root: Path, config: Config = Config()) -> Dict[str, str]:
    results = check_paths([str(root)], config)
    assert [r.error for r in results if r.error is not None] == []
    base = root if root.is_dir() else root.parent
    return {f"{os.path.relpath(f.path, base).replace(os.sep, '/')}:{f.line}:{f.column} {f.code}": f.message
            for r in results for f in r.findings}


def test_project_findings_are_exact() -> None:
    assert list(_findings(PROJECT)) == expected_lines(PROJECT / "expected")


@pytest.mark.parametrize("where, chain", [
    ("reachpkg/scorer.py:11:16 AMP001",
     "via net.score_frames(frames) (train.py:15:16) → Scorer.score_frames (inferred)"),
    ("reachpkg/losses.py:7:17 AMP001",
     "via self.loss(dist, y) (train.py:34:19) → DistributionNLLLoss.forward (inferred)"),
    # `instantiate(cfg.encoder)` builds the class `configs/model.yaml` names under `encoder:`: found by
    # value (`project/configured.py`), not by the method's name
    ("reachpkg/encoders.py:6:19 AMP003",
     "via self.encoder.encode(x) (train.py:35:17) → VAEEncoder.encode → encoders.kl_term "
     "(reachpkg/encoders.py:16:22)"),
    ("reachpkg/regularizers.py:14:32 AMP003", "via self.reg(z) (train.py:36:21) → GaussianRegularizer.forward"),
])
def test_chains_say_which_targets_were_inferred(where: str, chain: str) -> None:
    message = _findings(PROJECT)[where]
    assert message.split("; risk")[0].endswith(chain), message


def test_a_distribution_parameter_reads_what_the_caller_built() -> None:
    """`self.loss(dist, y)`: the walk joins the call site, so the callee's `dist` is the caller's Independent(Normal)."""
    message = _findings(PROJECT)["reachpkg/losses.py:7:17 AMP001"]
    assert ("`Independent.log_prob` runs under float16 autocast with inputs not cast to float32: `out`, `out.exp()`, "
            "`target` (the distribution is built in `Routine.step` at train.py:33)") in message


def test_parameters_given_a_distribution_by_their_callers_are_joined() -> None:
    found = _findings(PROJECT)
    for where, method in (("6:11", "Normal.entropy"), ("7:10", "kl_divergence"), ("8:23", "Normal.log_prob")):
        message = found[f"reachpkg/terms.py:{where} AMP001"]
        assert message.startswith(f"`{method}` runs under float16 autocast with inputs not cast to float32: `h`, "
                                  "`h.exp()`"), message
        assert "(the distribution is built in `regularize` at train.py:51)" in message
        assert message.split("; risk")[0].endswith("via policy_terms(...) (train.py:51:16) → terms.policy_terms")
    # Alone, the helper has no region and its parameters hold nothing known.
    assert _findings(PROJECT / "reachpkg" / "terms.py", Config(project=False)) == {}


def test_a_parameter_typed_as_a_distribution_is_an_input_when_nothing_else_is_known() -> None:
    found = _findings(PROJECT / "reachpkg" / "losses.py", Config(project=False))
    assert found == {}  # no region in this file
    from amplint.engine import check_source

    source = (PROJECT / "reachpkg" / "losses.py").read_text(encoding="utf-8").replace(
        "        return -dist.log_prob(target).mean()",
        "        with torch.autocast(\"cuda\"):\n            return -dist.log_prob(target.float()).mean()",
    ).replace("from torch import Tensor, nn", "import torch\nfrom torch import Tensor, nn")
    (finding,) = check_source(source, "losses.py", Config(project=False)).findings
    assert "with inputs not cast to float32: `dist`" in finding.message  # the value's cast is not enough


def test_returned_distributions_name_their_constructor() -> None:
    found = _findings(PROJECT / "policy.py", Config(project=False))
    assert list(found) == ["policy.py:31:16 AMP001", "policy.py:32:15 AMP001", "policy.py:34:14 AMP001"]
    assert "`self.mu(x)`, `self.log_std(x).exp()` (the distribution is built in `Policy.forward` at line 14)" in (
        found["policy.py:31:16 AMP001"])
    assert "`mean`, `self.log_std(x).exp()`, `actions` (the distribution is built in `Policy.evaluate` at line 18)" in (
        found["policy.py:34:14 AMP001"])


def test_a_distribution_returned_from_another_file_is_followed(tmp_path: Path, capsys) -> None:
    from amplint.cli import main

    message = _findings(PROJECT)["train.py:44:16 AMP001"]
    assert ("with inputs not cast to float32: `self.mu(obs)`, `self.log_std(obs).exp()` (the distribution is built "
            "in `Actor.forward` at reachpkg/agents.py:12)") in message
    copy = tmp_path / "reach"
    shutil.copytree(PROJECT, copy)
    originals = {p.relative_to(copy).as_posix(): p.read_text(encoding="utf-8") for p in copy.rglob("*.py")}
    assert main(["check", "--fix", "--select", "AMP001", str(copy)]) == 0
    assert capsys.readouterr().out.strip() == "Fixed 9 findings, 0 remaining."
    changed = {}
    for name, text in originals.items():
        after = (copy / name).read_text(encoding="utf-8")
        compile(after, name, "exec")
        changed.update({f"{name}:{i + 1}": new.strip() for i, (old, new) in
                        enumerate(zip(text.splitlines(), after.splitlines())) if old != new})
    assert changed == {
        # The cast is where the distribution is built, in the other file; train.py's value was already cast.
        "reachpkg/agents.py:12": "return Normal(self.mu(obs).float(), self.log_std(obs).float().exp())",
        # `policy_terms` in reachpkg/terms.py reads the Normal train.py builds and gives it: cast here.
        "train.py:51": "return policy_terms(Normal(h.float(), h.float().exp()), prior, actions)",
        "train.py:33": "dist = Independent(Normal(out.float(), out.float().exp()), 1)",
        "reachpkg/losses.py:7": "return -dist.log_prob(target.float()).mean()",
        "reachpkg/scorer.py:11": "return Normal(self.mu(frames).float(), 1.0).log_prob(frames.float())",
        "policy.py:14": "return Normal(self.mu(x).float(), self.log_std(x).float().exp())",
        "policy.py:18": "dist = Normal(mean.float(), self.log_std(x).float().exp())",
        "policy.py:34": "lp = dist.log_prob(actions.float())",
    }
    assert main(["check", "--fix", "--select", "AMP001", str(copy)]) == 0  # idempotent: nothing left, no edit
    assert capsys.readouterr().out.strip() == "Fixed 0 findings, 0 remaining."
    assert [k for k in _findings(copy) if k.endswith("AMP001")] == []


def test_a_constructor_outside_the_named_file_is_cast_there_and_named(tmp_path: Path, capsys) -> None:
    """`check train.py` calls the finding fixable, so `--fix train.py` fixes it: the constructor in the file it
    was not given is cast (the issue "every front end tells the same truth", item 1), and the run names it."""
    from amplint.cli import main

    copy = tmp_path / "reach"
    shutil.copytree(PROJECT, copy)
    (copy / "pyproject.toml").write_text("", encoding="utf-8")  # the project a named file is checked in
    before = (copy / "train.py").read_text(encoding="utf-8")
    agents = copy / "reachpkg" / "agents.py"
    assert main(["check", "--fix", "--select", "AMP001", str(copy / "train.py")]) == 0
    out = capsys.readouterr().out
    assert out == (f"Fixed 1 finding, 0 remaining.\nChanged 1 file: {agents} ({agents} not named: it builds a "
                   "distribution a fixed finding reads).\n")
    original = (PROJECT / "reachpkg" / "agents.py").read_text(encoding="utf-8").splitlines()
    changed = {number: line.strip() for number, (old, line) in
               enumerate(zip(original, agents.read_text(encoding="utf-8").splitlines()), 1) if old != line}
    # Only line 12, for train.py's finding; the constructors at lines 33 and 51 serve findings of files not named.
    assert changed == {12: "return Normal(self.mu(obs).float(), self.log_std(obs).float().exp())"}
    assert (copy / "train.py").read_text(encoding="utf-8") == before  # its value was cast already
    assert main(["check", "--select", "AMP001", str(copy / "train.py")]) == 0


def _actor_non_finite(agents: Path) -> int:
    """`actor(obs).log_prob(actions.float())` as train.py runs it, under CPU float16 autocast, scales of 1e-4."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(agents.read_text(encoding="utf-8"), str(agents), "exec"), namespace)
    torch.manual_seed(0)
    actor = namespace["Actor"](8)
    with torch.no_grad():
        actor.log_std.weight.zero_()
        actor.log_std.bias.fill_(float(torch.log(torch.tensor(1e-4))))
        with torch.autocast("cpu", dtype=torch.float16):
            values = actor(torch.randn(512, 8)).log_prob(torch.randn(512, 1).float())
    return int((~torch.isfinite(values)).sum())


@pytest.mark.torch
def test_the_cast_in_the_other_file_ends_the_non_finite_values(tmp_path: Path, unvalidated_distributions) -> None:
    from amplint.fix.apply import fix_paths

    assert _actor_non_finite(PROJECT / "reachpkg" / "agents.py") == 512
    copy = tmp_path / "reach"
    shutil.copytree(PROJECT, copy)
    fix_paths([str(copy)], Config(select=("AMP001",)))
    assert _actor_non_finite(copy / "reachpkg" / "agents.py") == 0


def _fixed(tmp_path: Path) -> Path:
    from amplint.fix.apply import fix_paths

    target = tmp_path / "policy.py"
    shutil.copy(PROJECT / "policy.py", target)
    run = fix_paths([str(target)], Config(strategy="cast", project=False))
    assert sum(fix.fixed_count for fix in run.fixes) == 3
    return target


def test_fix_casts_where_the_distribution_is_built(tmp_path: Path) -> None:
    from amplint.fix.apply import fix_paths

    target = _fixed(tmp_path)
    original = (PROJECT / "policy.py").read_text(encoding="utf-8").splitlines()
    fixed = target.read_text(encoding="utf-8").splitlines()
    changed = {i + 1: new for i, (old, new) in enumerate(zip(original, fixed)) if old != new}
    assert changed == {
        14: "        return Normal(self.mu(x).float(), self.log_std(x).float().exp())",
        18: "        dist = Normal(mean.float(), self.log_std(x).float().exp())",
        34: "        lp = dist.log_prob(actions.float())",
    }
    compile(target.read_text(encoding="utf-8"), str(target), "exec")
    again = fix_paths([str(target)], Config(strategy="cast", project=False))
    assert sum(fix.fixed_count for fix in again.fixes) == 0
    assert _findings(target, Config(project=False)) == {}


def _non_finite(path: Path) -> List[int]:
    """Run `act` under CPU float16 autocast with scales of 1e-4, whose square float16 rounds to 0."""
    torch = pytest.importorskip("torch")
    source = path.read_text(encoding="utf-8").replace(
        'torch.autocast("cuda")', 'torch.autocast("cpu", dtype=torch.float16)')
    namespace: dict = {}
    exec(compile(source, str(path), "exec"), namespace)
    torch.manual_seed(0)
    x = torch.randn(512, 8)
    original_init = namespace["Policy"].__init__

    def init(self, dim):
        original_init(self, dim)
        with torch.no_grad():
            self.log_std.weight.zero_()
            self.log_std.bias.fill_(float(torch.log(torch.tensor(1e-4))))

    namespace["Policy"].__init__ = init
    actions = torch.randn(512, 1)
    with torch.no_grad():
        values = namespace["act"](x, actions)
    return [int((~torch.isfinite(v)).sum()) for v in values]


@pytest.mark.torch
def test_value_only_cast_is_a_false_all_clear_that_the_fix_ends(tmp_path: Path, unvalidated_distributions) -> None:
    before = _non_finite(PROJECT / "policy.py")
    assert before[0] == 512, before  # `policy(x).log_prob(actions.float())`: every value -inf
    assert before[2] > 0, before
    assert _non_finite(_fixed(tmp_path)) == [0, 0, 0, 0]


CONTAINERS = {
    "pkg/__init__.py": "",
    "pkg/heads.py": """from torch import nn
from torch.distributions import Laplace, Normal


class GaussHead(nn.Module):
    def forward(self, h, y):
        return Normal(self.mu(h), 1.0).log_prob(y)


class LaplaceHead(nn.Module):
    def forward(self, h, y):
        return Laplace(self.mu(h), 0.1).log_prob(y)


class Block(nn.Module):
    def forward(self, h):
        return Normal(h, 1.0).log_prob(h)


class Unused(nn.Module):
    def forward(self, h):
        return Normal(h, 1.0).log_prob(h)
""",
    "train.py": """import torch
from torch import nn

from pkg.heads import Block, GaussHead, LaplaceHead


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"gauss": GaussHead(), "laplace": LaplaceHead()})
        self.trunk = nn.Sequential(Block())

    def loss(self, h, y):
        total = 0
        for name, head in self.heads.items():
            total = total + head(h, y).mean()
        return total + self.trunk(h).mean()

    def gauss(self, h, y):
        return self.heads["gauss"](h, y)


def train(model: Model, h, y):
    with torch.autocast("cuda"):
        return model.loss(h, y) + model.gauss(h, y)
""",
}


def test_modules_in_containers_are_followed(tmp_path: Path) -> None:
    """`nn.ModuleDict`/`nn.Sequential` elements, called in a `.items()` loop, by key, or as the Sequential."""
    for name, text in CONTAINERS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = _findings(tmp_path)
    assert list(found) == ["pkg/heads.py:7:16 AMP001", "pkg/heads.py:12:16 AMP001", "pkg/heads.py:17:16 AMP001"]
    assert found["pkg/heads.py:7:16 AMP001"].split("; risk")[0].endswith(
        "via model.loss(h, y) (train.py:25:16) → Model.loss → GaussHead.forward (train.py:16:29)")
    assert found["pkg/heads.py:17:16 AMP001"].split("; risk")[0].endswith(
        "→ Model.loss → Block.forward (train.py:17:24)")


def test_single_file_runs_and_flake8_see_what_the_walk_joins(tmp_path: Path) -> None:
    """`amplint check FILE` and a real `flake8 FILE` get the walk's contexts: a distribution returned from
    another file (train.py), and parameters given one by a caller elsewhere (terms.py)."""
    from test_single_file import check_json, flake8, positions

    project = tmp_path / "reach"
    shutil.copytree(PROJECT, project)
    (project / "pyproject.toml").write_text("", encoding="utf-8")  # the project's root, as a user's would have
    expected = [("reachpkg/terms.py", 6, 11, "AMP001"), ("reachpkg/terms.py", 7, 10, "AMP001"),
                ("reachpkg/terms.py", 8, 23, "AMP001"), ("train.py", 44, 16, "AMP001")]
    names = ["reachpkg/terms.py", "train.py"]
    assert positions(check_json(names, project)) == expected
    assert positions(flake8(names, project)) == [(os.path.normpath(p), *rest) for p, *rest in expected]
