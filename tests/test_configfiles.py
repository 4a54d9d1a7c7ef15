"""Float16 precision read from a project's YAML/INI/TOML files (`amplint.project.configfiles`)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from amplint.config import Config
from amplint.project import configfiles
from conftest import ROOT

CORPUS = ROOT.parent / "shared" / "corpus" / "repos"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("# mixed precision\nprecision: 16-mixed\n", [(2, "lightning", "precision: 16-mixed")]),
        ("trainer:\n  max_epochs: 3\n  precision: 16-mixed  # fast\n", [(3, "lightning", "precision: 16-mixed")]),
        ('[DEFAULTS]\nprecision = "16-mixed"\n', [(2, "lightning", 'precision = "16-mixed"')]),
        ("trainer.precision: 16\n", [(1, "lightning", "trainer.precision: 16")]),
        ("mixed_precision: fp16\n", [(1, "accelerate", "mixed_precision: fp16")]),
        ("fp16: true\n", [(1, "hf", "fp16: true")]),
        ("precision: bf16-mixed\nprecision: 32\nmixed_precision: bf16\nfp16: false\n", []),
        ("# precision: 16-mixed\nval_precision: 16\nprecision_plugin: 16-mixed\n", []),
        ("precision: ${oc.env:PRECISION}\n", []),
    ],
)
def test_settings_are_read_as_whole_keys_with_literal_values(text: str, expected: list) -> None:
    found = configfiles.read_settings("c.yaml", text)
    assert [(s.line, s.framework, s.text) for s in found] == expected


def test_scan_walks_config_files_and_skips_environments(tmp_path: Path) -> None:
    (tmp_path / "configs" / "trainer").mkdir(parents=True)
    (tmp_path / "configs" / "trainer" / "default.yaml").write_text("accelerator: gpu\nprecision: 16-mixed\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / ".venv" / "lib" / "x.yaml").write_text("precision: 16\n")
    (tmp_path / "model.py").write_text("precision: 16\n")
    found = configfiles.scan(configfiles.config_files([str(tmp_path)], Config()))
    assert [(Path(s.path).relative_to(tmp_path).as_posix(), s.line) for s in found] == [
        ("configs/trainer/default.yaml", 2)]
    assert configfiles.strongest(found, "lightning") == found[0]
    assert configfiles.strongest(found, "hf") is None
    assert found[0].describe("configs/trainer/default.yaml") == "precision: 16-mixed (configs/trainer/default.yaml:2)"


def test_scan_leaves_what_git_ignores_and_what_is_excluded(tmp_path: Path) -> None:
    """A Hydra run folder copies the settings of past runs: `.gitignore` lists it, and the scan leaves it, as
    it leaves what `exclude` names; with `respect-gitignore` off the ignored folder is read."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("outputs/\n")
    (tmp_path / "outputs" / "2024-01-01").mkdir(parents=True)
    (tmp_path / "outputs" / "2024-01-01" / "config.yaml").write_text("precision: 16-mixed\n")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "trainer.yaml").write_text("precision: 16\n")
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "trainer.yaml").write_text("fp16: true\n")

    def read(config: Config) -> list:
        found = configfiles.scan(configfiles.config_files([str(tmp_path)], config))
        return [Path(s.path).relative_to(tmp_path).as_posix() for s in found]

    assert read(Config(exclude=("old",))) == ["conf/trainer.yaml"]
    assert read(Config()) == ["conf/trainer.yaml", "old/trainer.yaml"]
    assert read(Config(exclude=("old",), respect_gitignore=False)) == [
        "conf/trainer.yaml", "outputs/2024-01-01/config.yaml"]


def test_every_config_file_is_read_however_many(tmp_path: Path) -> None:
    """No count of files cuts the scan (it stopped after 2,000, and the setting in the last was lost)."""
    (tmp_path / "many").mkdir()
    for number in range(2100):
        (tmp_path / "many" / f"c{number:04}.yaml").write_text("batch_size: 8\n")
    (tmp_path / "many" / "zz_trainer.yaml").write_text("precision: 16-mixed\n")
    (tmp_path / "many" / "zz_model.yaml").write_text("model:\n  _target_: pkg.models.Net\n")
    found = configfiles.scan(configfiles.config_files([str(tmp_path)], Config()))
    assert [(Path(s.path).name, s.framework) for s in found] == [("zz_trainer.yaml", "lightning")]
    assert configfiles.built_classes(configfiles.config_files([str(tmp_path)], Config())) == frozenset({"Net"})


@pytest.mark.skipif(not CORPUS.is_dir(), reason="needs ../shared/corpus")
def test_real_configs_of_the_corpus_are_read() -> None:
    repos = ["shivammehta25+Matcha-TTS", "Stability-AI+stable-audio-tools"]
    found = configfiles.scan(configfiles.config_files([str(CORPUS / repo) for repo in repos], Config()))
    assert [(Path(s.path).name, s.line, s.text) for s in found] == [
        ("defaults.ini", 27, 'precision = "16-mixed"'),  # roots in sorted order: "Stability-AI" first
        ("default.yaml", 11, "precision: 16-mixed"),
    ]
