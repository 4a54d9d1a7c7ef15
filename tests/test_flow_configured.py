"""Models built from configuration, and a tuple a helper returns unpacked by position.

Research code builds its models from YAML: Hydra's `instantiate(cfg.head)` with `_target_: pkg.heads.NormalHead`,
latent diffusion's `get_obj_from_str(config["target"])`, which is `getattr(importlib.import_module(module), cls)`.
The string comes from a file the value flow does not read as code, so the model was unknown, and its `forward`,
called in a float16 region, was never entered (`amplint trace` saw `Normal.log_prob` run on float16 inputs; the
check reported nothing). The project's config files say which classes such strings name: a class looked up by a
string the flow cannot spell is one of them, an object built from configuration an instance of one, and where the
code names the config section it builds from (`cfg["head"]`, `instantiate_from_config(encoder_config)`), only
the classes under that section. The walk's leads link the file that builds by string with the files of those
classes, which it does not import.

`model, filt = load()` joined the two elements of `return model, filt`: each name held both classes, and the
method of the one never called in the region was reported. A tuple display keeps what each position holds.

Each project runs under `amplint trace`; the check reports exactly what the run computed in float16.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from conftest import TWO_HEADS, found_places, traced_comparison

NORMAL, LAPLACE = ("pkg/heads.py", 13, 17, "AMP001"), ("pkg/heads.py", 23, 17, "AMP001")
CONFIG = """\
head:
  _target_: pkg.heads.NormalHead
critic:
  _target_: pkg.heads.LaplaceHead
"""
# A hand-written `instantiate`, as latent diffusion writes `instantiate_from_config`.
INSTANTIATE = """\
import importlib


def get_obj_from_str(string):
    module, cls = string.rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)


def instantiate(config):
    return get_obj_from_str(config["_target_"])()
"""
BY_HAND = """\
import torch
import yaml

from pkg.build import instantiate


def main():
    with open("conf/config.yaml") as handle:
        cfg = yaml.safe_load(handle)
    head, critic = instantiate(cfg["head"]), instantiate(cfg["critic"])
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    with torch.autocast("cpu", dtype=torch.float16):
        print(head(x, y))
    print(critic(x, y))


main()
"""
# Hydra's own `instantiate`: the library is not installed, so the trace runs a stand-in of the same name.
HYDRA = BY_HAND.replace("from pkg.build import instantiate", "from hydra.utils import instantiate")
HYDRA_STAND_IN = """\
import importlib


def instantiate(config):
    module, cls = config["_target_"].rsplit(".", 1)
    return getattr(importlib.import_module(module), cls)()
"""
UNPACKED = """\
import torch

from pkg.heads import LaplaceHead, NormalHead


def load():
    model = NormalHead()
    critic = LaplaceHead()
    return model, critic


model, critic = load()


def main():
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    with torch.autocast("cpu", dtype=torch.float16):
        print(model(x, y))
    print(critic(x, y))


main()
"""
CASES: Dict[str, Dict[str, str]] = {
    "by_hand": {"pkg/build.py": INSTANTIATE, "conf/config.yaml": CONFIG, "train.py": BY_HAND},
    "hydra": {"conf/config.yaml": CONFIG, "train.py": HYDRA},
    "unpacked": {"train.py": UNPACKED},
}


def _project(root: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project in `root / "p"`; Hydra's stand-in outside it, on the run's path."""
    if case == "hydra":
        (root / "site" / "hydra").mkdir(parents=True)
        (root / "site" / "hydra" / "__init__.py").write_text("")
        (root / "site" / "hydra" / "utils.py").write_text(HYDRA_STAND_IN)
        monkeypatch.setenv("PYTHONPATH", str(root / "site"))
    root = root / "p"
    files = {"pyproject.toml": "[project]\nname = 'configured'\n", "pkg/__init__.py": "", "pkg/heads.py": TWO_HEADS,
             **CASES[case]}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_only_the_model_run_in_the_region_is_reported(
        tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert found_places(_project(tmp_path, case, monkeypatch)) == [NORMAL]


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_is_reported_is_what_the_run_computes_in_float16(
        tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    report = traced_comparison(_project(tmp_path, case, monkeypatch))
    assert report["sites"] == 1 and report["missed"] == [] and report["unreached"] == [], report


def test_a_section_no_code_names_builds_any_configured_class(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`instantiate(cfg[key])` with a key the flow cannot spell: either class may be built (both are reported);
    a local bound once to a section (`settings = cfg["head"]`) and a call given one (`dict(cfg["head"])`) name it."""
    root = _project(tmp_path, "by_hand", monkeypatch)
    train = root / "train.py"
    text = train.read_text()
    train.write_text(text.replace('instantiate(cfg["head"])', 'instantiate(cfg[sys.argv[0]])').replace(
        "import torch\n", "import sys\n\nimport torch\n", 1))
    assert found_places(root) == [NORMAL, LAPLACE]
    train.write_text(text.replace('head, critic = instantiate(cfg["head"])',
                                  'settings = cfg["head"]\n    head, critic = instantiate(dict(settings))'))
    assert found_places(root) == [NORMAL]
