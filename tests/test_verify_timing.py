"""What a fix costs: medians in turns after a warm-up (`verify/timing.py`), and the runner's use of them."""
from __future__ import annotations

from typing import Dict, List

import pytest

from amplint.verify.results import Timing
from amplint.verify.timing import median_seconds


class FakeClock:
    """perf_counter for median_seconds: each call of a step moves it by that step's cost."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_each_step_runs_in_turns_calls_per_run_reach_10_ms_and_a_raising_one_has_no_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import amplint.verify.timing as timing

    clock = FakeClock()
    monkeypatch.setattr(timing, "time", clock)
    cost = {"original": 0.004, "fix": 0.005, "broken": 0.001}
    order: List[str] = []
    calls: Dict[str, int] = {name: 0 for name in cost}

    def step(name: str):
        def once() -> None:
            calls[name] += 1
            order.append(name)
            clock.now += cost[name]
            if name == "broken" and calls[name] == 2:
                raise RuntimeError("raised in the first timed run")
        return once

    synced: List[int] = []
    medians = median_seconds({name: step(name) for name in cost}, runs=3, synchronize=lambda: synced.append(1))
    # the warm-up's fastest call took 1 ms: 10 calls make a 10 ms run
    assert medians.calls == 10
    assert calls == {"original": 1 + 3 * 10, "fix": 1 + 3 * 10, "broken": 2}
    assert order[:5] == ["original", "fix", "broken", "original", "original"]
    assert order[12:15] == ["original", "fix", "fix"]  # all of one version's run, then the next one's
    assert medians.seconds == {"original": pytest.approx(0.004), "fix": pytest.approx(0.005), "broken": None}
    assert len(synced) == 2 * (3 + 3 * 2) + 1  # before and after each run; the raising run syncs only before


def test_the_cost_line_and_json_of_a_timing() -> None:
    timing = Timing(runs=5, warmups=1, calls=8, device="cpu", emulated=False, backward=True, original=0.2,
                    fix_cast=0.2062, fix_disable=0.196)
    assert timing.describe() == ("fix A: +3.1% time, fix C: -2.0% time (median of 5 runs of 8 calls after 1 warm-up, "
                                 "forward+backward, cpu, one thread)")
    assert timing.to_json()["fix_overhead"] == {
        "fix_cast": {"strategy": "cast", "ratio": 1.031, "percent": 3.1},
        "fix_disable": {"strategy": "disable-autocast", "ratio": 0.98, "percent": -2.0}}
    emulated = Timing(runs=3, warmups=1, calls=1, device="cuda-emulated", emulated=True, backward=False,
                      original=None, fix_cast=0.1, fix_disable=None)
    assert emulated.describe() == (
        "fix A: no ratio, fix C: no ratio (median of 3 runs of 1 call after 1 warm-up, forward only, cuda-emulated, "
        "one thread: emulated timing, CPU running CUDA's dtype policy through a Python wrapper, not a GPU's); "
        "the original raised, so no ratio")
    on_gpu = Timing(runs=1, warmups=2, calls=40, device="cuda", emulated=False, backward=True, original=0.001,
                    fix_cast=0.0011, fix_disable=0.001)
    assert on_gpu.describe() == ("fix A: +10.0% time, fix C: +0.0% time (median of 1 run of 40 calls after 2 "
                                 "warm-ups, forward+backward, cuda)")
    assert emulated.to_json()["fix_overhead"]["fix_cast"] == {"strategy": "cast", "ratio": None, "percent": None}


def test_the_runner_times_forward_and_backward_on_cpu_and_forward_only_when_emulated() -> None:
    pytest.importorskip("torch")
    from amplint.verify.devices import CPU, CUDA_EMULATED
    from amplint.verify.runner import RunSettings, Target, verify_target
    from test_verify_helpers import NORMAL, log_prob, region

    target = Target("model.py", 10, 5, "AMP001", log_prob(NORMAL), region())
    untimed = verify_target(target, RunSettings(CPU, 4096, 0))
    assert untimed.timing is None  # the library default: verdicts only
    cpu = verify_target(target, RunSettings(CPU, 4096, 0, timing_runs=3)).timing
    assert cpu is not None and (cpu.runs, cpu.warmups, cpu.device, cpu.emulated, cpu.backward) == \
        (3, 1, "cpu", False, True)
    emulated = verify_target(target, RunSettings(CUDA_EMULATED, 4096, 0, timing_runs=2)).timing
    assert emulated is not None and (emulated.runs, emulated.device, emulated.emulated, emulated.backward) == \
        (2, "cuda-emulated", True, False)
    for timing in (cpu, emulated):
        for fixed in (timing.fix_cast, timing.fix_disable):
            ratio = timing.ratio(fixed)
            assert ratio is not None and ratio > 0
