"""Jupyter notebooks (`.ipynb`) as Python text that the engine and the codemod can read, and back.

A notebook is read as one Python module: its code cells in order, each opened by
a marker line `pass  # amplint-cell N` (N: the cell's 1-based position among all
cells), so names defined in one cell are known in the next and the project walk
follows calls from a cell into the project's modules. IPython syntax is masked:
a line magic (`%time`), a shell escape (`!pip`), `x = !ls`, `obj?` and a cell
magic's whole cell (`%%bash`) become `pass  # amplint-magic K`, which parses and
which no fix rewrites; writing puts the original lines back.

`--fix` writes only the `source` of the cells whose text changed; the rest of
the JSON (outputs, metadata, key order, indent, trailing newline) is written
back as it was read, or, when amplint cannot reproduce the file's layout
byte for byte, not at all.
"""
from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple, Union

from amplint.model import FileError, Finding

SUFFIX = ".ipynb"
CELL_MARK = re.compile(r"^pass  # amplint-cell (\d+)$")
MAGIC_MARK = re.compile(r"^(\s*)pass  # amplint-magic (\d+)$")
# `%magic`, `!shell`, `?obj`, `obj?`/`obj??`, and `x = !cmd` / `x = %magic`.
MAGIC_LINE = re.compile(r"^\s*(?:[%!?]|[\w.]+\?{1,2}\s*$|[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[%!])")


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@dataclass(frozen=True)
class Masked:
    """A notebook's Python text and the original lines the markers stand for."""

    text: str
    magics: Tuple[str, ...]  # original line K (without its newline) of each `amplint-magic K`
    cells: Tuple[Tuple[int, str], ...]  # (cell number, masked cell text) per code cell


