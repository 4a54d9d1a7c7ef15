"""Real third-party source for amplint's benchmark and robustness sweep.

The corpus is built from pinned source distributions downloaded by name with
``pip download``, so anyone can rebuild exactly the same files; only the
``.py`` members are kept, which also drops the projects' own tool configs
(``pyproject.toml``, ``setup.cfg``) that would otherwise change how the tools
under test behave.

Also builds the *derived copy* of issue 7: real code rarely runs
distributions under autocast, so the copy wraps every function body that
calls ``log_prob``, ``entropy`` or ``kl_divergence`` in
``with torch.autocast("cuda"):`` to give the fixer real-world shapes to chew on.

Usage::

    python benchmarks/corpus.py            # download + extract, print counts
    python benchmarks/corpus.py --derived  # also build the derived copy
"""
from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"
SDISTS = WORK / "sdists"
CORPUS = WORK / "corpus"
DERIVED = WORK / "derived"
SLICES = WORK / "slices"

# Pinned so that numbers from different days compare; bump deliberately.
PROJECTS: Dict[str, str] = {
    "diffusers": "0.42.1",
    "pytorch-lightning": "2.6.6",
    "pyro-ppl": "1.9.2",
    "transformers": "5.24.0",
}

# The slice used for the slow tools (TorchFix, flake8): every 10th file of the
# diffusers package, 111 files / ~55k lines. TorchFix costs ~1.4 CPU s per
# 1,000 lines here, so a 220-file slice (every 5th) alone took ~150 CPU s a
# run and 3 alternating repetitions of everything no longer fit in 15
# minutes. A stride (not one folder) keeps the slice representative of the
# whole package, e.g. in how few files mention autocast.
SLICE_PROJECT = "diffusers"
SLICE_SUBDIR = "src/diffusers"
SLICE_STRIDE = 10

DONE_MARKER = ".complete"
PROB_METHODS = ("log_prob", "entropy", "kl_divergence")
AUTOCAST_CODE = 'torch.autocast("cuda")'


# --------------------------------------------------------------------------
# Download and extraction
# --------------------------------------------------------------------------


def _download_sdist(name: str, version: str, timeout: Optional[float] = None) -> Path:
    """Fetch one sdist into its own folder, so its file name needs no guessing.

    pip reads an sdist's metadata by running its build backend. Only this
    project is asked for as source (`--no-binary NAME`), so its build
    requirements come as wheels; where its setup script imports what it
    does not declare (torch), the backend runs in this environment instead."""
    dest = SDISTS / name
    existing = _archives_in(dest)
    if existing:
        return existing[0]
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", name, "--no-deps",
           f"{name}=={version}", "-d", str(dest)]
    if subprocess.run(cmd, timeout=timeout).returncode != 0:
        subprocess.run(cmd + ["--no-build-isolation"], check=True, timeout=timeout)
    found = _archives_in(dest)
    if not found:
        raise RuntimeError(f"pip downloaded no archive for {name}=={version}")
    return found[0]


def _archives_in(folder: Path) -> List[Path]:
    """Source archives already in *folder* (pip names them after the project)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir()
                  if p.name.endswith((".tar.gz", ".tgz", ".zip")))


def _safe_member_path(member: str) -> Optional[str]:
    """Strip the sdist's top folder; refuse absolute or escaping paths."""
    parts = [p for p in member.replace("\\", "/").split("/") if p not in ("", ".")]
    if len(parts) < 2 or any(p == ".." for p in parts):
        return None
    return "/".join(parts[1:])


def _iter_py_members(archive: Path) -> Iterator[Tuple[str, bytes]]:
    """Yield (relative path, bytes) for every .py regular file in an sdist."""
    if archive.name.endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                rel = _safe_member_path(info.filename)
                if rel and rel.endswith(".py") and not info.is_dir():
                    yield rel, zf.read(info)
        return
    with tarfile.open(archive) as tf:
        for member in tf:
            rel = _safe_member_path(member.name)
            if rel and rel.endswith(".py") and member.isfile():
                handle = tf.extractfile(member)
                if handle is not None:
                    yield rel, handle.read()


