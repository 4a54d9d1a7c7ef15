"""`amplint server` driven by pygls's LanguageClient over stdio, as an editor drives it."""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Dict, List

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from amplint.lsp.edits import apply_line_edit, line_edit  # noqa: E402
from amplint.lsp.workspace import Workspace  # noqa: E402

MODEL = '''import torch
from torch.distributions import Normal


def loss(net, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, log_std = net(x)
        return -Normal(mu, log_std.exp()).log_prob(y).mean()
'''
LOSSES = '''from torch.distributions import Normal


def gaussian_nll(mu, sigma, x):
    return -Normal(mu, sigma).log_prob(x).mean()
'''
TRAIN = '''import torch

from losses import gaussian_nll


def step(net, x, y):
    with torch.autocast("cuda", dtype=torch.float16):
        mu, sigma = net(x)
        return gaussian_nll(mu, sigma, y)
'''
TIMEOUT = 60


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "losses.py").write_text(LOSSES)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


class Session:
    """A LanguageClient that records the diagnostics the server publishes, per URI."""

    def __init__(self) -> None:
        self.client = LanguageClient("amplint-test", "1")
        self.published: Dict[str, List[types.Diagnostic]] = {}
        self.versions: List[object] = []
        self.events: Dict[str, asyncio.Event] = {}

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published[params.uri] = params.diagnostics
            self.versions.append(params.version)
            self.event(params.uri).set()

    def event(self, uri: str) -> asyncio.Event:
        return self.events.setdefault(uri, asyncio.Event())

    async def start(self, root: Path) -> None:
        env = dict(os.environ, AMPLINT_NO_CACHE="1")
        await self.client.start_io(sys.executable, "-m", "amplint", "server", env=env)
        await self.client.initialize_async(
            types.InitializeParams(
                process_id=os.getpid(),
                root_uri=root.as_uri(),
                capabilities=types.ClientCapabilities(),
                workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="demo")],
            )
        )
        self.client.initialized(types.InitializedParams())

    async def diagnostics(self, uri: str) -> List[types.Diagnostic]:
        await asyncio.wait_for(self.event(uri).wait(), TIMEOUT)
        self.event(uri).clear()
        return list(self.published[uri])

    def open(self, path: Path, version: int = 1) -> str:
        uri = path.as_uri()
        self.event(uri).clear()
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                types.TextDocumentItem(uri=uri, language_id="python", version=version, text=path.read_text())
            )
        )
        return uri

    def change(self, uri: str, text: str, version: int) -> None:
        self.event(uri).clear()
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    async def actions(self, uri: str, diagnostic: types.Diagnostic, only=None) -> List[types.CodeAction]:
        result = await self.client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=diagnostic.range,
                context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
            )
        )
        return [action for action in result or [] if isinstance(action, types.CodeAction)]

    async def stop(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


def apply(text: str, action: types.CodeAction, uri: str) -> str:
    """Apply a one-TextEdit WorkspaceEdit the way an editor does (positions in lines; edits are whole lines)."""
    assert action.edit is not None and action.edit.changes is not None
    (edit,) = action.edit.changes[uri]
    lines = text.splitlines(keepends=True)
    start, end = edit.range.start, edit.range.end
    assert start.character == 0
    before = "".join(lines[:start.line])
    after = "".join(lines[end.line:])[end.character:] if end.line < len(lines) else ""
    return before + edit.new_text + after


def run(coroutine) -> None:
    asyncio.run(asyncio.wait_for(coroutine, 4 * TIMEOUT))


def _where(diagnostic: types.Diagnostic):
    r = diagnostic.range
    return (r.start.line, r.start.character, r.end.line, r.end.character, diagnostic.code)


def test_open_diagnose_fix_and_clear(project: Path) -> None:
    async def scenario() -> None:
        session = Session()
        await session.start(project)
        try:
            uri = session.open(project / "model.py")
            (found,) = await session.diagnostics(uri)
            # amplint check: model.py:8:17-8:54 AMP001 (LSP counts from 0).
            assert _where(found) == (7, 16, 7, 53, "AMP001")
            assert found.source == "amplint"
            actions = await session.actions(uri, found)
            titles = [action.title for action in actions]
            assert titles == [
                "amplint: cast the inputs to float32 (fix A): AMP001",
                "amplint: run it with autocast disabled, inputs cast (fix C): AMP001",
                "amplint: add `# noqa: AMP001`",
                "amplint: fix all",
            ]
            text = MODEL
            fixed = apply(text, actions[0], uri)
            assert fixed == MODEL.replace(
                "Normal(mu, log_std.exp()).log_prob(y)", "Normal(mu.float(), log_std.float().exp()).log_prob(y.float())"
            )
            session.change(uri, fixed, 2)
            assert await session.diagnostics(uri) == []
            # Back to the original text, then fix C and noqa: each clears the diagnostic too.
            session.change(uri, MODEL, 3)
            assert [_where(d) for d in await session.diagnostics(uri)] == [(7, 16, 7, 53, "AMP001")]
            disabled = apply(MODEL, actions[1], uri)
            assert "with torch.autocast(device_type=\"cuda\", enabled=False):\n            return -Normal(mu.float(), log_std.float().exp()).log_prob(y.float()).mean()\n" in disabled
            compile(disabled, "model.py", "exec")
            session.change(uri, disabled, 4)
            assert await session.diagnostics(uri) == []
            noqa = apply(MODEL, actions[2], uri)
            assert noqa == MODEL.replace(".mean()\n", ".mean()  # noqa: AMP001\n")
            session.change(uri, noqa, 5)
            assert await session.diagnostics(uri) == []
        finally:
            await session.stop()

    run(scenario())


def test_cross_file_finding_shows_in_the_file_with_the_computation(project: Path) -> None:
    async def scenario() -> None:
        session = Session()
        await session.start(project)
        try:
            train = session.open(project / "train.py")
            assert await session.diagnostics(train) == []  # the region's file holds no computation
            uri = session.open(project / "losses.py")
            (found,) = await session.diagnostics(uri)
            assert _where(found) == (4, 12, 4, 41, "AMP001")  # amplint check: losses.py:5:13
            assert "reached from autocast region at train.py:7" in found.message
            (fix_all,) = await session.actions(uri, found, only=["source.fixAll"])
            assert fix_all.kind == "source.fixAll.amplint"
            fixed = apply(LOSSES, fix_all, uri)
            assert fixed == LOSSES.replace("Normal(mu, sigma).log_prob(x)", "Normal(mu.float(), sigma.float()).log_prob(x.float())")
            session.change(uri, fixed, 2)
            assert await session.diagnostics(uri) == []
        finally:
            await session.stop()

    run(scenario())


def test_saving_the_region_file_refreshes_the_other_buffer(project: Path) -> None:
    """The region leaves train.py on disk: after the save, losses.py's finding goes away."""

    async def scenario() -> None:
        session = Session()
        await session.start(project)
        try:
            uri = session.open(project / "losses.py")
            assert len(await session.diagnostics(uri)) == 1
            (project / "train.py").write_text(TRAIN.replace('"cuda", dtype=torch.float16', '"cuda", enabled=False'))
            session.client.text_document_did_save(
                types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=(project / "train.py").as_uri()))
            )
            assert await session.diagnostics(uri) == []
        finally:
            await session.stop()

    run(scenario())


