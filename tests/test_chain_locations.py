"""Chains with locations: every hop of a finding's chain says where it happened, in every front end.

A three-file project: the region in train.py calls a helper in model.py, which calls into losses.py, where
`log_prob` runs on float16 inputs (once on a distribution built there, once on one model.py builds and hands
over). Checked through the real CLI (text, JSON, SARIF validated against the 2.1.0 schema) and a real
language-server session over stdio.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List

import jsonschema
import pytest

from amplint.config import Config
from amplint.model import Hop, chain_text
from amplint.project.run import run_project
from conftest import ROOT, run_amplint

TRAIN = '''import torch
from torch import nn

from model import encode_and_score


def step(net: nn.Linear, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        h = net(x)
        return encode_and_score(h, y)
'''
MODEL = '''from torch.distributions import Normal

from losses import gaussian_nll, score


def encode_and_score(h, y):
    mu, log_sigma = h.chunk(2, dim=-1)
    first = gaussian_nll(mu, log_sigma.exp(), y)
    return first + score(Normal(mu, log_sigma.exp()), y)
'''
LOSSES = '''from torch.distributions import Normal


def gaussian_nll(mu, sigma, y):
    return -Normal(mu, sigma).log_prob(y).mean()


def score(dist, y):
    return dist.log_prob(y).mean()
'''
# train.py:10:16 is `encode_and_score(h, y)`; model.py:8:13 `gaussian_nll(...)`, model.py:9:20 `score(...)`.
REGION_CALL = {"name": "encode_and_score(h, y)", "path": "train.py", "line": 10, "column": 16, "role": "call"}
ENTERED = dict(REGION_CALL, name="model.encode_and_score")
NLL_CHAIN = [REGION_CALL, ENTERED,
             {"name": "losses.gaussian_nll", "path": "model.py", "line": 8, "column": 13, "role": "call"}]
SCORE_CHAIN = [REGION_CALL, ENTERED,
               {"name": "losses.score", "path": "model.py", "line": 9, "column": 20, "role": "call"},
               # Built in another file: the walk records the constructor's line, not its column.
               {"name": "Normal(mu, log_sigma.exp())", "path": "model.py", "line": 9, "column": None,
                "role": "built"}]
VIA = "via encode_and_score(h, y) (train.py:10:16) → model.encode_and_score → "


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    for name, text in (("train.py", TRAIN), ("model.py", MODEL), ("losses.py", LOSSES)):
        (tmp_path / name).write_text(text)
    return tmp_path


def test_the_text_message_names_each_call_with_its_place(project: Path) -> None:
    proc = run_amplint(["check", "."], cwd=project)
    assert proc.returncode == 1, proc.stderr
    messages = [line for line in proc.stdout.splitlines() if ": AMP001 " in line]
    assert [line.split("; risk")[0] for line in messages] == [
        "losses.py:5:13: AMP001 [*] `Normal.log_prob` runs under float16 autocast with inputs not cast to float32: "
        "`mu`, `sigma`, `y`; reached from autocast region at train.py:8 "
        + VIA + "losses.gaussian_nll (model.py:8:13)",
        "losses.py:9:12: AMP001 [*] `Normal.log_prob` runs under float16 autocast with inputs not cast to float32: "
        "`mu`, `log_sigma.exp()`, `y` (the distribution is built in `encode_and_score` at model.py:9); reached from "
        "autocast region at train.py:8 " + VIA + "losses.score (model.py:9:20)",
    ]


def test_json_gives_each_hop_as_an_object_with_its_place(project: Path) -> None:
    proc = run_amplint(["check", ".", "--format", "json"], cwd=project)
    findings = json.loads(proc.stdout)
    assert [(f["path"], f["line"], f["column"], f["code"]) for f in findings] == [
        ("losses.py", 5, 13, "AMP001"), ("losses.py", 9, 12, "AMP001")]
    assert [f["chain"] for f in findings] == [NLL_CHAIN, SCORE_CHAIN]
    assert [f["region"]["path"] for f in findings] == ["train.py", "train.py"]


def _validate(log: Dict[str, Any]) -> None:
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator(schema).validate(log)


def _place(location: Dict[str, Any]) -> tuple:
    physical = location["physicalLocation"]
    region = physical.get("region", {})
    return (physical["artifactLocation"]["uri"], region.get("startLine"), region.get("startColumn"),
            location["message"]["text"])


def test_sarif_gives_the_chain_as_a_code_flow_and_related_locations(project: Path) -> None:
    proc = run_amplint(["check", ".", "--format", "sarif"], cwd=project)
    log = json.loads(proc.stdout)
    _validate(log)
    nll, score = log["runs"][0]["results"]
    steps = [_place(step["location"]) for step in nll["codeFlows"][0]["threadFlows"][0]["locations"]]
    assert steps == [
        ("train.py", 10, 16, "call in the autocast region: `encode_and_score(h, y)`"),
        ("train.py", 10, 16, "enters `model.encode_and_score`"),
        ("model.py", 8, 13, "enters `losses.gaussian_nll`"),
        ("losses.py", 5, 13, "the probability computation"),
    ]
    orders = [step["executionOrder"] for step in nll["codeFlows"][0]["threadFlows"][0]["locations"]]
    assert orders == [1, 2, 3, 4]
    assert nll["codeFlows"][0]["message"]["text"] == (
        "reached via encode_and_score(h, y) (train.py:10:16) → model.encode_and_score → losses.gaussian_nll "
        "(model.py:8:13)")
    related = [(item["id"], _place(item)) for item in score["relatedLocations"]]
    assert related == [
        (1, ("train.py", 8, None, "float16 autocast region")),
        (2, ("train.py", 10, 16, "call in the autocast region: `encode_and_score(h, y)`")),
        (3, ("train.py", 10, 16, "enters `model.encode_and_score`")),
        (4, ("model.py", 9, 20, "enters `losses.score`")),
        (5, ("model.py", 9, None, "the distribution is built here: `Normal(mu, log_sigma.exp())`")),
    ]
    assert score["properties"]["callChain"] == SCORE_CHAIN
    assert all(item["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
               for item in score["relatedLocations"])


def test_a_finding_in_a_helper_names_the_call_that_reached_it_in_its_own_file(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text('''import torch
from torch.distributions import Normal


def make(mu, sigma):
    return Normal(mu, sigma)


def inner(mu, sigma, y):
    return make(mu, sigma).log_prob(y)


def helper(mu, sigma, y):
    return inner(mu, sigma, y)


def step(net, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, sigma = net(x)
        return helper(mu, sigma, y)
''')
    for flags in ([], ["--no-project"]):
        text = run_amplint(["check", "one.py", *flags], cwd=tmp_path).stdout.splitlines()[0]
        assert text.split("; risk")[0] == (
            "one.py:10:12: AMP001 [*] `Normal.log_prob` runs in the float16 autocast region at line 18 with inputs "
            "not cast to float32: `mu`, `sigma`, `y` (the distribution is built in `make` at line 6) "
            "(reached via helper (20:16) → inner (14:12))")
        [finding] = json.loads(run_amplint(["check", "one.py", "--format", "json", *flags], cwd=tmp_path).stdout)
        assert finding["chain"] == [  # the facts know no path: the finding's own file is named in JSON
            {"name": "helper", "path": "one.py", "line": 20, "column": 16, "role": "call"},
            {"name": "inner", "path": "one.py", "line": 14, "column": 12, "role": "call"},
            {"name": "Normal(mu, sigma)", "path": "one.py", "line": 6, "column": 12, "role": "built"},
        ]


def test_chain_text_shows_each_place_once() -> None:
    chain = (Hop("model(x)", "t.py", 3, 9, "t.py"), Hop("Net.forward", "t.py", 3, 9, "t.py"),
             Hop("m.loss", "m.py", 7, 0, "m.py"), Hop("m.hook", "m.py", where="m.py"), Hop("f", line=4, column=2),
             Hop("g", "nb.ipynb", 6, 16, "nb.ipynb", cell=5), Hop("Normal(a, b)", "m.py", 2, 5, "m.py", "built"))
    assert chain_text(chain) == ("model(x) (t.py:3:9) → Net.forward → m.loss (m.py:7) → m.hook (m.py) → f (4:2) "
                                 "→ g (nb.ipynb:cell 5:6:16)")
    assert chain[2].to_json() == {"name": "m.loss", "path": "m.py", "line": 7, "column": None, "role": "call"}
    assert chain[5].to_json()["cell"] == 5


def test_a_warm_cache_gives_the_same_chains(project: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    cold = run_project([str(project)], Config(), cache_dir=cache)
    warm = run_project([str(project)], Config(), cache_dir=cache)
    chains = [[hop.to_json() for hop in f.chain] for r in cold.results for f in r.findings]
    assert [[hop.to_json() for hop in f.chain] for r in warm.results for f in r.findings] == chains
    assert [[hop["line"] for hop in chain] for chain in chains] == [[10, 10, 8], [10, 10, 9, 9]]
    assert warm.stats.parsed == [] and warm.stats.findings_cached == 3  # every file's, hops and all, from the cache


TIMEOUT = 60


def test_the_language_server_gives_the_chain_as_related_information(project: Path) -> None:
    pytest.importorskip("pygls")
    from lsprotocol import types
    from pygls.lsp.client import LanguageClient

    published: Dict[str, List[types.Diagnostic]] = {}
    arrived = asyncio.Event()

    async def scenario() -> None:
        client = LanguageClient("amplint-test", "1")

        @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            published[params.uri] = params.diagnostics
            arrived.set()

        await client.start_io(sys.executable, "-m", "amplint", "server", env=dict(os.environ, AMPLINT_NO_CACHE="1"))
        try:
            await client.initialize_async(types.InitializeParams(
                process_id=os.getpid(), root_uri=project.as_uri(), capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=project.as_uri(), name="demo")]))
            client.initialized(types.InitializedParams())
            uri = (project / "losses.py").as_uri()
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=1, text=LOSSES)))
            await asyncio.wait_for(arrived.wait(), TIMEOUT)
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()

    asyncio.run(asyncio.wait_for(scenario(), 4 * TIMEOUT))
    nll, score = published[(project / "losses.py").as_uri()]

    def related(diagnostic: types.Diagnostic) -> List[tuple]:
        return [(Path(item.location.uri[len("file://"):]).name, item.location.range.start.line,
                 item.location.range.start.character, item.message) for item in diagnostic.related_information]

    # 0-based lines and characters, as LSP counts: train.py:10:16 is (9, 15).
    assert (nll.range.start.line, nll.range.start.character) == (4, 12)
    assert related(nll) == [
        ("train.py", 7, 0, "float16 autocast region"),
        ("train.py", 9, 15, "call in the autocast region: `encode_and_score(h, y)`"),
        ("train.py", 9, 15, "enters `model.encode_and_score`"),
        ("model.py", 7, 12, "enters `losses.gaussian_nll`"),
    ]
    assert related(score)[3:] == [
        ("model.py", 8, 19, "enters `losses.score`"),
        ("model.py", 8, 0, "the distribution is built here: `Normal(mu, log_sigma.exp())`"),
    ]
    assert all(item.location.uri == (project / Path(item.location.uri).name).as_uri()
               for item in nll.related_information)
    assert nll.message.split("; risk")[0].endswith(VIA + "losses.gaussian_nll (model.py:8:13)")


def test_a_file_analysed_with_its_tabs_expanded_gives_the_call_s_own_column(tmp_path: Path) -> None:
    """CPython accepts this mix of tabs and spaces and LibCST does not: the analysis reads the tab-expanded copy
    (`amplint.tabs`), and the call's column in the chain is mapped back, as the finding's own is."""
    mixed = ("import torch\nimport torch.distributions as D\n\n\ndef helper(mu, sigma, x):\n"
             "    return D.Normal(mu, sigma).log_prob(x)\n\n\ndef nll(model, h, x):\n    if h:\n\t    z = 1\n"
             "    with torch.autocast(\"cuda\"):\n\t    mu, sigma = model(h)\n\t    return helper(mu, sigma, x)\n")
    (tmp_path / "mixed.py").write_text(mixed)
    [finding] = json.loads(run_amplint(["check", "mixed.py", "--format", "json"], cwd=tmp_path).stdout)
    assert finding["chain"] == [{"name": "helper", "path": "mixed.py", "line": 14, "column": 13, "role": "call"}]
    assert finding["message"].split("; risk")[0].endswith("(reached via helper (14:13))")