def extract_project(name: str, version: str, into: Path = CORPUS, timeout: Optional[float] = None) -> Path:
    """Extract one project's .py files into `into`; a completed extraction is left alone."""
    target = into / name
    if (target / DONE_MARKER).exists():
        return target
    archive = _download_sdist(name, version, timeout)
    tmp = into / f".{name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    for rel, data in _iter_py_members(archive):
        out = tmp / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    (tmp / DONE_MARKER).write_text(f"{name}=={version}\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def ensure_corpus(projects: Optional[Dict[str, str]] = None) -> Dict[str, Path]:
    """Download and extract every pinned project (idempotent)."""
    projects = projects or PROJECTS
    CORPUS.mkdir(parents=True, exist_ok=True)
    return {name: extract_project(name, ver) for name, ver in projects.items()}


# --------------------------------------------------------------------------
# File sets
# --------------------------------------------------------------------------


def py_files(root: Path) -> List[Path]:
    """All .py files under *root*, sorted so every tool sees one fixed order."""
    out: List[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        out.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
    return out


def count_lines(files: Iterable[Path]) -> int:
    """Physical lines, counted on bytes so undecodable files still count."""
    return sum(p.read_bytes().count(b"\n") for p in files)


@dataclass(frozen=True)
class FileSet:
    """A labelled set of files, given to tools as paths relative to ``root``."""

    label: str
    root: Path
    files: Tuple[Path, ...]

    def relative(self) -> List[str]:
        """Paths relative to root: short command lines, cwd-independent output."""
        return [str(p.relative_to(self.root)) for p in self.files]

    def lines(self) -> int:
        """Total physical lines in the set."""
        return count_lines(self.files)


def corpus_fileset(projects: Optional[Sequence[str]] = None) -> FileSet:
    """Every corpus file (or those of *projects*), rooted at the corpus folder."""
    names = list(projects or PROJECTS)
    files: List[Path] = []
    for name in names:
        files.extend(py_files(CORPUS / name))
    return FileSet(f"corpus ({', '.join(names)})", CORPUS, tuple(files))


def slice_fileset() -> FileSet:
    """The ~200-file diffusers slice used for the slow tools."""
    root = CORPUS / SLICE_PROJECT
    files = tuple(py_files(root / SLICE_SUBDIR)[::SLICE_STRIDE])
    return FileSet(f"slice: {SLICE_PROJECT} {SLICE_SUBDIR}, every {SLICE_STRIDE}th file",
                   root, files)


def materialize(fileset: FileSet, dest: Path) -> FileSet:
    """Copy a file set to *dest* (fresh), keeping relative paths."""
    shutil.rmtree(dest, ignore_errors=True)
    copied: List[Path] = []
    for src in fileset.files:
        out = dest / src.relative_to(fileset.root)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, out)
        copied.append(out)
    return FileSet(fileset.label, dest, tuple(copied))


# --------------------------------------------------------------------------
# Derived copy: wrap probability-calling function bodies in autocast
# --------------------------------------------------------------------------


def _mentions_prob_method(source: str) -> bool:
    """Cheap text test so that libcst only parses files that may change."""
    return any(m in source for m in PROB_METHODS)


def derive_source(source: str) -> Tuple[str, int]:
    """Return (new source, number of wrapped functions) for one module.

    Uses LibCST so that indentation, comments and multi-line strings survive
    the rewrite (a text indent would change string contents and trip on tabs).
    """
    if not _mentions_prob_method(source):
        return source, 0
    import libcst as cst  # lazily: costly import, only needed here

    module = cst.parse_module(source)
    wrapper = _AutocastWrapper()
    new = module.visit(wrapper)
    if wrapper.wrapped == 0:
        return source, 0
    new = _ensure_import_torch(new)
    return new.code, wrapper.wrapped


def _is_prob_call(node: "object") -> bool:
    """Whether a libcst Call calls x.log_prob/x.entropy/x.kl_divergence or kl_divergence."""
    import libcst as cst

    func = getattr(node, "func", None)
    if isinstance(func, cst.Attribute):
        return func.attr.value in PROB_METHODS
    if isinstance(func, cst.Name):
        return func.value in PROB_METHODS
    return False


def _make_transformer_base() -> type:
    """Build the transformer class lazily so importing this module stays cheap."""
    import libcst as cst

    class AutocastWrapper(cst.CSTTransformer):
        """Wraps bodies of functions that *directly* call a probability method.

        Calls inside a nested def belong to that def, so each call is wrapped
        exactly once, by its innermost function.
        """

        def __init__(self) -> None:
            super().__init__()
            self._stack: List[bool] = []
            self.wrapped = 0

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            self._stack.append(False)
            return True

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            self._stack.append(False)
            return True

        def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef) -> cst.ClassDef:
            self._stack.pop()
            return updated

        def visit_Call(self, node: cst.Call) -> bool:
            if self._stack and _is_prob_call(node):
                self._stack[-1] = True
            return True

        def leave_FunctionDef(self, original: cst.FunctionDef,
                              updated: cst.FunctionDef) -> cst.FunctionDef:
            if not self._stack.pop():
                return updated
            self.wrapped += 1
            return updated.with_changes(body=_wrap_body(updated.body))

    return AutocastWrapper


