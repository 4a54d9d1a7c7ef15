"""When the walk's speculative passes stop (`project.ahead.walk_in_waves`): a pass that costs more than the pool
saves on its frontier is the last speculative one; the pool still parses that frontier, which the ordinary pass
wants too, and the ordinary pass parses the rest in this process."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Sequence

import pytest

from amplint.project import ahead
from amplint.project.ahead import walk_in_waves
from amplint.project.stats import Stats


class _Loader:
    """What `walk_in_waves` asks of a loader: each speculative pass wants the next frontier in `frontiers`."""

    def __init__(self, frontiers: List[List[str]], saving: Optional[float]) -> None:
        self.frontiers = frontiers
        self.saving = saving
        self.stats = Stats()
        self.speculating = False
        self.passes: List[bool] = []  # per pass: was it speculative?
        self.ahead: List[List[str]] = []

    def may_pool(self) -> bool:
        return True

    def speculate(self, on: bool) -> List[str]:
        self.speculating = on
        return [] if on or not self.frontiers else self.frontiers.pop(0)

    def pool_saving(self, paths: Sequence[str]) -> Optional[float]:
        return self.saving

    def parse_ahead(self, paths: Sequence[str]) -> bool:
        self.ahead.append(list(paths))
        return True

    def end_ahead(self) -> None:
        pass

    def make_pass(self) -> int:
        self.passes.append(self.speculating)
        return len(self.passes)


@pytest.mark.parametrize("saving", [None, 1e9])
def test_waves_go_on_while_the_pool_saves_more_than_a_pass_costs(saving: Optional[float]) -> None:
    """No batch measured yet (None), or a pool that saves more than a pass costs: a pass per frontier."""
    loader = _Loader([["a.py"], ["b.py", "c.py"], []], saving)
    assert walk_in_waves(loader, loader.make_pass) == 3  # type: ignore[arg-type]
    assert loader.passes == [True, True, True] and loader.ahead == [["a.py"], ["b.py", "c.py"]]
    assert loader.stats.waves == 3 and not loader.stats.waves_stopped


def test_a_pass_that_costs_more_than_the_pool_saves_is_the_last_speculative_one(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ahead, "MIN_STOP_SECONDS", 0.0)  # these passes take no time
    loader = _Loader([["a.py"], ["b.py"], []], 0.0)
    assert walk_in_waves(loader, loader.make_pass) == 2  # type: ignore[arg-type]
    assert loader.passes == [True, False]  # the ordinary pass finds a.py parsed, and parses what follows here
    assert loader.ahead == [["a.py"]] and loader.stats.waves == 1 and loader.stats.waves_stopped


def test_a_short_pass_never_ends_the_waves() -> None:
    """Under `MIN_STOP_SECONDS` a pass costs little: the waves go on, as on a small project."""
    loader = _Loader([["a.py"], []], 0.0)
    assert walk_in_waves(loader, loader.make_pass) == 2  # type: ignore[arg-type]
    assert loader.passes == [True, True] and loader.ahead == [["a.py"]] and not loader.stats.waves_stopped


def test_a_forced_pool_always_pays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests force a pool for any batch (`parallel.FORCE_ENV`): the waves then never stop on time, whatever the
    machine's load, and the tests of the waves stay exact."""
    from amplint import parallel
    from amplint.config import Config
    from amplint.project.cache import DiskCache
    from amplint.project.loader import Loader
    from amplint.project.modules import ModuleIndex

    loader = Loader([], Config(jobs=2), DiskCache(None), ModuleIndex.build([], [str(tmp_path)]), "t")
    loader._parse_rate = 1.0
    monkeypatch.setattr(loader._pool, "started", lambda: type("W", (), {"alive": [1, 2]})())
    assert loader.pool_saving(["nowhere.py"]) == 0.0  # an unreadable file: no bytes to save on
    monkeypatch.setenv(parallel.FORCE_ENV, "1")
    assert loader.pool_saving(["nowhere.py"]) is None
