"""`amplint verify --run-user-code`: a slice of the user's code, run in a limited child process (issue 53, item 2).

Every verdict here comes from a real `python -m amplint verify` process, whose child really imports torch
and runs the slice; the counts are exact because the inputs are seeded and torch runs on one thread.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List

import pytest

pytest.importorskip("torch")

from amplint.verify.sandbox import Limits, child_env, run_child  # noqa: E402
from amplint.verify.sliceimports import Finder, bases_of  # noqa: E402
from amplint.verify.slicer import SliceNeeds, Slicer  # noqa: E402
from amplint.verify.sliceemit import emit  # noqa: E402
from amplint.verify.userentry import locate  # noqa: E402
from amplint.verify.userentrysite import method_params  # noqa: E402
from amplint.verify.userroles import role_in_expression, role_of_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

REGION = '''\
import torch

from losses import gaussian_nll


def step(head, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        out = head(h)
        mu, log_std = out[:, :8], out[:, 8:]
        return gaussian_nll(mu, log_std, y).mean()
'''
LOSSES = '''\
import math
import os

import pandas  # not installed where verify runs: the slice does not need it
import torch

from mathutil import squared_error, variance

open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "IMPORTED"), "w").close()

LOG_2PI = math.log(2 * math.pi)


def gaussian_nll(mu: torch.Tensor, log_std: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Hand-written: the variance exp(2 log_std) underflows in float16, and the squared error overflows. Both
    are in helpers, so this body shows no shape of its own: the call is the site."""
    return 0.5 * LOG_2PI + log_std + 0.5 * squared_error(y, mu) / variance(log_std)


def report(values: pandas.DataFrame) -> None:
    print(values.describe())
'''
MATHUTIL = ("import torch\n\n\ndef squared_error(a, b):\n    return (a - b) ** 2\n\n\n"
            "def variance(log_std):\n    return torch.exp(2 * log_std)\n")

BAD_REGION = '''\
import torch

from dens import alloc_nll, exit_nll, loop_nll, raise_exit_nll, wandb_nll


def step(lin, h, y):
    with torch.autocast("cpu", dtype=torch.float16):
        mu = lin(h)
        a = loop_nll(mu, y)
        b = alloc_nll(mu, y)
        c = exit_nll(mu, y)
        d = raise_exit_nll(mu, y)
        e = wandb_nll(mu, y)
    return a + b + c + d + e
'''
BAD_DENSITIES = '''\
import sys
import torch
import wandb


def loop_nll(mu, y):
    nll = (y - mu) ** 2
    while True:
        nll = nll + 0
    return nll


def alloc_nll(mu, y):
    hoard = []
    while True:
        hoard.append(torch.ones(1 << 24))
    return (y - mu) ** 2


def exit_nll(mu, y):
    nll = (y - mu) ** 2
    sys.exit(3)
    return nll


def raise_exit_nll(mu, y):
    nll = (y - mu) ** 2
    raise SystemExit(4)
    return nll


def wandb_nll(mu, y):
    wandb.log({"mu": mu})
    return (y - mu) ** 2
