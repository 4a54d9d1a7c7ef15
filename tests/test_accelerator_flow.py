"""Rule A across calls (issue #50): an `Accelerator(...)` that reaches `with x.autocast():` through a parameter
(joined over every call site in the project), a factory's return, a helper's default or a `self.` attribute.

The collector records such a `with` as pending (`CallSummary.accel`, `FunctionSummary.accels`), the project's
value flow finds the constructions (`project.accelflow`), the walk starts at the region's calls and the file is
analysed with a `HeldAccelerator` per receiver. A receiver the project never gives a constructed accelerator (a
library entry point) opens no region: its precision is set where it is built, outside the project.
"""
from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import List, Tuple

from amplint.config import Config
from amplint.engine import check_paths
from amplint.facts.astcalls import ast_facts
from amplint.names import import_table
from amplint.project.run import run_project
from conftest import write_package

LOSSES = '''\
from torch.distributions import Normal


def nll(out, x):
    return -Normal(out, out.exp()).log_prob(x)
'''
LOOP = '''\
from torch.distributions import Normal

from pkg.losses import nll


def train_one_epoch(lin, x, accelerator):
    with accelerator.autocast():
        loss = nll(lin(x), x)
        lp = Normal(lin(x), 1.0).log_prob(x)
    return loss, lp
'''
MAIN = '''\
from accelerate import Accelerator

from pkg.loop import train_one_epoch


def main(lin, x):
    acc = Accelerator(mixed_precision="{precision}")
    train_one_epoch(lin, x, acc)
'''
Found = List[Tuple[str, int, int, str]]


def _project(tmp_path: Path, files: dict) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'a'\n")
    write_package(tmp_path, files)
    return tmp_path


def _findings(root: Path, paths: List[str] = ()) -> Tuple[Found, dict]:
    results = check_paths(list(paths) or [str(root)], Config(), in_project=bool(paths))
    found = sorted((os.path.relpath(f.path, root).replace(os.sep, "/"), f.line, f.column, f.code)
                   for r in results for f in r.findings)
    messages = {(os.path.relpath(f.path, root).replace(os.sep, "/"), f.line): f.message
                for r in results for f in r.findings}
    return found, messages


def test_an_accelerator_passed_to_a_parameter_in_another_file_opens_its_region(tmp_path: Path) -> None:
    """`train_one_epoch(model, x, acc)` with `acc = Accelerator(mixed_precision="fp16")` in main.py: the loop's
    own site is in the region, and the walk starts at its calls (`nll` in losses.py)."""
    root = _project(tmp_path, {"losses.py": LOSSES, "loop.py": LOOP, "main.py": MAIN.format(precision="fp16")})
    found, messages = _findings(root)
    assert found == [("pkg/loop.py", 9, 14, "AMP001"), ("pkg/losses.py", 5, 13, "AMP001")]
    region = 'accelerator.autocast() region of Accelerator(mixed_precision="fp16") (built at pkg/main.py:7)'
    assert f"runs in the float16 {region} at line 7 with inputs" in messages[("pkg/loop.py", 9)]
    assert f"reached from {region} at pkg/loop.py:7 via nll(lin(x), x) (pkg/loop.py:8:16) → losses.nll" in messages[
        ("pkg/losses.py", 5)]
    # `amplint check FILE` (the file in its project) says the same of that file.
    assert _findings(root, [str(root / "pkg" / "loop.py")])[0] == [("pkg/loop.py", 9, 14, "AMP001")]


def test_an_accelerator_that_opens_no_float16_region_is_passed_on_without_one(tmp_path: Path) -> None:
    for precision in ("no", "bf16"):
        root = tmp_path / precision
        root.mkdir()
        _project(root, {"losses.py": LOSSES, "loop.py": LOOP, "main.py": MAIN.format(precision=precision)})
        assert _findings(root)[0] == [], precision


def test_the_summaries_keep_the_pending_region_in_the_cache(tmp_path: Path) -> None:
    root = _project(tmp_path, {"losses.py": LOSSES, "loop.py": LOOP, "main.py": MAIN.format(precision="fp16")})
    runs = [run_project([str(root)], Config(), cache_dir=str(tmp_path / "cache")) for _ in range(2)]
    cold, warm = ([(f.path, f.line, f.column, f.message) for r in run.results for f in r.findings] for run in runs)
    assert cold == warm and len(cold) == 2


