"""What the two passes over every file read (the project's autocast spellings, the text pass) is cached per
project: one entry per pass, read whole and written whole only when something changed."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import List

import pytest

from amplint.config import Config
from amplint.project.cache import DiskCache, PassCache
from amplint.project.run import run_project

from conftest import FIXTURES, OLD, forget_answers


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    target = tmp_path / "proj"
    shutil.copytree(FIXTURES / "project", target)
    return target


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The texts CPython parses in this process."""
    import amplint.cpython_trees as trees

    parsed: List[str] = []
    real = trees._parse
    monkeypatch.setattr(trees, "_parse", lambda text: parsed.append(text) or real(text))
    return parsed


def _pass_entries(cache: Path) -> dict:
    return {entry: entry.stat().st_mtime_ns
            for kind in ("scan", "spellings") for entry in (cache / kind).rglob("*.json")}


def test_a_warm_run_parses_no_file_with_cpython_to_read_every_file(
        project_copy: Path, tmp_path: Path, parses: List[str]) -> None:
    """A second run parses nothing with CPython, and after an edit only the edited file."""
    cache = str(tmp_path / "cache")
    first = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    assert len(parses) > 5
    parses.clear()
    second = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    # the passes read nothing: only the value flow reads the files it follows a model through (not cached;
    # some only for their words), each tree parsed once
    assert _once_of(parses, second.stats.flowed) and second.stats.parsed == []
    assert second.spellings == first.spellings
    assert _render(second) == _render(first)

    train = project_copy / "train.py"
    train.write_text(train.read_text() + "# an edit that changes nothing\n")
    parses.clear()
    third = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    assert train.read_text() in parses and _once_of([p for p in parses if p != train.read_text()], third.stats.flowed)
    assert third.stats.parsed == [str(train)]
    assert _render(third) == _render(first)


def _once_of(parses: List[str], flowed: List[str]) -> bool:
    """Each text parsed once, and each one of a file the value flow read."""
    return len(parses) == len(set(parses)) and set(parses) <= set(_texts(flowed))


def _texts(paths: List[str]) -> List[str]:
    return sorted(Path(path).read_text() for path in paths)


def _render(run) -> list:
    return [(r.path, r.findings) for r in run.results]


