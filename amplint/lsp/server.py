"""`amplint server`: the Language Server, over stdio, on pygls.

Diagnostics are published on open, on save and (debounced) on change; code
actions offer fix A (cast), fix C (disable autocast), `# noqa: CODE`, and a
"fix all" source action. All analysis goes through `amplint.lsp.workspace`,
which only calls the engine and the fix API.
"""
from __future__ import annotations

import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Sequence, Set, Tuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace import TextDocument

from amplint import __version__
from amplint.lsp.edits import edit_end, line_edit
from amplint.lsp.workspace import CAST, DISABLE, Report, Workspace
from amplint.config import Config
from amplint.files import too_large
from amplint.model import FileError, Finding

DEBOUNCE_SECONDS = 0.3
FIX_ALL_KIND = "source.fixAll.amplint"
TITLES = {
    CAST: "amplint: cast the inputs to float32 (fix A)",
    DISABLE: "amplint: run it with autocast disabled, inputs cast (fix C)",
}


class AmplintServer(LanguageServer):
    """pygls server holding the analysis workspace and the pending (debounced) analyses."""

    def __init__(self, debounce: float = DEBOUNCE_SECONDS) -> None:
        super().__init__("amplint", __version__)
        self.debounce = debounce
        self.amp: Optional[Workspace] = None
        self.pending: Dict[str, "asyncio.Task[None]"] = {}
        # Analyses and code actions run here, one at a time, never on the event loop: a large buffer once
        # kept `codeAction` (and so `shutdown`) unanswered for minutes. One thread: a stale job is dropped
        # when its turn comes (`_analyze`), instead of competing with the current one.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="amplint-analysis")
        self.told: Set[str] = set()  # the notices of project walks already shown (each once per session)

    def analysis(self) -> Workspace:
        if self.amp is None:
            root = self.workspace.root_path if self.workspace else None
            self.amp = Workspace(root)
        return self.amp


def _path(uri: str) -> Optional[str]:
    path = to_fs_path(uri)
    return os.path.abspath(path) if path else None


def _position(document: TextDocument, line: int, column: int) -> types.Position:
    """A 1-based (line, code point column) as the client counts (UTF-16 unless negotiated)."""
    return document.position_codec.position_to_client_units(
        document.lines, types.Position(line=max(line - 1, 0), character=max(column - 1, 0))
    )


def diagnostic(document: TextDocument, finding: Finding) -> types.Diagnostic:
    return types.Diagnostic(
        range=types.Range(
            start=_position(document, finding.line, finding.column),
            end=_position(document, finding.end_line, finding.end_column),
        ),
        message=finding.message,
        severity=types.DiagnosticSeverity.Warning,
        code=finding.code,
        source="amplint",
        data={"line": finding.line, "column": finding.column, "code": finding.code},
        related_information=related(document, finding) or None,
    )


def related(document: TextDocument, finding: Finding) -> List[types.DiagnosticRelatedInformation]:
    """The region, then each hop of the chain with a known line: an editor lists them under the diagnostic, so
    a `log_prob` reached from another file links to the call that reached it, and to each call on the way."""
    found: List[types.DiagnosticRelatedInformation] = []
    if finding.region is not None:
        where = finding.region_path or finding.path
        found.append(_related(document, where, finding.region.line, 1, "float16 autocast region"))
    for index, hop in enumerate(finding.chain):
        if hop.line and not hop.cell:  # a notebook's cell lines are not the file's
            found.append(_related(document, hop.path, hop.line, hop.column or 1, hop.describe(index == 0)))
    return found


def _related(document: TextDocument, path: str, line: int, column: int, message: str
             ) -> types.DiagnosticRelatedInformation:
    uri = from_fs_path(os.path.abspath(path)) or document.uri
    if uri == document.uri:  # the buffer's own text: columns in the client's units
        start = _position(document, line, column)
    else:
        start = types.Position(line=max(line - 1, 0), character=max(column - 1, 0))
    return types.DiagnosticRelatedInformation(types.Location(uri, types.Range(start, start)), message)


