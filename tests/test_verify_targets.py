"""`amplint verify` runs check's own findings (project mode included) on each region's own device."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

from amplint.config import Config
from amplint.project.run import run_project
from amplint.verify.targets import collect
from conftest import FIXTURES

torch = pytest.importorskip("torch")

from amplint.model import Precision, RegionInfo  # noqa: E402
from amplint.verify.devices import CPU, CUDA, CUDA_EMULATED, device_for  # noqa: E402

VERIFY = FIXTURES / "verify"
Key = Tuple[str, int, int, str]


def _check(path: Path, config: Config = Config()) -> List[Key]:
    results = run_project([str(path)], config, use_cache=False).results
    return sorted((f.path, f.line, f.column, f.code) for r in results for f in r.findings)


def _verify(path: Path, config: Config = Config()) -> List[Key]:
    return sorted((t.path, t.line, t.column, t.code) for t in collect([str(path)], config).targets if t.code)


@pytest.mark.parametrize("where", ["project", "verify", "check"])
def test_verify_targets_are_checks_findings(where: str) -> None:
    """Same list, cross-file findings included (fixtures/project reaches utils.py from train.py)."""
    checked = _check(FIXTURES / where)
    assert checked and _verify(FIXTURES / where) == checked
    if where == "project":
        [utils] = [t for t in collect([str(FIXTURES / where)]).targets if t.path.endswith("utils.py")]
        assert utils.site is not None and utils.site.dists[0].qualname.endswith("Independent")


def test_no_project_config_is_followed_too() -> None:
    config = Config(project=False)
    assert _verify(FIXTURES / "project", config) == sorted(
        (f.path, f.line, f.column, f.code) for f in _single_file_findings(FIXTURES / "project", config))


def _single_file_findings(path: Path, config: Config):
    from amplint.engine import check_paths

    return [f for r in check_paths([str(path)], config) for f in r.findings]


def test_amp_dtype_attribute_is_not_a_float16_finding_in_either() -> None:
    """`self.amp_dtype` is only ever bfloat16 or float32: check (project mode) and verify both say nothing."""
    fixture = VERIFY / "amp_dtype_attribute.py"
    assert _check(fixture) == [] and _verify(fixture) == []
    assert collect([str(fixture)]).targets == []
    # Single-file analysis cannot see the attribute's values: that is where verify used to disagree.
    assert [f.code for f in _single_file_findings(fixture, Config(project=False))] == ["AMP001"]


def _region(device):
    return RegionInfo(1, Precision.FLOAT16, True, device, repr(device))


def test_default_device_follows_the_region() -> None:
    cuda_like = CUDA if torch.cuda.is_available() else CUDA_EMULATED
    assert device_for(_region("cuda"), "auto") is cuda_like
    assert device_for(_region("cuda:1"), "auto") is cuda_like
    assert device_for(_region("cpu"), "auto") is CPU
    assert device_for(_region(None), "auto") is (CUDA if torch.cuda.is_available() else CPU)
    assert device_for(_region("cuda"), "cpu") is CPU and device_for(_region("cpu"), "cuda-emulated") is CUDA_EMULATED


def _run_verify(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    return subprocess.run([sys.executable, "-m", "amplint", "verify", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_cli_default_device_says_which_and_writes_nothing(tmp_path: Path) -> None:
    """A CUDA region without a GPU runs under the emulated CUDA policy and says so; no NumPy warning, no cache."""
    shutil.copy(VERIFY / "laplace_exp_scale.py", tmp_path / "cuda_region.py")
    (tmp_path / "cpu_region.py").write_text(
        "import torch\nfrom torch.distributions import Normal\n\n\n"
        "def f(model, x, y):\n"
        "    with torch.autocast('cpu', dtype=torch.float16):\n"
        "        mu, s = model(x).chunk(2, -1)\n"
        "        return Normal(mu, s.exp()).log_prob(y)\n", encoding="utf-8")
    before = sorted(p.name for p in tmp_path.iterdir())
    done = _run_verify([".", "--batch", "1024", "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "NumPy" not in done.stderr and "Warning" not in done.stderr
    devices = {Path(r["path"]).name: r["device"] for r in json.loads(done.stdout)}
    assert devices == {"cuda_region.py": "cuda" if torch.cuda.is_available() else "cuda-emulated",
                       "cpu_region.py": "cpu"}
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    text = _run_verify([".", "--batch", "1024"], tmp_path)
    if not torch.cuda.is_available():
        assert "device cuda-emulated" in text.stdout and "  cuda-emulated (CUDA autocast's dtype policy" in text.stdout
    assert "  cpu (CPU float16 autocast" in text.stdout


def test_an_emulation_limit_is_no_verdict() -> None:
    """kl_divergence(Categorical, Categorical) needs CUDA internals a CPU-only torch lacks: unverifiable, not a failure.

    A CUDA build has them, so there the emulation measures it (seen on an H200 with torch 2.11.0+cu130).
    """
    from amplint.verify.runner import RunSettings, verify_target
    from amplint.verify.results import Verdict

    [target] = [t for t in collect([str(FIXTURES / "check" / "kl_entropy.py")]).targets if t.line == 17]
    emulated = verify_target(target, RunSettings(CUDA_EMULATED, 512, 0))
    if torch.version.cuda is None:
        assert emulated.verdict is Verdict.UNVERIFIABLE and "emulation cannot run" in (emulated.reason or "")
    else:
        assert emulated.verdict is not Verdict.UNVERIFIABLE and emulated.original is not None
    on_cpu = verify_target(target, RunSettings(CPU, 512, 0))
    assert on_cpu.verdict is not Verdict.UNVERIFIABLE and on_cpu.original is not None
