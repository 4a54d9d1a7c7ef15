"""Shared paths and helpers for the test suite."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
# A fixed old modification time (2001-09-09, in seconds): a write moves it even where the clock ticks coarsely.
OLD = 1_000_000_000


def forget_answers(cache: "Path | str") -> None:
    """Drop the runs' answers kept in `cache` (`project.answer`): a test of the caches below them runs again
    over an unchanged project, which the answer alone would serve."""
    shutil.rmtree(Path(cache) / "answer", ignore_errors=True)


def write_package(root: Path, files: Dict[str, str], name: str = "pkg") -> Path:
    """`root/name/`, a package with an empty `__init__.py` and `files` (file name -> text); returns its folder."""
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for file_name, text in files.items():
        (package / file_name).write_text(text)
    return package


def run_amplint(args: Sequence[str], cwd: Path = ROOT, stdin: str = "") -> subprocess.CompletedProcess:
    """Run the real CLI in a subprocess, as a user or a hook would."""
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-m", "amplint", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, env=env, timeout=300,
    )


def check_json(root: Path, *extra: str) -> List[Dict[str, Any]]:
    """`amplint check --format json [extra] .` run in `root` as a user runs it: its findings (it must not fail)."""
    done = subprocess.run([sys.executable, "-m", "amplint", "check", "--format", "json", *extra, "."],
                          capture_output=True, text=True, timeout=120, cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout) if done.stdout.startswith("[") else []  # type: ignore[no-any-return]


# A module with two heads, each a density its `forward` returns: `Normal.log_prob` at 13:17, `Laplace.log_prob`
# at 23:17 (the value-flow tests give one to each model and check which one a float16 run computes).
TWO_HEADS = """\
import torch
from torch import nn
from torch.distributions import Laplace, Normal


class NormalHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 1)
        self.sd = nn.Linear(4, 1)

    def forward(self, x, y):
        return -Normal(self.mu(x), torch.sigmoid(self.sd(x))).log_prob(y).mean()


class LaplaceHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 1)
        self.sd = nn.Linear(4, 1)

    def forward(self, x, y):
        return -Laplace(self.mu(x), torch.sigmoid(self.sd(x))).log_prob(y).mean()
"""


def found_places(root: Path) -> List[Tuple[str, int, int, str]]:
    """(path, line, column, code) of each finding of `amplint check` run in `root`."""
    return [(f["path"], f["line"], f["column"], f["code"]) for f in check_json(root, "--exit-zero")]


def traced_comparison(root: Path, script: str = "train.py") -> Dict[str, Any]:
    """`amplint trace` of `python SCRIPT` in `root`, then `check --compare` with that trace: its JSON report
    (`missed`, `unreached`, `sites`, ...). Needs torch."""
    pytest.importorskip("torch")
    trace = root / "amplint-trace.json"
    traced = run_amplint(["trace", "-o", str(trace), "--", sys.executable, script], cwd=root)
    assert traced.returncode == 0, traced.stderr
    compared = run_amplint(["check", "--compare", str(trace), "--format", "json", "."], cwd=root)
    return json.loads(compared.stdout)  # type: ignore[no-any-return]


def run_recording_normals(root: Path, monkeypatch: pytest.MonkeyPatch, *args: Any) -> Tuple[List[Any], Any]:
    """`main(*args)` of the project's `run.py` at `root`, with no grad: the dtype of each `Normal`'s `loc` where
    `log_prob` runs, and what `main` returned. The project's modules (`pkg`, `run`) are forgotten afterwards."""
    torch = pytest.importorskip("torch")
    seen: List[Any] = []
    original = torch.distributions.Normal.log_prob

    def recording(self, value):  # type: ignore[no-untyped-def]
        seen.append(self.loc.dtype)
        return original(self, value)

    def project_modules() -> List[str]:
        return [m for m in sys.modules if m == "pkg" or m.startswith("pkg.") or m == "run"]

    monkeypatch.setattr(torch.distributions.Normal, "log_prob", recording)
    monkeypatch.syspath_prepend(str(root))
    for name in project_modules():
        monkeypatch.delitem(sys.modules, name)
    try:
        with torch.no_grad():
            return seen, importlib.import_module("run").main(*args)
    finally:
        for name in project_modules():
            del sys.modules[name]


# A package module whose head returns a Normal built from a float16 Linear's output (`pkg/heads.py`).
LINEAR_NORMAL_HEAD = '''\
import torch
from torch import nn
from torch.distributions import Normal


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, h):
        loc, raw = self.lin(h).chunk(2, dim=-1)
        return Normal(loc, raw.exp())
'''


