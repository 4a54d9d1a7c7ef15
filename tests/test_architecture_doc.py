"""docs/architecture.md's walkthrough, run: the example rule is built from the page and registered."""
from __future__ import annotations

import re
import textwrap
import types
from pathlib import Path

import libcst as cst
import pytest

import amplint.rules
from amplint.analysis import analyze_module
from amplint.engine import check_source
from amplint.facts.sites import RECOGNIZERS, SiteRecognizer

DOC = Path(__file__).resolve().parent.parent / "docs" / "architecture.md"


def _python_blocks(section: str) -> list:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(f"## {section}")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end if end > 0 else None], flags=re.S)


@pytest.fixture
def doc_rule(monkeypatch):
    """The page's rule module, executed and registered after the built-in rules."""
    module = types.ModuleType("amplint.rules.amp099_bfloat16_probability")
    exec(compile(_python_blocks("How to add a rule")[0], "docs/architecture.md", "exec"), module.__dict__)
    rule = module.RULE
    monkeypatch.setattr(amplint.rules, "ALL_RULES", amplint.rules.ALL_RULES + (rule,))
    monkeypatch.setitem(amplint.rules.BY_CODE, rule.code, rule)
    return rule


SOURCE = """\
import torch
from torch.distributions import Normal

def nll(mu, sigma, x):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        a = Normal(mu, sigma).log_prob(x)
    with torch.autocast("cuda"):
        b = Normal(mu, sigma).log_prob(x)
    return a + b
"""


def test_the_documented_rule_reports_exactly_its_sites(doc_rule) -> None:
    result = check_source(SOURCE, "model.py")
    assert [(f.line, f.column, f.code) for f in result.findings] == [(6, 13, "AMP099"), (8, 13, "AMP001")]
    first = result.findings[0]
    assert first.message == (
        "`Normal.log_prob` runs in the bfloat16 autocast region at line 5 with inputs not cast to float32: "
        "`mu`, `sigma`, `x`; risk unknown: the region's dtype is not a literal float16"  # `amplint.risk` adds it
    )
    assert first.fix_strategies == ("cast",) and first.fixable


def test_the_documented_rule_examples_hold(doc_rule) -> None:
    for source in doc_rule.valid:
        assert check_source(textwrap.dedent(source).lstrip("\n"), "valid.py").findings == []
    for case in doc_rule.invalid:
        found = check_source(textwrap.dedent(case.code).lstrip("\n"), "invalid.py").findings
        assert [(f.code, f.line, f.column) for f in found] == [(doc_rule.code, case.line, case.column)]


def test_without_registration_the_rule_is_not_run() -> None:
    assert [f.code for f in check_source(SOURCE, "model.py").findings] == ["AMP001"]


def test_the_documented_site_recognizer_records_its_sites() -> None:
    module = types.ModuleType("doc_recognizer")
    block = _python_blocks("How to add a kind of site")[0]
    function = block.split("\nRECOGNIZERS")[0]  # the page's registry line is shown with "..."
    module.__dict__["cst"] = cst
    exec(compile(function, "docs/architecture.md", "exec"), module.__dict__)
    recognizer = SiteRecognizer(cst.Call, "log-of-sum", module.log_of_sum)
    source = "import torch\nwith torch.autocast('cuda'):\n    y = torch.log(p + 1e-10)\n"
    analysis = analyze_module(cst.parse_module(source), rules=())
    assert analysis.facts.sites() == []
    from amplint.facts.build import collect_facts

    facts = collect_facts(cst.parse_module(source), recognizers=RECOGNIZERS + (recognizer,))
    [site] = facts.sites()
    assert (site.kind, site.method, site.position.start.line, site.position.start.column) == ("log-of-sum", "log", 3, 8)
    assert site.state is not None and site.state.is_float16 and len(site.uncast) == 1
