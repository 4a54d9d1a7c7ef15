"""`amplint trace` on real scripts under CPU float16 autocast, and `amplint check --compare` beside it.

Every script here runs for real, in its own interpreter, through the CLI; the
numbers asserted (non-finite counts) are what float16 computes on the fixed
weights each script sets, so they are exact.
"""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import run_amplint

torch = pytest.importorskip("torch")

# A head with fixed weights: logits [[0, 20], [0, 0]] in float16 under the region.
HEADS = """\
import torch
from torch.distributions import Normal


def head():
    lin = torch.nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.eye(2))
        lin.bias.zero_()
    return lin


def inputs():
    return torch.tensor([[0.0, 20.0], [0.0, 0.0]])


def entropy_of(p):
    return -(p * torch.log(p + 1e-10)).sum(-1)


def tiny_normal(lin, h):
    out = lin(h)
    return Normal(out, out.sigmoid() * 1e-4)
"""


def _project(tmp_path: Path, files: Dict[str, str]) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'traced'\n")
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def _trace(project: Path, *command: str) -> "tuple[int, List[dict], str]":
    out = project.parent / f"{project.name}-trace.json"
    result = run_amplint(["trace", "-o", str(out), "--", sys.executable, *command], cwd=project)
    records = json.loads(out.read_text()) if out.exists() else []
    return result.returncode, records, result.stderr


def _facts(records: List[dict]) -> List[tuple]:
    return [(r["path"], r["line"], r["column"], r["trace"]["kind"], r["trace"]["float16"], r["trace"]["nonfinite"],
             r["trace"]["values"]) for r in records]


