"""The stored hazard table (amplint/data/hazards.json) is what a fresh run of its script measures."""
from __future__ import annotations

import json
from typing import Optional

import pytest

torch = pytest.importorskip("torch")

from amplint.risk import load_table  # noqa: E402
from amplint.verify import hazard_script  # noqa: E402


@pytest.fixture(scope="module")
def fresh() -> dict:
    threads = torch.get_num_threads()
    try:
        return json.loads(hazard_script.dumps(hazard_script.build_table()))  # ~20 s: every class, batch 4,096
    finally:
        torch.set_num_threads(threads)


def _error_close(got: Optional[float], want: Optional[float]) -> bool:
    """Within a factor of 2: the float32 error of a finite result depends on the CPU's vector kernels.

    Measured on torch 2.13: the table stored from one machine and a fresh run on an AMD EPYC with AVX-512
    differ in 19 of its error cells by up to 15% (25 cells under `ATEN_CPU_CAPABILITY=avx2`), while every
    count of -inf, +inf and NaN, every dtype, error and float16 op is the same. Those decide a finding's risk.
    """
    if got is None or want is None:
        return got is want
    low, high = sorted((abs(got), abs(want)))
    return high == low or high <= 2 * low


ERRORS = ("max_abs_error", "max_rel_error")  # measured errors: compared within a factor of 2 (`_error_close`)


def _without_errors(row: dict) -> dict:
    return {key: {k: v for k, v in cell.items() if k not in ERRORS} if isinstance(cell, dict) else cell
            for key, cell in row.items()}


def test_stored_table_matches_a_fresh_run(fresh: dict) -> None:
    if torch.version.cuda is not None:  # a CUDA build measures real CUDA: benchmarks/compare_cuda.py compares that
        pytest.skip("the stored table is measured on a CPU-only torch build")
    stored = json.loads(hazard_script.DATA.read_text(encoding="utf-8"))
    assert stored["devices"] == ["cpu", "cuda-emulated"]
    assert {k: v for k, v in fresh.items() if k != "rows"} == {k: v for k, v in stored.items() if k != "rows"}
    for got, want in zip(fresh["rows"], stored["rows"]):
        assert _without_errors(got) == _without_errors(want)
        for device in fresh["devices"]:
            if isinstance(got.get(device), dict):
                for error in ERRORS:
                    assert _error_close(got[device][error], want[device][error]), (got, device, error)
    assert len(fresh["rows"]) == len(stored["rows"])


@pytest.mark.parametrize("got,want,close", [
    (4.41e-07, 5.13e-07, True), (2.26e29, 2.27e29, True), (None, None, True), (0.0, 0.0, True),
    (1e-6, 3e-6, False), (None, 1e-7, False), (0.0, 1e-9, False),
])
def test_error_cells_are_compared_within_a_factor_of_two(got: Optional[float], want: Optional[float],
                                                         close: bool) -> None:
    assert _error_close(got, want) is close


def test_package_data_is_the_stored_table() -> None:
    assert load_table() == json.loads(hazard_script.DATA.read_text(encoding="utf-8"))


def _row(table: dict, dist: str, method: str, params: str, regime_start: str = "") -> dict:
    [row] = [r for r in table["rows"] if r["dist"] == dist and r["method"] == method and r["params"] == params
             and "skipped" not in r and "value" not in r and r["regime"].startswith(regime_start)]
    return row


def test_every_class_and_method_has_a_row_or_a_reason(fresh: dict) -> None:
    covered = {(r["dist"], r["method"]) for r in fresh["rows"]}
    for cls in hazard_script.distribution_classes():
        for method in hazard_script.METHODS:
            assert (cls.__name__, method) in covered
    assert all(r.get("skipped") or r["cpu"] for r in fresh["rows"])


def test_the_device_difference_is_measured(fresh: dict) -> None:
    """CPU keeps pow/log in float16 (Normal -inf), CUDA does not; Laplace's float16 division fails on both."""
    normal = _row(fresh, "Normal", "log_prob", "loc=loc_head, scale=torch.exp(scale_head)", "scale in [1e-4")
    assert normal["cpu"]["neg_inf"] > 0 and "pow" in normal["cpu"]["float16_ops"]
    cuda_like = fresh["devices"][1]  # "cuda" where torch sees a GPU, else "cuda-emulated"
    cuda = normal[cuda_like]
    assert cuda["dtype"] == "float32" and cuda["neg_inf"] + cuda["nan"] == 0 and "pow" not in cuda["float16_ops"]
    laplace = _row(fresh, "Laplace", "log_prob", "loc=loc_head, scale=1e-3 * torch.sigmoid(scale_head)")
    assert laplace["cpu"]["neg_inf"] > 0 and laplace[cuda_like]["neg_inf"] > 0
    assert "div" in laplace[cuda_like]["float16_ops"]


def test_docs_quote_the_stored_table() -> None:
    """docs/measurements.md holds `hazard_script --markdown` of the stored table, verbatim."""
    doc = (hazard_script.DATA.parents[2] / "docs" / "measurements.md").read_text(encoding="utf-8")
    assert hazard_script.markdown(json.loads(hazard_script.DATA.read_text(encoding="utf-8"))) in doc