ONE_FILE = '''\
from accelerate import Accelerator
from torch.distributions import Normal


def loop(lin, x, accelerator):
    with accelerator.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


def make():
    return Accelerator(mixed_precision="fp16")


def other(lin, x):
    acc = make()
    with acc.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


def library_entry(lin, x, accelerator):
    with accelerator.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


def main(lin, x):
    acc = Accelerator(mixed_precision="fp16")
    loop(lin, x, acc)
'''


def test_a_parameter_and_a_factory_of_the_same_file(tmp_path: Path) -> None:
    """`amplint check one.py`: the parameter given an accelerator by `main`, the local bound to `make()`; the
    parameter of `library_entry`, which no call in the project gives an accelerator, opens no region."""
    (tmp_path / "one.py").write_text(ONE_FILE)
    found, messages = _findings(tmp_path, [str(tmp_path / "one.py")])
    assert found == [("one.py", 7, 16, "AMP001"), ("one.py", 17, 16, "AMP001")]
    assert 'Accelerator(mixed_precision="fp16") (built at one.py:26) at line 6' in messages[("one.py", 7)]
    assert 'Accelerator(mixed_precision="fp16") (built at one.py:11) at line 16' in messages[("one.py", 17)]


FACTORY = '''\
from accelerate import Accelerator


def build_accelerator(cfg):
    return Accelerator(mixed_precision=cfg.precision)


def fp16_accelerator():
    return Accelerator(mixed_precision="fp16")


def get_accelerator(acc=None):
    return acc or Accelerator(mixed_precision="fp16")


def off_accelerator():
    return Accelerator(mixed_precision="no")
'''
TRAIN = '''\
import contextlib

from torch.distributions import Normal

from pkg.factory import build_accelerator, fp16_accelerator, get_accelerator, off_accelerator


def factory(lin, x, cfg):
    accelerator = build_accelerator(cfg)
    with accelerator.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


def default(lin, x):
    accelerator = get_accelerator()
    with accelerator.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


def bound(lin, x, amp):
    accelerator = fp16_accelerator()
    ctx = accelerator.autocast if amp else contextlib.nullcontext
    with ctx():
        return Normal(lin(x), 1.0).log_prob(x)


def off(lin, x):
    accelerator = off_accelerator()
    with accelerator.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


def sometimes(lin, x, accelerator):
    with accelerator.autocast():
        return Normal(lin(x), 1.0).log_prob(x)


class Trainer:
    def __init__(self, model, accelerator):
        self.model = model
        self.accelerator = accelerator

    def step(self, x):
        with self.accelerator.autocast():
            return Normal(self.model(x), 1.0).log_prob(x)


class Unused:
    def __init__(self, accelerator):
        self.accelerator = accelerator

    def step(self, lin, x):
        with self.accelerator.autocast():
            return Normal(lin(x), 1.0).log_prob(x)
'''
TRAIN_MAIN = '''\
from accelerate import Accelerator

from pkg.train import Trainer, sometimes


def main(lin, x, given):
    trainer = Trainer(lin, Accelerator(mixed_precision="fp16"))
    trainer.step(x)
    bf = Trainer(lin, Accelerator(mixed_precision="bf16"))
    bf.step(x)
    sometimes(lin, x, Accelerator(mixed_precision="fp16"))
    sometimes(lin, x, given)
    sometimes(lin, x, None)
'''


