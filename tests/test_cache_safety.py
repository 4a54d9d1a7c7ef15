"""The project cache holds data, never code, and never writes through a link (issue 17).

Anyone who can write to `.amplint_cache` (a pull request that commits one)
must not be able to run code as the user running amplint: a pickle payload
planted where an entry is read is never executed, at the old `.pickle` paths
nor at the new `.json` ones.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
from pathlib import Path

import pytest

from amplint.config import Config
from amplint.model import Finding, Hop, Precision, RegionInfo
from amplint.project.cache import DiskCache
from amplint.project.cachecodec import SCHEMA
from amplint.project.run import run_project

from conftest import FIXTURES, run_amplint

PROJECT = FIXTURES / "project"


class _Payload:
    """Unpickling this touches a marker file: proof that the cache ran code."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _keys(cache: Path):
    return sorted(cache.rglob("*.json"))


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    target = tmp_path / "proj"
    shutil.copytree(PROJECT, target)
    return target


def _render(run) -> list:
    return [(r.path, [(f.line, f.column, f.code, f.chain) for f in r.findings]) for r in run.results]


def test_entries_are_json_with_a_schema_and_round_trip(project_copy: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = run_project([str(project_copy)], Config(), cache_dir=str(cache))
    entries = _keys(cache)
    assert entries and not list(cache.rglob("*.pickle"))
    for entry in entries:
        document = json.loads(entry.read_text(encoding="utf-8"))
        assert document["schema"] == SCHEMA and document["kind"] in ("summary", "findings", "spellings", "scan",
                                                                     "shape", "solution", "answer")
    assert any(json.loads(e.read_text(encoding="utf-8"))["kind"] == "shape" for e in entries)  # a file only shaped
    shutil.rmtree(cache / "answer", ignore_errors=True)  # the run's answer (if kept) would spare the others
    second = run_project([str(project_copy)], Config(), cache_dir=str(cache))
    assert second.stats.parsed == [] and second.stats.shaped == []  # every entry came from the JSON
    assert _render(second) == _render(first)


def test_a_planted_pickle_payload_is_never_executed(project_copy: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = run_project([str(project_copy)], Config(), cache_dir=str(cache))
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Payload(str(marker)))
    for entry in _keys(cache):
        entry.write_bytes(payload)  # where entries are read now
        entry.with_suffix(".pickle").write_bytes(payload)  # where the pickled cache read them
    again = run_project([str(project_copy)], Config(), cache_dir=str(cache))
    assert not marker.exists()
    assert _render(again) == _render(first)
    assert sorted(again.stats.parsed) == sorted(first.stats.parsed)  # every planted entry was a miss
    # And through the real CLI, as CI would run it on a checkout that commits a cache.
    for entry in _keys(cache):
        entry.write_bytes(payload)
    result = _cli_with_cache(project_copy, cache)
    assert not marker.exists(), result.stderr
    assert result.returncode == 1 and "Traceback" not in result.stderr


def _cli_with_cache(project: Path, cache: Path):
    import subprocess
    import sys

    env = dict(os.environ, PYTHONWARNINGS="ignore", AMPLINT_CACHE_DIR=str(cache))
    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, "-m", "amplint", "check", str(project)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "document",
    [
        {"schema": SCHEMA + 1, "kind": "findings", "value": {"t": []}},
        {"schema": SCHEMA, "kind": "summary", "value": {"t": []}},  # another kind
        {"schema": SCHEMA, "kind": "findings", "value": {"c": "Popen", "p": ["touch x"]}},
        {"schema": SCHEMA, "kind": "findings", "value": {"c": "Finding", "p": [1, 2, 3, 4, 5, "c", "m"]}},  # wrong type
        {"schema": SCHEMA, "kind": "findings", "value": {"c": "Finding", "p": ["a.py"] + [None] * 15}},  # one too many
        {"schema": SCHEMA, "kind": "findings", "value": {"c": "Finding", "p": ["a.py", 1]}},  # required ones missing
        {"schema": SCHEMA, "kind": "findings", "value": {"c": "Finding", "f": {"path": "a.py"}}},  # by name: schema 1
        {"schema": SCHEMA, "kind": "findings", "value": {"e": "Precision", "v": "float8"}},
        {"schema": SCHEMA, "kind": "findings", "value": {"d": [[[1], 2]]}},  # unhashable key
        {"schema": SCHEMA, "kind": "findings", "value": {"s": [[1]]}},  # unhashable set member
        {"schema": SCHEMA, "kind": "findings",  # a set of names given as a tuple
         "value": {"c": "FileShape", "p": [{"t": []}, {"t": []}, {"d": []}, {"d": []}, {"t": ["x"]}]}},
        {"schema": SCHEMA, "kind": "findings",  # a set of names holding a number
         "value": {"c": "FileShape", "p": [{"t": []}, {"t": []}, {"d": []}, {"d": []}, {"s": [1]}]}},
        {"schema": SCHEMA, "kind": "findings"},
        {"schema": SCHEMA, "kind": "findings", "value": {"t": []}, "more": 1},  # not an entry's outer object
        {"schema": SCHEMA, "kind": "findings",  # an entry inside the value
         "value": {"t": [{"schema": SCHEMA, "kind": "findings", "value": {"t": []}}]}},
        {"schema": SCHEMA, "kind": "findings", "value": {"d": [[[1], 2]], "t": []}},  # two tags in one object
        [1, 2, 3],
    ],
)
def test_a_malformed_entry_is_a_miss(tmp_path: Path, document) -> None:
    cache = DiskCache(str(tmp_path))
    key = "cd" * 32
    cache.put("findings", key, ())
    (entry,) = _keys(tmp_path)
    entry.write_text(json.dumps(document), encoding="utf-8")
    assert cache.get("findings", key) is None
    assert (cache.hits, cache.misses) == (0, 1)


