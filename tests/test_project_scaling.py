"""Project-mode resolution does each piece of work once per run, whatever the shape of the imports.

Star imports that fan out and join again (`x{i}` and `y{i}` both re-export
`x{i+1}` and `y{i+1}`) reach each module through 2**depth import paths. Before
lookups were memoized, a name searched through them cost that many lookups; on
real code (packages' `__init__` files) a cold run did not finish.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from amplint.config import Config
from amplint.project import resolve
from amplint.project.budget import STACK_CUT
from amplint.project.run import run_project
from conftest import chain_names

DEPTH = 7


def _diamond(root: Path) -> None:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for i in range(DEPTH):
        for name in ("x", "y"):
            (pkg / f"{name}{i}.py").write_text(f"from pkg.x{i + 1} import *\nfrom pkg.y{i + 1} import *\n")
    for name in ("x", "y"):
        (pkg / f"{name}{DEPTH}.py").write_text("VALUE = 1\n")
    with open(pkg / "y1.py", "a") as out:  # near the region: the walk enters it (`Loader.worth_entering`)
        out.write(
            "from torch.distributions import Normal\n\n\n"
            "class Model:\n"
            "    def run(self, mu, x):\n"
            "        return Normal(mu, 1.0).log_prob(x)\n"
        )
    (root / "train.py").write_text(
        "import torch\n\nfrom pkg import y1  # near the file with the site: the walk enters this one\n"
        "from pkg.x0 import Missing, Model\n\n\n"
        "def step(m: Model, other: Missing, mu, x):\n"
        "    with torch.autocast('cuda'):\n"
        "        return m.run(mu, x) + other.run(mu, x)\n"
    )


def test_star_import_diamonds_cost_one_lookup_per_name_and_depth(tmp_path: Path, monkeypatch) -> None:
    _diamond(tmp_path)
    calls: List[Tuple[str, Tuple[str, ...], bool]] = []
    original = resolve.Resolver._lookup

    def counted(self, path, parts, for_call):  # type: ignore[no-untyped-def]
        calls.append((path, tuple(parts), for_call))
        return original(self, path, parts, for_call)

    monkeypatch.setattr(resolve.Resolver, "_lookup", counted)
    run = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    found = [(Path(r.path).name, f.line, f.column, f.code, tuple(chain_names(f.chain)))
             for r in run.results for f in r.findings]
    assert found == [("y1.py", 8, 16, "AMP001", ("m.run(mu, x)", "Model.run"))]
    assert len(calls) > 2 * DEPTH  # the names were searched through the whole diamond
    repeated: Dict[Tuple[str, Tuple[str, ...], bool], int] = {}
    for key in calls:
        repeated[key] = repeated.get(key, 0) + 1
    assert [key for key, count in repeated.items() if count > 1] == []
    # Two names (`Model`, `Missing`) through two modules per level: linear in the depth, not 2**DEPTH.
    assert len(calls) <= 4 * (DEPTH + 2) * 2


def _reexports(root: Path, links: int) -> None:
    """`train.py` imports `Net` from `pkg.m{links}`, which re-exports it from `pkg.m{links - 1}`, and so on to
    `pkg.m0`, which defines it."""
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "m0.py").write_text(
        "from torch import nn\nfrom torch.distributions import Normal\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.lin = nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        out = self.lin(x)\n"
        "        return Normal(out[:, 0], out[:, 1].exp()).log_prob(x[:, 0])\n")
    for i in range(1, links + 1):
        (pkg / f"m{i}.py").write_text(f"from pkg.m{i - 1} import Net  # noqa: F401\n")
    (root / "train.py").write_text(
        f"import torch\n\nfrom pkg.m{links} import Net\n\nmodel = Net()\n"
        "with torch.autocast('cpu', dtype=torch.float16):\n    loss = model(torch.randn(8, 4)).mean()\n")


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_chain_of_forty_reexports_is_followed_to_the_class(tmp_path: Path, jobs: int, monkeypatch) -> None:
    """No bound on import hops: at 8 hops (the bound there was) the model's class was lost, and its finding
    with it. Each module's name is looked up once (per pass of the walk)."""
    _reexports(tmp_path, 40)
    calls: List[Tuple[str, Tuple[str, ...], bool]] = []
    original = resolve.Resolver._lookup

    def counted(self, path, parts, for_call):  # type: ignore[no-untyped-def]
        calls.append((Path(path).name, tuple(parts), for_call))
        return original(self, path, parts, for_call)

    monkeypatch.setattr(resolve.Resolver, "_lookup", counted)
    run = run_project([str(tmp_path)], Config(jobs=jobs), use_cache=False)
    found = [(Path(r.path).name, f.line, f.column, f.code, tuple(chain_names(f.chain)))
             for r in run.results for f in r.findings]
    assert found == [("m0.py", 12, 16, "AMP001", ("model(torch.randn(8, 4))", "Net.forward"))]
    assert ("m20.py", ("Net",), True) in calls
    assert max(calls.count(key) for key in calls) <= 1 + run.stats.waves, sorted(calls)


