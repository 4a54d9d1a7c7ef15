"""`x.log_prob(v)` is not reported when every class `x` may be an instance of is known and is not a distribution.

Each case is a whole file through the real analysis; a receiver with any
unknown path (a parameter, an imported class, a loop variable) stays reported.
"""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import List, Tuple

import pytest

from amplint.config import Config
from amplint.engine import check_paths, check_source
from conftest import chain_names

HEADER = 'import torch\nfrom torch import nn\nfrom torch.distributions import Normal\n'


def findings(body: str, config: Config = Config()) -> List[Tuple[int, int, str, Tuple[str, ...]]]:
    """(line, column, code, chain) of every finding; line 4 is the body's first line."""
    result = check_source(HEADER + textwrap.dedent(body).lstrip("\n"), "m.py", config)
    assert result.error is None
    return [(f.line, f.column, f.code, tuple(chain_names(f.chain))) for f in result.findings]


@pytest.mark.parametrize(
    "spelling",
    [
        "nn.AdaptiveLogSoftmaxWithLoss(8, 100, [10])",
        "torch.nn.Linear(8, 100)",
        "nn.modules.adaptive.AdaptiveLogSoftmaxWithLoss(8, 100, [10])",
        "Head(8)",  # `from torch.nn import Linear as Head`, below
    ],
)
def test_local_name_bound_to_an_nn_module_is_not_reported(spelling: str) -> None:
    assert findings(f"""
        from torch.nn import Linear as Head
        def f(x):
            head = {spelling}
            with torch.autocast("cuda"):
                return head.log_prob(x)
        """) == []


def test_import_torch_nn_as_nn_spelling() -> None:
    source = 'import torch\nimport torch.nn as nn\n\ndef f(x):\n    head = nn.Linear(8, 2)\n' \
             '    with torch.autocast("cuda"):\n        return head.log_prob(x)\n'
    assert check_source(source, "m.py").findings == []


def test_constructor_call_as_receiver() -> None:
    assert findings("""
        class Evaluator:
            def log_prob(self, trace):
                return trace
        def f(trace):
            with torch.autocast("cuda"):
                return Evaluator().log_prob(trace)
        """) == []


@pytest.mark.parametrize(
    "bases",
    ["", "(object)", "(nn.Module)", "(Base)", "(Generic[T])", "(ABC, metaclass=ABCMeta)"],
)
def test_classes_of_the_file_without_distribution_bases(bases: str) -> None:
    assert findings(f"""
        from abc import ABC, ABCMeta
        from typing import Generic, TypeVar
        T = TypeVar("T")
        class Base:
            pass
        class Evaluator{bases}:
            def log_prob(self, trace):
                return trace
        def f(trace):
            ev = Evaluator()
            with torch.autocast("cuda"):
                return ev.log_prob(trace)
        """) == []


@pytest.mark.parametrize(
    "bases",
    ["(Normal)", "(torch.distributions.Distribution)", "(ImportedBase)", "(Middle)", "(*bases)"],
)
def test_classes_with_a_base_that_may_be_a_distribution_are_reported(bases: str) -> None:
    assert findings(f"""
        from mypkg import ImportedBase
        class Middle(ImportedBase):
            pass
        class Evaluator{bases}:
            def log_prob(self, trace):
                return trace
        def f(trace):
            ev = Evaluator()
            with torch.autocast("cuda"):
                return ev.log_prob(trace)
        """) == [(13, 16, "AMP001", ())]


def test_a_class_listed_in_extend_distributions_is_reported() -> None:
    body = """
        class MyDist:
            def log_prob(self, x):
                return x
        def f(x):
            d = MyDist()
            with torch.autocast("cuda"):
                return d.log_prob(x)
        """
    assert findings(body) == []
    assert findings(body, Config(extend_distributions=("MyDist",))) == [(10, 16, "AMP001", ())]


@pytest.mark.parametrize(
    "binding",
    [
        "ev = Evaluator()\n    for ev in evs:\n        pass",
        "ev, other = Evaluator(), 1",
        "ev = Evaluator()\n    ev = make()",
        "ev = Evaluator() if evs else Normal(0.0, 1.0)",
        "global ev",
        "ev = Evaluator()\n    with make() as ev:\n        pass",
        "ev = Evaluator()\n    ev += 1",
        "ev = Evaluator()\n    import ev",
        "ev = Evaluator()\n    evs = [ev for ev in evs]",
        "ev = Evaluator()\n    try:\n        pass\n    except ValueError as ev:\n        pass",
        "pass",  # not bound here at all: a global of unknown value
    ],
)
def test_names_with_an_unknown_binding_are_reported(binding: str) -> None:
    body = (
        "class Evaluator:\n    def log_prob(self, trace):\n        return trace\n"
        f"def f(evs, make, x):\n    {binding}\n"
        '    with torch.autocast("cuda"):\n        return ev.log_prob(x)\n'
    )
    result = findings(body)
    assert [(code, chain) for _, _, code, chain in result] == [("AMP001", ())]
    assert result[0][1] == 16


def test_a_parameter_receiver_is_reported() -> None:
    assert findings("""
        def f(ev, x):
            if ev is None:
                ev = nn.Linear(2, 2)
            with torch.autocast("cuda"):
                return ev.log_prob(x)
        """) == [(8, 16, "AMP001", ())]


def test_module_level_binding_and_walrus_are_read() -> None:
    assert findings("""
        class Evaluator:
            def log_prob(self, trace):
                return trace
        EVALUATOR = Evaluator()
        def f(x):
            with torch.autocast("cuda"):
                return EVALUATOR.log_prob(x)
        def g(x):
            if (ev := Evaluator()) is not None:
                with torch.autocast("cuda"):
                    return ev.log_prob(x)
        """) == []


