"""The flake8 plugin through the real flake8 CLI: a bad `[tool.amplint]` is one AMP000 row, and flake8's other
plugins still run (before, a 46-line multiprocessing traceback stopped flake8 for the whole repository)."""
from __future__ import annotations

from pathlib import Path

from test_flake8 import flake8


def test_a_bad_config_is_one_row_and_the_other_plugins_run(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.amplint]\nstrategy = "fast"\n', encoding="utf-8")
    for index in range(6):  # enough files for flake8 to start its process pool
        (tmp_path / f"m{index}.py").write_text("import os\n", encoding="utf-8")
    proc = flake8(["."], cwd=tmp_path)
    assert "Traceback" not in proc.stderr and proc.returncode == 1
    rows = proc.stdout.splitlines()
    amp = [row for row in rows if "|AMP" in row]
    assert len(amp) == 1, rows
    assert amp[0].endswith(f"|1|1|AMP000|amplint: {tmp_path / 'pyproject.toml'}: [tool.amplint] key 'strategy': "
                           "expected one of 'cast', 'disable-autocast', got 'fast'; amplint's checks are off")
    assert sorted(row.split("|")[0] for row in rows if "|F401|" in row) == [f"./m{i}.py" for i in range(6)]