def test_changes_in_quick_succession_are_analysed_once(project: Path) -> None:
    """Debounce: typing five edits publishes once, for the last version."""

    async def scenario() -> None:
        session = Session()
        await session.start(project)
        try:
            uri = session.open(project / "model.py")
            assert len(await session.diagnostics(uri)) == 1
            session.versions.clear()
            for version in range(2, 7):
                session.change(uri, MODEL + "#" * version + "\n", version)
            assert len(await session.diagnostics(uri)) == 1
            await asyncio.sleep(0.5)
            assert session.versions == [6]
        finally:
            await session.stop()

    run(scenario())


def test_unchanged_text_is_served_from_the_cache(project: Path) -> None:
    workspace = Workspace(str(project))
    path = str(project / "losses.py")
    first = workspace.check(path, LOSSES)
    again = workspace.check(path, LOSSES)
    assert again is first and [(f.line, f.column, f.code) for f in first.findings] == [(5, 13, "AMP001")]
    assert workspace.counters.analyses == 1 and workspace.counters.project_runs == 1
    workspace.check(path, LOSSES.replace("x)", "x.float())"))
    assert workspace.counters.analyses == 2 and workspace.counters.project_runs == 1
    workspace.saved(path)
    workspace.check(path, LOSSES)
    assert workspace.counters.project_runs == 2


def test_a_syntax_error_is_one_diagnostic_not_a_crash(project: Path) -> None:
    workspace = Workspace(str(project))
    report = workspace.check(str(project / "model.py"), MODEL.replace("def loss(", "def loss(("))
    assert report.findings == () and report.error is not None and "syntax" in report.error.message


@pytest.mark.parametrize(
    "old,new",
    [("a\nb\nc\n", "a\nB\nc\n"), ("a\nb", "a\nb  # x"), ("a\n", "a\nb\n"), ("x\r\ny\r\n", "x\r\nz\r\n"), ("", "a\n")],
)
def test_line_edit_rebuilds_the_new_text(old: str, new: str) -> None:
    edit = line_edit(old, new)
    assert apply_line_edit(old, edit) == new
