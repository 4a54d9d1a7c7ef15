"""Discovery honours .gitignore as ruff does (`respect-gitignore`, on by default): real repositories made by
`git init`, with git's own answer (`git ls-files --others --exclude-standard`) as the oracle where it fits."""
from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

import pytest

from amplint import configfile, gitconfig
from amplint.configfile import ConfigError, parse_table
from amplint.files import SOURCE_SUFFIXES, discover, walks_into
from amplint.gitignore import GitIgnore
from conftest import run_amplint
from test_flake8 import BAD, _plugin_rows

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


@pytest.fixture(autouse=True)
def home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of its own, with no git configuration: the user's global excludes file must not decide a test."""
    path = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(path))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        monkeypatch.delenv(name, raising=False)
    return path


def git_repo(path: Path, files: Dict[str, str]) -> Path:
    """A fresh repository at `path` (nothing committed) holding `files` (relative path -> text)."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    write(path, files)
    return path


def write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def found(root: Path, paths: Optional[Sequence[Path]] = None, respect_gitignore: bool = True) -> Set[str]:
    """What `discover` lists, as paths relative to `root` with `/`."""
    files, _ = discover([str(p) for p in (paths or [root])], respect_gitignore=respect_gitignore)
    return {Path(f).relative_to(root).as_posix() for f in files}


def git_kept(root: Path) -> Set[str]:
    """The untracked files git does not ignore: what the walk must list (the source files among them)."""
    out = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    return {name for name in out.split("\0") if name.endswith(SOURCE_SUFFIXES)}


def every_source(root: Path) -> List[str]:
    """Every source file on disk under `root`, ignored or not (not `.git`)."""
    return sorted(str(Path(d, f)) for d, dirs, files in os.walk(root) for f in files
                  if f.endswith(SOURCE_SUFFIXES) and ".git" not in Path(d).relative_to(root).parts)


def test_an_ignored_folder_is_not_walked(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "work/\n", "work/a.py": "", "work/deep/b.py": "", "pkg/c.py": ""})
    assert found(root) == git_kept(root) == {"pkg/c.py"}


def test_an_ignored_file_is_not_listed(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "secret.py\n", "secret.py": "", "pkg/secret.py": "", "ok.py": ""})
    assert found(root) == git_kept(root) == {"ok.py"}


def test_a_negation_includes_again(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "*.py\n!keep.py\n", "a.py": "", "keep.py": "", "sub/keep.py": ""})
    assert found(root) == git_kept(root) == {"keep.py", "sub/keep.py"}


def test_a_file_under_an_ignored_folder_cannot_be_included_again(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "gen/\n!gen/keep.py\n", "gen/keep.py": "", "a.py": ""})
    assert found(root) == git_kept(root) == {"a.py"}


def test_a_nested_gitignore_is_relative_to_its_folder_and_overrides_the_shallower(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {
        ".gitignore": "tmp_*.py\n",
        "sub/.gitignore": "/gen.py\n!tmp_keep.py\n",
        "gen.py": "", "sub/gen.py": "", "sub/deeper/gen.py": "",
        "tmp_keep.py": "", "sub/tmp_keep.py": "", "sub/tmp_x.py": "",
    })
    assert found(root) == git_kept(root) == {"gen.py", "sub/deeper/gen.py", "sub/tmp_keep.py"}


def test_anchored_and_unanchored_patterns(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {
        ".gitignore": "/top.py\nany.py\ndocs/gen.py\n",  # a `/` inside anchors `docs/gen.py` to this folder
        "top.py": "", "sub/top.py": "", "any.py": "", "sub/any.py": "", "docs/gen.py": "", "sub/docs/gen.py": "",
    })
    assert found(root) == git_kept(root) == {"sub/top.py", "sub/docs/gen.py"}


def test_a_folder_only_pattern_does_not_match_a_file_of_that_name(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "notes.py/\nout/\n", "notes.py": "", "sub/notes.py/x.py": ""})
    (root / "out").write_text("")
    assert found(root) == git_kept(root) == {"notes.py"}
    rules = GitIgnore()
    assert not rules.ignored(str(root / "out"), is_dir=False)
    assert rules.ignored(str(root / "sub" / "out"), is_dir=True)


def test_git_info_exclude_is_read(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {"local/a.py": "", "b.py": ""})
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("local/\n", encoding="utf-8")
    assert found(root) == git_kept(root) == {"b.py"}


def test_the_global_excludes_file_is_read_where_git_finds_it(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = git_repo(tmp_path / "r", {"scratch_a.py": "", "keep/scratch_b.py": "", "c.py": "", "notes/d.py": ""})
    write(home, {".config/git/ignore": "scratch_*.py\n"})  # git's default place, with no setting
    assert found(root) == git_kept(root) == {"c.py", "notes/d.py"}
    write(home, {"xdg/git/ignore": "notes/\n"})  # $XDG_CONFIG_HOME moves the default
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    assert found(root) == git_kept(root) == {"scratch_a.py", "keep/scratch_b.py", "c.py"}
    # `core.excludesFile` in ~/.gitconfig: quoted, `~/` expanded, a comment after it
    write(home, {".gitconfig": '[user]\n\tname = x\n[Core]\n\texcludesFile = "~/my ignore" ; mine\n',
                 "my ignore": "c.py\n"})
    assert found(root) == git_kept(root) == {"scratch_a.py", "keep/scratch_b.py", "notes/d.py"}
    # the repository's own configuration wins over the global one; an empty value turns the file off
    write(root, {".git/config": (root / ".git" / "config").read_text() + "[core]\n\texcludesfile =\n"})
    assert found(root) == git_kept(root) == {"scratch_a.py", "keep/scratch_b.py", "c.py", "notes/d.py"}


def test_the_global_excludes_file_comes_after_gitignore_and_info_exclude(tmp_path: Path, home: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "!a.py\n", "a.py": "", "b.py": "", "c.py": "",
                                     "sub/.gitignore": "!c.py\n", "sub/c.py": ""})
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("!b.py\n", encoding="utf-8")
    write(home, {".config/git/ignore": "*.py\n"})
    assert found(root) == git_kept(root) == {"a.py", "b.py", "sub/c.py"}


def test_git_config_environment_names_the_global_file(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = git_repo(tmp_path / "r", {"a.py": "", "b.py": ""})
    write(home, {"elsewhere.cfg": "[core]\nexcludesFile = ../ignore-b\n", "ignore-b": "b.py\n",
                 ".gitconfig": "[core]\nexcludesFile = ~/ignore-a\n", "ignore-a": "a.py\n"})
    assert found(root) == git_kept(root) == {"b.py"}
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "elsewhere.cfg"))  # replaces ~/.gitconfig
    (tmp_path / "ignore-b").write_text("b.py\n", encoding="utf-8")  # a relative path: from the repository
    assert found(root) == git_kept(root) == {"a.py"}


@pytest.mark.parametrize("raw, value", [
    ("plain", "plain"), ("  spaced out  ", "spaced out"), ('"~/a b" # note', "~/a b"), ("x ; y", "x"),
    ('"a\\"b"', 'a"b'), ('"tab\\there"', "tab\there"), ('"keep  " ', "keep  "), ('"#not" a comment', "#not a comment"),
])
def test_git_config_values_read_as_git_reads_them(tmp_path: Path, raw: str, value: str) -> None:
    config = tmp_path / "config"
    config.write_text(f"[core]\n\texcludesFile = {raw}\n", encoding="utf-8")
    assert gitconfig.setting_in(str(config), "core", "excludesfile") == value
    git = subprocess.run(["git", "config", "--file", str(config), "core.excludesFile"], capture_output=True,
                         text=True, check=True).stdout[:-1]
    assert git == value


def test_included_configuration_files_are_read_where_they_stand(tmp_path: Path, home: Path) -> None:
    root = git_repo(tmp_path / "r", {"a.py": "", "b.py": "", "c.py": ""})
    write(home, {"ignore-a": "a.py\n", "ignore-b": "b.py\n", "conf/more.cfg": "[core]\n\texcludesFile = ~/ignore-a\n",
                 ".gitconfig": "[include]\n\tpath = conf/more.cfg\n"})  # relative: from the including file
    assert found(root) == git_kept(root) == {"b.py", "c.py"}
    # where it stands: a setting after the include wins over the included one, one before it loses
    write(home, {".gitconfig": "[include]\n\tpath = conf/more.cfg\n[core]\n\texcludesFile = ~/ignore-b\n"})
    assert found(root) == git_kept(root) == {"a.py", "c.py"}
    write(home, {".gitconfig": "[core]\n\texcludesFile = ~/ignore-b\n[include]\n\tpath = ~/conf/more.cfg\n"})
    assert found(root) == git_kept(root) == {"b.py", "c.py"}
    # an include of an include; a missing file is no error
    write(home, {".gitconfig": "[include]\n\tpath = missing.cfg\n\tpath = conf/outer.cfg\n",
                 "conf/outer.cfg": "[include]\n\tpath = more.cfg\n"})
    assert found(root) == git_kept(root) == {"b.py", "c.py"}


def test_conditional_includes_are_read_when_their_condition_holds(tmp_path: Path, home: Path) -> None:
    work = git_repo(tmp_path / "work" / "r", {"a.py": "", "b.py": ""})
    other = git_repo(tmp_path / "other" / "r", {"a.py": "", "b.py": ""})
    write(home, {"ignore-a": "a.py\n", "work.cfg": "[core]\n\texcludesFile = ~/ignore-a\n",
                 ".gitconfig": f'[includeIf "gitdir:{tmp_path}/work/"]\n\tpath = work.cfg\n'})
    assert found(work) == git_kept(work) == {"b.py"}
    assert found(other) == git_kept(other) == {"a.py", "b.py"}
    # no leading `/`: `**/` goes in front; `gitdir/i:` ignores case, `gitdir:` does not
    write(home, {".gitconfig": '[includeIf "gitdir:WORK/r/.git"]\n\tpath = work.cfg\n'})
    assert found(work) == git_kept(work) == {"a.py", "b.py"}
    write(home, {".gitconfig": '[includeIf "gitdir/i:WORK/r/.git"]\n\tpath = work.cfg\n'})
    assert found(work) == git_kept(work) == {"b.py"}
    assert found(other) == git_kept(other) == {"a.py", "b.py"}
    # `onbranch:`, a pattern ending in `/` matching every branch below it
    subprocess.run(["git", "symbolic-ref", "HEAD", "refs/heads/feature/x"], cwd=work, check=True)
    write(home, {".gitconfig": '[includeIf "onbranch:feature/"]\n\tpath = work.cfg\n'})
    assert found(work) == git_kept(work) == {"b.py"}
    assert found(other) == git_kept(other) == {"a.py", "b.py"}


def test_ignorecase_matches_the_patterns_without_case(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "build/\n*.PYI\n", "Build/x.py": "", "a.py": "", "b.pyi": ""})
    assert found(root) == git_kept(root) == {"Build/x.py", "a.py", "b.pyi"}
    subprocess.run(["git", "config", "core.ignorecase", "true"], cwd=root, check=True)
    assert found(root) == git_kept(root) == {"a.py"}


def test_outside_a_repository_no_gitignore_applies(tmp_path: Path) -> None:
    if GitIgnore()._root(str(tmp_path)) is not None:
        pytest.skip("the temporary directory is inside a git repository")
    root = tmp_path / "plain"
    write(root, {".gitignore": "*.py\n", "a.py": "", "inner/.gitignore": "x.py\n", "inner/x.py": "", "inner/y.py": ""})
    assert found(root) == {"a.py", "inner/x.py", "inner/y.py"}
    # a repository inside the walked folder has its rules, and only its own
    git_repo(root / "inner", {})
    assert found(root) == {"a.py", "inner/y.py"}


def test_a_named_folder_is_walked_but_what_is_ignored_below_it_is_skipped(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "gen/\n*_tmp.py\n", "gen/a.py": "", "gen/b_tmp.py": "",
                                     "gen/sub/.gitignore": "*\n", "gen/sub/c.py": ""})
    assert found(root) == set()
    assert found(root, [root / "gen"]) == {"gen/a.py"}
    assert found(root, [root / "gen" / "b_tmp.py"]) == {"gen/b_tmp.py"}  # a named file is always listed


def test_turned_off_everything_is_walked_again(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "work/\n*.pyi\n", "work/a.py": "", "b.pyi": "", "c.py": ""})
    assert found(root) == {"c.py"}
    assert found(root, respect_gitignore=False) == {"work/a.py", "b.pyi", "c.py"}


TREE = {
    ".gitignore": "build_out/\n*.tmp.py\n!keep.tmp.py\n/only_top.py\ndocs/gen.py\nnotes.py/\nvendor/**\n!vendor/ours/\n"
                  "data/**/cache/\n",
    "a.py": "", "keep.tmp.py": "", "x.tmp.py": "", "only_top.py": "", "notes.py": "",
    "build_out/b.py": "", "sub/only_top.py": "", "sub/x.tmp.py": "", "sub/keep.tmp.py": "", "sub/notes.py/n.py": "",
    "docs/gen.py": "", "sub/docs/gen.py": "", "vendor/theirs.py": "", "vendor/ours/mine.py": "",
    "vendor/ours/deep/more.py": "", "data/cache/c.py": "", "data/x/cache/c.py": "", "data/x/ok.py": "",
    "pkg/.gitignore": "*.py\n!/__init__.py\n!api/\n", "pkg/__init__.py": "", "pkg/impl.py": "", "pkg/api/v.py": "",
    "pkg/sub/__init__.py": "", "pkg/api/.gitignore": "!*.py\nprivate/\n", "pkg/api/w.py": "",
    "pkg/api/private/p.py": "",
    "nb/analysis.ipynb": "{}", "nb/.gitignore": "*.ipynb\n",
}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "tree", TREE)


def test_the_walk_agrees_with_git(tree: Path) -> None:
    assert found(tree) == git_kept(tree) == {
        "a.py", "keep.tmp.py", "notes.py", "sub/only_top.py", "sub/keep.tmp.py", "sub/docs/gen.py", "data/x/ok.py",
        "pkg/__init__.py", "pkg/api/v.py", "pkg/api/w.py",  # `vendor/ours/` is a folder again, its files are not
    }


@pytest.mark.parametrize("respect_gitignore", [True, False])
def test_walks_into_agrees_with_discover(tree: Path, respect_gitignore: bool) -> None:
    listed = {str(tree / name) for name in found(tree, respect_gitignore=respect_gitignore)}
    for path in every_source(tree):
        assert walks_into(str(tree), path, respect_gitignore=respect_gitignore) == (path in listed), path
    assert len(listed) < len(every_source(tree)) if respect_gitignore else listed == set(every_source(tree))


def test_walks_into_lists_no_folder(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object) -> None:
        raise AssertionError("walks_into listed a folder")

    monkeypatch.setattr(os, "listdir", refuse)
    monkeypatch.setattr(os, "scandir", refuse)
    assert walks_into(str(tree), str(tree / "pkg" / "api" / "w.py"))
    assert not walks_into(str(tree), str(tree / "pkg" / "api" / "private" / "p.py"))
    assert not walks_into(str(tree), str(tree / "vendor" / "ours" / "deep" / "more.py"))


NAMES = ["a", "b", "sub", "x.py", "keep.py", "build"]
PATTERNS = ["a", "a/", "/a", "*.py", "!keep.py", "sub/", "!sub/", "a/**", "**/b", "a/**/x.py", "/sub/x.py", "*",
            "!*.py", "b/*", "!b/sub/", "x.py", "!a/", "build/", "**/sub/**", "a/**/", "*/", "!/b", "[ab]", "?.py"]


def _random_tree(root: Path, rng: random.Random, depth: int = 0) -> None:
    for name in rng.sample(NAMES, rng.randint(1, 4)):
        path = root / name
        if depth < 3 and rng.random() < 0.5:
            path.mkdir()
            _random_tree(path, rng, depth + 1)
            if rng.random() < 0.4:
                (path / ".gitignore").write_text("\n".join(rng.sample(PATTERNS, rng.randint(1, 4))) + "\n")
        else:
            path.write_text("")


@pytest.mark.parametrize("seed", range(40))
def test_random_trees_agree_with_git(tmp_path: Path, seed: int) -> None:
    """Every file name ends in `.py` here only by chance, so all files are compared, not only sources."""
    rng = random.Random(seed)
    root = git_repo(tmp_path / "r", {".gitignore": "\n".join(rng.sample(PATTERNS, rng.randint(1, 5))) + "\n"})
    _random_tree(root, rng)
    out = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "-z"], cwd=root, check=True,
                         capture_output=True, text=True).stdout
    expected = {name for name in out.split("\0") if name and not name.endswith(".gitignore")}
    rules, kept = GitIgnore(), set()
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" and not rules.ignored(os.path.join(directory, d), is_dir=True)]
        kept.update(Path(directory, f).relative_to(root).as_posix() for f in files
                    if f != ".gitignore" and not rules.ignored(os.path.join(directory, f), is_dir=False))
    assert kept == expected


# ---------------------------------------------------------------------------
# The front ends: the CLI, the config file, the flake8 plugin's project scope.


def check(root: Path, *args: str) -> List[str]:
    """`amplint check --format json ARGS` run in `root`: "path:line CODE" of each finding."""
    proc = run_amplint(["check", "--format", "json", *args], cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted(f"{Path(f['path']).as_posix()}:{f['line']} {f['code']}" for f in json.loads(proc.stdout))


def test_the_cli_skips_an_ignored_folder_but_checks_a_file_named_in_it(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".gitignore": "gen/\n", "gen/model.py": BAD, "ok.py": "x = 1\n"})
    assert check(root, ".") == []
    assert check(root, "gen/model.py") == ["gen/model.py:7 AMP001"]
    assert check(root, "--no-respect-gitignore", ".") == ["gen/model.py:7 AMP001"]
    write(root, {"pyproject.toml": "[tool.amplint]\nrespect-gitignore = false\n"})
    assert check(root, ".") == ["gen/model.py:7 AMP001"]
    assert check(root, "--respect-gitignore", ".") == []


def test_the_option_is_validated() -> None:
    loaded = parse_table({"respect-gitignore": False}, "pyproject.toml")
    assert not isinstance(loaded, ConfigError) and loaded.config.respect_gitignore is False
    error = parse_table({"respect-gitignore": "no"}, "pyproject.toml")
    assert isinstance(error, ConfigError) and error.key == "respect-gitignore"


HELPERS = ("from torch.distributions import Normal\n\n\n"
           "def nll(mu, sigma, x):\n    return -Normal(mu, sigma).log_prob(x)\n")
TRAIN = ("import torch\nfrom helpers import nll\n\n\ndef step(mu, sigma, x):\n"
         "    with torch.autocast(\"cuda\"):\n        return nll(mu, sigma, x)\n")


def test_the_flake8_plugins_project_scope_does_not_index_an_ignored_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`helpers.py` is reached from an autocast region only in `vendor/train.py`, which git ignores."""
    monkeypatch.setenv("AMPLINT_NO_CACHE", "1")
    root = git_repo(tmp_path / "r", {".gitignore": "vendor/\n", "helpers.py": HELPERS, "vendor/train.py": TRAIN})
    configfile.clear_cache()
    assert _plugin_rows([root / "helpers.py"]) == []
    write(root, {"pyproject.toml": "[tool.amplint]\nrespect-gitignore = false\n"})
    configfile.clear_cache()
    try:
        assert _plugin_rows([root / "helpers.py"]) == [("helpers.py", 5, 12, "AMP001")]
    finally:
        configfile.clear_cache()