'''


def _write(folder: Path, files: Dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def _verify(project: Path, *extra: str, timeout: float = 300) -> List[dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore")
    result = subprocess.run(
        [sys.executable, "-m", "amplint", "verify", "--format", "json", "--timing-runs", "0", "--batch", "1024",
         "--device", "cpu", *extra, "."], cwd=project, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def gaussian_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("user") / "proj",
                  {"region.py": REGION, "losses.py": LOSSES, "mathutil.py": MATHUTIL})


def test_without_the_flag_the_density_is_unverifiable_and_nothing_is_imported(gaussian_project: Path) -> None:
    [report] = _verify(gaussian_project)
    assert (report["path"], report["line"], report["code"], report["verdict"]) == (
        "region.py", 10, "AMP003", "unverifiable")
    assert report["reason"] == (
        "`gaussian_nll` is not a torch.distributions computation verify can rebuild, and verify never runs your own "
        "code unless asked: --run-user-code runs a slice of it (docs/verify.md)")
    assert not (gaussian_project / "IMPORTED").exists()


def test_with_the_flag_the_slice_gives_exact_counts_before_and_after_the_fix(gaussian_project: Path) -> None:
    [report] = _verify(gaussian_project, "--run-user-code")
    assert (report["computation"], report["verdict"], report["batch"], report["precision"]) == (
        "gaussian_nll", "confirmed", 1024, "float16")
    # 7,619 of the 8,192 outputs are +inf in float16: exp(2 log_std) with log_std = log(1e-4..1e-3) is about
    # 1e-8..1e-6, below float16's smallest normal, and (y - mu)^2 over it passes 65,504. Cast to float32: none.
    assert report["original"] == {"dtype": "float16", "neg_inf": 0, "pos_inf": 7619, "nan": 0,
                                  "max_abs_error": pytest.approx(37422.0, abs=1.0), "grads_finite": False,
                                  "error": None}
    for fixed in (report["fix_cast"], report["fix_disable"]):
        assert (fixed["dtype"], fixed["neg_inf"], fixed["pos_inf"], fixed["nan"], fixed["error"]) == (
            "float32", 0, 0, 0, None)
    assert report["recipe"].endswith("; each input (1024, 8)")
    assert report["notes"][0].startswith("ran your code: a slice of 3 project module(s) (mathutil, losses, region), "
                                         "in a child process (python -I, empty environment, limits 120 s and 4096 MiB)")
    assert report["notes"][1] == "tensor inputs (float16 heads, by role): mu real, log_std log-scale, y real; not timed"
    # the slice holds gaussian_nll, LOG_2PI and squared_error: losses.py's marker line and its pandas never ran
    assert not (gaussian_project / "IMPORTED").exists()


@pytest.fixture(scope="module")
def bad_reports(tmp_path_factory: pytest.TempPathFactory) -> Dict[int, dict]:
    project = _write(tmp_path_factory.mktemp("bad") / "proj", {"region.py": BAD_REGION, "dens.py": BAD_DENSITIES})
    started = time.monotonic()
    reports = _verify(project, "--run-user-code", "--user-code-timeout", "10", "--user-code-memory", "1500")
    elapsed = time.monotonic() - started
    assert elapsed < 90, f"a slice that never returns held verify for {elapsed:.0f} s"
    assert all(report["verdict"] == "unverifiable" for report in reports)
    return {report["line"]: report for report in reports}


def test_a_slice_that_loops_forever_is_stopped_by_the_wall_clock(bad_reports: Dict[int, dict]) -> None:
    assert bad_reports[9]["reason"] == "the slice ran past its 10 s wall-clock limit and was stopped"


def test_a_slice_that_allocates_without_bound_runs_out_of_its_memory(bad_reports: Dict[int, dict]) -> None:
    assert bad_reports[10]["reason"] == "the slice ran out of memory (its limit is 1500 MiB of address space)"


def test_sys_exit_needs_sys_and_systemexit_is_caught(bad_reports: Dict[int, dict]) -> None:
    assert bad_reports[11]["reason"] == "the slice needs sys (`exit_nll` uses `sys`, imported at dens.py:1)"
    assert bad_reports[12]["reason"] == "the slice exited (SystemExit: 4) instead of returning a value"


def test_a_density_that_needs_wandb_is_unverifiable_naming_it(bad_reports: Dict[int, dict]) -> None:
    assert bad_reports[13]["reason"] == "the slice needs wandb (`wandb_nll` uses `wandb`, imported at dens.py:3)"


# --- the slicer, in process ------------------------------------------------------------------------------------

def _slice(tmp_path: Path, files: Dict[str, str], name: str, module: str = "losses.py", read: tuple = (),
           **bounds: int) -> Dict[str, str]:
    project = _write(tmp_path / "proj", files)
    finder = Finder(bases_of([str(project)]))
    slicer = Slicer(finder, **bounds)
    slicer.need(slicer.load(finder.module_of(str(project / module))), name, {read}, "the test")
    slicer.close()
    return {module.name: module.source for module in emit(slicer)}


def test_the_slice_keeps_only_what_the_density_uses(tmp_path: Path) -> None:
    sources = _slice(tmp_path, {"losses.py": LOSSES, "mathutil.py": MATHUTIL}, "gaussian_nll")
    assert sources == {
        "mathutil": "import torch\n\ndef squared_error(a, b):\n    return (a - b) ** 2\n\n"
                    "def variance(log_std):\n    return torch.exp(2 * log_std)",
        "losses": "import math\nfrom mathutil import squared_error, variance\nLOG_2PI = math.log(2 * math.pi)\n\n"
                  "def gaussian_nll(mu, log_std, y):\n"
                  '    """Hand-written: the variance exp(2 log_std) underflows in float16, and the squared error '
                  'overflows. Both\n'
                  '    are in helpers, so this body shows no shape of its own: the call is the site."""\n'
                  "    return 0.5 * LOG_2PI + log_std + 0.5 * squared_error(y, mu) / variance(log_std)",
    }


CLASSES = '''\
import scipy
import torch
from torch import nn