def test_attribute_assigned_nn_modules_in_every_branch_and_none() -> None:
    assert findings("""
        class Layer(nn.Module):
            head = None
            def __init__(self, adaptive):
                super().__init__()
                self.proj = None
                if adaptive:
                    self.proj = nn.AdaptiveLogSoftmaxWithLoss(8, 100, [10])
                else:
                    self.proj = nn.Linear(8, 100)
            def forward(self, x):
                with torch.autocast("cuda"):
                    return self.proj.log_prob(x)
        def set_head(layer, new):
            layer.proj = new  # an unknown value from outside: the class's own assignments declare the attribute
        """) == []


@pytest.mark.parametrize(
    "extra",
    [
        "class Sub(Layer):\n    def swap(self, loc):\n        self.proj = Normal(loc, 1.0)",
        "def swap(layer, loc):\n    layer.proj = Normal(loc, 1.0)",
        "def swap(layer, loc):\n    d = Normal(loc, 1.0)\n    layer.proj = d",
        "class Base2(Layer):\n    pass\nclass Sub(Base2):\n    def swap(self, thing):\n        self.proj = thing",
    ],
)
def test_attribute_also_assigned_a_distribution_or_unknown_by_a_subclass_is_reported(extra: str) -> None:
    body = (
        "class Layer(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.proj = nn.Linear(8, 100)\n    def forward(self, x):\n"
        '        with torch.autocast("cuda"):\n            return self.proj.log_prob(x)\n' + extra + "\n"
    )
    assert findings(body) == [(10, 20, "AMP001", ())]


@pytest.mark.parametrize(
    "assignment",
    [
        "self.proj = Normal(loc, 1.0)",
        "self.proj = ImportedHead(8)",
        "self.proj = make_head()",
        "self.proj, self.other = nn.Linear(8, 2), 1",
        "self.proj = loc",  # a parameter of a method that is not __init__
    ],
)
def test_attribute_with_an_unknown_or_distribution_value_is_reported(assignment: str) -> None:
    body = (
        "from mypkg import ImportedHead, make_head\n"
        "class Layer(nn.Module):\n    def build(self, loc):\n"
        f"        {assignment}\n    def forward(self, x):\n"
        '        with torch.autocast("cuda"):\n            return self.proj.log_prob(x)\n'
    )
    assert findings(body) == [(10, 20, "AMP001", ())]


POTENTIAL = """
class Evaluator:
    def log_prob(self, trace):
        return trace
class Potential:
    def __init__(self, model, evaluator=None, scale=1.0):
        self.model = model
        self.evaluator = evaluator
    def energy(self, trace):
        with torch.autocast("cuda"):
            return self.evaluator.log_prob(trace)
"""


@pytest.mark.parametrize(
    "callers",
    [
        "def make(m, t):\n    ev = Evaluator()\n    return Potential(m, ev)",
        "def make(m, t):\n    return Potential(m, evaluator=Evaluator())",
        "def make(m, t):\n    return Potential(m, Evaluator()), Potential(m)",  # omitted: the default None
        "def make(m, t):\n    return Potential(m, Evaluator()), isinstance(m, Potential)",
        "def make(m: Potential, t):\n    return Potential(m, Evaluator(), 2.0)",
    ],
)
def test_init_parameter_filled_with_known_classes_by_every_construction(callers: str) -> None:
    assert findings(POTENTIAL + callers + "\n") == []


@pytest.mark.parametrize(
    "callers",
    [
        "",  # never constructed here
        "def make(m, t):\n    return Potential(m, Evaluator()), Potential(m, Normal(t, 1.0))",
        "def make(m, ev):\n    return Potential(m, Evaluator()), Potential(m, ev)",
        "def make(m, args):\n    return Potential(m, Evaluator()), Potential(m, *args)",
        "def make(m, t):\n    factory = Potential\n    return factory(m, Evaluator())",
        "def make(m, t):\n    return Potential(m, Evaluator())\nclass Sub(Potential):\n    pass",
        "def make(m, t):\n    for ev in t:\n        return Potential(m, ev)",
    ],
)
def test_init_parameter_with_an_unknown_construction_is_reported(callers: str) -> None:
    assert findings(POTENTIAL + callers + "\n") == [(13, 20, "AMP001", ())]


def test_a_wrapper_of_this_file_is_followed_into_its_method() -> None:
    assert findings("""
        class Wrapper:
            def __init__(self, loc):
                self.loc = loc
            def log_prob(self, x):
                return Normal(self.loc, 1.0).log_prob(x)
        class Derived(Wrapper):
            pass
        def f(loc, x):
            w = Derived(loc)
            with torch.autocast("cuda"):
                return w.log_prob(x)
        """) == [(8, 16, "AMP001", ("Wrapper.log_prob",))]


def test_project_mode_agrees_with_single_file_mode(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parent.parent / "fixtures" / "check" / "not_distributions.py"
    target = tmp_path / "m.py"
    target.write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    project = [(f.line, f.column, f.chain) for r in check_paths([str(tmp_path)], Config()) for f in r.findings]
    single = [(f.line, f.column, f.chain) for r in check_paths([str(tmp_path)], Config(project=False))
              for f in r.findings]
    assert project == single
    assert (68, 16, ("NormalWrapper.log_prob",)) in [(line, column, tuple(chain_names(chain)))
                                                       for line, column, chain in project]
    assert not {line for line, _, _ in project} & {25, 44, 59, 73}
