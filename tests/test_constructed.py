"""Rapid type analysis (`project/constructed.py`): a call on a receiver of unknown class goes to the classes the
project constructs, however many, and never to a class nothing makes."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from amplint.config import Config
from amplint.project.prefilter import used_names
from amplint.project.resolve import MAX_INFERRED
from amplint.project.run import run_project

USES = '''\
from subs import Imported, Both
class Defined(Base):
    pass
REGISTRY = {"a": Both, "b": subs.Registered}
made = Called(3)
listed = [First, Second]
picked = getattr(mod, "ByString")
target = "pkg.models.Configured"
def f(h: Annotated):
    return h
'''


def test_what_counts_as_constructing_a_class() -> None:
    names = ["Imported", "Both", "Defined", "Base", "Registered", "Called", "First", "Second", "ByString",
             "Configured", "Annotated", "Absent"]
    assert sorted(used_names(USES) & set(names)) == [
        "Annotated", "Both", "ByString", "Called", "Configured", "First", "Registered", "Second"]


def test_a_use_inside_another_counts_whichever_classes_are_asked_about() -> None:
    """One call's argument constructs as the call does: the answer for `Inner` must not depend on whether
    `Outer` is a class too (one pattern of three alternatives swallowed `(Inner` into `Outer(`)."""
    assert {"Outer", "Inner", "Last"} <= used_names("made = Outer(Inner, Last)\n")


def _project(root: Path, files: Dict[str, str]) -> List[Tuple[str, int, str]]:
    for name, text in files.items():
        (root / name).write_text(text)
    results = run_project([str(root)], Config(), use_cache=False).results
    return sorted((Path(f.path).name, f.line, f.chain[-1].name) for r in results for f in r.findings)


@pytest.mark.parametrize("made", [(), (1,), (0, 2, 5, 7, 9, 11)])
def test_an_unknown_receiver_reaches_the_constructed_classes_that_define_the_method(
        tmp_path: Path, made: Tuple[int, ...]) -> None:
    """Twelve head classes define `score`; `train` calls it on a model typed `nn.Module`. More than MAX_INFERRED
    define it, so the call goes to those a factory constructs: none, one, or six of them, each reported."""
    heads = "from torch.distributions import Normal\n" + "".join(
        f"\n\nclass Head{i}:\n    def score(self, x):\n        return Normal(x, {i + 1}.0).log_prob(x)\n"
        for i in range(12))
    factory = "import heads\n\nBUILDERS = {%s}\n" % ", ".join(f'"h{i}": heads.Head{i}' for i in made)
    train = ("import torch\nfrom torch import nn\n\nimport heads  # noqa: F401\n\n\ndef train(model: nn.Module, x):\n"
             "    with torch.autocast('cuda'):\n        return model.score(x)\n")
    assert 12 > MAX_INFERRED
    found = _project(tmp_path, {"heads.py": heads, "factory.py": factory, "train.py": train})
    assert found == sorted(("heads.py", 6 + 5 * i, f"Head{i}.score (inferred)") for i in made)