class Base(nn.Module):
    def _half(self, x):
        return 0.5 * x

    def unused(self):
        return scipy.stats.norm


class Density(Base):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps

    def log_prob(self, x):
        return self._half(torch.log(x + self.eps))

    def plot(self):
        return scipy.misc
'''


def test_a_method_keeps_its_class_the_members_self_reads_and_the_project_base(tmp_path: Path) -> None:
    """`Density.log_prob`: the constructor runs, `log_prob` reads `self._half` from the base; scipy is not needed."""
    sources = _slice(tmp_path, {"dens.py": CLASSES}, "Density", module="dens.py", read=("log_prob",))
    assert sources == {"dens": (
        "import torch\nfrom torch import nn\n\n"
        "class Base(nn.Module):\n\n    def _half(self, x):\n        return 0.5 * x\n\n"
        "class Density(Base):\n\n    def __init__(self, eps=1e-05):\n        super().__init__()\n"
        "        self.eps = eps\n\n    def log_prob(self, x):\n        return self._half(torch.log(x + self.eps))")}


def test_the_bound_on_work_is_named(tmp_path: Path) -> None:
    with pytest.raises(SliceNeeds) as raised:
        _slice(tmp_path, {"losses.py": LOSSES, "mathutil.py": MATHUTIL}, "gaussian_nll", max_definitions=2)
    assert str(raised.value) == ("the slice grew past 2 definitions (the bound on the slicer's work) before it "
                                 "closed, while following `gaussian_nll`")


def test_a_builtin_that_reaches_outside_stops_the_slice(tmp_path: Path) -> None:
    with pytest.raises(SliceNeeds) as raised:
        _slice(tmp_path, {"dens.py": "def nll(x):\n    return eval('x')\n"}, "nll", module="dens.py")
    assert str(raised.value) == ("the slice needs the builtin `eval` (used by `nll`), which reaches outside the "
                                 "computation")


def test_parts_of_torch_that_start_processes_or_read_files_are_refused(tmp_path: Path) -> None:
    dens = "import torch\nfrom torch.multiprocessing import Process\n\n\ndef nll(x):\n    torch.hub.load('a', 'b')\n" \
           "    return x\n\n\ndef fork_nll(x):\n    Process().start()\n    return x\n"
    with pytest.raises(SliceNeeds) as raised:
        _slice(tmp_path, {"dens.py": dens}, "nll", module="dens.py")
    assert str(raised.value) == ("the slice needs torch.hub (`nll` uses `torch.hub.load`), which --run-user-code "
                                 "refuses: it starts processes, loads compiled code or reads files")
    with pytest.raises(SliceNeeds) as raised:
        _slice(tmp_path / "b", {"dens.py": dens}, "fork_nll", module="dens.py")
    assert str(raised.value).startswith("the slice needs torch.multiprocessing (`fork_nll` uses `Process`)")


HANDWRITTEN = '''\
import torch
import torch.nn.functional as F


