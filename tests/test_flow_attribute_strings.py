"""A method picked by a name an attribute holds: `getattr(self, self.loss_name)(x, y)`.

The flow read a name only from literals, local names, parameters, `a if c else b` and f-strings, so a name
held by an attribute (`loss_name = "nll"` in the class body, `self.loss_name = loss_name` from the
constructor, `getattr(self, "loss_name", "nll")`) was any name: every method of the model was entered, and
a hazardous method the run never calls was reported (`Head.other` below, `Laplace.log_prob`). The names
an attribute may hold are now read as its values are: the class bodies and `self.` assignments of its
owner's classes, their MRO and subclasses, with `getattr`'s default (`project/flowstrings.py`).

Each project runs under `amplint trace`; the check reports exactly what the run computed in float16.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from amplint.project.flowstrings import MAX_SPELLINGS
from conftest import found_places, traced_comparison

MODEL = """\
import torch
from torch import nn
from torch.distributions import Laplace, Normal


class Head(nn.Module):
    loss_name = "nll"

    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 1)
        self.sd = nn.Linear(4, 1)

    def nll(self, x, y):
        return -Normal(self.mu(x), torch.sigmoid(self.sd(x))).log_prob(y).mean()

    def other(self, x, y):
        return -Laplace(self.mu(x), torch.sigmoid(self.sd(x))).log_prob(y).mean()

    def forward(self, x, y):
        return getattr(self, {pick})(x, y)
"""
TRAIN = """\
import torch
from model import {cls}


def main():
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    model = {cls}({args})
    with torch.autocast("cpu", dtype=torch.float16):
        print(model(x, y))


main()
"""
NLL, OTHER = ("model.py", 15, 17, "AMP001"), ("model.py", 18, 17, "AMP001")
# name -> (the name `forward` reads, extra model code, the class and arguments `train.py` builds, expected)
CASES: Dict[str, Tuple[str, str, str, str, List[Tuple[str, int, int, str]]]] = {
    "class_attribute": ("self.loss_name", "", "Head", "", [NLL]),
    "getattr_default": ('getattr(self, "loss_kind", "nll")', "", "Head", "", [NLL]),
    "or_default": ('getattr(self, "loss_kind", None) or "nll"', "", "Head", "", [NLL]),
    # a subclass that picks the other method, and is the class the run builds: both may run, statically
    "subclass_overrides": ("self.loss_name", '\n\nclass Other(Head):\n    loss_name = "other"\n', "Other", "",
                           [NLL, OTHER]),
    # a subclass that sets the attribute to a sentinel (transformers: `_input_embed_layer = AttributeError()`)
    # names no method; where the file binds `AttributeError` itself, the call may give any name
    "sentinel": ("self.loss_name", "\n\nclass Bare(Head):\n    loss_name = AttributeError()\n", "Head", "", [NLL]),
    "sentinel_shadowed": ("self.loss_name", "\n\nAttributeError = str\n\n\nclass Bare(Head):\n"
                          "    loss_name = AttributeError()\n", "Head", "", [NLL, OTHER]),
    # the name given to the constructor and kept on `self`
    "constructor_argument": ("self.kind", (
        '\n\nclass Chosen(Head):\n    def __init__(self, kind):\n        super().__init__()\n'
        '        self.kind = kind\n'), "Chosen", '"other"', [OTHER]),
}


def _project(root: Path, case: str) -> Path:
    pick, extra, cls, args, _ = CASES[case]
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'strings'\n")
    (root / "model.py").write_text(MODEL.format(pick=pick) + extra)
    (root / "train.py").write_text(TRAIN.format(cls=cls, args=args))
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_method_an_attribute_names_is_the_one_entered(tmp_path: Path, case: str) -> None:
    assert found_places(_project(tmp_path / case, case)) == CASES[case][4]


@pytest.mark.parametrize("case", ["class_attribute", "getattr_default", "or_default", "constructor_argument",
                                  "sentinel"])
def test_what_is_reported_is_what_the_run_computes_in_float16(tmp_path: Path, case: str) -> None:
    report = traced_comparison(_project(tmp_path / case, case))
    assert (report["missed"], report["unreached"], report["sites"]) == ([], [], 1), report


def test_an_attribute_assigned_nowhere_is_any_name(tmp_path: Path) -> None:
    """`getattr(self, self.kind)` where no class assigns `kind` (set from outside, or never): every method may
    run, so both are entered, as before."""
    project = _project(tmp_path / "unknown", "class_attribute")
    (project / "model.py").write_text(MODEL.format(pick="self.kind"))
    assert found_places(project) == [NLL, OTHER]


def test_past_max_spellings_names_the_answer_is_any_name(tmp_path: Path) -> None:
    """Each name an attribute may hold is read on every class the owner may be, so past `MAX_SPELLINGS`
    names the answer widens to any name (it drops none): with 65 subclasses naming a method of their own,
    `other` may run too."""
    project = _project(tmp_path / "many", "class_attribute")
    subclasses = "".join(f'\n\nclass S{i}(Head):\n    loss_name = "n{i}"\n' for i in range(MAX_SPELLINGS))
    (project / "model.py").write_text(MODEL.format(pick="self.loss_name") + subclasses)
    assert found_places(project) == [NLL, OTHER]


GETATTR_DEFAULT_TRAIN = """\
import torch
from torch import nn
from torch.distributions import Laplace
from model import Head


class Holder:
    pass


class Calm(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Linear(4, 1)

    def nll(self, x, y):
        return -Laplace(self.mu(x), torch.sigmoid(self.mu(x))).log_prob(y).mean()


def fit(holder, fallback, x, y):
    model = getattr(holder, "net", fallback)
    with torch.autocast("cpu", dtype=torch.float16):
        print(model.nll(x, y))


calm = Calm()
fit(Holder(), Head(), torch.randn(64, 4), torch.randn(64, 1))
"""


def test_getattr_gives_its_default_too(tmp_path: Path) -> None:
    """`getattr(holder, "net", fallback)` may be `fallback`. The default was not read, so `model` held nothing
    known and `model.nll` ran every `nll` of the classes the project builds: `Calm.nll`, which the run never
    calls under float16, was reported beside `Head.nll`, which it does."""
    project = _project(tmp_path / "default", "class_attribute")
    (project / "train.py").write_text(GETATTR_DEFAULT_TRAIN)
    assert found_places(project) == [NLL]
    report = traced_comparison(project)
    assert (report["missed"], report["unreached"], report["sites"]) == ([], [], 1), report


def test_a_name_stored_from_outside_the_class_is_read_too(tmp_path: Path) -> None:
    """`model.loss_name = "other"` in the script: the class says `nll`, the run calls `other`. Both may run
    statically, and the run's float16 `Laplace.log_prob` is found (the class attribute alone would miss it)."""
    project = _project(tmp_path / "outside", "class_attribute")
    train = (project / "train.py").read_text()
    (project / "train.py").write_text(train.replace("    model = Head()\n",
                                                    '    model = Head()\n    model.loss_name = "other"\n'))
    assert found_places(project) == [NLL, OTHER]
    report = traced_comparison(project)
    assert (report["missed"], [(u["path"], u["line"]) for u in report["unreached"]]) == ([], [("model.py", 15)])
