"""`[tool.amplint]` / `amplint.toml`: discovery, every key, errors (exit 2), CLI overrides, `amplint config`."""
from __future__ import annotations

import json
import sys
from dataclasses import fields
from pathlib import Path
from typing import List

import pytest

from amplint import cli, configfile
from amplint.config import Config
from conftest import run_amplint

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

BAD = '''import torch
from torch.distributions import Normal


def nll(mu, sigma, x):
    with torch.autocast("cuda"):
        return -Normal(mu, sigma).log_prob(x)
'''

WRAPPER = '''from torch.distributions import Normal
from mypkg.amp import half_precision


def nll(mu, sigma, x):
    with half_precision():
        return -Normal(mu, sigma).log_prob(x)
'''

CUSTOM_DIST = '''import torch
from mypkg.dists import Skewed


def score(a, b):
    with torch.autocast("cuda"):
        return Skewed(a, b).entropy()
'''


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Config lookups are cached per directory; tests write new files in fresh dirs, but be safe."""
    configfile.clear_cache()
    yield
    configfile.clear_cache()


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _codes(capsys, argv: List[str]) -> List[str]:
    """Run the CLI in-process (fast) and return the codes it reported."""
    code = cli.main(["check", "--format", "json", *argv])
    out = capsys.readouterr().out
    findings = json.loads(out)
    assert code == (1 if findings else 0)
    return [f"{Path(f['path']).name}:{f['code']}" for f in findings]


def _error(capsys, argv: List[str]) -> str:
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err


# ---------------------------------------------------------------------------
# Discovery


def test_no_config_gives_defaults(tmp_path: Path) -> None:
    if any((parent / name).exists() for parent in tmp_path.parents for name in configfile.CONFIG_NAMES):
        pytest.skip("a config file above the temporary directory")
    loaded = configfile.find_config(str(tmp_path))
    assert loaded == configfile.LoadedConfig(Config())
    assert "defaults" in loaded.origin


def test_nearest_pyproject_with_table_above_the_checked_path(tmp_path: Path, capsys) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.amplint]\nignore = ["AMP001"]\n')
    _write(tmp_path / "pkg" / "pyproject.toml", "[tool.black]\nline-length = 100\n")  # no table: skipped
    bad = _write(tmp_path / "pkg" / "sub" / "model.py", BAD)
    loaded = configfile.resolve_config([str(bad)])
    assert loaded.source == str(tmp_path / "pyproject.toml")
    assert loaded.config.ignore == ("AMP001",)
    assert _codes(capsys, [str(bad)]) == []
    assert _codes(capsys, [str(tmp_path / "pkg")]) == []


def test_amplint_toml_works_and_wins_over_pyproject_in_the_same_directory(tmp_path: Path, capsys) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.amplint]\nignore = ["AMP001"]\n')
    _write(tmp_path / "amplint.toml", 'strategy = "disable-autocast"\n')
    bad = _write(tmp_path / "model.py", BAD)
    loaded = configfile.resolve_config([str(bad)])
    assert loaded.source == str(tmp_path / "amplint.toml")
    assert loaded.config.strategy == "disable-autocast" and loaded.config.ignore == ()
    assert _codes(capsys, [str(bad)]) == ["model.py:AMP001"]


def test_nearest_config_wins_over_one_further_up(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.amplint]\nignore = ["AMP001"]\n')
    _write(tmp_path / "inner" / "amplint.toml", 'ignore = ["AMP002"]\n')
    bad = _write(tmp_path / "inner" / "model.py", BAD)
    assert configfile.resolve_config([str(bad)]).config.ignore == ("AMP002",)
    assert configfile.config_for_file(str(bad)).config.ignore == ("AMP002",)


def test_several_paths_use_the_config_of_their_common_directory(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.amplint]\nignore = ["AMP002"]\n')
    a = _write(tmp_path / "a" / "x.py", BAD)
    b = _write(tmp_path / "b" / "y.py", BAD)
    assert configfile.common_directory([str(a), str(b)]) == str(tmp_path)
    assert configfile.resolve_config([str(a), str(b)]).source == str(tmp_path / "pyproject.toml")


def test_explicit_config_flag(tmp_path: Path, capsys) -> None:
    cfg = _write(tmp_path / "elsewhere" / "amplint.toml", 'ignore = ["AMP"]\n')
    bad = _write(tmp_path / "src" / "model.py", BAD)
    assert _codes(capsys, [str(bad)]) == ["model.py:AMP001"]
    assert _codes(capsys, [str(bad), "--config", str(cfg)]) == []


# ---------------------------------------------------------------------------
# Keys


def test_every_config_field_has_a_file_key() -> None:
    """Every setting a user can make; fields project mode derives (`metadata["derived"]`) are not settings."""
    settable = {f.name for f in fields(Config) if not f.metadata.get("derived")}
    assert {name for name, _ in configfile.KEYS.values()} == settable
    assert settable < {f.name for f in fields(Config)}  # autocast_aliases is derived


def test_every_key_parses(tmp_path: Path) -> None:
    cfg = _write(
        tmp_path / "pyproject.toml",
        """