_WRAPPER_CLS: Optional[type] = None


def _AutocastWrapper() -> "object":
    """Instantiate the (lazily defined) transformer."""
    global _WRAPPER_CLS
    if _WRAPPER_CLS is None:
        _WRAPPER_CLS = _make_transformer_base()
    return _WRAPPER_CLS()


def _wrap_body(body: "object") -> "object":
    """Put a function body (after its docstring) under ``with torch.autocast``."""
    import libcst as cst

    if isinstance(body, cst.SimpleStatementSuite):  # def f(x): return d.log_prob(x)
        inner: List[cst.BaseStatement] = [cst.SimpleStatementLine(body=body.body)]
        head: List[cst.BaseStatement] = []
    else:
        stmts = list(body.body)
        split = 1 if stmts and _is_docstring(stmts[0]) else 0
        head, inner = stmts[:split], stmts[split:]
    with_stmt = cst.With(
        items=[cst.WithItem(item=cst.parse_expression(AUTOCAST_CODE))],
        body=cst.IndentedBlock(body=inner),
    )
    if isinstance(body, cst.IndentedBlock):
        return body.with_changes(body=[*head, with_stmt])
    return cst.IndentedBlock(body=[*head, with_stmt])


def _is_docstring(stmt: "object") -> bool:
    """A leading bare string statement (kept outside the with, to stay a docstring)."""
    import libcst as cst

    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    expr = stmt.body[0]
    return isinstance(expr, cst.Expr) and isinstance(
        expr.value, (cst.SimpleString, cst.ConcatenatedString))


def _binds_torch(stmt: "object") -> bool:
    """Whether a module-level statement is ``import torch`` / ``import torch.x``."""
    import libcst as cst

    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    for small in stmt.body:
        if isinstance(small, cst.Import):
            for alias in small.names:
                head = cst.helpers.get_full_name_for_node(alias.name) or ""
                if alias.asname is None and head.split(".")[0] == "torch":
                    return True
    return False


def _ensure_import_torch(module: "object") -> "object":
    """Add ``import torch`` after the docstring and __future__ imports if missing."""
    import libcst as cst

    body = list(module.body)
    if any(_binds_torch(s) for s in body):
        return module
    pos = 0
    if body and _is_docstring(body[0]):
        pos = 1
    while pos < len(body) and _is_future_import(body[pos]):
        pos += 1
    body.insert(pos, cst.parse_statement("import torch\n"))
    return module.with_changes(body=body)


def _is_future_import(stmt: "object") -> bool:
    """``from __future__ import ...`` must stay first, so insert after it."""
    import libcst as cst

    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    return any(isinstance(s, cst.ImportFrom) and isinstance(s.module, cst.Name)
               and s.module.value == "__future__" for s in stmt.body)


