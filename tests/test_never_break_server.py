"""Never break, round two: the language server always answers (N5).

A buffer over `max-file-size` is not analysed (one informational diagnostic says so, at once), code actions
run off the event loop, and `shutdown` is answered within a second even while a long analysis runs; after
`exit` the process is gone at once. Driven by pygls's client over stdio, as an editor drives it.
"""
from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("pygls")
from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from conftest import dense_source  # noqa: E402



class Client:
    def __init__(self) -> None:
        self.client = LanguageClient("never-break", "1")
        self.published: "asyncio.Queue[types.PublishDiagnosticsParams]" = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

    async def start(self, root: Path) -> None:
        env = dict(os.environ, AMPLINT_NO_CACHE="1")
        await self.client.start_io(sys.executable, "-m", "amplint", "server", env=env)
        await self.client.initialize_async(types.InitializeParams(
            process_id=os.getpid(), root_uri=root.as_uri(), capabilities=types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="big")]))
        self.client.initialized(types.InitializedParams())

    def open(self, path: Path) -> str:
        uri = path.as_uri()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())))
        return uri

    def action_request(self, uri: str) -> "asyncio.Future":
        return asyncio.ensure_future(self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(5, 0), end=types.Position(6, 0)),
            context=types.CodeActionContext(diagnostics=[]))))

    async def shutdown_and_exit(self) -> float:
        """Seconds `shutdown` took to answer; then `exit`, and the server process must end within 5 s."""
        started = time.monotonic()
        await asyncio.wait_for(self.client.shutdown_async(None), 30)
        answered = time.monotonic() - started
        self.client.exit(None)
        server = self.client._server  # the subprocess pygls started
        deadline = time.monotonic() + 5
        while server.returncode is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        ended = server.returncode is not None
        if not ended:
            server.kill()
        await self.client.stop()
        assert ended, "the server did not exit within 5 s of `exit`"
        return answered


def _project(tmp_path: Path, limit: int) -> Path:
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "big"\n\n[tool.amplint]\nmax-file-size = {limit}\n')
    return tmp_path


def test_a_buffer_over_max_file_size_is_not_analysed(tmp_path: Path) -> None:
    root = _project(tmp_path, 100_000)
    (root / "big.py").write_text(dense_source(400_000))

    async def session() -> None:
        client = Client()
        await client.start(root)
        uri = client.open(root / "big.py")
        params = await asyncio.wait_for(client.published.get(), 5)
        assert params.uri == uri
        (only,) = params.diagnostics
        assert "too large" in only.message and only.severity == types.DiagnosticSeverity.Information
        actions = await asyncio.wait_for(client.action_request(uri), 5)
        assert not actions
        assert await client.shutdown_and_exit() < 1.0

    asyncio.run(asyncio.wait_for(session(), 120))


def test_shutdown_is_answered_within_a_second_during_a_long_code_action(tmp_path: Path) -> None:
    root = _project(tmp_path, 2_000_000)
    (root / "big.py").write_text(dense_source(250_000))  # seconds of analysis, well under the limit

    async def session() -> None:
        client = Client()
        await client.start(root)
        uri = client.open(root / "big.py")
        pending = client.action_request(uri)  # the analysis of the open is running or queued: this waits
        await asyncio.sleep(0.5)
        assert await client.shutdown_and_exit() < 1.0
        pending.cancel()

    asyncio.run(asyncio.wait_for(session(), 120))
