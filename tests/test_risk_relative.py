"""A `low` risk says what low means: every measured regime finite in float16, and the error next to the value.

Before, `risk low on CUDA: finite in 5 measured regimes, max error 1.6e+02` read as a contradiction: 1.6e+02
is the absolute error on log-densities near -1e5. The table (amplint/data/hazards.json, written by
`python -m amplint.verify.hazard_script`) now holds each cell's error relative to the float64 value too.
"""
from __future__ import annotations

import textwrap

from amplint.engine import check_source
from amplint.risk import load_table, low_detail

NORMAL = """
import torch
from torch.distributions import Normal
def loss(model, x, y):
    with torch.autocast("{device}", dtype=torch.float16):
        mu, sigma = model(x).chunk(2, -1)
        return Normal(mu, sigma).log_prob(y)
"""


def _rows(dist: str, method: str) -> list:
    return [row for row in load_table()["rows"] if row["dist"] == dist and row["method"] == method
            and "skipped" not in row and "value" not in row]


def test_a_low_risk_gives_the_relative_error_first_then_the_absolute() -> None:
    [finding] = check_source(textwrap.dedent(NORMAL.format(device="cuda")), "m.py").findings
    rows = _rows("Normal", "log_prob")  # a scale used as it is: no row's transform matches, so every row counts
    column = [cell["cuda-emulated"] for cell in rows]
    assert len(rows) == 5 and all(cell["neg_inf"] + cell["pos_inf"] + cell["nan"] == 0 for cell in column)
    assert finding.risk.level == "low"
    assert finding.risk.max_rel_error == max(cell["max_rel_error"] for cell in column) == 0.00998
    assert finding.risk.max_abs_error == max(cell["max_abs_error"] for cell in column) == 163.0
    assert finding.message.endswith(
        "; risk low on CUDA: all 5 measured regimes finite in float16, max relative error 1.0e-02 vs float64 "
        "(absolute 1.6e+02)")
    assert finding.to_json()["risk"]["max_rel_error"] == 0.00998


def test_the_wording_for_one_regime_and_for_a_table_without_the_relative_error() -> None:
    assert low_detail(1, 0.5, 0.002) == ("the 1 measured regime finite in float16, max relative error 2.0e-03 vs "
                                         "float64 (absolute 0.5)")
    assert low_detail(3, 0.5, None) == "all 3 measured regimes finite in float16, max error 0.5"
    assert low_detail(2, None, None) == "all 2 measured regimes finite in float16"


def test_every_measured_cell_has_a_relative_error_no_larger_than_its_absolute_one() -> None:
    """|e| / max(|reference|, 1) <= |e|, over the same entries (finite in both): the two agree on None too."""
    cells = [row[column] for row in load_table()["rows"] if "skipped" not in row
             for column in ("cpu", "cuda-emulated")]
    assert len(cells) == 900  # 286 measured rows with a float16 value, 164 with the value cast to float32
    for cell in cells:
        absolute, relative = cell["max_abs_error"], cell["max_rel_error"]
        assert (absolute is None) == (relative is None), cell
        if absolute is not None:
            assert relative <= absolute * 1.01, cell  # both rounded to 3 significant digits
