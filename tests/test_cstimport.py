"""Dataclass code compiled once (`amplint.cstimport`), LibCST's and amplint's: the same classes, the tables read
back, and kept safe."""
from __future__ import annotations

import dataclasses
import marshal
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List

import pytest

from amplint import cstimport

ROOT = Path(__file__).resolve().parent.parent
# The texts `dataclasses` compiles for a frozen class: one per method (__init__, __repr__, __eq__, __hash__,
# __setattr__, __delattr__) up to Python 3.12; since 3.13 one text defines them all.
_TEXTS_PER_CLASS = 1 if sys.version_info >= (3, 13) else 4


def _define() -> Any:
    """A frozen dataclass, defined while the test runs (so `dataclasses` writes its code now)."""

    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: int = 2

    return Point


def _counting(monkeypatch: pytest.MonkeyPatch) -> List[str]:
    """The source texts the hook compiles from here on."""
    compiled: List[str] = []

    def counting(source: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(source)
        return compile(source, *args, **kwargs)

    monkeypatch.setattr(cstimport, "compile", counting, raising=False)
    return compiled


def test_a_class_made_through_the_table_behaves_as_one_made_without_it(tmp_path: Path) -> None:
    table = tmp_path / "table.marshal"
    plain = _define()
    with cstimport.compiled_once(str(table)):
        cached = _define()
    assert "exec" not in vars(dataclasses)  # the hook is gone after the block
    for cls in (plain, cached):
        point = cls(1)
        assert (point.x, point.y) == (1, 2) and repr(point).endswith(".Point(x=1, y=2)")
        assert point == cls(1, 2) and hash(point) == hash(cls(1, 2)) and point != cls(1, 3)
        with pytest.raises(dataclasses.FrozenInstanceError):
            point.x = 3  # type: ignore[misc]
        # No future flag leaks in from this module: the return annotation is the object, not a string.
        assert cls.__init__.__annotations__["return"] is None
    assert cached.__init__.__qualname__ == plain.__init__.__qualname__


def test_the_table_written_answers_the_next_run_without_compiling(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "amplint" / "table.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    compiled = _counting(monkeypatch)
    with cstimport.compiled_once(str(table)):
        _define()
    first = len(compiled)
    assert first >= _TEXTS_PER_CLASS and table.exists()
    assert len(cstimport.read_table(str(table))) == first
    written = table.stat().st_mtime_ns
    with cstimport.compiled_once(str(table)):
        _define()
    assert len(compiled) == first  # every text came from the table
    assert table.stat().st_mtime_ns == written  # nothing new: not written again


def test_no_table_is_written_when_bytecode_writing_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "table.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    compiled = _counting(monkeypatch)
    with cstimport.compiled_once(str(table)):
        _define()
        _define()
    assert not table.exists()
    assert len(compiled) == len(set(compiled))  # a text met twice in one process is compiled once


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX permissions")
def test_a_table_others_may_write_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "table.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with cstimport.compiled_once(str(table)):
        _define()
    assert cstimport.read_table(str(table))
    table.chmod(0o666)
    assert cstimport.read_table(str(table)) == {}


@pytest.mark.parametrize("content", [b"", b"not marshal data", marshal.dumps([1, 2]), marshal.dumps({"x": 1})])
def test_a_table_that_does_not_read_back_as_code_is_ignored(tmp_path: Path, content: bytes) -> None:
    table = tmp_path / "table.marshal"
    table.write_bytes(content)
    table.chmod(0o600)
    assert cstimport.read_table(str(table)) == {}
    with cstimport.compiled_once(str(table)):
        assert _define()(1).y == 2


def test_an_exec_someone_else_put_in_dataclasses_is_left_alone(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    seen: List[str] = []

    def theirs(source: Any, globals: Any = None, locals: Any = None) -> None:
        seen.append(source)
        exec(source, globals, locals)

    monkeypatch.setattr(dataclasses, "exec", theirs, raising=False)
    with cstimport.compiled_once(str(tmp_path / "table.marshal")):
        _define()
    assert seen and vars(dataclasses)["exec"] is theirs
    assert not (tmp_path / "table.marshal").exists()


def _define_other() -> Any:
    """A dataclass whose generated code differs from `_define`'s."""

    @dataclasses.dataclass
    class Pair:
        left: str
        right: str

    return Pair


def test_a_block_inside_another_uses_its_own_table_and_gives_the_outer_one_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outer, inner = tmp_path / "outer.marshal", tmp_path / "inner.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    with cstimport.compiled_once(str(outer)):
        hook = vars(dataclasses)["exec"]
        with cstimport.compiled_once(str(inner)):
            assert vars(dataclasses)["exec"] is not hook
            _define()
        assert vars(dataclasses)["exec"] is hook  # the outer table serves again
        _define_other()
    assert "exec" not in vars(dataclasses)
    inner_texts, outer_texts = set(cstimport.read_table(str(inner))), set(cstimport.read_table(str(outer)))
    assert inner_texts and outer_texts and not inner_texts & outer_texts
    assert any("Point" in text or "y=" in text for text in inner_texts)
    assert any("left" in text for text in outer_texts) and not any("left" in text for text in inner_texts)


def test_a_table_for_a_package_keeps_the_classes_of_its_modules_alone(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    table = tmp_path / "own.marshal"
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    module = types.ModuleType("amplint._probe_module")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with cstimport.compiled_once(str(table), "amplint"):
        _define()  # a class of this test module: compiled as usual, not kept
        assert cstimport.read_table(str(table)) == {} and not table.exists()
        exec("import dataclasses\n@dataclasses.dataclass\nclass Probe:\n    size: int\n", module.__dict__)
    texts = cstimport.read_table(str(table))
    assert texts and all("size" in text for text in texts)  # the probe's methods, not the test's Point
    assert module.Probe(3).size == 3 and module.Probe(3) == module.Probe(3)


def test_the_cache_file_is_in_the_users_cache_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cstimport.cache_file()
    assert path is not None and path.endswith(".marshal")
    if sys.platform not in ("win32", "darwin"):
        assert os.path.dirname(path) == str(tmp_path / "amplint")
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored, as the XDG spec says
        assert cstimport.cache_file() == os.path.join(os.path.expanduser("~"), ".cache", "amplint",
                                                      os.path.basename(path))


_CHECK = """
import sys
from amplint.cstimport import import_libcst
import_libcst()
import libcst
source = "def f(x: int = 1) -> None:\\n    return g(x)[0]  # kept\\n"
module = libcst.parse_module(source)
assert module.code == source and module.deep_equals(libcst.parse_module(source))
print(type(module.body[0]).__name__, repr(libcst.Name("x")).startswith("Name("))
"""


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the cache directory is set by XDG_CACHE_HOME")
def test_libcst_imported_through_the_table_parses_and_a_second_process_writes_nothing(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    def run() -> str:
        done = subprocess.run([sys.executable, "-c", _CHECK], env=env, capture_output=True, text=True,
                              cwd=str(tmp_path))
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run() == "FunctionDef True\n"
    table = tmp_path / "amplint" / os.path.basename(cstimport.cache_file() or "")
    codes = cstimport.read_table(str(table))
    assert len(codes) > 75 * _TEXTS_PER_CLASS  # LibCST's node classes: well over a hundred, each with its methods
    written = table.stat().st_mtime_ns
    assert run() == "FunctionDef True\n"
    assert table.stat().st_mtime_ns == written  # every text was in the table


def test_a_project_check_gives_the_same_output_with_and_without_the_table(tmp_path: Path) -> None:
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), AMPLINT_NO_CACHE="1", PYTHONPATH=str(ROOT))
    target = str(ROOT / "fixtures" / "check")

    def check(write: bool) -> str:
        run_env = dict(env)
        if write:
            run_env.pop("PYTHONDONTWRITEBYTECODE", None)
        else:
            run_env["PYTHONDONTWRITEBYTECODE"] = "1"
        done = subprocess.run([sys.executable, "-m", "amplint", "check", "-j", "1", "--format", "json", target],
                              env=run_env, capture_output=True, text=True, cwd=str(tmp_path))
        assert done.returncode == 1, done.stderr  # findings
        return done.stdout

    without = check(write=False)
    assert not (tmp_path / "cache").exists()
    written = check(write=True)
    own = tmp_path / "cache" / "amplint" / cstimport.OWN_FILE
    texts = cstimport.read_table(str(own))  # amplint's own dataclasses, compiled by the command
    assert any("self.callee=callee" in text for text in texts)  # `facts.model.CallRecord.__init__`
    assert not any("lpar" in text for text in texts)  # LibCST's classes are in their own table
    stamp = own.stat().st_mtime_ns
    assert check(write=True) == written == without and '"code": "AMP001"' in without
    assert own.stat().st_mtime_ns == stamp  # the second command found every text in the table