def test_factories_defaults_bound_methods_and_attributes_across_files(tmp_path: Path) -> None:
    """A factory's return (a precision not read: maybe-float16), a helper's default (`acc or Accelerator(...)`),
    `ctx = accelerator.autocast if amp else nullcontext` on a factory's result, and `self.accelerator` kept
    from a constructor argument (given fp16 at one construction, bf16 at another: the fp16 one counts). A
    parameter given an accelerator at one call site and something unknown at others holds that accelerator (a
    join over call sites). `mixed_precision="no"` and a class the project never constructs: no finding."""
    root = _project(tmp_path, {"factory.py": FACTORY, "train.py": TRAIN, "main.py": TRAIN_MAIN})
    found, messages = _findings(root)
    assert found == [("pkg/train.py", 11, 16, "AMP001"), ("pkg/train.py", 17, 16, "AMP001"),
                     ("pkg/train.py", 24, 16, "AMP001"), ("pkg/train.py", 35, 16, "AMP001"),
                     ("pkg/train.py", 45, 20, "AMP001")]
    assert ("runs in the possibly-float16 accelerator.autocast() region of "
            "Accelerator(mixed_precision=cfg.precision) (built at pkg/factory.py:5) at line 10") in messages[
        ("pkg/train.py", 11)]
    fp16 = 'runs in the float16 accelerator.autocast() region of Accelerator(mixed_precision="fp16")'
    assert f"{fp16} (built at pkg/factory.py:13) at line 16" in messages[("pkg/train.py", 17)]
    assert f"{fp16} (built at pkg/factory.py:9) at line 23" in messages[("pkg/train.py", 24)]
    assert f"{fp16} (built at pkg/main.py:11) at line 34" in messages[("pkg/train.py", 35)]
    assert f"{fp16} (built at pkg/main.py:7) at line 44" in messages[("pkg/train.py", 45)]


def test_the_cpython_reader_leaves_a_pending_accelerator_to_libcst() -> None:
    """`facts.astcalls` does not record pending `with`s: a file with one is summarized by the collector."""
    for text in (LOOP, "def f(acc, g):\n    ctx = acc.autocast\n    with ctx():\n        g()\n"):
        tree = ast.parse(text)
        assert ast_facts(tree, text, import_table(tree), frozenset(), ()) is None
    plain = "import torch\n\n\ndef f(g):\n    with torch.autocast('cuda'):\n        g()\n"
    tree = ast.parse(plain)
    assert ast_facts(tree, plain, import_table(tree), frozenset(), ()) is not None


BOUND_PARAMETER = '''\
import contextlib

from accelerate import Accelerator
from torch.distributions import Normal


def loop(lin, x, accelerator, amp):
    ctx = accelerator.autocast if amp else contextlib.nullcontext
    with ctx():
        return Normal(lin(x), 1.0).log_prob(x)


def plain(lin, x, accelerator):
    ctx = accelerator.autocast
    with ctx():
        return Normal(lin(x), 1.0).log_prob(x)


def main(lin, x):
    acc = Accelerator(mixed_precision="fp16")
    loop(lin, x, acc, True)
    plain(lin, x, accelerator=acc)
'''


def test_the_autocast_method_of_a_parameter_bound_to_a_local(tmp_path: Path) -> None:
    """`ctx = accelerator.autocast if amp else nullcontext` (and without the conditional) on a parameter given
    an accelerator, by position and by keyword."""
    (tmp_path / "one.py").write_text(BOUND_PARAMETER)
    found, messages = _findings(tmp_path, [str(tmp_path / "one.py")])
    assert found == [("one.py", 10, 16, "AMP001"), ("one.py", 16, 16, "AMP001")]
    region = 'accelerator.autocast() region of Accelerator(mixed_precision="fp16") (built at one.py:20)'
    assert f"runs in the float16 {region} at line 9 with inputs" in messages[("one.py", 10)]
    assert f"runs in the float16 {region} at line 15 with inputs" in messages[("one.py", 16)]


def test_an_accelerator_imported_under_another_name(tmp_path: Path) -> None:
    """`from accelerate import Accelerator as Acc` builds the same accelerator: the flow resolves the name through
    the file's imports, not by its spelling; a class of the project's own named `Accelerator` builds none."""
    aliased = MAIN.replace("from accelerate import Accelerator", "from accelerate import Accelerator as Acc").replace(
        "acc = Accelerator(", "acc = Acc(")
    (tmp_path / "aliased").mkdir()
    (tmp_path / "own").mkdir()
    root = _project(tmp_path / "aliased", {"losses.py": LOSSES, "loop.py": LOOP, "main.py": aliased.format(
        precision="fp16")})
    assert _findings(root)[0] == [("pkg/loop.py", 9, 14, "AMP001"), ("pkg/losses.py", 5, 13, "AMP001")]
    own = MAIN.replace("from accelerate import Accelerator\n", "class Accelerator:\n    def __init__(self, **kw):\n"
                       "        pass\n")
    root = _project(tmp_path / "own", {"losses.py": LOSSES, "loop.py": LOOP, "main.py": own.format(precision="fp16")})
    assert _findings(root)[0] == []