def test_a_chain_of_reexports_past_pythons_stack_is_cut_and_said(tmp_path: Path) -> None:
    """300 re-exports outgrow Python's stack: the lookup nearest the limit answers nothing, and the run says
    that it cut something instead of losing the finding in silence."""
    _reexports(tmp_path, 300)
    run = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    assert [f for r in run.results for f in r.findings] == []
    assert [notice.message for notice in run.notices] == [STACK_CUT]


@pytest.mark.parametrize("jobs", [1])
def test_the_subclass_index_finds_the_same_overrides_as_a_search(tmp_path: Path, jobs: int) -> None:
    """Every `Head(Model)` of the project overrides `forward`: found through the index, capped as before."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text("import torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
                                 "        return x\n")
    for i in range(3):
        (pkg / f"h{i}.py").write_text(
            "from torch.distributions import Normal\n\nfrom pkg.base import Model\n\n\n"
            "class Head(Model):\n    def forward(self, x):\n        return Normal(x, 1.0).log_prob(x)\n"
        )
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom pkg.base import Model\n\n\n"
        "def step(m: Model, x):\n    with torch.autocast('cuda'):\n        return m(x)\n"
    )
    run = run_project([str(tmp_path)], Config(jobs=jobs), use_cache=False)
    found = sorted((Path(r.path).name, f.line, f.column, f.code) for r in run.results for f in r.findings)
    assert found == [(f"h{i}.py", 8, 16, "AMP001") for i in range(3)]


def test_star_imports_of_missing_modules_are_not_searched_in_the_package(tmp_path: Path, monkeypatch) -> None:
    """A partial checkout: `pkg/__init__.py` star-imports three modules that are not there and one that is.

    `from .base import *` imports the module `pkg.base`; with no such file the star leads nowhere. It used to
    be read as the name `base` in `pkg` itself, whose star imports led back to `pkg`: 3**8 (its hop bound then)
    lookups for each name not found (a cold run of half of the real-code corpus spent a third of its time
    there; `benchmarks/RESULTS.md`)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "from .base import *\nfrom .pointcloud import *\nfrom .google import *\nfrom .waseda import *\n")
    (pkg / "google.py").write_text(
        "from torch.distributions import Normal\n\n\n"
        "class Model:\n"
        "    def run(self, mu, x):\n"
        "        return Normal(mu, 1.0).log_prob(x)\n"
    )
    (tmp_path / "train.py").write_text(
        "import torch\n\nfrom pkg import Missing, Model\n\n\n"
        "def step(m: Model, other: Missing, mu, x):\n"
        "    with torch.autocast('cuda'):\n"
        "        return m.run(mu, x) + other.run(mu, x)\n"
    )
    calls: List[Tuple[str, Tuple[str, ...]]] = []
    original = resolve.Resolver._lookup

    def counted(self, path, parts, for_call):  # type: ignore[no-untyped-def]
        calls.append((Path(path).name, tuple(parts)))
        return original(self, path, parts, for_call)

    monkeypatch.setattr(resolve.Resolver, "_lookup", counted)
    run = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    found = [(Path(r.path).name, f.line, f.column, f.code, tuple(chain_names(f.chain)))
             for r in run.results for f in r.findings]
    assert found == [("google.py", 6, 16, "AMP001", ("m.run(mu, x)", "Model.run"))]  # the star that is there
    assert ("__init__.py", ("base", "Missing")) not in calls
    assert len(calls) <= 12, len(calls)


