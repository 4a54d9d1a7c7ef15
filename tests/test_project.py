"""Project mode: the multi-file fixture exactly, chains included; cache; --no-project; limits."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import List, Tuple

import pytest

from amplint.config import Config
from amplint.engine import analyze_source, check_paths, fix_strategies
from amplint.model import FileResult, Precision
from amplint.project import frameworks, project_entries
from amplint.project.cache import DiskCache
from amplint.project.resolve import MAX_OVERRIDES
from amplint.project.frameworks import LiteralArg
from amplint.project.run import run_project
from conftest import FIXTURES, chain_names, chain_via, expected_lines, run_amplint, write_package

PROJECT = FIXTURES / "project"
CHECK = FIXTURES / "check"


def _render(results: List[FileResult], root: Path) -> List[str]:
    lines = []
    for result in results:
        assert result.error is None, result.error
        for f in result.findings:
            where = os.path.relpath(f.path, root).replace(os.sep, "/")
            region = os.path.relpath(f.region_path or f.path, root).replace(os.sep, "/")
            lines.append(f"{where}:{f.line}:{f.column} {f.code}{chain_via(f.chain)} from {region}:{f.region.line}")
    return lines


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    target = tmp_path / "proj"
    shutil.copytree(PROJECT, target)
    return target


def test_fixture_project_findings_are_exact(tmp_path: Path) -> None:
    run = run_project([str(PROJECT)], Config(), cache_dir=str(tmp_path / "cache"))
    assert _render(run.results, PROJECT) == expected_lines(PROJECT / "expected")


def test_message_names_the_region_file_and_the_chain() -> None:
    results = check_paths([str(PROJECT)], Config())
    [finding] = [f for r in results for f in r.findings if r.path.endswith("utils.py")]
    assert finding.message.endswith(  # amplint.risk quotes the measurement last
        "reached from autocast region at train.py:16 via model(x) (train.py:17:20) → AutoEncoder.forward → "
        f"utils.reconstruction_loss (vaepkg/model.py:15:16); {finding.risk.text()}"
    )
    assert finding.region_path == os.path.join(str(PROJECT), "train.py")
    assert finding.to_json()["region"]["path"] == finding.region_path


def test_framework_regions_are_named_in_messages() -> None:
    results = check_paths([str(PROJECT)], Config())
    messages = {(Path(r.path).name, f.line): f.message for r in results for f in r.findings}
    assert 'reached from Trainer(precision="16-mixed") region at lit.py:26' in messages[("lit.py", 18)]
    assert "reached from TrainingArguments(fp16=True) region at hf.py:28" in messages[("hf.py", 20)]
    assert 'prepared-model region of Accelerator(mixed_precision="fp16") at accel.py:6' in messages[("accel.py", 15)]
    own = 'accelerator.autocast() region of Accelerator(mixed_precision="fp16") at line 31'
    assert own in messages[("accel.py", 19)]


def test_cli_uses_project_mode_by_default_and_no_project_turns_it_off() -> None:
    proc = run_amplint(["check", str(PROJECT), "--format", "json"])
    assert proc.returncode == 1, proc.stderr
    assert len(json.loads(proc.stdout)) == len(expected_lines(PROJECT / "expected"))
    single = run_amplint(["check", str(PROJECT), "--format", "json", "--no-project"])
    assert single.returncode == 1, single.stderr
    # File by file, only the calls of density-named helpers in train.py's region are seen (AMP003), and the
    # same-file helper called in accel.py's `accelerator.autocast()` region (its module-level `Accelerator`).
    assert [(f["path"].rsplit("/", 1)[-1], f["line"], f["column"], f["code"]) for f in json.loads(single.stdout)] == [
        ("accel.py", 19, 13, "AMP001"), ("train.py", 19, 27, "AMP003"), ("train.py", 20, 27, "AMP003"),
    ]


def test_no_project_gives_the_single_file_results_on_the_check_fixtures() -> None:
    single = check_paths([str(CHECK)], Config(project=False))
    expected = sorted(
        (str(case), line)
        for case in sorted(CHECK.glob("*.py")) for line in expected_lines(case.with_suffix(".expected"))
    )
    got = sorted(
        (f.path, f"{f.line}:{f.column} {f.code}{chain_via(f.chain)}")
        for r in single for f in r.findings
    )
    assert got == expected
    project = check_paths([str(CHECK)], Config(project=True))
    assert [r.findings for r in project] == [r.findings for r in single]


def test_cache_is_reused_and_invalidated_on_edit(project_copy: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    first = run_project([str(project_copy)], Config(), cache_dir=cache)
    assert len(first.stats.parsed) == len(set(first.stats.parsed)) > 5  # each file parsed once
    second = run_project([str(project_copy)], Config(), cache_dir=cache)
    assert second.stats.parsed == []
    assert _render(second.results, project_copy) == _render(first.results, project_copy)

    utils = project_copy / "vaepkg" / "utils.py"
    utils.write_text(utils.read_text() + "# an edit that changes nothing\n")
    third = run_project([str(project_copy)], Config(), cache_dir=cache)
    assert third.stats.parsed == [str(utils)]
    assert _render(third.results, project_copy) == _render(first.results, project_copy)

    utils.write_text(utils.read_text().replace("D.Normal(mu, sigma)", "D.Normal(mu.float(), sigma.float())")
                     .replace("log_prob(x)", "log_prob(x.float())"))
    fourth = run_project([str(project_copy)], Config(), cache_dir=cache)
    assert fourth.stats.parsed == [str(utils)]
    assert not any("utils.py" in line for line in _render(fourth.results, project_copy))


def test_a_corrupt_cache_entry_is_a_miss(project_copy: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = run_project([str(project_copy)], Config(), cache_dir=str(cache))
    for entry in cache.rglob("*.json"):
        entry.write_bytes(b"not json")
    again = run_project([str(project_copy)], Config(), cache_dir=str(cache))
    assert _render(again.results, project_copy) == _render(first.results, project_copy)
    assert sorted(again.stats.parsed) == sorted(first.stats.parsed)


def test_cache_writes_are_atomic_renames(tmp_path: Path) -> None:
    cache = DiskCache(str(tmp_path))
    cache.put("summary", "ab" * 32, {"value": 1})
    assert cache.get("summary", "ab" * 32) == {"value": 1}
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.startswith(".tmp-")]
    assert leftovers == []
    assert (tmp_path / "CACHEDIR.TAG").exists()


def test_without_cache_nothing_is_written(project_copy: Path, tmp_path: Path) -> None:
    run_project([str(project_copy)], Config(), cache_dir=str(tmp_path / "cache"), use_cache=False)
    assert not (tmp_path / "cache").exists()


def test_depth_is_bounded(tmp_path: Path) -> None:
    def chains(depth: int) -> List[str]:
        run = run_project([str(PROJECT)], Config(max_depth=depth), use_cache=False)
        return _render(run.results, PROJECT)

    full = chains(8)
    one = chains(1)
    assert [line for line in full if line.count("→") <= 1] == one
    assert chains(0) == ["accel.py:19:13 AMP001 via energy from accel.py:31"]  # the file's own finding only


def test_by_default_a_chain_is_followed_as_deep_as_it_goes(tmp_path: Path) -> None:
    """Each function is entered once, which bounds the work: a default depth would only drop findings."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'deep'\n")
    files = {"hop0.py": "from torch.distributions import Normal\n\n\ndef hop0(h, y):\n"
                        "    return Normal(h, h.exp()).log_prob(y)\n"}
    for n in range(1, 12):  # hop11 -> hop10 -> ... -> hop0: eleven calls, one file each
        files[f"hop{n}.py"] = f"from hop{n - 1} import hop{n - 1}\n\n\ndef hop{n}(h, y):\n    return hop{n - 1}(h, y)\n"
    files["run.py"] = ("import torch\nfrom hop11 import hop11\n\n\ndef main(lin, x, y):\n"
                       "    with torch.autocast(\"cpu\", dtype=torch.float16):\n        return hop11(lin(x), y)\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)

    def found(config: Config) -> List[Tuple[str, int, str]]:
        run = run_project([str(tmp_path)], config, use_cache=False)
        return [(Path(r.path).name, f.line, f.code) for r in run.results for f in r.findings]

    assert found(Config()) == [("hop0.py", 5, "AMP001")]
    assert found(Config(max_depth=8)) == []  # a bound the user sets still holds


def test_entries_give_the_fixer_a_diagnosis_in_the_callee_file() -> None:
    entries = project_entries([str(PROJECT)], Config())
    path = os.path.join(str(PROJECT), "vaepkg", "utils.py")
    text = Path(path).read_text()
    assert not analyze_source(text, path, Config()).pairs  # on its own the file has no region
    source = analyze_source(text, path, Config(), entries=entries[path])
    [(diagnosis, finding)] = source.pairs
    assert chain_names(diagnosis.chain) == ["model(x)", "AutoEncoder.forward", "utils.reconstruction_loss"]
    assert source.module is not None and source.module.code_for_node(diagnosis.site.call) == "likelihood.log_prob(x)"
    assert "cast" in fix_strategies(diagnosis) and finding.fixable


def _write(root: Path, files: dict) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def test_lightning_precision_from_a_config_value_is_maybe_float16(tmp_path: Path) -> None:
    _write(tmp_path, {
        "model.py": (
            "import pytorch_lightning as pl\nfrom torch.distributions import Normal\n\n\n"
            "class Lit(pl.LightningModule):\n    def validation_step(self, batch, i):\n"
            "        return Normal(batch, 1.0).log_prob(batch)\n"
        ),
        "main.py": "from pytorch_lightning import Trainer\n\n\ndef main(cfg):\n    Trainer(precision=cfg.precision)\n",
    })
    [finding] = [f for r in run_project([str(tmp_path)], Config(), use_cache=False).results for f in r.findings]
    assert finding.region is not None and finding.region.precision is Precision.MAYBE_FLOAT16
    assert "possibly-float16" in finding.message and "Trainer(precision=cfg.precision)" in finding.message


def test_bf16_lightning_trainer_gives_no_region(tmp_path: Path) -> None:
    _write(tmp_path, {
        "model.py": (
            "import lightning as L\nfrom torch.distributions import Normal\n\n\n"
            "class Lit(L.LightningModule):\n    def training_step(self, batch, i):\n"
            "        return Normal(batch, 1.0).log_prob(batch)\n"
        ),
        "main.py": "import lightning as L\n\nL.Trainer(precision='bf16-mixed').fit(None)\n",
    })
    assert not [f for r in run_project([str(tmp_path)], Config(), use_cache=False).results for f in r.findings]


def test_namespace_packages_and_scripts_resolve(tmp_path: Path) -> None:
    _write(tmp_path, {
        "models/vae.py": (  # no __init__.py: a namespace package, imported from a script next to it
            "import torch.nn as nn\nfrom torch.distributions import Normal\n\n\n"
            "class VAE(nn.Module):\n    def forward(self, x):\n        return Normal(x, 1.0).log_prob(x)\n"
        ),
        "scripts/train.py": (
            "import torch\nfrom models.vae import VAE\n\n\ndef step(x, model: VAE):\n"
            "    with torch.cuda.amp.autocast():\n        return model(x)\n"
        ),
    })
    lines = _render(run_project([str(tmp_path)], Config(), use_cache=False).results, tmp_path)
    assert lines == ["models/vae.py:7:16 AMP001 via model(x) → VAE.forward from scripts/train.py:6"]


@pytest.mark.parametrize("count, constructed, reported", [
    (2, (), 2), (MAX_OVERRIDES, (), MAX_OVERRIDES), (MAX_OVERRIDES + 1, (), 0),
    (40, (3, 17, 38), 3), (40, tuple(range(40)), 40)])
def test_dispatch_reaches_the_overrides_of_the_classes_the_project_constructs(
        tmp_path: Path, count: int, constructed: tuple, reported: int) -> None:
    """Up to MAX_OVERRIDES overrides, every one (class-hierarchy analysis); past it, those of the classes the
    project constructs (a registry here: rapid type analysis), however many: no cap drops a class that runs."""
    subclasses = "".join(
        f"\n\nclass Sub{i}(Base):\n    def nll(self, x):\n        return Normal(x, 1.0).log_prob(x)\n"
        for i in range(count)
    )
    registry = "REGISTRY = {%s}\n" % ", ".join(f'"s{i}": subs.Sub{i}' for i in constructed)
    _write(tmp_path, {
        "base.py": "import torch\n\n\nclass Base:\n    def run(self, x):\n        with torch.autocast('cuda'):\n"
                   "            return self.nll(x)\n\n    def nll(self, x):\n        return x\n",
        "subs.py": "from torch.distributions import Normal\n\nfrom base import Base\n" + subclasses,
        "registry.py": "import subs\n\n" + registry,
    })
    found = [f for r in run_project([str(tmp_path)], Config(), use_cache=False).results for f in r.findings]
    assert len(found) == reported
    assert all(f.chain[0].name == "self.nll(x)" and f.chain[1].name.endswith(".nll") for f in found)
    if constructed and count > MAX_OVERRIDES:
        assert sorted(f.chain[1].name for f in found) == sorted(f"Sub{i}.nll" for i in constructed)


@pytest.mark.parametrize(
    "rule, arg, double_star, expected",
    [
        (frameworks.lightning_precision, LiteralArg("16", 16, True), False, Precision.FLOAT16),
        (frameworks.lightning_precision, LiteralArg('"16"', "16", True), False, Precision.FLOAT16),
        (frameworks.lightning_precision, LiteralArg('"16-mixed"', "16-mixed", True), False, Precision.FLOAT16),
        (frameworks.lightning_precision, LiteralArg('"bf16-mixed"', "bf16-mixed", True), False, None),
        (frameworks.lightning_precision, LiteralArg("32", 32, True), False, None),
        (frameworks.lightning_precision, LiteralArg("cfg.precision"), False, Precision.MAYBE_FLOAT16),
        (frameworks.lightning_precision, None, False, None),
        (frameworks.lightning_precision, None, True, Precision.MAYBE_FLOAT16),
        (frameworks.hf_precision, LiteralArg("True", True, True), False, Precision.FLOAT16),
        (frameworks.hf_precision, LiteralArg("False", False, True), False, None),
        (frameworks.hf_precision, LiteralArg("args.fp16"), False, Precision.MAYBE_FLOAT16),
        (frameworks.accelerate_precision, LiteralArg('"fp16"', "fp16", True), False, Precision.FLOAT16),
        (frameworks.accelerate_precision, LiteralArg('"bf16"', "bf16", True), False, Precision.BFLOAT16),
        (frameworks.accelerate_precision, LiteralArg('"no"', "no", True), False, None),
        (frameworks.accelerate_precision, None, False, Precision.MAYBE_FLOAT16),
    ],
)
def test_framework_precision_rules(rule, arg, double_star, expected) -> None:
    assert rule(arg, double_star) == expected


def test_a_loop_variable_hides_a_module_instance(tmp_path: Path) -> None:
    _write(tmp_path, {
        "net.py": "import torch.nn as nn\nfrom torch.distributions import Normal\n\n\nclass Net(nn.Module):\n"
                  "    def forward(self, x):\n        return Normal(x, 1.0).log_prob(x)\n",
        "train.py": "import torch\nfrom net import Net\n\nmodel = Net()\n\n\ndef run(models, x):\n"
                    "    for model in models:\n        with torch.autocast('cuda'):\n            model(x)\n\n\n"
                    "def infer(x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
    })
    lines = _render(run_project([str(tmp_path)], Config(), use_cache=False).results, tmp_path)
    assert lines == ["net.py:7:16 AMP001 via model(x) → Net.forward from train.py:14"]  # from infer() only


@pytest.mark.parametrize("assigned, reported", [
    ("torch.bfloat16 if cfg.bf16 else torch.float32", False),
    ("torch.bfloat16", False),
    ("torch.float16 if cfg.fp16 else torch.bfloat16", True),  # may be float16: still reported
    ("cfg.dtype", True),
])
def test_region_dtype_from_a_constructor_attribute(tmp_path: Path, assigned: str, reported: bool) -> None:
    _write(tmp_path, {"runner.py": (
        "import torch\nfrom torch.distributions import Normal\n\n\nclass Runner:\n"
        f"    def __init__(self, cfg):\n        self.amp_dtype = {assigned}\n\n"
        "    def step(self, mu, x):\n        with torch.autocast('cuda', dtype=self.amp_dtype):\n"
        "            return Normal(mu, 1.0).log_prob(x)\n"
    )})
    found = [f for r in run_project([str(tmp_path)], Config(), use_cache=False).results for f in r.findings]
    assert bool(found) == reported
    single = [f for r in check_paths([str(tmp_path)], Config(project=False)) for f in r.findings]
    assert len(single) == 1  # single-file mode keeps its old reading: a non-literal dtype is maybe-float16


def test_concurrent_runs_share_the_cache_safely(project_copy: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    env = dict(os.environ, AMPLINT_CACHE_DIR=str(tmp_path / "cache"), PYTHONWARNINGS="ignore")
    command = [sys.executable, "-m", "amplint", "check", str(project_copy), "--format", "json"]
    runs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for _ in range(3)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [1, 1, 1], [err for _, err in outputs]
    assert len({out for out, _ in outputs}) == 1
    assert len(json.loads(outputs[0][0])) == len(expected_lines(PROJECT / "expected"))
    assert not list((tmp_path / "cache").rglob(".tmp-*"))


def test_the_text_pass_follows_star_imports_to_their_module() -> None:
    """`from .google import *` makes the module's names the file's: the walk's reach test must step there."""
    from amplint.project.prefilter import imported_names

    text = ("from .google import *\nfrom pkg.base import (Model,\n    Head as H)\n"
            "import torch.nn as nn\nfrom . import x\n")
    assert imported_names(text) == [".google", "pkg.base.Model", "pkg.base.Head", "pkg.base.H", ".x", "torch.nn",
                                    "nn"]


ACCEL_LOSSES = '''\
from torch.distributions import Normal


def nll(out, x):
    return -Normal(out, out.exp()).log_prob(x)
'''
ACCEL_TRAIN = '''\
import contextlib

from accelerate import Accelerator
from torch.distributions import Normal

from pkg.losses import nll


def named(lin, x):
    acc = Accelerator(mixed_precision="fp16")
    ctx = acc.autocast
    with ctx():
        return nll(lin(x), x)


def conditional(lin, x, amp):
    acc = Accelerator(mixed_precision="fp16")
    cm = acc.autocast if amp else contextlib.nullcontext
    with cm():
        return nll(lin(x), x) + Normal(lin(x), 1.0).log_prob(x)


def inline(lin, x, amp):
    acc = Accelerator(mixed_precision="fp16")
    with (acc.autocast() if amp else contextlib.nullcontext()):
        return Normal(lin(x), 1.0).log_prob(x)


def off(lin, x):
    acc = Accelerator(mixed_precision="no")
    ctx = acc.autocast
    with ctx():
        return Normal(lin(x), 1.0).log_prob(x)
'''


def test_an_accelerators_autocast_bound_to_a_name_opens_its_region(tmp_path: Path) -> None:
    """`ctx = accelerator.autocast` (also `... if amp else nullcontext`) then `with ctx():` is the accelerator's
    region, as `with accelerator.autocast():` is; `mixed_precision="no"` opens none."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    write_package(tmp_path, {"losses.py": ACCEL_LOSSES, "train.py": ACCEL_TRAIN})
    results = check_paths([str(tmp_path)], Config())
    found = sorted((os.path.relpath(f.path, tmp_path), f.line, f.column, f.code, f.region.line)
                   for r in results for f in r.findings)
    assert found == [("pkg/losses.py", 5, 13, "AMP001", 12),
                     ("pkg/train.py", 20, 33, "AMP001", 19),
                     ("pkg/train.py", 26, 16, "AMP001", 25)]
    messages = {f.line: f.message for r in results for f in r.findings}
    assert 'accelerator.autocast() region of Accelerator(mixed_precision="fp16") at line 19' in messages[20]
