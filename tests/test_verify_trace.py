"""`amplint verify --trace`: each finding's verdict from the user's own run, beside the rebuild's.

The script runs for real under `amplint trace` (CPU float16 autocast, fixed
weights), so the run-time facts asserted are what float16 computed: the
log-density with a 1e-4 * sigmoid scale is non-finite on all 4 values
(scale ** 2 underflows), the cdf ran on inputs the script cast to float32,
the evaluation branch never ran, and an entropy called through `getattr`
ran in float16 where check cannot see it.
"""
from __future__ import annotations

import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_amplint

pytest.importorskip("torch")

SCRIPT = """\
import sys

import torch
from torch.distributions import Normal


def head():
    lin = torch.nn.Linear(2, 2)
    with torch.no_grad():
        lin.weight.copy_(torch.eye(2))
        lin.bias.zero_()
    return lin


def step(lin, h, x, evaluate):
    with torch.autocast("cpu", dtype=torch.float16):
        out = lin(h)
        d = Normal(out, out.sigmoid() * 1e-4)
        lp = d.log_prob(x)
        bonus = getattr(d, "".join(["ent", "ropy"]))()
        cdf = Normal(out.float(), out.float().exp()).cdf(x)
        if evaluate:
            return Normal(out, out.exp()).entropy()
    return lp.sum() + bonus.sum() + cdf.sum()


if __name__ == "__main__":
    values = iter([torch.full((2, 2), 3.0)])  # a loader's batch: its dtype is known only when it runs
    print(step(head(), torch.tensor([[0.0, 20.0], [0.0, 0.0]]), next(values), "--eval" in sys.argv))
"""
COST = re.compile(r"    cost: fix A: [+-]\d+\.\d% time, fix C: [+-]\d+\.\d% time "
                  r"\(median of 5 runs of \d+ calls? after 1 warm-up, forward\+backward, cpu, one thread\)")


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project, traced once: `trace.json` beside `train.py`."""
    project = tmp_path_factory.mktemp("traced")
    (project / "pyproject.toml").write_text("[project]\nname = 'traced'\n")
    (project / "train.py").write_text(textwrap.dedent(SCRIPT))
    result = run_amplint(["trace", "-o", "trace.json", "--", sys.executable, "train.py"], cwd=project)
    assert result.returncode == 0, result.stderr
    return project


def test_text_marks_each_finding_from_the_run_and_lists_what_check_missed(traced: Path) -> None:
    result = run_amplint(["verify", "--trace", "trace.json", "--device", "cpu", "--batch", "4096", "train.py"],
                         cwd=traced)
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\n\n")
    heads = [block.splitlines()[0] for block in blocks[:3]]
    assert heads == ["train.py:19:14: AMP001 Normal.log_prob: confirmed",
                     "train.py:21:15: AMP001 Normal.cdf: not-reproduced",
                     "train.py:23:20: AMP001 Normal.entropy: not-reproduced"]
    run_time = [[line for line in block.splitlines() if line.startswith("    at run time: ")] for block in blocks[:3]]
    assert run_time == [
        ["    at run time: confirmed-at-run-time: Normal.log_prob at train.py:19:14 (loc float16, scale float16, "
         "value float32): 4 of 4 values non-finite over 1 call"],
        ["    at run time: float32-at-run-time: Normal.cdf at train.py:21:15 (loc float32, scale float32, "
         "value float32): 0 of 4 values non-finite over 1 call"],
        ["    at run time: not-reached: the trace has no record of it (never run with float16 inputs or under "
         "float16 autocast)"],
    ]
    for block in blocks[:3]:  # the rebuild's cost line comes right before the run-time verdict
        lines = block.splitlines()
        assert COST.fullmatch(lines[-2]), lines[-2]
    assert blocks[3] == (
        "Traced float16 sites that check did not report: 1\n"
        "  train.py:20:17: traced: Normal.entropy ran with float16 inputs under cpu float16 autocast "
        "(loc float16, scale float16); 0 of 4 values non-finite over 1 call\n"
        "    stack: train.py:20")
    summary = blocks[4].splitlines()
    assert summary[0] == "verified 3 computation(s): 1 confirmed, 2 not-reproduced, 0 fix-insufficient, 0 unverifiable"
    assert summary[-1] == ("at run time (trace.json): 1 confirmed-at-run-time, 1 float32-at-run-time, "
                           "1 not-reached; 1 traced float16 site check did not report")


def test_json_carries_both_verdicts_the_fix_costs_and_the_missed_sites(traced: Path) -> None:
    result = run_amplint(["verify", "--trace", "trace.json", "--device", "cpu", "--batch", "4096",
                          "--format", "json", "train.py"], cwd=traced)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert set(report) == {"trace", "computations", "missed"} and report["trace"] == "trace.json"
    found = report["computations"]
    assert [(f["line"], f["code"], f["verdict"], f["run_time"]["verdict"]) for f in found] == [
        (19, "AMP001", "confirmed", "confirmed-at-run-time"),
        (21, "AMP001", "not-reproduced", "float32-at-run-time"),
        (23, "AMP001", "not-reproduced", "not-reached"),
    ]
    assert found[0]["run_time"] == {
        "verdict": "confirmed-at-run-time", "nonfinite": 4, "calls": 1, "values": 4,
        "records": [{"path": "train.py", "line": 19, "column": 14, "computation": "Normal.log_prob", "float16": True,
                     "dtypes": [["loc", "float16"], ["scale", "float16"], ["value", "float32"]], "calls": 1,
                     "nonfinite": 4, "values": 4}]}
    cast = found[1]["run_time"]["records"][0]
    assert cast["dtypes"] == [["loc", "float32"], ["scale", "float32"], ["value", "float32"]]
    assert cast["float16"] is False
    assert found[2]["run_time"] == {"verdict": "not-reached", "nonfinite": 0, "calls": 0, "values": 0, "records": []}
    assert [(m["path"], m["line"], m["column"], m["trace"]["computation"]) for m in report["missed"]] == [
        ("train.py", 20, 17, "Normal.entropy")]
    for finding in found:  # item 4: what each fix costs, per strategy; no bound on the time itself
        timing = finding["timing"]
        assert (timing["runs"], timing["warmups"], timing["cpu_threads"], timing["device"], timing["emulated"],
                timing["passes"]) == (5, 1, 1, "cpu", False, "forward+backward")
        assert 1 <= timing["calls_per_run"] <= 1000
        assert all(seconds > 0 for seconds in timing["median_seconds"].values())
        overhead = timing["fix_overhead"]
        assert [overhead[key]["strategy"] for key in ("fix_cast", "fix_disable")] == ["cast", "disable-autocast"]
        for key in ("fix_cast", "fix_disable"):
            assert overhead[key]["ratio"] > 0
            assert overhead[key]["percent"] == pytest.approx((overhead[key]["ratio"] - 1) * 100, abs=0.01)


def test_without_a_trace_the_json_stays_an_array_and_timing_can_be_turned_off(traced: Path) -> None:
    result = run_amplint(["verify", "--device", "cpu", "--batch", "4096", "--timing-runs", "0", "--format", "json",
                          "train.py"], cwd=traced)
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)
    assert [(r["line"], r["timing"], r["run_time"]) for r in reports] == [
        (19, None, None), (21, None, None), (23, None, None)]


def test_a_trace_that_is_not_one_is_exit_2_before_anything_runs(traced: Path) -> None:
    (traced / "bad.json").write_text("{")
    result = run_amplint(["verify", "--trace", "bad.json", "train.py"], cwd=traced)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("amplint: error: bad.json: not a trace (invalid JSON")
    result = run_amplint(["verify", "--trace", "missing.json", "train.py"], cwd=traced)
    assert result.returncode == 2 and result.stderr.startswith("amplint: error: missing.json: cannot read the trace")


MODEL = '''\
import torch
from torch.distributions import Normal


def make_dist(out):
    return Normal(out[:, 0], out[:, 1].exp())
'''
STEP = '''\
import torch

from model import make_dist


def step(head, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        dist = make_dist(head(x))
        return -dist.log_prob(y.float()).mean()
'''


def test_check_and_verify_name_the_same_construction_site(tmp_path: Path) -> None:
    """Issue 53, item 1: the distribution check says is built at model.py:6 is the one verify rebuilds."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'cv'\n")
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "train.py").write_text(STEP)
    check = run_amplint(["check", "--format", "json", str(tmp_path)])
    [finding] = json.loads(check.stdout)
    assert "(the distribution is built in `make_dist` at model.py:6)" in finding["message"]
    verify = run_amplint(["verify", "--timing-runs", "0", "--device", "cpu", "--format", "json", str(tmp_path)])
    [built] = [hop for hop in finding["chain"] if hop["role"] == "built"]
    assert (Path(built["path"]).name, built["line"]) == ("model.py", 6)
    [report] = json.loads(verify.stdout)
    assert (report["path"].endswith("train.py"), report["line"], report["verdict"]) == (True, 9, "confirmed")
    assert (f"rebuilt from `Normal(out[:, 0], out[:, 1].exp())`, built at {built['path']}:6 as check reports"
            in report["notes"])
