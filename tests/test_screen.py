"""The syntax-aware screen (`amplint.screen`) spares parses that could report nothing, and only those."""
from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import pytest

from amplint.config import Config
from amplint.engine import analyze_source, will_parse
from amplint.pipeline import _parse_and_analyze
from amplint.model import FileError
from amplint.names import import_table
from amplint.screen import may_have_findings
from conftest import ROOT

SOURCES = sorted(p for p in (ROOT / "fixtures").rglob("*.py"))


def _screened(text: str, config: Config = Config()) -> bool:
    tree = ast.parse(text)
    return may_have_findings(tree, import_table(tree), config.extend_autocast)


def _unscreened_findings(text: str, path: str, config: Config = Config(project=False)) -> List[str]:
    """What the analysis finds with the screen bypassed (the parse always happens)."""
    outcome = _parse_and_analyze(text, path, config, True, (), False, import_table(ast.parse(text)))
    assert not isinstance(outcome, FileError)
    return [f"{f.line}:{f.column} {f.code}" for f in outcome.findings]


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_screen_never_hides_a_finding(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = _unscreened_findings(text, str(path))
    if found:
        assert _screened(text), found
    outcome = analyze_source(text, str(path), Config(project=False))
    assert not isinstance(outcome, FileError)
    assert [f"{f.line}:{f.column} {f.code}" for f in outcome.findings] == found


WORDS_OUTSIDE_CODE = [
    # autocast and log_prob only in a docstring and a comment
    '"""Uses torch.autocast; see Normal.log_prob."""\nimport torch\nx = 1  # autocast log_prob\n',
    # a region, but the "probability" words are other names
    "import torch\nimport torch.nn.functional as F\nwith torch.autocast('cuda'):\n"
    "    loss = F.cross_entropy(a, b)\n    h = entropy_bonus * c\n    d = cdf_table[0]\n",
    # a probability call, and autocast only in a string
    "import torch\nmsg = 'wrap in torch.autocast'\ny = torch.distributions.Normal(0, 1).log_prob(x)\n",
]


@pytest.mark.parametrize("text", WORDS_OUTSIDE_CODE)
def test_words_outside_code_cost_no_parse(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from amplint import engine, pipeline

    assert engine.may_have_findings(text, Config())  # the text prefilter lets it through
    assert not will_parse(text, Config())

    def no_parse(*args: object) -> None:
        raise AssertionError("LibCST parse for a file the screen rejects")

    monkeypatch.setattr(pipeline, "_parse_and_analyze", no_parse)
    outcome = analyze_source(text, "t.py", Config(project=False))
    assert not isinstance(outcome, FileError) and outcome.findings == []


@pytest.mark.parametrize(
    "text",
    [
        "from torch.amp import autocast as ac\nwith ac('cuda'):\n    d.log_prob(x)\n",
        "import torch\n@torch.autocast('cuda')\ndef f(d, x):\n    return d.entropy()\n",
        "import torch\nfrom torch.distributions import kl_divergence as kl\nwith torch.autocast('cuda'):\n    kl(p, q)\n",
        "import torch\nimport torch.distributions as D\nwith torch.autocast('cuda'):\n    D.kl.kl_divergence(p, q)\n",
        "import torch\nwith torch.autocast('cuda'):\n    d.icdf(u)\n",
    ],
)
def test_every_spelling_of_a_region_and_a_site_passes(text: str) -> None:
    assert _screened(text)
    assert will_parse(text, Config())


def test_configured_autocast_names_count_as_regions() -> None:
    text = "import mylib\nwith mylib.amp_ctx():\n    d.log_prob(x)\n"
    config = Config(extend_autocast=("mylib.amp_ctx",))
    assert not _screened(text)
    assert _screened(text, config)
    assert will_parse("# autocast\n" + text, config)


def test_unparsable_text_still_goes_to_the_analysis_for_its_error() -> None:
    text = "autocast log_prob = (\n"
    assert will_parse(text, Config())
    outcome = analyze_source(text, "bad.py", Config(project=False))
    assert isinstance(outcome, FileError) and outcome.message.startswith("syntax error")


def test_a_long_attribute_chain_does_not_recurse() -> None:
    # deeper than Python's recursion limit, which CPython's parser still accepts
    text = "import torch\nwith torch.autocast('cuda'):\n    x" + ".a" * 2500 + ".log_prob(v)\n"
    assert _screened(text)


CALL_SPELLINGS = [
    "import torch\nx.log()\nx.log(2)\nx.log10()\ntorch.log(p)\ntorch.log2(p)\ntorch.special.log1p(p)\n",
    "from torch import log as L\nimport numpy as np\nimport math\nL(p)\nnp.log(p)\nmath.log(2)\nlog(p)\n",
    "from torch.distributions.kl import kl_divergence as KL\nimport torch.distributions as D\n"
    "KL(p, q)\nD.kl_divergence(p, q)\nD.kl.kl_divergence(p, q)\nkl_divergence(p, q)\nobj.kl_divergence(p)\n"
    "D.Normal(0, 1)\nD.kl.register_kl(P, Q)\n",
    "from torch.distributions import *\nkl_divergence(p, q)\nd.log_prob(v)\nd.entropy()\nd.icdf(u)\nd().cdf(v)\n",
    "import torch.nn.functional as F\nF.nll_loss(a, b)\nself.gaussian_nll(x)\nneg_log_likelihood(x)\n"
    "model.encoder(x)\nf()(x)\nxs[0](x)\n(lambda v: v)(x)\n",
]


def _calls(text: str) -> List[ast.Call]:
    return [node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Call)]


@pytest.mark.parametrize("text", CALL_SPELLINGS + [p.read_text(encoding="utf-8") for p in SOURCES],
                         ids=[f"spelling{i}" for i in range(len(CALL_SPELLINGS))]
                         + [str(p.relative_to(ROOT)) for p in SOURCES])
def test_a_call_counts_as_its_name_tests_count_it(text: str) -> None:
    """`counts_as_site` reads a call's callee once; it counts exactly the calls the tests it stands for count."""
    from amplint.screen import counts_as_site, is_exp_call, is_log_call, is_probability_call, kernel_candidate

    imports = import_table(ast.parse(text))
    calls = _calls(text)
    counted = [counts_as_site(call, imports) for call in calls]
    assert counted == [is_probability_call(call, imports) or is_log_call(call, imports) or is_exp_call(call, imports)
                       or kernel_candidate(call) for call in calls]
    if text in CALL_SPELLINGS:
        assert any(counted) and not all(counted)