[tool.amplint]
select = ["AMP0"]
ignore = ["AMP002"]
exclude = ["generated/*", "legacy_*.py"]
strategy = "disable-autocast"
extend-autocast = ["mypkg.amp.half_precision"]
extend-distributions = ["mypkg.dists", "mypkg.flows.Flow", "other.mod.*"]
project = false
max-depth = 3
jobs = 2

[tool.amplint.per-file-ignores]
"tests/*" = ["AMP001"]
""",
    )
    loaded = configfile.load_config_file(str(cfg))
    assert isinstance(loaded, configfile.LoadedConfig), loaded
    assert loaded.config == Config(
        select=("AMP0",),
        ignore=("AMP002",),
        exclude=("generated/*", "legacy_*.py"),
        per_file_ignores=(("tests/*", ("AMP001",)),),
        strategy="disable-autocast",
        extend_autocast=("mypkg.amp.half_precision",),
        extend_distributions=("mypkg.dists.", "mypkg.flows.Flow", "other.mod."),
        project=False,
        max_depth=3,
        jobs=2,
    )


def test_extend_autocast_opens_a_region_for_a_project_wrapper(tmp_path: Path, capsys) -> None:
    src = _write(tmp_path / "model.py", WRAPPER)
    assert _codes(capsys, [str(src)]) == []
    _write(tmp_path / "pyproject.toml", '[tool.amplint]\nextend-autocast = ["mypkg.amp.half_precision"]\n')
    configfile.clear_cache()
    assert _codes(capsys, [str(src)]) == ["model.py:AMP001"]


def test_extend_distributions_makes_entropy_on_a_custom_class_count(tmp_path: Path, capsys) -> None:
    """Unknown, `Skewed(a, b)` is an opaque receiver: reported, not fixable. Configured as a distribution,
    its arguments are the inputs, and the fix casts them."""
    src = _write(tmp_path / "model.py", CUSTOM_DIST)

    def findings() -> List[tuple]:
        cli.main(["check", "--format", "json", str(src)])
        return [(f["code"], f["fixable"], f["message"].split(" runs ")[0])
                for f in json.loads(capsys.readouterr().out)]

    assert findings() == [("AMP001", False, "`entropy`")]
    _write(tmp_path / "amplint.toml", 'extend-distributions = ["mypkg.dists"]\n')
    configfile.clear_cache()
    assert findings() == [("AMP001", True, "`Skewed.entropy`")]


def test_per_file_ignores_and_exclude(tmp_path: Path, capsys) -> None:
    _write(
        tmp_path / "pyproject.toml",
        '[tool.amplint]\nexclude = ["generated"]\n\n[tool.amplint.per-file-ignores]\n"tests/*" = ["AMP001"]\n',
    )
    _write(tmp_path / "src" / "model.py", BAD)
    _write(tmp_path / "tests" / "test_model.py", BAD)
    _write(tmp_path / "generated" / "out.py", BAD)
    assert _codes(capsys, [str(tmp_path)]) == ["model.py:AMP001"]
    # Files named on the command line (as pre-commit names them) are excluded too.
    assert _codes(capsys, [str(tmp_path / "generated" / "out.py")]) == []


# ---------------------------------------------------------------------------
# CLI flags override the file


def test_cli_flags_override_config(tmp_path: Path, capsys) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.amplint]\nignore = ["AMP001"]\nexclude = ["skipped"]\n')
    _write(tmp_path / "model.py", BAD)
    _write(tmp_path / "skipped" / "model2.py", BAD)
    _write(tmp_path / "extra" / "model3.py", BAD)
    assert _codes(capsys, [str(tmp_path)]) == []
    # --ignore replaces the file's ignore list; --exclude adds to the file's excludes.
    assert _codes(capsys, [str(tmp_path), "--ignore", "AMP002", "--exclude", "extra"]) == ["model.py:AMP001"]
    assert _codes(capsys, [str(tmp_path), "--ignore", "AMP002", "--select", "AMP002"]) == []


def test_strategy_flag_overrides_config_strategy(tmp_path: Path) -> None:
    _write(tmp_path / "amplint.toml", 'strategy = "disable-autocast"\n')
    args = cli.build_parser().parse_args(["check", str(tmp_path), "--strategy", "cast"])
    loaded = configfile.resolve_config(args.paths)
    assert loaded.config.strategy == "disable-autocast"
    assert cli.config_from_args(args, loaded.config).strategy == "cast"


# ---------------------------------------------------------------------------
# Errors: name the file and the key, exit 2, nothing on stdout


@pytest.mark.parametrize(
    ("table", "key", "words"),
    [
        ('colour = "red"', "colour", "unknown key"),
        ('per_file_ignores = {}', "per_file_ignores", "did you mean 'per-file-ignores'"),
        ('strategy = "float32"', "strategy", "'cast', 'disable-autocast'"),
        ('select = "AMP001"', "select", "list of rule codes"),
        ('select = ["amp001"]', "select", "not a rule code"),
        ('ignore = ["XYZ1"]', "ignore", "matches no rule"),
        ('exclude = [1]', "exclude", "glob"),
        ('per-file-ignores = ["tests/*"]', "per-file-ignores", "table"),
        ('per-file-ignores = {"tests/*" = ["nope"]}', "per-file-ignores", "'tests/*'"),
        ('extend-autocast = ["not a name"]', "extend-autocast", "qualified name"),
        ('extend-distributions = "mypkg"', "extend-distributions", "list of modules"),
        ("project = 1", "project", "true or false"),
        ("max-depth = -1", "max-depth", "non-negative integer"),
        ("max-depth = true", "max-depth", "non-negative integer"),
        ("jobs = -2", "jobs", "non-negative integer"),
        ('jobs = "many"', "jobs", "non-negative integer"),
    ],
)
def test_bad_key_or_value_is_a_clear_error_with_exit_2(
    tmp_path: Path, capsys, table: str, key: str, words: str
) -> None:
    cfg = _write(tmp_path / "pyproject.toml", f"[tool.amplint]\n{table}\n")
    _write(tmp_path / "model.py", BAD)
    err = _error(capsys, ["check", str(tmp_path)])
    assert str(cfg) in err and "[tool.amplint]" in err and repr(key) in err and words in err, err
    assert err.count("\n") == 1


def test_tool_table_in_amplint_toml_gets_a_hint(tmp_path: Path, capsys) -> None:
    cfg = _write(tmp_path / "amplint.toml", '[tool.amplint]\nignore = ["AMP001"]\n')
    err = _error(capsys, ["check", str(tmp_path)])
    assert str(cfg) in err and "'tool'" in err and "top level" in err


def test_invalid_toml_names_the_file(tmp_path: Path, capsys) -> None:
    cfg = _write(tmp_path / "pyproject.toml", "[tool.amplint\nselect = \n")
    err = _error(capsys, ["config", str(tmp_path)])
    assert str(cfg) in err and "invalid TOML" in err


def test_config_error_exit_code_in_a_subprocess(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.amplint]\nmax_depth = 3\n")
    _write(tmp_path / "model.py", BAD)
    proc = run_amplint(["check", "."], cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "pyproject.toml: [tool.amplint] key 'max_depth': unknown key (did you mean 'max-depth'?)" in proc.stderr


# ---------------------------------------------------------------------------
# `amplint config`


def test_config_command_prints_source_and_values_as_toml_that_loads_back(tmp_path: Path, capsys) -> None:
    cfg = _write(
        tmp_path / "pyproject.toml",
        '[tool.amplint]\nignore = ["AMP002"]\nextend-distributions = ["mypkg.dists"]\n'
        '[tool.amplint.per-file-ignores]\n"tests/*" = ["AMP001"]\n',
    )
    (tmp_path / "pkg").mkdir()
    assert cli.main(["config", str(tmp_path / "pkg")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"# amplint configuration from {cfg} [tool.amplint]"
    assert 'ignore = ["AMP002"]\n' in out
    assert 'strategy = "cast"  # default' in out
    reread = configfile.parse_table(tomllib.loads(out), "printed")
    assert reread.config == configfile.load_config_file(str(cfg)).config


def test_config_command_json_and_defaults(tmp_path: Path, capsys) -> None:
    assert cli.main(["config", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["config"]["select"] == ["AMP"]
    assert data["config"]["strategy"] == "cast"
    assert data["config"]["per-file-ignores"] == {}
    assert data["set"] == []