def test_records_the_exact_lines_kinds_and_non_finite_counts(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", {"heads.py": HEADS, "train.py": """\
        import torch
        from heads import entropy_of, head, inputs, tiny_normal

        lin, h = head(), inputs()
        with torch.autocast("cpu", dtype=torch.float16):
            p = torch.softmax(lin(h), -1)
            ent = entropy_of(p)
            d = tiny_normal(lin, h)
            lp = d.log_prob(torch.full((2, 2), 3.0))
        print(ent.tolist(), lp.tolist())
        """})
    code, records, stderr = _trace(project, "train.py")
    assert code == 0, stderr
    # softmax [[~0, 1], [.5, .5]]: float16 rounds 2e-9 to 0, and 1e-10 to 0, so one log is -inf; the
    # product 0 * -inf is NaN: one non-finite entropy. scale = 1e-4 * sigmoid: scale ** 2 underflows, all -inf.
    assert _facts(records) == [
        ("heads.py", 18, 18, "log", True, 1, 4),
        ("heads.py", 23, 24, "sigmoid", True, 0, 4),
        ("train.py", 6, 9, "softmax", True, 0, 4),
        ("train.py", 9, 10, "log_prob", True, 4, 4),
    ]
    log_prob = records[-1]
    assert log_prob["code"] == "AMP001" and log_prob["trace"]["computation"] == "Normal.log_prob"
    assert log_prob["trace"]["dtypes"] == [["loc", "float16"], ["scale", "float16"], ["value", "float32"]]
    assert log_prob["region"]["line"] == 5 and log_prob["region"]["path"] == "train.py"
    assert log_prob["trace"]["autocast"] == "cpu float16"
    assert records[0]["code"] == "AMP003" and records[0]["trace"]["probability"] is True
    assert "2 probability computations ran with float16 inputs at 2 lines, 2 with non-finite values" in stderr


def test_a_site_three_project_frames_down_records_its_stack(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/heads.py": HEADS, "pkg/losses.py": """\
        from pkg.heads import tiny_normal


        def nll(lin, h, x):
            return -score(lin, h, x)


        def score(lin, h, x):
            return tiny_normal(lin, h).log_prob(x)
        """, "pkg/agent.py": """\
        from pkg import losses


        class Agent:
            def __init__(self, lin):
                self.lin = lin

            def update(self, h, x):
                return losses.nll(self.lin, h, x).mean()
        """, "run.py": """\
        import torch
        from pkg.agent import Agent
        from pkg.heads import head, inputs


        def main():
            agent = Agent(head())
            with torch.autocast("cpu", dtype=torch.float16):
                return agent.update(inputs(), torch.zeros(2, 2))


        main()
        """})
    code, records, stderr = _trace(project, "run.py")
    assert code == 0, stderr
    (site,) = [r for r in records if r["trace"]["kind"] == "log_prob"]
    assert (site["path"], site["line"], site["column"]) == ("pkg/losses.py", 9, 12)
    assert [(c["path"], c["line"], c["name"]) for c in site["trace"]["stack"]] == [
        ("run.py", 9, "main"), ("pkg/agent.py", 9, "Agent.update"), ("pkg/losses.py", 5, "nll"),
        ("pkg/losses.py", 9, "score"),
    ]
    assert site["chain"] == ["main", "Agent.update", "nll"]
    # torch's own frames (Normal.log_prob's body, Module.__call__) and the recorder's are never sites
    assert all(not r["path"].startswith("/") and "torch" not in r["path"] for r in records)


def test_a_script_that_fails_halfway_keeps_what_ran_and_its_exit_code(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", {"heads.py": HEADS, "train.py": """\
        import torch
        from heads import head, inputs, tiny_normal

        lin, h = head(), inputs()
        with torch.autocast("cpu", dtype=torch.float16):
            lp = tiny_normal(lin, h).log_prob(torch.ones(2, 2))
            raise RuntimeError("the data loader died")
            ent = tiny_normal(lin, h).entropy()
        """})
    code, records, stderr = _trace(project, "train.py")
    assert code == 1 and "RuntimeError: the data loader died" in stderr
    assert [(r["line"], r["trace"]["kind"], r["trace"]["nonfinite"]) for r in records if r["trace"]["probability"]] \
        == [(6, "log_prob", 4)]
    (project / "exits.py").write_text("import sys\nsys.exit(7)\n")
    code, records, stderr = _trace(project, "exits.py")
    assert code == 7 and records == [] and "0 probability computations" in stderr


def test_a_bfloat16_region_records_nothing(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", {"heads.py": HEADS, "train.py": """\
        import torch
        from heads import entropy_of, head, inputs, tiny_normal

        lin, h = head(), inputs()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            ent = entropy_of(torch.softmax(lin(h), -1))
            lp = tiny_normal(lin, h).log_prob(torch.ones(2, 2))
        """})
    code, records, stderr = _trace(project, "train.py")
    assert code == 0, stderr
    assert records == []


def test_casts_are_seen_as_float32_and_module_mode_runs(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", {"heads.py": HEADS, "pkg/__init__.py": "", "pkg/__main__.py": """\
        import torch
        from torch.distributions import Normal
        from heads import head, inputs

        lin, h = head(), inputs()
        with torch.autocast("cpu", dtype=torch.float16):
            out = lin(h).float()
            lp = Normal(out, out.sigmoid() * 1e-4).log_prob(torch.ones(2, 2))
        """})
    code, records, stderr = _trace(project, "-m", "pkg")
    assert code == 0, stderr
    assert _facts(records) == [("pkg/__main__.py", 8, 10, "log_prob", False, 0, 4)]
    assert records[0]["trace"]["float32_calls"] == 1


def test_trace_refuses_what_is_not_a_python_command(tmp_path: Path) -> None:
    for command in (["ls"], [], ["python"], ["python", "-c", "pass"]):
        result = run_amplint(["trace", "-o", str(tmp_path / "t.json"), "--", *command], cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (command, result.stderr)
        assert result.stderr.startswith("amplint: error:")
    result = run_amplint(["trace", "--", "python", "missing.py"], cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, "amplint: error: missing.py: no such script\n")


COMPARED = {"model.py": """\
    import torch
    from torch.distributions import Normal


    class Policy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 2)

        def forward(self, h):
            mu, s = self.fc(h).chunk(2, -1)
            return mu, s
    """, "train.py": """\
    import torch
    from torch.distributions import Normal
    from model import Policy


    def step(policy, h, x):
        with torch.autocast("cpu", dtype=torch.float16):
            mu, s = policy(h)
            d = Normal(mu, s.exp())
            seen = d.log_prob(x)
            method = getattr(d, "".join(["ent", "ropy"]))
            hidden = method()
            cast = Normal(mu.float(), s.float().exp()).cdf(x)
        return seen.sum() + hidden.sum() + cast.sum()


    def never(policy, h):
        with torch.autocast("cpu", dtype=torch.float16):
            mu, s = policy(h)
            return Normal(mu, s.exp()).entropy()


    if __name__ == "__main__":
        batches = iter([torch.randn(8, 1)])  # a loader's batch: its dtype is known only when it runs
        step(Policy(), torch.randn(8, 4), next(batches))
    """}


def test_compare_lists_the_missed_site_the_unreached_finding_and_the_float32_one(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", COMPARED)
    code, records, stderr = _trace(project, "train.py")
    assert code == 0, stderr
    assert [(r["line"], r["trace"]["kind"], r["trace"]["float16"]) for r in records if r["trace"]["probability"]] \
        == [(10, "log_prob", True), (12, "entropy", True), (13, "cdf", False)]
    trace = str(project.parent / "p-trace.json")
    result = run_amplint(["check", "--compare", trace, "--format", "json", "."], cwd=project)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    # the entropy through getattr is what static analysis cannot see
    assert [(r["path"], r["line"], r["trace"]["kind"]) for r in report["missed"]] == [("train.py", 12, "entropy")]
    assert [(f["path"], f["line"], f["code"]) for f in report["found"]] == [("train.py", 10, "AMP001")]
    assert [(f["path"], f["line"], f["code"]) for f in report["unreached"]] == [("train.py", 20, "AMP001")]
    assert [(f["path"], f["line"], f["code"]) for f in report["float32"]] == [("train.py", 13, "AMP001")]
    assert report["sites"] == 2
    text = run_amplint(["check", "--compare", trace, "train.py"], cwd=project)
    assert text.returncode == 1
    assert "Traced float16 sites that static analysis missed: 1\n  train.py:12:18: traced: Normal.entropy" \
        in text.stdout
    assert "    stack: train.py:12\n" in text.stdout  # the stack starts where the region was opened
    assert text.stdout.endswith("2 traced float16 sites: 1 found, 1 missed.\n")


def test_compare_exits_0_when_nothing_traced_was_missed_and_refuses_bad_traces(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", COMPARED)
    (project / "t.json").write_text("[]")
    result = run_amplint(["check", "--compare", "t.json", "."], cwd=project)
    assert result.returncode == 0 and "0 traced float16 sites: 0 found, 0 missed." in result.stdout
    (project / "bad.json").write_text("{")
    result = run_amplint(["check", "--compare", "bad.json", "."], cwd=project)
    assert result.returncode == 2 and result.stderr.startswith("amplint: error: bad.json: not a trace")
    result = run_amplint(["check", "--compare", "t.json", "--fix", "."], cwd=project)
    assert (result.returncode, result.stderr) == (2, "amplint: error: --compare cannot be combined with --fix\n")


def test_the_readme_example_prints_what_the_readme_shows(tmp_path: Path) -> None:
    import shutil

    from conftest import FIXTURES, ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```\n$ amplint trace -o trace.json", 1)[1].split("```", 1)[0]
    steps = ("$ amplint trace -o trace.json" + block).split("\n$ ")
    project = tmp_path / "trace"
    shutil.copytree(FIXTURES / "trace", project)
    assert len(steps) == 2
    for step in steps:
        command, _, expected = step.lstrip("$ ").partition("\n")
        argv = [sys.executable if word == "python" else word for word in command.split()[1:]]
        result = run_amplint(argv, cwd=project)
        assert (result.stdout + result.stderr).rstrip("\n") == expected.rstrip("\n"), command