def diagnostics(document: TextDocument, report: Report) -> List[types.Diagnostic]:
    if report.error is not None:  # e.g. a syntax error: one diagnostic at the top, not a crash
        return [
            types.Diagnostic(
                range=types.Range(start=types.Position(0, 0), end=types.Position(0, 0)),
                message=f"amplint could not check this file: {report.error.message}",
                severity=types.DiagnosticSeverity.Information,
                source="amplint",
            )
        ]
    return [diagnostic(document, finding) for finding in report.findings]


def oversized(amp: Workspace, path: str, text: str) -> Optional[FileError]:
    """The buffer is over its project's `max-file-size`: not analysed, as `amplint check` skips such a file
    (a 4.6 MB buffer took 3.7 GB and no answer came)."""
    config = amp.config(path)
    limit = config.max_file_size if isinstance(config, Config) else Config().max_file_size
    if not limit or 4 * len(text) <= limit:  # a character is 1 to 4 bytes: encode only when it matters
        return None
    size = len(text) if len(text) > limit else len(text.encode("utf-8", "surrogatepass"))
    return too_large(path, size, limit) if size > limit else None


def _analyze(server: AmplintServer, uri: str, text: Optional[str] = None) -> Optional[Report]:
    """The buffer's report; None when the buffer is no longer `text` (a newer version will be analysed)."""
    document = server.workspace.get_text_document(uri)
    path = _path(uri)
    if path is None or (text is not None and document.source != text):
        return None
    amp = server.analysis()
    large = oversized(amp, path, document.source)
    if large is not None:
        return Report(error=large)
    return amp.check(path, document.source)


async def publish(server: AmplintServer, uri: str, delay: float = 0.0) -> None:
    """Analyse the buffer (off the event loop) and publish; a newer edit cancels this one while it waits."""
    if delay:
        await asyncio.sleep(delay)
    document = server.workspace.get_text_document(uri)
    version = document.version
    text = document.source
    loop = asyncio.get_running_loop()
    report = await loop.run_in_executor(server.executor, _analyze, server, uri, text)
    if report is None or server.workspace.get_text_document(uri).source != text:
        return  # the buffer changed while we analysed: the newer request publishes
    server.text_document_publish_diagnostics(
        types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics(document, report), version=version)
    )
    tell(server, report)


def tell(server: AmplintServer, report: Report) -> None:
    """Show what the buffer's project walk said of itself (its work bound reached) once in the session: it
    concerns the project, not a line, so it is a message rather than a diagnostic."""
    for notice in report.notices:
        if str(notice) not in server.told:
            server.told.add(str(notice))
            server.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Warning, message=f"amplint: {notice}"))


def schedule(server: AmplintServer, uri: str, delay: float) -> None:
    previous = server.pending.pop(uri, None)
    if previous is not None and not previous.done():
        previous.cancel()
    server.pending[uri] = asyncio.ensure_future(publish(server, uri, delay))


def _whole_edit(document: TextDocument, new_text: str, others: Optional[Dict[str, Tuple[str, str]]] = None
                ) -> types.WorkspaceEdit:
    """A WorkspaceEdit that turns the buffer into `new_text` by replacing the lines that differ, and each file
    of `others` (path -> (text on disk, fixed text)) likewise: one edit of several documents."""
    old = document.source
    edit = line_edit(old, new_text)
    lines = document.lines
    if edit.end == len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
        end = document.position_codec.position_to_client_units(
            lines, types.Position(line=len(lines) - 1, character=len(lines[-1]))
        )
    else:
        end = types.Position(line=edit.end, character=0)
    text_edit = types.TextEdit(range=types.Range(start=types.Position(edit.start, 0), end=end), new_text=edit.text)
    changes = {document.uri: [text_edit]}
    for path, (old_text, fixed_text) in (others or {}).items():
        changes[from_fs_path(path) or path] = [_file_edit(old_text, fixed_text)]
    return types.WorkspaceEdit(changes=changes)


def _file_edit(old: str, new: str) -> types.TextEdit:
    """Whole lines of a file that is not the buffer (as on disk); a last line with no newline ends past it."""
    edit = line_edit(old, new)
    line, character = edit_end(old, edit)
    end = types.Position(line=line, character=character)
    return types.TextEdit(range=types.Range(start=types.Position(edit.start, 0), end=end), new_text=edit.text)


