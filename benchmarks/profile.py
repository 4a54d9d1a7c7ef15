"""Where an analysis spends its time: each phase, LibCST's machinery against ours.

Not a unit test. It times, on the files amplint really parses in a corpus
(those that pass the text prefilter, or that project mode parses), each
phase of `engine.analyze_source` in-process, best of `--reps`, and the
LibCST machinery each phase replaced:

- CPython's `ast.parse` (the syntax screen) and the import table read from it,
  against the LibCST visitor that collected imports before;
- `libcst.parse_module`;
- positions of calls, decorators and `with` read from CPython's tree
  (`amplint.treepositions`), against the code generation that recorded only
  them before (`amplint.positions`) and LibCST's PositionProvider for every node;
- the analysis walk (`amplint.cstwalk.walk`), against `module.visit`;
- the whole `analyze_source`.

    .venv/bin/python benchmarks/profile.py [--corpus benchmarks/.work/corpus] [--project] [--write benchmarks/README.md]

With `--write` the table replaces the `profile` (or, with `--project`,
`profile-project`) section of that file.
"""
from __future__ import annotations

import argparse
import ast
import platform
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Sequence, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import loadavg, machine_lines, replace_section  # noqa: E402


def _best(reps: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _best_with(reps: int, setup: Callable[[], object], work: Callable[[object], object]) -> float:
    """Like `_best`, with an untimed fresh `setup()` handed to each run."""
    times = []
    for _ in range(reps):
        made = setup()
        start = time.perf_counter()
        work(made)
        times.append(time.perf_counter() - start)
    return min(times)


def parsed_files(corpus: Path, project: bool) -> List[str]:
    """The files amplint parses in `corpus`: single-file mode's prefilter, or project mode's own list."""
    from amplint.config import Config
    from amplint.engine import may_have_findings
    from amplint.files import discover, read_source

    if project:
        from amplint.project.run import run_project

        run = run_project([str(corpus)], Config(jobs=1), use_cache=False)
        return sorted(set(run.stats.parsed))
    from amplint.model import FileError

    files, _ = discover([str(corpus)], ())
    chosen = []
    for path in files:
        source = read_source(path)
        if not isinstance(source, FileError) and may_have_findings(source.text, Config()):
            chosen.append(path)
    return chosen


class _LibcstImports:
    """The import collector amplint used before (a LibCST visitor over the whole module), for comparison."""

    @staticmethod
    def run(module: object) -> None:
        import libcst as cst

        class Collector(cst.CSTVisitor):
            def visit_Import(self, node: cst.Import) -> None:
                pass

            def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
                pass

            def visit_Assign(self, node: cst.Assign) -> None:
                pass

        module.visit(Collector())  # type: ignore[attr-defined]


def phases(paths: Sequence[str], reps: int) -> List[Tuple[str, float, str]]:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from amplint.analysis import analyze_module
    from amplint.facts.collector import POSITIONED, collector_class
    from amplint.facts.model import AnalysisOptions
    from amplint.facts.sites import RECOGNIZERS
    from amplint.config import Config
    from amplint.cstwalk import walk
    from amplint.engine import analyze_source
    from amplint import screen
    from amplint.names import import_table
    from amplint.positions import SourceTree, positions

    totals: Dict[str, float] = {}

    def add(name: str, seconds: float) -> None:
        totals[name] = totals.get(name, 0.0) + seconds

    for path in paths:
        text = Path(path).read_text(encoding="utf-8")
        tree = ast.parse(text)
        module = cst.parse_module(text)
        imports = import_table(tree)
        options = AnalysisOptions(project=True)
        add("ast.parse (CPython's syntax screen)", _best(reps, lambda: ast.parse(text)))
        add("import table from the ast tree", _best(reps, lambda: import_table(tree)))
        add("screen: autocast and a probability call in code?",
            _best(reps, lambda: screen.may_have_findings(tree, imports)))
        add("  before: import collector as a LibCST visitor", _best(reps, lambda: _LibcstImports.run(module)))
        add("libcst.parse_module", _best(reps, lambda: cst.parse_module(text)))
        source = SourceTree(tree, text)
        add("positions of calls, decorators, with, from CPython's tree",
            _best(reps, lambda: positions(module, POSITIONED, source=source)))
        add("  before: code generation recording them", _best(reps, lambda: positions(module, POSITIONED)))
        add("  before that: PositionProvider, every node",
            _best(reps, lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)))
        collector = lambda: collector_class(RECOGNIZERS)(  # noqa: E731 - positions computed here, untimed
            module, imports, options, RECOGNIZERS)
        add("analysis walk (cstwalk.walk)", _best_with(reps, collector, lambda c: walk(module, c)))
        add("  before: module.visit(collector)", _best_with(reps, collector, lambda c: module.visit(c)))
        add("analyze_module (positions + walk + diagnoses)",
            _best(reps, lambda: analyze_module(module, options, (), imports, source=source)))
        add("whole analyze_source (all of the above, once)",
            _best(reps, lambda: analyze_source(text, path, Config(), project=True)))
    notes = {
        "  before: import collector as a LibCST visitor": "replaced",
        "  before: code generation recording them": "replaced",
        "  before that: PositionProvider, every node": "replaced",
        "  before: module.visit(collector)": "replaced",
        "analyze_module (positions + walk + diagnoses)": "what a parsed file costs after the parse",
    }
    return [(name, seconds, notes.get(name, "")) for name, seconds in totals.items()]


def screened(paths: Sequence[str]) -> int:
    """How many of `paths` single-file mode really parses: the text prefilter and then the screen."""
    from amplint.config import Config
    from amplint.engine import will_parse

    return sum(will_parse(Path(p).read_text(encoding="utf-8"), Config()) for p in paths)


def table(paths: Sequence[str], rows: List[Tuple[str, float, str]], label: str) -> str:
    lines = sum(Path(p).read_text(encoding="utf-8").count("\n") for p in paths)
    whole = next(seconds for name, seconds, _ in rows if name.startswith("whole"))
    out = [
        "### Profile, " + ("project mode" if "project" in label else "single-file mode"),
        "",
        f"`benchmarks/profile.py` on the {len(paths)} files {label} in the corpus ("
        f"{lines:,} lines): best of several in-process runs, summed over the files. "
        f"Load average {loadavg()}; Python {platform.python_version()}. "
        f"Of these, single-file mode parses {screened(paths)} (the others fail the screen); "
        "each phase is timed here whatever the screen says.",
        "",
        "| phase | seconds | share of analyze_source | note |",
        "|---|---:|---:|---|",
    ]
    for name, seconds, note in rows:
        out.append(f"| {name} | {seconds:.3f} | {seconds / whole:.0%} | {note} |")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] = ()) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(HERE / ".work" / "corpus"))
    parser.add_argument("--project", action="store_true", help="profile the files project mode parses")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--write", metavar="MARKDOWN", help="replace the profile section of this file")
    args = parser.parse_args(list(argv) or None)
    corpus = Path(args.corpus)
    if not corpus.is_dir():
        print(f"profile.py: no corpus at {corpus}; run benchmarks/corpus.py first", file=sys.stderr)
        return 2
    paths = parsed_files(corpus, args.project)
    rows = phases(paths, args.reps)
    label = "that project mode parses" if args.project else "that pass single-file mode's text prefilter"
    text = table(paths, rows, label)
    print(text)
    print("\n".join(machine_lines()))
    if args.write:
        replace_section(Path(args.write), "profile-project" if args.project else "profile", text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