@dataclass
class DeriveStats:
    """Totals for the derived copy, reported so a thin copy is noticed."""

    files: int = 0
    changed_files: int = 0
    wrapped_functions: int = 0
    skipped: int = 0  # unparseable by libcst or not compiling after the rewrite


def _derive_file(src: Path, out: Path, stats: DeriveStats) -> None:
    """Write the derived version of one file (the original if it cannot be derived)."""
    data = src.read_bytes()
    stats.files += 1
    new_data = data
    try:
        text = data.decode("utf-8")
        if _mentions_prob_method(text):
            ast.parse(text)  # only rewrite what this Python can compile anyway
            new_text, wrapped = derive_source(text)
            if wrapped:
                compile(new_text, str(out), "exec", dont_inherit=True)
                new_data = new_text.encode("utf-8")
                stats.changed_files += 1
                stats.wrapped_functions += wrapped
    except Exception:  # noqa: BLE001 - any failure keeps the original bytes
        stats.skipped += 1
        new_data = data
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(new_data)


def ensure_derived(projects: Optional[Sequence[str]] = None) -> Tuple[Path, DeriveStats]:
    """Build the derived copy under .work/derived (idempotent per project)."""
    total = DeriveStats()
    for name in projects or PROJECTS:
        target = DERIVED / name
        marker = target / DONE_MARKER
        if marker.exists():
            _add_stats(total, _read_stats(marker))
            continue
        tmp = DERIVED / f".{name}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        stats = DeriveStats()
        src_root = CORPUS / name
        for src in py_files(src_root):
            _derive_file(src, tmp / src.relative_to(src_root), stats)
        marker_tmp = tmp / DONE_MARKER
        marker_tmp.write_text(_format_stats(stats))
        shutil.rmtree(target, ignore_errors=True)
        tmp.rename(target)
        _add_stats(total, stats)
    return DERIVED, total


def _format_stats(stats: DeriveStats) -> str:
    """Serialise stats into the marker file so reruns can report them for free."""
    return " ".join(f"{k}={v}" for k, v in vars(stats).items()) + "\n"


def _read_stats(marker: Path) -> DeriveStats:
    """Parse what ``_format_stats`` wrote; tolerate an old or empty marker."""
    values = {}
    for token in marker.read_text().split():
        key, _, val = token.partition("=")
        if val.isdigit():
            values[key] = int(val)
    return DeriveStats(**{k: v for k, v in values.items() if k in vars(DeriveStats())})


def _add_stats(total: DeriveStats, part: DeriveStats) -> None:
    """Accumulate per-project stats into the total."""
    for key, val in vars(part).items():
        setattr(total, key, getattr(total, key) + val)


def derived_fileset(projects: Optional[Sequence[str]] = None) -> FileSet:
    """Every derived file, rooted at the derived folder."""
    names = list(projects or PROJECTS)
    files: List[Path] = []
    for name in names:
        files.extend(py_files(DERIVED / name))
    return FileSet(f"derived ({', '.join(names)})", DERIVED, tuple(files))


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------


def _print_counts(title: str, root: Path, names: Iterable[str]) -> None:
    """One line per project plus a total, so the >= 3,000 files rule is visible."""
    total_files = total_lines = 0
    print(f"{title}:")
    for name in names:
        files = py_files(root / name)
        lines = count_lines(files)
        total_files += len(files)
        total_lines += lines
        print(f"  {name:20s} {len(files):6d} files {lines:9d} lines")
    print(f"  {'total':20s} {total_files:6d} files {total_lines:9d} lines")


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Build the corpus (and optionally the derived copy) and print counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--derived", action="store_true", help="also build the derived copy")
    args = parser.parse_args(argv)
    ensure_corpus()
    _print_counts("corpus", CORPUS, PROJECTS)
    sl = slice_fileset()
    print(f"slow-tool slice {sl.label}: {len(sl.files)} files, {sl.lines()} lines")
    if args.derived:
        _, stats = ensure_derived()
        _print_counts("derived", DERIVED, PROJECTS)
        print(f"  derived: {stats.changed_files} files changed, "
              f"{stats.wrapped_functions} functions wrapped, {stats.skipped} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