def _cell_text(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _lines(text: str) -> List[str]:
    return io.StringIO(text, newline="").readlines()


def _open(text: str) -> bool:
    """Does `text` end inside a statement (an open bracket, a string, a backslash continuation)?"""
    try:
        for _ in tokenize.generate_tokens(io.StringIO(text).readline):
            pass
    except tokenize.TokenError:
        return True
    except SyntaxError:  # the parser reports it later, with its line
        return False
    return False


def _mask_cell(text: str, magics: List[str]) -> str:
    """The cell's text with IPython-only lines replaced by `pass` markers (same line count).

    Only a line that starts a statement can be a magic: `% b` continuing `(a` on the line
    above is Python's modulo.
    """
    lines = _lines(text)
    if text.lstrip().startswith("%%"):  # a cell magic: the whole cell is not Python
        return ""
    out: List[str] = []
    continued = False
    statement = ""  # the lines of the statement in progress, when one is open
    for line in lines:
        body = line.rstrip("\r\n")
        if continued or (not statement and MAGIC_LINE.match(body)):
            indent = body[: len(body) - len(body.lstrip())]
            out.append(f"{indent}pass  # amplint-magic {len(magics)}" + line[len(body):])
            magics.append(body)
            continued = body.endswith("\\")
            continue
        out.append(line)
        statement += line if line.endswith(("\n", "\r")) else line + "\n"
        if not _open(statement.lstrip()):
            statement = ""
    return "".join(out)


def _code_cells(notebook: object) -> Optional[List[Tuple[int, dict]]]:
    if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
        return None
    return [
        (number, cell) for number, cell in enumerate(notebook["cells"], start=1)
        if isinstance(cell, dict) and cell.get("cell_type") == "code"
    ]


def mask(notebook: dict) -> Masked:
    magics: List[str] = []
    parts: List[str] = []
    cells: List[Tuple[int, str]] = []
    for number, cell in _code_cells(notebook) or []:
        masked = _mask_cell(_cell_text(cell), magics)
        cells.append((number, masked))
        parts.append(f"pass  # amplint-cell {number}\n")
        parts.append(masked if not masked or masked.endswith(("\n", "\r")) else masked + "\n")
    return Masked("".join(parts), tuple(magics), tuple(cells))


def load(path: str, data: bytes) -> Union[Tuple[str, dict], FileError]:
    """The notebook's raw JSON text and its parsed content, or why it is not a notebook amplint can read."""
    try:
        raw = data.decode("utf-8-sig")
        notebook = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        return FileError(path, f"not a readable notebook: invalid JSON ({exc})")
    if _code_cells(notebook) is None:
        return FileError(path, "not a readable notebook: no `cells` list (only nbformat 4 is supported)")
    return raw, notebook


def python_text(path: str, data: bytes) -> Union[str, FileError]:
    """What `files.read_source` reads from a notebook: its masked Python text."""
    loaded = load(path, data)
    return loaded if isinstance(loaded, FileError) else mask(loaded[1]).text


def _read(path: str) -> Union[bytes, FileError]:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return FileError(path, f"cannot read: {exc.strerror or exc}; notebook left unchanged")


# --- writing ----------------------------------------------------------------
def _split_cells(text: str) -> Optional[Dict[int, str]]:
    """The fixed Python text cut back into cells at the markers (None if a marker moved or vanished)."""
    cells: Dict[int, str] = {}
    current: Optional[int] = None
    chunk: List[str] = []
    for line in _lines(text):
        match = CELL_MARK.match(line.rstrip("\r\n"))
        if match:
            if current is not None:
                cells[current] = "".join(chunk)
            current, chunk = int(match.group(1)), []
            if current in cells:
                return None
        elif current is not None:
            chunk.append(line)
        elif line.strip():
            return None
    if current is not None:
        cells[current] = "".join(chunk)
    return cells


def _unmask(text: str, magics: Sequence[str]) -> Optional[str]:
    out: List[str] = []
    for line in _lines(text):
        body = line.rstrip("\r\n")
        match = MAGIC_MARK.match(body)
        if match is None:
            out.append(line)
            continue
        index = int(match.group(2))
        if index >= len(magics):
            return None
        out.append(match.group(1) + magics[index].lstrip() + line[len(body):])  # the fix's indentation
    return "".join(out)


def _as_source(old: object, text: str) -> object:
    """`text` in the shape the cell's `source` had: a list of lines (nbformat's) or one string."""
    if isinstance(old, list):
        return _lines(text)
    return text


def _dumps(notebook: dict, raw: str) -> Optional[str]:
    """`notebook` serialised in the layout of `raw`, the file as read (None if no layout reproduces it)."""
    original = json.loads(raw)
    trailing = "\n" if raw.endswith("\n") else ""
    for indent in (1, 2, 4, 3, None):
        for ascii_only in (False, True):
            if json.dumps(original, indent=indent, ensure_ascii=ascii_only) + trailing == raw:
                return json.dumps(notebook, indent=indent, ensure_ascii=ascii_only) + trailing
    return None


def notebook_bytes(path: str, fixed: str) -> Union[bytes, FileError]:
    """The notebook file at `path` with the code cells of `fixed` (its rewritten Python text) put back."""
    data = _read(path)
    if isinstance(data, FileError):
        return data
    loaded = load(path, data)
    if isinstance(loaded, FileError):
        return loaded
    raw, notebook = loaded
    masked = mask(notebook)
    cells = _split_cells(fixed)
    if cells is None or sorted(cells) != sorted(number for number, _ in masked.cells):
        return FileError(path, "the fix moved a cell boundary; notebook left unchanged")
    original = dict(masked.cells)
    changed = False
    for number, cell in _code_cells(notebook) or []:
        new = cells[number]
        if new == original[number] or (new == original[number] + "\n" and not original[number].endswith("\n")):
            continue
        text = _unmask(new, masked.magics)
        if text is None:
            return FileError(path, "the fix changed a masked IPython line; notebook left unchanged")
        if not _cell_text(cell).endswith(("\n", "\r")) and text.endswith("\n"):
            text = text[:-1]
        cell["source"] = _as_source(cell.get("source"), text)
        changed = True
    if not changed:
        return data
    out = _dumps(notebook, raw)
    if out is None:
        return FileError(path, "amplint cannot reproduce this notebook's JSON layout; notebook left unchanged")
    return out.encode("utf-8-sig" if data.startswith(b"\xef\xbb\xbf") else "utf-8")


def json_texts(path: str, fixed: str) -> Optional[Tuple[str, str]]:
    """The notebook file's text as it is and as `--fix` would write it (for `--diff`); None on errors."""
    before = _read(path)
    after = notebook_bytes(path, fixed)
    if isinstance(before, FileError) or isinstance(after, FileError):
        return None
    try:
        return before.decode("utf-8-sig"), after.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


# --- locating findings -------------------------------------------------------
def locate(findings: Sequence[Finding], sources: Dict[str, List[str]]) -> Tuple[List[Finding], Dict[str, List[str]]]:
    """Notebook positions moved from the masked text's lines to (cell, line in cell); the rest as they are.

    `sources` holds each file's lines (for notebooks, the masked text's): the
    markers in it say where each cell starts. The lines of a cell come back under
    `"path:cell N"`, the key `output.text_report` looks a cell finding's line up by.
    A region in a notebook (the finding's own, or one that reaches a module) is
    named as `nb.ipynb:cell N:L` in the message, and its line counts within its cell.
    """
    out: List[Finding] = []
    lines_out = dict(sources)
    for finding in findings:
        finding = _region_in_cell(finding, sources)
        lines = sources.get(finding.path)
        in_notebook = bool(lines) and is_notebook(finding.path) and finding.cell is None
        start = _cell_start(lines, finding.line) if lines and in_notebook else None
        if lines is None or start is None:
            out.append(finding)
            continue
        number, first = start
        end = next((i for i in range(first, len(lines)) if CELL_MARK.match(lines[i])), len(lines))
        lines_out[f"{finding.path}:cell {number}"] = lines[first:end]
        out.append(replace(finding, line=finding.line - first, end_line=finding.end_line - first, cell=number))
    return out, lines_out


def _masked_lines(path: str, sources: Dict[str, List[str]]) -> List[str]:
    """A notebook's masked text's lines: from `sources`, else read (and kept there)."""
    lines = sources.get(path)
    if lines is None:
        data = _read(path)
        loaded = data if isinstance(data, FileError) else load(path, data)
        lines = [] if isinstance(loaded, FileError) else [line.rstrip("\r\n") for line in _lines(mask(loaded[1]).text)]
    return lines


def _hops_in_cells(finding: Finding, sources: Dict[str, List[str]]) -> Finding:
    """The chain's hops in a notebook counted within their cell, in the chain and where the message shows them."""
    chain, message = [], finding.message
    read: Dict[str, List[str]] = {}
    for hop in finding.chain:
        if hop.line and not hop.cell and is_notebook(hop.path) and hop.path not in read:
            read[hop.path] = _masked_lines(hop.path, sources)
        start = _cell_start(read[hop.path], hop.line) if hop.path in read and not hop.cell else None
        if start is not None:
            moved = replace(hop, line=hop.line - start[1], cell=start[0])
            message = message.replace(f"({hop.place()})", f"({moved.place()})")
            hop = moved
        chain.append(hop)
    return replace(finding, chain=tuple(chain), message=message) if tuple(chain) != finding.chain else finding


def _region_in_cell(finding: Finding, sources: Dict[str, List[str]]) -> Finding:
    finding = _hops_in_cells(finding, sources)
    region_file = finding.region_path or finding.path
    if finding.region is None or finding.cell is not None or not is_notebook(region_file):
        return finding
    start = _cell_start(_masked_lines(region_file, sources), finding.region.line)
    if start is None:
        return finding
    number, first = start
    line = finding.region.line - first
    if finding.region_path:
        message = finding.message.replace(
            f"{finding.region_path}:{finding.region.line}", f"{finding.region_path}:cell {number}:{line}"
        )
    else:
        message = finding.message.replace(f"at line {finding.region.line}", f"at cell {number}, line {line}")
    return replace(finding, message=message, region=replace(finding.region, line=line))


def _cell_start(lines: Sequence[str], line: int) -> Optional[Tuple[int, int]]:
    """(cell number, index of the cell's first line) for 1-based masked `line`."""
    for index in range(min(line, len(lines)) - 1, -1, -1):
        match = CELL_MARK.match(lines[index])
        if match:
            return int(match.group(1)), index + 1
    return None