def _overlaps(finding: Finding, selection: types.Range) -> bool:
    """Whole lines: a cursor anywhere on a finding's lines asks about it."""
    return finding.line - 1 <= selection.end.line and selection.start.line <= finding.end_line - 1


def code_actions(server: AmplintServer, params: types.CodeActionParams) -> List[types.CodeAction]:
    uri = params.text_document.uri
    path = _path(uri)
    if path is None:
        return []
    document = server.workspace.get_text_document(uri)
    text = document.source
    amp = server.analysis()
    if oversized(amp, path, text) is not None:
        return []
    report = amp.check(path, text)
    wanted: Optional[Sequence[str]] = params.context.only
    actions: List[types.CodeAction] = []
    chosen = _chosen(report.findings, params)
    quick = wanted is None or any(kind.startswith("quickfix") for kind in wanted)
    for finding in chosen if quick else ():
        for strategy in (CAST, DISABLE):
            if strategy not in finding.fix_strategies:
                continue
            fixed, others = amp.fixed_across(path, text, strategy, finding)  # others: a fix spanning files
            if fixed is not None:
                actions.append(_action(f"{TITLES[strategy]}: {finding.code}", types.CodeActionKind.QuickFix,
                                       document, fixed, finding, preferred=strategy == CAST, others=others))
        noqa = amp.with_noqa(text, [finding])
        if noqa is not None:
            actions.append(_action(f"amplint: add `# noqa: {finding.code}`", types.CodeActionKind.QuickFix,
                                   document, noqa, finding))
    source = wanted is None or any(FIX_ALL_KIND.startswith(kind) for kind in wanted)
    if source and report.findings:
        fixed, others = amp.fixed_across(path, text, _strategy(amp, path))
        if fixed is not None:
            actions.append(_action("amplint: fix all", FIX_ALL_KIND, document, fixed, None, others=others))
    return actions


def _strategy(amp: Workspace, path: str) -> str:
    config = amp.config(path)
    return config.strategy if isinstance(config, Config) else CAST


def _chosen(findings: Sequence[Finding], params: types.CodeActionParams) -> List[Finding]:
    """The findings the client asks about: its diagnostics' data when given, else those in the range."""
    keys = set()
    for item in params.context.diagnostics:
        if item.source == "amplint" and isinstance(item.data, dict):
            keys.add((item.data.get("line"), item.data.get("column"), item.data.get("code")))
    if keys:
        return [f for f in findings if (f.line, f.column, f.code) in keys]
    return [f for f in findings if _overlaps(f, params.range)]


def _action(title: str, kind: str, document: TextDocument, new_text: str, finding: Optional[Finding],
            preferred: bool = False, others: Optional[Dict[str, Tuple[str, str]]] = None) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=kind,
        edit=_whole_edit(document, new_text, others),
        diagnostics=[diagnostic(document, finding)] if finding is not None else None,
        is_preferred=preferred or None,
    )


def build_server(debounce: float = DEBOUNCE_SECONDS) -> AmplintServer:
    server = AmplintServer(debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: AmplintServer, params: types.DidOpenTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: AmplintServer, params: types.DidChangeTextDocumentParams) -> None:
        schedule(ls, params.text_document.uri, ls.debounce)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: AmplintServer, params: types.DidSaveTextDocumentParams) -> None:
        # The disk changed: walk the project again, and refresh every open buffer (a region here may
        # reach a computation in another open file).
        ls.analysis().saved(_path(params.text_document.uri))
        for uri in list(ls.workspace.text_documents):
            schedule(ls, uri, 0.0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: AmplintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        task = ls.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND]),
    )
    async def code_action(ls: AmplintServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        return await asyncio.get_running_loop().run_in_executor(ls.executor, code_actions, ls, params)

    return server


def serve() -> int:
    """Run the server on stdin/stdout until the client exits, then end at once: an analysis still running
    in the executor's thread must not hold the process (the interpreter's exit would wait for it)."""
    code = 0
    try:
        build_server().start_io()
    except SystemExit as exc:  # pygls ends on `exit` with sys.exit(0), or 1 without a `shutdown` first
        code = exc.code if isinstance(exc.code, int) else 0
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)