def test_findings_round_trip_exactly(tmp_path: Path) -> None:
    cache = DiskCache(str(tmp_path))
    region = RegionInfo(3, Precision.FLOAT16, True, "cuda", '"cuda"')
    chain = (Hop("f(x)", "b.py", 3, 9, "b.py"), Hop("g", "b.py", 3, 9, "b.py"), Hop("Normal(mu, s)", "a.py", 2, 0,
                                                                                 role="built", cell=2))
    finding = Finding("a.py", 4, 5, 4, 9, "AMP001", "msg", True, ("cast",), region, chain, None, "b.py")
    cache.put("findings", "ef" * 32, (finding,))
    assert cache.get("findings", "ef" * 32) == (finding,)


def test_values_that_are_not_cache_data_are_not_stored(tmp_path: Path) -> None:
    cache = DiskCache(str(tmp_path))
    cache.put("findings", "ab" * 32, (_Payload("x"),))
    assert _keys(tmp_path) == [] and cache.get("findings", "ab" * 32) is None


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symbolic links")
def test_a_symlinked_cache_dir_is_never_written_through(project_copy: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = project_copy / ".amplint_cache"
    link.symlink_to(target, target_is_directory=True)
    first = run_project([str(project_copy)], Config(), cache_dir=str(link))
    assert list(target.iterdir()) == []  # no .gitignore, no CACHEDIR.TAG, no entries in the link's target
    again = run_project([str(project_copy)], Config(), cache_dir=str(link))
    assert _render(again) == _render(first)
    # The default location, found by the CLI itself, is refused the same way.
    result = run_amplint(["check", str(project_copy)])
    assert result.returncode == 1, result.stderr
    assert list(target.iterdir()) == []


def test_a_symlinked_shard_is_not_written_through(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    outside = tmp_path / "outside"
    outside.mkdir()
    (cache_dir / "findings").mkdir(parents=True)
    (cache_dir / "findings" / "ab").symlink_to(outside, target_is_directory=True)
    cache = DiskCache(str(cache_dir))
    cache.put("findings", "ab" * 32, ())
    assert list(outside.iterdir()) == []
    assert cache.get("findings", "ab" * 32) is None


def test_fields_left_at_their_defaults_are_not_stored_and_come_back(tmp_path: Path) -> None:
    from amplint.project.summary import CallSummary

    cache = DiskCache(str(tmp_path))
    plain = CallSummary(3, 5, "self.head", "self.head(x)", None, False, ("self.head", True), False)
    given = CallSummary(3, 5, "loss", "loss(d)", None, False, None, False, density=True, dist_args=("0",))
    cache.put("findings", "ab" * 32, (plain, given))
    (entry,) = _keys(tmp_path)
    stored = [item["p"] for item in json.loads(entry.read_text(encoding="utf-8"))["value"]["t"]]
    # By position: line, column, callee, text, region, protected, receiver, root_local, then density and dist_args
    # where they are not their defaults; `given` (last) is.
    assert stored[0] == [3, 5, "self.head", "self.head(x)", None, False, {"t": ["self.head", True]}, False]
    assert stored[1] == [3, 5, "loss", "loss(d)", None, False, None, False, True, {"t": ["0"]}]
    assert cache.get("findings", "ab" * 32) == (plain, given)


def test_a_default_stored_before_a_field_that_is_not_comes_back(tmp_path: Path) -> None:
    """`accel` left at `()` is stored when `opaque`, after it, is not at its default: its annotation must take
    `()`, or the entry reads as another schema's and every warm run parses the file again."""
    from amplint.project.summary import CallSummary

    cache = DiskCache(str(tmp_path))
    site = CallSummary(5, 12, "dist.log_prob", "", None, False, None, True, opaque=True)
    cache.put("summary", "cd" * 32, (site,))
    assert cache.get("summary", "cd" * 32) == (site,)