class KL(torch.nn.Module):
    def __init__(self, eps=1e-10):
        super().__init__()
        self.eps = eps

    def forward(self, logits, prior_mu, prior_sigma, mu, sigma):
        with torch.autocast("cpu", dtype=torch.float16):
            probs = F.softmax(logits, dim=1)
            ent = torch.log(probs + self.eps)
            var = sigma[:, 1:] ** 2
            prior_var = prior_sigma[:, 1:] ** 2
            kl = torch.log(prior_sigma[:, 1:] / sigma[:, 1:]) + (var + (mu[:, 1:] - prior_mu[:, 1:]) ** 2) / (
                2 * prior_var) - 0.5
        return ent, kl
'''


def test_hand_written_math_runs_the_expression_or_the_statements_that_make_its_locals(tmp_path: Path) -> None:
    from amplint.engine import check_paths

    project = _write(tmp_path / "proj", {"kl.py": HANDWRITTEN})
    findings = [f for r in check_paths([str(project)]) for f in r.findings if f.code == "AMP003"]
    assert [(f.line, f.site.method) for f in findings] == [(13, "log-of-prob"), (16, "gaussian")]
    jobs = []
    for finding in findings:
        assert finding.site is not None
        job = locate(finding.path, finding.line, finding.column, (finding.end_line, finding.end_column),
                     finding.site.method, finding.site.kind, Slicer(Finder(bases_of([str(project)]))))
        assert not isinstance(job, str), job
        jobs.append(job)
    log_job, kl_job = jobs
    # self.eps is the constructor default, a number; probs is the softmax the log reads
    assert [c.note for c in log_job.candidates] == ["the expression alone",
                                                    "1 statement(s) that make its locals, then the expression"]
    assert [(i.key, i.role) for i in log_job.candidates[0].inputs] == [("probs", "probability")]
    assert "torch.log(probs + 1e-10)" in log_job.modules[0].source
    assert [(i.key, i.role) for i in log_job.candidates[1].inputs] == [("logits", "logits")]
    # the Gaussian reads var and mu[:, 1:]: alone, their shapes disagree; one statement back, they agree
    assert [(i.key, i.role) for i in kl_job.candidates[1].inputs] == [
        ("mu", "real"), ("prior_mu", "real"), ("prior_sigma", "scale"), ("sigma", "scale")]


def test_hand_written_math_gets_exact_counts_from_the_cli(tmp_path: Path) -> None:
    """CPU float16 autocast keeps the softmax in float16: probabilities below 6e-8 become 0 and 1e-10 with them."""
    project = _write(tmp_path / "proj", {"kl.py": HANDWRITTEN})
    reports = {(r["line"], r["code"]): r for r in _verify(project, "--run-user-code")}
    counts = {key: (r["verdict"], r["original"]["neg_inf"], r["original"]["pos_inf"], r["original"]["nan"],
                    r["fix_cast"]["neg_inf"] + r["fix_cast"]["pos_inf"] + r["fix_cast"]["nan"])
              for key, r in reports.items()}
    assert counts == {(13, "AMP003"): ("confirmed", 2470, 0, 0, 0), (13, "AMP004"): ("confirmed", 2470, 0, 0, 0),
                      (16, "AMP003"): ("confirmed", 0, 6655, 0, 0)}
    assert "the expression alone" in reports[(13, "AMP003")]["notes"][0]
    assert "2 statement(s) that make its locals, then the expression" in reports[(16, "AMP003")]["notes"][0]


BITS = '''\
import math

import torch


def estimate_bits(model, x):
    with torch.autocast("cpu", dtype=torch.float16):
        likelihoods = model(x)
        return sum((torch.log(lkl[k]).sum() / (-math.log(2))) for lkl in likelihoods.values() for k in ("y", "z"))
