"""Never break, round two: signals at random points of `--fix` (fuzz target, fixed seed).

A small generated tree is fixed once without interruption (on a copy) to know the fixed text of every file.
Then, trial after trial, a fresh copy is fixed by `amplint check --fix -j 2` (a process pool forced, no
cache) and its main process gets SIGINT, SIGTERM or SIGKILL at a random moment of the run. After each:

- no process of the run is left (the workers die with their parent, even under SIGKILL);
- no temporary file `.*.amplint` is left;
- every file is either as it was or exactly as the uninterrupted run fixed it.

The seed is fixed so that CI runs the same trials; `AMPLINT_FUZZ_SEED` and `AMPLINT_FUZZ_TRIALS` explore more.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Dict

import pytest

from test_never_break_signals import kill_group, start, temporary_files, wait_gone

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")

SEED = int(os.environ.get("AMPLINT_FUZZ_SEED", "20261205"))
TRIALS = int(os.environ.get("AMPLINT_FUZZ_TRIALS", "12"))
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)

SITE = '''

def nll_{name}(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''
CLEAN = '''

def helper_{name}(a, b):
    return a * b + {name!r}.count("x")
'''


def generate(root: Path, rng: random.Random) -> Dict[str, str]:
    """A package of 10-16 modules: some with one to three fixable findings, some clean, in subfolders too."""
    texts = {}
    for index in range(rng.randint(10, 16)):
        folder = "" if rng.random() < 0.6 else "sub/"
        parts = ["import torch\nimport torch.distributions as D\n"]
        for part in range(rng.randint(2, 40)):
            name = f"{index}_{part}"
            parts.append((SITE if rng.random() < 0.15 else CLEAN).format(name=name))
        texts[f"{folder}mod{index}.py"] = "".join(parts)
    for name, text in texts.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return texts


def snapshot(root: Path) -> Dict[str, str]:
    return {str(path.relative_to(root)): path.read_text() for path in root.rglob("*.py")}


def test_signals_at_random_points_of_fix_leave_every_file_whole(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    original = tmp_path / "original"
    texts = generate(original, rng)

    reference = tmp_path / "reference"
    shutil.copytree(original, reference)
    began = time.monotonic()
    process = start(["check", "--fix", "-j", "2", str(reference)])
    out, err = process.communicate(timeout=120)
    duration = time.monotonic() - began
    assert process.returncode == 0, (out, err)
    fixed = snapshot(reference)
    assert any(fixed[name] != text for name, text in texts.items())  # the tree had something to fix

    outcomes = []
    for trial in range(TRIALS):
        signum = SIGNALS[trial % len(SIGNALS)]
        delay = rng.uniform(0.0, duration * 1.1)
        tree = tmp_path / f"trial{trial}"
        shutil.copytree(original, tree)
        process = start(["check", "--fix", "-j", "2", str(tree)])
        try:
            time.sleep(delay)
            try:
                os.kill(process.pid, signum)
            except ProcessLookupError:
                pass
            out, err = process.communicate(timeout=60)
            left = wait_gone(process.pid)
        finally:
            kill_group(process.pid)
        where = f"trial {trial}: {signal.Signals(signum).name} after {delay:.2f} s, exit {process.returncode}"
        assert left == [], f"{where}: processes left: {left}"
        assert temporary_files(tree) == [], f"{where}: temporary files left"
        now = snapshot(tree)
        assert sorted(now) == sorted(texts), where
        for name, text in texts.items():
            assert now[name] in (text, fixed[name]), f"{where}: {name} is neither original nor fixed"
        assert process.returncode in (0, 130, 143, -signal.SIGINT, -signal.SIGTERM, -signal.SIGKILL), \
            f"{where}: {err[-2000:]}"
        if process.returncode in (130, 143):
            assert err.endswith("amplint: interrupted\n"), f"{where}: {err[-2000:]}"
        outcomes.append(sum(now[name] == fixed[name] != text for name, text in texts.items()))
    assert len(outcomes) == TRIALS