def test_one_entry_per_pass_and_none_rewritten_when_nothing_changed(project_copy: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    run_project([str(project_copy)], Config(jobs=1), cache_dir=str(cache))
    written = _pass_entries(cache)
    assert sorted(entry.parent.parent.name for entry in written) == ["scan", "spellings"]
    run_project([str(project_copy)], Config(jobs=1), cache_dir=str(cache))
    assert _pass_entries(cache) == written


def test_runs_that_spell_the_files_differently_share_the_entries(
        project_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line run from the root spells the files relative to it, the language server absolute."""
    cache = tmp_path / "cache"
    monkeypatch.chdir(project_copy)
    run_project(["."], Config(jobs=1), cache_dir=str(cache))
    written = _pass_entries(cache)
    run_project([str(project_copy)], Config(jobs=1), cache_dir=str(cache))
    assert _pass_entries(cache) == written  # every file found by its absolute path: nothing to add


def test_another_configured_autocast_is_another_entry(project_copy: Path, tmp_path: Path, parses: List[str]) -> None:
    cache = str(tmp_path / "cache")
    run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    parses.clear()
    run_project([str(project_copy)], Config(jobs=1, extend_autocast=("mypkg.amp_context",)), cache_dir=cache)
    assert parses  # the text pass's screen reads the configured names: nothing cached for them yet
    parses.clear()
    again = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    assert _once_of(parses, again.stats.flowed)  # the first entry is still there: the flow's reads only


def test_a_run_given_some_files_keeps_the_others(project_copy: Path, tmp_path: Path) -> None:
    passes = PassCache(DiskCache(str(tmp_path / "cache")), "code", (str(project_copy),))
    kept, gone, read = (str(project_copy / name) for name in ("train.py", "nowhere.py", "fit.py"))
    loaded = {kept: ("c1", (1,)), gone: ("c2", (2,)), read: ("c3", (3,))}
    passes.save("scan", loaded, {})
    assert passes.load("scan") == loaded
    passes.save("scan", {read: ("c4", (4,))}, loaded)
    assert passes.load("scan") == {kept: ("c1", (1,)), read: ("c4", (4,))}  # a file no longer there is dropped
    assert passes.load("scan", "other options") == {}
    assert PassCache(DiskCache(str(tmp_path / "cache")), "code", ("elsewhere",)).load("scan") == {}


def test_a_value_of_the_wrong_shape_is_read_again(project_copy: Path, tmp_path: Path, parses: List[str]) -> None:
    """The codec checks each class's fields; the passes check the shape of what they read back."""
    cache = tmp_path / "cache"
    first = run_project([str(project_copy)], Config(jobs=1), cache_dir=str(cache))
    for entry in (cache / "scan").rglob("*.json"), (cache / "spellings").rglob("*.json"):
        for path in entry:
            document = json.loads(path.read_text(encoding="utf-8"))
            for pair in document["value"]["d"]:
                pair[1]["t"][1] = {"t": ["not what the pass reads"]}  # (content digest, value)
            path.write_text(json.dumps(document), encoding="utf-8")
    parses.clear()
    forget_answers(cache)
    again = run_project([str(project_copy)], Config(jobs=1), cache_dir=str(cache))
    assert parses  # read again, not trusted
    assert again.spellings == first.spellings
    assert _render(again) == _render(first)


def test_a_warm_run_decodes_no_file(project_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The passes key each file by the digest of its bytes and find it in their entries before decoding it; the
    summaries and findings come from the cache. After an edit, the edited file alone is decoded again, with the
    files the value flow reads (its answers are not cached yet)."""
    import amplint.files

    cache = str(tmp_path / "cache")
    first = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    decoded: List[str] = []
    real = amplint.files.decode
    monkeypatch.setattr(amplint.files, "decode", lambda path, *rest: decoded.append(path) or real(path, *rest))
    second = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    assert _render(second) == _render(first)
    assert set(decoded) == set(second.stats.flowed)  # the flow may read a file's words, then its tree
    train = project_copy / "train.py"
    train.write_text(train.read_text() + "# an edit that changes nothing\n")
    decoded.clear()
    third = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    assert _render(third) == _render(first)
    assert set(decoded) == {str(train), *third.stats.flowed}


def test_a_pass_over_files_its_entry_holds_starts_no_pool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cold, the two passes over 40 files go to the run's workers (the threshold lowered to 20 files, in chunks
    of 8); warm, each file costs a read and a digest, a tenth of reading it, so 40 files are 4 files' worth:
    no pool."""
    from amplint import parallel
    from amplint.project import spellings, textpass
    from amplint.project.cache import KNOWN_SHARE, pass_work

    monkeypatch.setattr(spellings, "CHUNK_POOL_FILES", 20)
    monkeypatch.setattr(textpass, "SCAN_POOL_FILES", 20)
    monkeypatch.setattr(parallel, "FILE_CHUNK", 8)
    started: List[int] = []
    real = parallel.start_workers
    monkeypatch.setattr(parallel, "start_workers", lambda *a, **k: started.append(1) or real(*a, **k))
    project = tmp_path / "proj"
    project.mkdir()
    for n in range(40):
        (project / f"m{n}.py").write_text(f"import torch\n\n\ndef f{n}(x):\n    return torch.autocast('cuda')\n")
    cache = str(tmp_path / "cache")
    run_project([str(project)], Config(jobs=2), cache_dir=cache)
    assert started == [1]
    started.clear()
    run_project([str(project)], Config(jobs=2), cache_dir=cache)
    assert started == []
    files = sorted(str(p) for p in project.glob("*.py"))
    known = {path: ("digest", ()) for path in files[:30]}
    assert pass_work(files, None) == pass_work(files, {}) == 40
    assert pass_work(files, known) == 10 + 30 // KNOWN_SHARE


def test_a_warm_text_pass_reads_no_file_the_spellings_pass_read(
        project_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The spellings pass notes each file's digest and stamp; the text pass then finds an unchanged file in its
    entry by them: a warm run reads each file once fewer than with the note ignored, and finds the same."""
    import amplint.files
    from amplint.cpython_trees import CPythonTrees
    from amplint.project import spellings

    cache = str(tmp_path / "cache")
    first = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    reads: List[str] = []
    real = amplint.files.read_stamped

    def counted(path: str):  # type: ignore[no-untyped-def]
        reads.append(path)
        return real(path)

    monkeypatch.setattr(amplint.files, "read_stamped", counted)  # `read_bytes`, the text pass's
    monkeypatch.setattr(spellings, "read_stamped", counted)
    forget_answers(cache)
    noted = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    with_note = len(reads)
    reads.clear()
    monkeypatch.setattr(CPythonTrees, "digest_unchanged", lambda self, path: None)
    forget_answers(cache)
    ignored = run_project([str(project_copy)], Config(jobs=1), cache_dir=cache)
    files = sorted(str(p) for p in project_copy.rglob("*.py"))
    assert len(reads) - with_note == len(files)
    assert _render(noted) == _render(ignored) == _render(first)


def test_a_file_changed_since_a_pass_read_it_is_read_again(tmp_path: Path) -> None:
    """A write moves the file's times, a rename over it changes its inode: either way the digest noted for it
    is not used."""
    from amplint.cpython_trees import CPythonTrees
    from amplint.files import content_digest, read_stamped

    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    # Written long ago: a kernel before 6.13 stamps a file by its clock tick, so two writes a few microseconds
    # apart may show one time.
    os.utime(path, (OLD, OLD))
    trees = CPythonTrees()
    data, stamp = read_stamped(str(path))
    trees.note_read(str(path), stamp, content_digest(data))
    assert trees.digest_unchanged(str(path)) == content_digest(b"x = 1\n")
    assert trees.digest_unchanged(str(tmp_path / "other.py")) is None  # never noted
    path.write_text("x = 2\n")  # the same size
    assert trees.digest_unchanged(str(path)) is None

    data, stamp = read_stamped(str(path))
    trees.note_read(str(path), stamp, content_digest(data))
    replacement = tmp_path / "new.py"
    replacement.write_text("x = 3\n")
    os.utime(replacement, ns=(stamp[1], stamp[1]))  # the same size and modification time, another inode
    os.replace(replacement, path)
    assert trees.digest_unchanged(str(path)) is None
