"""`amplint.guard()` in a real (tiny) training loop on CPU float16 autocast."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from types import ModuleType

import pytest

torch = pytest.importorskip("torch")

import torch.distributions as D  # noqa: E402

from amplint.guard import AmpLintNonFiniteError, AmpLintNonFiniteWarning, guard  # noqa: E402
from conftest import ROOT, run_amplint  # noqa: E402

# A policy whose log-scale head has collapsed to -9 (scale 1.2e-4): under float16
# autocast the variance (1.5e-8) underflows to zero and log_prob is -inf. Heads
# start at zero weight, the scale is `log_sigma.exp()` inline so `--fix` casts
# before the exp (measured: a cast after it leaves non-finite gradients), and a
# GradScaler skips the steps whose float16 backward overflows, as in real AMP.
TRAINING_LOOP = '''\
import torch
import torch.distributions as D
import torch.nn as nn


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 1)
        self.log_sigma = nn.Linear(4, 1)
        for head in (self.mu, self.log_sigma):
            nn.init.zeros_(head.weight)
            nn.init.zeros_(head.bias)
        nn.init.constant_(self.log_sigma.bias, -9.0)


def train(steps=5):
    torch.manual_seed(0)
    policy = Policy()
    opt = torch.optim.SGD(policy.parameters(), lr=1e-7)
    scaler = torch.amp.GradScaler("cpu")
    losses = []
    for _ in range(steps):
        h = torch.randn(256, 4)
        action = 0.002 * torch.randn(256, 1)
        with torch.autocast("cpu", dtype=torch.float16):
            mu = policy.mu(h)
            log_sigma = policy.log_sigma(h)
            loss = -D.Normal(mu, log_sigma.exp()).log_prob(action).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
    return losses
'''


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def log_prob_line(path: Path) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if ".log_prob(" in line)


def half_normal(scale: float = 1e-4):
    lin = lambda t: torch.nn.functional.linear(t.reshape(-1, 1), torch.ones(1, 1)).reshape(t.shape)  # noqa: E731
    return lin(torch.zeros(64)), lin(torch.full((64,), scale)), lin(torch.full((64,), 0.01))


def test_guard_names_the_line_and_the_fixed_loop_runs_clean(tmp_path: Path) -> None:
    loop = tmp_path / "train_policy.py"
    loop.write_text(TRAINING_LOOP)
    module = load(loop)
    with pytest.raises(AmpLintNonFiniteError) as caught:
        with guard():
            module.train()
    error = caught.value
    assert (Path(error.filename).name, error.lineno) == ("train_policy.py", log_prob_line(loop))
    assert error.rule == "AMP001" and error.report.computation == "Normal.log_prob"
    assert error.report.neg_inf > 0 and "scale=float16" in str(error) and "cpu float16 autocast" in str(error)

    proc = run_amplint(["check", "--fix", str(loop)])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "log_sigma.float().exp()" in loop.read_text()
    fixed = load(loop)
    with guard():
        losses = fixed.train()
    assert all(torch.isfinite(torch.tensor(losses)))


def test_patches_are_restored_and_cost_nothing_outside() -> None:
    originals = (D.Normal.log_prob, D.Normal.entropy, D.Distribution.cdf, D.kl_divergence, D.kl.kl_divergence)
    with pytest.raises(AmpLintNonFiniteError):
        with guard():
            assert D.Normal.log_prob is not originals[0]
            with torch.autocast("cpu", dtype=torch.float16):
                mu, sigma, x = half_normal()
                D.Normal(mu, sigma).log_prob(x)  # noqa: AMP001 (deliberate)
    assert (D.Normal.log_prob, D.Normal.entropy, D.Distribution.cdf, D.kl_divergence, D.kl.kl_divergence) == originals
    assert not hasattr(D.Normal.log_prob, "__amplint_guard__")


def test_decorator_nesting_and_warn_mode() -> None:
    @guard
    def bare() -> bool:
        return hasattr(D.Normal.log_prob, "__amplint_guard__")

    @guard(mode="warn")
    def warned():
        with torch.autocast("cpu", dtype=torch.float16):
            mu, sigma, x = half_normal()
            return D.Normal(mu, sigma).log_prob(x)  # noqa: AMP001 (deliberate)

    assert bare() and not hasattr(D.Normal.log_prob, "__amplint_guard__")
    with guard():
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = warned()  # the innermost guard's mode applies
        assert hasattr(D.Normal.log_prob, "__amplint_guard__")  # outer guard still active
    assert not torch.isfinite(out).all()
    [warning] = [w for w in seen if w.category is AmpLintNonFiniteWarning]
    assert Path(warning.filename).name == "test_guard.py" and "AMP001" in str(warning.message)
    with pytest.raises(ValueError):
        guard(mode="ignore")


def test_outermost_class_and_kl_are_named() -> None:
    with torch.autocast("cpu", dtype=torch.float16):
        mu, sigma, x = half_normal()
        logits = torch.nn.functional.linear(torch.zeros(64, 1), torch.ones(1, 1))
        mixture = D.MixtureSameFamily(D.Categorical(logits=logits), D.Normal(mu[:, None], sigma[:, None]))
        with guard(), pytest.raises(AmpLintNonFiniteError) as caught:
            mixture.log_prob(x)  # noqa: AMP001 (deliberate)
        assert caught.value.report.computation == "MixtureSameFamily.log_prob"
        with guard(), pytest.raises(AmpLintNonFiniteError) as caught:
            D.kl_divergence(D.Normal(mu, sigma), D.Normal(mu + 1, sigma))  # noqa: AMP001 (deliberate)
        assert caught.value.report.computation == "kl_divergence(Normal, Normal)"


def test_finite_or_full_precision_results_pass() -> None:
    with guard():
        # -inf outside the support, float32, no autocast: legitimate, not an autocast failure
        assert D.Uniform(0.0, 1.0, validate_args=False).log_prob(torch.tensor([2.0])).isinf().all()
        with torch.autocast("cpu", dtype=torch.float16):
            mu, sigma, x = half_normal(scale=0.5)
            assert torch.isfinite(D.Normal(mu, sigma).log_prob(x)).all()  # noqa: AMP001 (deliberate)


def test_amp002_float16_inputs_with_autocast_disabled() -> None:
    with torch.autocast("cpu", dtype=torch.float16):
        mu, sigma, x = half_normal()
        with torch.autocast("cpu", enabled=False), guard(), pytest.raises(AmpLintNonFiniteError) as caught:
            D.Normal(mu, sigma).log_prob(x)  # noqa: AMP002 (deliberate)
    assert caught.value.rule == "AMP002"


def test_other_threads_are_checked_while_a_guard_is_active() -> None:
    errors = []

    def worker() -> None:
        try:
            with torch.autocast("cpu", dtype=torch.float16):
                mu, sigma, x = half_normal()
                D.Normal(mu, sigma).log_prob(x)  # noqa: AMP001 (deliberate)
        except AmpLintNonFiniteError as exc:
            errors.append(exc)

    with guard():
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert len(errors) == 1


def test_importing_amplint_does_not_import_torch() -> None:
    code = "import sys, amplint, amplint.guard, amplint.verify; print('torch' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
