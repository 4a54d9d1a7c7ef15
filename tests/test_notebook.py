"""Jupyter notebooks: `amplint check` and `--fix` on real `.ipynb` files written and validated by nbformat."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_amplint
from test_flake8 import flake8

nbformat = pytest.importorskip("nbformat")
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output  # noqa: E402

IMPORTS = "%matplotlib inline\nimport torch\nfrom torch.distributions import Normal\n!pip list | grep torch"
NLL = (
    "def nll(net, x, y):\n"
    '    with torch.autocast("cpu", dtype=torch.float16):\n'
    "        mu, log_std = net(x)\n"
    "        %time z = 1\n"
    "        return -Normal(mu, log_std.exp()).log_prob(y).mean()"
)
FIXED_NLL = NLL.replace("Normal(mu, log_std.exp()).log_prob(y)", "Normal(mu.float(), log_std.float().exp()).log_prob(y.float())")
STEP = (
    "from losses import gaussian_nll\n\n"
    "def step(net, x, y):\n"
    '    with torch.autocast("cuda", dtype=torch.float16):\n'
    "        mu, sigma = net(x)\n"
    "        return gaussian_nll(mu, sigma, y)\n"
)
LOSSES = "from torch.distributions import Normal\n\n\ndef gaussian_nll(mu, sigma, x):\n    return -Normal(mu, sigma).log_prob(x).mean()\n"


def make_notebook(cells) -> "nbformat.NotebookNode":
    notebook = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    notebook.cells = cells
    return notebook


def demo_notebook() -> "nbformat.NotebookNode":
    return make_notebook([
        new_markdown_cell("# Demo\n%this is markdown, not a magic"),
        new_code_cell(IMPORTS),
        new_code_cell(NLL, execution_count=3, outputs=[new_output("stream", name="stdout", text="CPU times: 1 µs\n")]),
        new_code_cell("%%bash\necho this is not python )"),
    ])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    nbformat.write(demo_notebook(), str(tmp_path / "nb.ipynb"))
    return tmp_path


def test_check_locates_a_finding_by_cell_and_line(project: Path) -> None:
    proc = run_amplint(["check", "nb.ipynb"], cwd=project)
    assert proc.returncode == 1, proc.stderr
    first = proc.stdout.splitlines()[0]
    assert first.startswith("nb.ipynb:cell 3:5:17: AMP001 [*] `Normal.log_prob` runs in the float16 autocast region at cell 3, line 2 ")
    assert proc.stdout.splitlines()[1] == "            return -Normal(mu, log_std.exp()).log_prob(y).mean()"
    assert proc.stderr == ""

    (finding,) = json.loads(run_amplint(["check", "nb.ipynb", "--format", "json"], cwd=project).stdout)
    assert (finding["path"], finding["cell"], finding["line"], finding["column"], finding["end_line"], finding["end_column"]) == (
        "nb.ipynb", 3, 5, 17, 5, 54
    )
    assert finding["region"]["line"] == 2

    log = json.loads(run_amplint(["check", "nb.ipynb", "--format", "sarif"], cwd=project).stdout)
    (result,) = log["runs"][0]["results"]
    location = result["locations"][0]
    assert location["properties"] == {"cell": 3}
    assert location["physicalLocation"]["region"] == {"startLine": 5, "startColumn": 17, "endLine": 5, "endColumn": 54}

    github = run_amplint(["check", "nb.ipynb", "--format", "github"], cwd=project).stdout
    assert github.startswith("::warning file=nb.ipynb,line=5,col=17,endLine=5,endColumn=54,title=AMP001 (cell 3)::")


def test_directories_include_notebooks_and_magics_neither_parse_nor_break(project: Path) -> None:
    proc = run_amplint(["check", "."], cwd=project)
    assert "nb.ipynb:cell 3:5:17: AMP001" in proc.stdout
    assert "error" not in proc.stderr  # `%matplotlib`, `!pip`, `%time` and the `%%bash` cell are masked


def test_fix_rewrites_only_the_changed_cell_and_keeps_the_layout(project: Path) -> None:
    path = project / "nb.ipynb"
    before = path.read_text(encoding="utf-8")
    proc = run_amplint(["check", "--fix", "nb.ipynb"], cwd=project)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Fixed 1 finding, 0 remaining." in proc.stdout
    after = path.read_text(encoding="utf-8")

    expected = json.loads(before)
    expected["cells"][2]["source"] = FIXED_NLL.splitlines(keepends=True)
    # nbformat's own layout: indent 1, keys as read, non-ASCII kept, a trailing newline.
    assert after == json.dumps(expected, indent=1, ensure_ascii=False) + "\n"
    fixed = nbformat.read(str(path), as_version=4)
    nbformat.validate(fixed)
    assert fixed.cells[2].source == FIXED_NLL  # `%time z = 1` kept as written
    assert fixed.cells[2].outputs[0]["text"] == "CPU times: 1 µs\n"
    assert fixed.cells[1].source == IMPORTS and fixed.cells[3].source == "%%bash\necho this is not python )"
    assert fixed.metadata.kernelspec.name == "python3"
    assert run_amplint(["check", "nb.ipynb"], cwd=project).returncode == 0


@pytest.mark.torch
def test_fixed_cells_run(project: Path) -> None:
    torch = pytest.importorskip("torch")
    run_amplint(["check", "--fix", "nb.ipynb"], cwd=project)
    notebook = nbformat.read(str(project / "nb.ipynb"), as_version=4)
    namespace: dict = {}
    for cell in notebook.cells:
        if cell.cell_type == "code" and not cell.source.startswith("%%"):
            code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            exec(compile(code, "cell", "exec"), namespace)
    net = torch.nn.Linear(4, 8)

    def split(x):
        out = net(x)
        return out[:, :4], out[:, 4:]

    loss = namespace["nll"](split, torch.randn(3, 4), torch.randn(3, 4))
    assert loss.dtype == torch.float32 and torch.isfinite(loss)


def test_layout_with_indent_2_and_no_trailing_newline_is_kept(tmp_path: Path) -> None:
    notebook = make_notebook([new_code_cell("import torch\nfrom torch.distributions import Normal"), new_code_cell(NLL)])
    text = json.dumps(notebook, indent=2, ensure_ascii=True)
    (tmp_path / "two.ipynb").write_text(text)
    assert run_amplint(["check", "--fix", "two.ipynb"], cwd=tmp_path).returncode == 0
    expected = json.loads(text)
    expected["cells"][1]["source"] = FIXED_NLL  # a string stays a string, as a list stays a list
    assert (tmp_path / "two.ipynb").read_text() == json.dumps(expected, indent=2, ensure_ascii=True)


def test_a_layout_amplint_cannot_reproduce_is_left_alone(tmp_path: Path) -> None:
    notebook = make_notebook([new_code_cell("import torch\nfrom torch.distributions import Normal"), new_code_cell(NLL)])
    text = json.dumps(notebook, separators=(",", ":"), sort_keys=True) + "\n"  # compact: not what we write
    (tmp_path / "compact.ipynb").write_text(text)
    proc = run_amplint(["check", "--fix", "compact.ipynb"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "compact.ipynb: error: amplint cannot reproduce this notebook's JSON layout; notebook left unchanged" in proc.stderr
    assert (tmp_path / "compact.ipynb").read_text() == text


def test_a_cell_reaches_a_project_module(project: Path) -> None:
    (project / "losses.py").write_text(LOSSES)
    notebook = demo_notebook()
    notebook.cells.append(new_code_cell(STEP))
    nbformat.write(notebook, str(project / "nb.ipynb"))
    proc = run_amplint(["check", "."], cwd=project)
    assert "losses.py:5:13: AMP001 " in proc.stdout
    # The call's place counts within its cell too: cell 5, line 6, column 16.
    assert ("reached from autocast region at nb.ipynb:cell 5:4 via gaussian_nll(mu, sigma, y) (nb.ipynb:cell 5:6:16) "
            "→ losses.gaussian_nll;") in proc.stdout
    assert run_amplint(["check", "--fix", "."], cwd=project).returncode == 0
    assert "Normal(mu.float(), sigma.float()).log_prob(x.float())" in (project / "losses.py").read_text()
    nbformat.validate(nbformat.read(str(project / "nb.ipynb"), as_version=4))


def test_a_broken_notebook_is_one_error_line_and_the_run_goes_on(project: Path) -> None:
    (project / "broken.ipynb").write_text('{"cells": [')
    proc = run_amplint(["check", "."], cwd=project)
    assert proc.returncode == 1
    (line,) = proc.stderr.splitlines()
    assert line.startswith("broken.ipynb: error: not a readable notebook: invalid JSON")
    assert "nb.ipynb:cell 3:5:17: AMP001" in proc.stdout


def test_flake8_plugin_does_not_read_notebooks(project: Path) -> None:
    (project / "model.py").write_text("import torch\nfrom torch.distributions import Normal\n\n\n" + NLL.replace("        %time z = 1\n", "") + "\n")
    proc = flake8(["--select", "AMP", "."], cwd=project)
    assert "nb.ipynb" not in proc.stdout
    assert "model.py" in proc.stdout and "AMP001" in proc.stdout


def test_only_a_line_that_starts_a_statement_is_a_magic(tmp_path: Path) -> None:
    """`% 2` continuing a bracket is Python's modulo, and a `%` line inside a string is text."""
    cells = [
        new_code_cell("import torch\nfrom torch.distributions import Normal\nwidth = (17\n         % 5)\ndoc = '''\n%not a magic\n'''"),
        new_code_cell(NLL),
    ]
    nbformat.write(make_notebook(cells), str(tmp_path / "mod.ipynb"))
    proc = run_amplint(["check", "mod.ipynb"], cwd=tmp_path)
    assert proc.stderr == ""
    assert proc.stdout.startswith("mod.ipynb:cell 2:5:17: AMP001 ")
    assert run_amplint(["check", "--fix", "mod.ipynb"], cwd=tmp_path).returncode == 0
    fixed = nbformat.read(str(tmp_path / "mod.ipynb"), as_version=4)
    assert fixed.cells[0].source == cells[0].source and fixed.cells[1].source == FIXED_NLL


def test_diff_is_a_patch_of_the_notebook_file(project: Path) -> None:
    import shutil
    import subprocess

    if shutil.which("patch") is None:
        pytest.skip("patch is not installed")
    proc = run_amplint(["check", "--diff", "nb.ipynb"], cwd=project)
    assert proc.returncode == 1
    assert "amplint-cell" not in proc.stdout and "amplint-magic" not in proc.stdout
    assert '-    "        return -Normal(mu, log_std.exp()).log_prob(y).mean()"\n' in proc.stdout
    subprocess.run(["patch", "-p0", "--quiet"], input=proc.stdout, text=True, cwd=project, check=True)
    nbformat.validate(nbformat.read(str(project / "nb.ipynb"), as_version=4))
    assert run_amplint(["check", "nb.ipynb"], cwd=project).returncode == 0
