"""The README and docs/ as a user of the repository reads them: each headline number comes from the command
shown beside it, and nothing points at files or history outside the repository."""
from __future__ import annotations

import json
import re

import pytest

from conftest import ROOT, run_amplint

DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "security.md")]
# Internal wording a user of the repository has nothing to look up with: paths of the machine the project was
# measured on, work sessions, and files said to live elsewhere.
INTERNAL = re.compile(r"shared/|/work/|\bsession\b|outside this repository|score\.py|\bissue \d")


def test_the_docs_name_nothing_outside_the_repository() -> None:
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            assert not INTERNAL.search(line), f"{doc.name}:{number}: {line}"


def _row(readme: str, start: str) -> list:
    line = next(line for line in readme.splitlines() if line.startswith(start))
    return [cell.strip() for cell in line.strip("|").split("|")][1:]


def _counts(report: dict, version: str) -> str:
    cell = report[version]
    parts = [f"{cell['neg_inf']:,} `-inf`"] if cell["neg_inf"] else []
    parts += [f"{cell['nan']:,} NaN"] if cell["nan"] else []
    return ", ".join(parts) or "0"


@pytest.mark.parametrize("device, column", [("cpu", 0), ("cuda-emulated", 1)])
def test_the_readme_table_is_what_the_command_beside_it_prints(device: str, column: int) -> None:
    pytest.importorskip("torch")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    files = ["fixtures/verify/normal_small_scale.py", "fixtures/verify/laplace_sigmoid_scale.py"]
    assert f"amplint verify --device {device} {' '.join(files)}" in readme
    result = run_amplint(["verify", "--device", device, "--format", "json", *files])
    reports = {report["computation"]: report for report in json.loads(result.stdout)}
    for computation, start in (("Normal.log_prob", "| `Normal(mu, s).log_prob(x)`"),
                               ("Laplace.log_prob", "| `Laplace(mu, 1e-3 * sigmoid(h)).log_prob(x)`")):
        report = reports[computation]
        assert (report["batch"], report["seed"]) == (65536, 0)
        cells = _row(readme, start)
        assert cells[column] == _counts(report, "original"), (computation, device)
        assert cells[2] == "0" == _counts(report, "fix_cast") == _counts(report, "fix_disable")


def test_the_quick_start_says_why_it_exits_1() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("## Rules", 1)[0]
    assert "amplint check fixtures/check" in quick and "exits with status 1 by design" in quick
    assert run_amplint(["check", "fixtures/check"]).returncode == 1


def test_the_config_example_shows_every_key() -> None:
    from amplint.configfile import KEYS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n[tool.amplint]", 1)[1].split("```", 1)[0]
    shown = {line.split("=", 1)[0].strip() for line in example.splitlines() if "=" in line and
             not line.startswith(("[", '"'))}
    assert set(KEYS) - {"per-file-ignores"} <= shown


def test_the_quick_start_prints_what_the_readme_shows() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("## Rules", 1)[0]
    shown = quick.split("`...` stands for the others):\n\n```\n", 1)[1].split("```", 1)[0].splitlines()
    head, tail = shown[:shown.index("...")], shown[shown.index("...") + 1:]
    result = run_amplint(["check", "fixtures/check"])
    lines = result.stdout.splitlines()
    assert (result.returncode, result.stderr) == (1, "")
    assert lines[:len(head)] == head and lines[-len(tail):] == tail


def test_pip_install_of_a_fresh_clone_installs_every_package() -> None:
    """The quick start's `pip install .` then `amplint check`: the command line imports `amplint.trace` (and every
    other subpackage), so each must be in `[tool.setuptools] packages`, or a fresh clone's `amplint` cannot start."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "amplint").rglob("__init__.py")}
    assert found - listed == set()