'''


def test_a_loop_over_literal_keys_reads_a_dict_of_tensors(tmp_path: Path) -> None:
    """`k` runs over ("y", "z"): the slice runs with "y"; `lkl["y"]` makes `lkl` a dict of one probability tensor."""
    from amplint.verify.userjob import TensorInput

    project = _write(tmp_path / "proj", {"bits.py": BITS})
    line = BITS.splitlines()[8]
    start = line.index("torch.log(lkl[k])") + 1
    job = locate(str(project / "bits.py"), 9, start, (9, start + len("torch.log(lkl[k])")), "log-of-prob",
                 "inline-math", Slicer(Finder(bases_of([str(project)]))))
    assert not isinstance(job, str), job
    assert [c.inputs for c in job.candidates] == [(TensorInput("lkl", "probability", items=("y",)),)]
    assert "return torch.log(lkl['y'])" in job.modules[0].source


def test_roles_from_names_and_from_where_an_input_is_read() -> None:
    import ast

    assert [role_of_name(n) for n in ("posterior_log_sigma", "logvar", "prior_var", "stdev", "probs", "exp_logits",
                                      "logits", "x")] == [
        "log-scale", "log-variance", "variance", "scale", "probability", "exp-logits", "logits", "real"]
    expr = ast.parse("torch.log(outputs.softmax(dim=1) + 1e-10) + torch.log(y.clip(1e-20)) + torch.mm(a, b).exp()",
                     mode="eval").body
    assert [role_in_expression(expr, n, logs=True) for n in ("outputs", "y", "a")] == ["logits", "probability", "real"]


# --- the child process itself ------------------------------------------------------------------------------------

PROBE = '''\
import os, resource, sys
raise RuntimeError(repr((sorted(k for k in os.environ if k != "LC_CTYPE"),
                         os.path.basename(os.getcwd()).startswith("amplint-slice-"), sys.flags.isolated,
                         resource.getrlimit(resource.RLIMIT_AS)[0] >> 20, resource.getrlimit(resource.RLIMIT_CPU)[0],
                         resource.getrlimit(resource.RLIMIT_FSIZE)[0] >> 20)))
'''


def test_the_child_runs_isolated_in_an_empty_environment_with_its_limits(tmp_path: Path) -> None:
    """A job made by hand (the slicer would refuse `os`): what the slice sees of its process.

    Its environment is PATH alone (plus LC_CTYPE, which Python itself sets when the locale is C: PEP 538),
    its folder a new `amplint-slice-*` one, `sys.flags.isolated` is set, and its limits are the ones given:
    2,048 MiB of address space, 61 s of CPU (the wall clock plus one), 8 MiB per file.
    """
    job = {"modules": [{"name": "probe", "path": str(tmp_path / "probe.py"), "package": False, "source": PROBE}],
           "candidates": [], "device": "cpu", "low": "float16", "disabled": False, "batch": 8, "seed": 0}
    outcome = run_child(job, Limits(seconds=60, memory_mib=2048, file_mib=8))
    assert outcome.failure is None and outcome.result is not None
    assert outcome.result["unverifiable"] == (
        "the slice of probe failed to load: RuntimeError: (['PATH'], True, 1, 2048, 61, 8)")
    assert child_env() == {"PATH": os.defpath}


def test_an_import_circle_is_named_not_followed_forever(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # messages name files relative to the current folder
    files = {"a.py": "from b import helper\n\n\ndef nll(x):\n    return helper(x)\n", "b.py": "from a import helper\n"}
    with pytest.raises(SliceNeeds) as raised:
        _slice(tmp_path, files, "nll", module="a.py")
    assert str(raised.value) == "the slice needs `helper`, which proj/a.py imports in a circle (used by `nll`)"


def test_a_static_methods_parameters_keep_their_first() -> None:
    """A call on an instance fills `self`, not a static method's first parameter: `Losses().nll(model, h)`
    gives `model` to `model` (the same test the value flow uses, `flowcalls.is_staticmethod`)."""
    tree = ast.parse("import builtins\n\n\nclass Losses:\n    @staticmethod\n    def nll(model, h):\n        pass\n\n"
                     "    @builtins.staticmethod\n    def mse(model, h):\n        pass\n\n"
                     "    def kl(self, model, h):\n        pass\n")
    found = (SimpleNamespace(tree=tree), 1)
    names = {member: [p.arg for p in method_params(found, member, skip_self=True)]  # type: ignore[arg-type,union-attr]
             for member in ("nll", "mse", "kl")}
    assert names == {"nll": ["model", "h"], "mse": ["model", "h"], "kl": ["model", "h"]}