BSD_HEADER = (
    "# Redistribution and use in source and binary forms, with or without modification, are permitted\n"
    "# provided that the following conditions are met:\n"
    "# * Redistributions of source code must retain the above copyright notice,\n"
    "# * Redistributions in binary form must reproduce the above copyright notice,\n"
)


@pytest.mark.parametrize("text, candidate", [
    (BSD_HEADER, False),  # the license's word is not the module `distributions`
    (BSD_HEADER + "import torch.distributions as D\n", True),
    ("from torch import distributions\n", True),
    ("pyro_distributions = None\n", True),  # an identifier may start after `_`
    ("h = d.entropy()\n", True),
    ("loss = F.cross_entropy(x, y)\n", True),
    ("lp = dist.log_prob(x)\n", True),
    ("q = dist.icdf(level)\n", True),  # `cdf` stays a plain substring: `icdf` is a site
    ("y = torch.log(p)\n", True),
    ("c = 0.5 * math.log(2 * math.pi)\n", True),
    ("eps = 1e-8\n", True),
    ("eps = 5e-9\n", True),
    ("eps = 1e-10\n", True),
    ("eps = 1.e-20\n", True),
    ("lr = 1e-1\nwd = 1e-2\n", False),  # not below float16's smallest subnormal
    ("eps = 1e-5\n", False),
    ("stage = 'stage-1'\nname = 'large-2'\n", False),  # not a literal
    ("x = model(y)\n", False),
])
def test_which_texts_make_a_candidate_file(text: str, candidate: bool) -> None:
    from amplint.project.prefilter import is_candidate_file

    assert is_candidate_file(text) is candidate


def test_a_bsd_license_header_does_not_make_a_file_worth_parsing(tmp_path: Path) -> None:
    """Every file of a BSD-licensed project says `Redistributions`: it once made each a candidate file, so the
    walk parsed every model file a region's call reached. A file that names the module is still entered."""
    (tmp_path / "model.py").write_text(BSD_HEADER + (
        "import torch\n\n\n"
        "def encode(x):\n"
        "    return torch.tanh(x)\n"
    ))
    (tmp_path / "heads.py").write_text(BSD_HEADER + (
        "import torch.distributions as D\n\n\n"
        "def nll(mu, sigma, y):\n"
        "    return -D.Normal(mu, sigma).log_prob(y)\n"
    ))
    (tmp_path / "train.py").write_text(BSD_HEADER + (
        "import torch\n\nfrom heads import nll\nfrom model import encode\n\n\n"
        "def step(x, sigma, y):\n"
        "    with torch.autocast('cuda'):\n"
        "        mu = encode(x)\n"
        "        return nll(mu, sigma, y)\n"
    ))
    run = run_project([str(tmp_path)], Config(jobs=1), use_cache=False)
    found = [(Path(r.path).name, f.line, f.column, f.code, tuple(chain_names(f.chain)))
             for r in run.results for f in r.findings]
    assert found == [("heads.py", 9, 13, "AMP001", ("nll(mu, sigma, y)", "heads.nll"))]
    assert sorted(Path(p).name for p in run.stats.parsed) == ["heads.py", "train.py"]