# A module with one fixable AMP001 finding, numbered so that many can share a tree or a file.
BROKEN_MODULE = '''\
import torch
import torch.distributions as D


def nll{index}(model, h, x):
    with torch.autocast("cuda"):
        mu, sigma = model(h)
        return -D.Normal(mu, sigma).log_prob(x)
'''
PADDING = "".join(f"\n\ndef helper{j}(a, b):\n    return a + b * {j}\n" for j in range(60))
_UNIT = BROKEN_MODULE.split("\n\n\n", 1)[1]


def broken_tree(root: Path, count: int, padding: str = PADDING) -> Dict[str, str]:
    """`root/`, `count` files with one fixable finding each; returns name -> text."""
    root.mkdir(parents=True)
    texts = {}
    for index in range(count):
        text = BROKEN_MODULE.format(index=index) + padding
        (root / f"m{index:03d}.py").write_text(text)
        texts[f"m{index:03d}.py"] = text
    return texts


def fixed_module(text: str) -> str:
    """What `--fix` (cast) makes of a `BROKEN_MODULE`."""
    return text.replace("D.Normal(mu, sigma).log_prob(x)", "D.Normal(mu.float(), sigma.float()).log_prob(x.float())")


def dense_source(size: int) -> str:
    """A file of about `size` bytes with one fixable finding every 130 bytes (a fix adds about 24 each)."""
    parts, index = ["import torch\nimport torch.distributions as D\n"], 0
    while sum(map(len, parts)) < size:
        parts.append("\n" + _UNIT.format(index=index))
        index += 1
    return "".join(parts)


@pytest.fixture
def root() -> Path:
    return ROOT


def default_sigint() -> None:
    """`Popen(preexec_fn=...)`: Ctrl-C acts in the child as in a terminal, even when this process was started
    with SIGINT ignored (a background job of a non-interactive shell, `nohup`), which a child inherits."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """SIGINT raises `KeyboardInterrupt` in this process during the test, whatever handler it inherited."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def expected_lines(path: Path) -> List[str]:
    """Non-comment lines of a `.expected` file: `line:col CODE [via a → b]`."""
    return [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.fixture
def unvalidated_distributions():
    """Distributions built without argument validation, warnings silenced, for running float16 code.

    float16 rounding can make a scale exactly 0 in the *original* code, which validation turns into a
    ValueError: the tests compare what the computation returns (-inf, NaN), not validation.
    """
    import warnings

    torch = pytest.importorskip("torch")
    previous = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(False)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(previous)


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool for any batch (when jobs >= 2), and no disk cache that would spare the parses."""
    from amplint import parallel

    monkeypatch.setenv(parallel.FORCE_ENV, "1")
    monkeypatch.setenv("AMPLINT_NO_CACHE", "1")


def log_dtypes_script(imports: str, run: str, project: str = "proj") -> str:
    """A script that runs `run` (after `imports`, with the folder `project` importable) and prints the dtype
    of every `torch.log` it took: the truth a test of reach compares amplint with. Keep it outside the checked
    folder: its own `torch.log` would make it a probability file of the project."""
    return (f"import sys\n\nsys.path.insert(0, {project!r})\n\nimport torch\n"
            "from torch.overrides import TorchFunctionMode\n\n" + imports + "\n\nseen = []\n\n\n"
            "class Logs(TorchFunctionMode):\n"
            "    def __torch_function__(self, func, types, args=(), kwargs=None):\n"
            "        if func is torch.log:\n"
            "            seen.append(str(args[0].dtype))\n"
            "        return func(*args, **(kwargs or {}))\n\n\n"
            "torch.manual_seed(0)\nwith Logs():\n    " + run + "\nprint(seen)\n")


def chain_via(chain) -> str:
    """` via f → g` for the calls of a chain, as `.expected` files list them; a chain of `built` hops alone (a
    distribution built in another method of the class) has no call, and no `via`."""
    names = chain_names(chain)
    return f" via {' → '.join(names)}" if names else ""


def chain_names(chain) -> List[str]:
    """The calls of a finding's chain by name (`Hop`s, or their JSON): what `.expected` files list after `via`;
    the places are checked in tests/test_chain_locations.py."""
    hops = [hop if isinstance(hop, dict) else hop.to_json() for hop in chain]
    return [hop["name"] for hop in hops if hop["role"] == "call"]
