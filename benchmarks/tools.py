"""Throwaway virtual environments holding the tools amplint is compared with.

They live under ``benchmarks/.work`` so that nothing the comparison needs
leaks into amplint's own environment (TorchFix pins an older libcst).

* ``toolenv``: TorchFix (as a flake8 plugin), flake8 and ruff.
* ``flake8env``: flake8 alone, at the very versions amplint's venv has. flake8
  runs every installed plugin whatever ``--select`` says, so ``flake8
  --select E`` in amplint's venv still runs the AMP plugin; the plugin-free
  baseline for "AMP adds at most 20 %" has to come from a second environment.

Usage::

    python benchmarks/tools.py     # create or reuse both, print versions
"""
from __future__ import annotations

import subprocess
import sys
import venv
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
TOOLENV = WORK / "toolenv"
FLAKE8ENV = WORK / "flake8env"

# TorchFix needs no torch; it pins libcst<1.6, hence its own venv.
TOOL_PINS: Dict[str, str] = {
    "torchfix": "0.7.0",
    "flake8": "7.5.0",
    "ruff": "0.17.6",
}

# The plain-flake8 baseline copies these versions from amplint's venv.
FLAKE8_STACK = ("flake8", "pycodestyle", "pyflakes", "mccabe")
MARKER = ".complete"


@dataclass(frozen=True)
class ToolEnv:
    """Paths to the executables the benchmark calls."""

    flake8_tor: Path  # flake8 with TorchFix's TOR plugin
    ruff: Path
    flake8_plain: Path  # flake8 with no plugin at all


def _bin(env: Path, name: str) -> Path:
    """Executable *name* inside venv *env*."""
    return env / "bin" / name


def _pip_install(env: Path, requirements: List[str]) -> None:
    """Install exact pins; --only-binary keeps builds (and surprises) out."""
    cmd = [str(_bin(env, "python")), "-m", "pip", "install", "--quiet",
           "--disable-pip-version-check", "--only-binary", ":all:", *requirements]
    subprocess.run(cmd, check=True)


def _forbid_torch(env: Path) -> None:
    """Fail loudly if a dependency dragged torch (maybe a CUDA build) in."""
    probe = [str(_bin(env, "python")), "-c",
             "import importlib.util,sys; sys.exit(importlib.util.find_spec('torch') is not None)"]
    if subprocess.run(probe).returncode != 0:
        raise RuntimeError(f"{env} unexpectedly contains torch; remove it and pin deps")


def _build(env: Path, requirements: List[str]) -> Path:
    """Create *env* with *requirements* unless a previous build completed."""
    if (env / MARKER).exists():
        return env
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    _pip_install(env, requirements)
    _forbid_torch(env)
    (env / MARKER).write_text("\n".join(requirements) + "\n")
    return env


def _main_venv_versions() -> List[str]:
    """flake8 stack pins taken from the interpreter running this script."""
    pins = []
    for dist in FLAKE8_STACK:
        try:
            pins.append(f"{dist}=={metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            pins.append(dist)
    return pins


def ensure_tools() -> ToolEnv:
    """Create or reuse both environments and return the executables."""
    WORK.mkdir(parents=True, exist_ok=True)
    tool_reqs = [f"{k}=={v}" for k, v in TOOL_PINS.items()]
    toolenv = _build(TOOLENV, tool_reqs)
    plain = _build(FLAKE8ENV, _main_venv_versions())
    return ToolEnv(flake8_tor=_bin(toolenv, "flake8"), ruff=_bin(toolenv, "ruff"),
                   flake8_plain=_bin(plain, "flake8"))


def version_of(cmd: Sequence[str]) -> str:
    """First line of ``CMD --version``, for the results header."""
    try:
        out = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    text = (out.stdout or out.stderr).strip()
    return " ".join(text.split()) if text else f"exit {out.returncode}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Build the environments and print what is in them."""
    tools = ensure_tools()
    for label, exe in vars(tools).items():
        print(f"{label:13s} {exe}\n              {version_of([str(exe)])}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
