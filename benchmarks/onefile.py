"""The single-file rows of the benchmark (issue 13, item 9): one file checked in its project.

pre-commit runs `amplint check FILE`, editors run `flake8 FILE`; each indexes the file's whole project
through the summary cache, and reports that file only. These rows time a warm run (the cache filled by an
untimed first run) on one file of the full corpus, to compare in the same run with the whole-project run
(`amp_project_full`) and with flake8 on the same file. The corpus has no finding, so the same pair runs
again on a file of the derived copy that has some: there flake8's plugin analyses the file's text. Neither
tree has project markers of its own (only `.py` files are kept), so a config file names it as the project
through `src`.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import common
from common import Amplint
from corpus import FileSet

# A file that pre-commit would pass alone: pyro's ELBO (log_prob everywhere, regions elsewhere).
PREFERRED = ("pyro-ppl/pyro/infer/trace_elbo.py", "pyro-ppl/pyro/distributions/torch.py")
# In the derived copy this file has findings in its project (two AMP001): flake8 analyses its text.
FOUND = ("pyro-ppl/pyro/distributions/torch.py",)
# (label, numerator key, denominator key, target) for run.Ratio: compared in the same run.
RATIOS = (
    ("amplint check FILE in its project, warm / whole-project run (cold), full", "amp_warm_one",
     "amp_project_full", "(context)"),
    ("amplint check FILE in its project, warm / flake8 E FILE (no plugins)", "amp_warm_one", "f8e_one",
     "(context)"),
    ("flake8 AMP FILE in its project, warm / flake8 E FILE (no plugins)", "amp_warm_f8amp_one", "f8e_one",
     "(context)"),
    ("amplint check FILE in its project, warm / --no-project FILE", "amp_warm_one", "amp_one_alone",
     "(context)"),
    ("flake8 AMP FILE with findings in its project, warm / amplint check FILE with findings, warm",
     "amp_warm_f8amp_found", "amp_warm_found", "(context)"),
)
NOTE = "cache filled by an untimed first run; the whole corpus is the file's project (src)"


@dataclass(frozen=True)
class Row:
    """One command on the one-file set (run.py turns it into a Case)."""

    key: str
    label: str
    fileset: FileSet
    argv: List[str]
    env: Optional[Dict[str, str]] = None
    note: str = ""
    warmup: bool = True  # keys starting with amp_warm get an untimed first run: it fills the cache


def one_file(full: FileSet, preferred: Tuple[str, ...] = PREFERRED) -> FileSet:
    """One file of *full*: the first of `preferred` that exists, else the middle one."""
    by_name = {p.relative_to(full.root).as_posix(): p for p in full.files}
    name = next((n for n in preferred if n in by_name), None)
    path = by_name[name] if name else full.files[len(full.files) // 2]
    return FileSet(f"one file of the corpus ({path.relative_to(full.root)})", full.root, (path,))


def rows(amp: Amplint, full: FileSet, work: Path, flake8_plain: Optional[str], amp_plugin: Optional[str],
         derived: Optional[FileSet] = None) -> Tuple[List[Row], List[Tuple[str, str]]]:
    """The rows, and (label, reason) for those that cannot run.

    `derived`: the derived copy, where PREFERRED's second file has findings (the corpus has none): a warm
    `flake8 FILE` then analyses the file's text, which the one of the corpus never gets to.
    """
    if not amp.available or not amp.has("--no-project-root"):
        return [], [("amplint check FILE in its project, warm", amp.reason or "not offered yet")]
    one = one_file(full)
    out, skipped = _warm_rows(amp, one, full, work, "one", "", amp_plugin)
    out.append(Row("amp_one_alone", "amplint check --no-project FILE", one, [*amp.base(), "--no-project"],
                   common.amplint_env(), warmup=False))
    if flake8_plain is not None:
        out.append(Row("f8e_one", "flake8 --select E FILE (no plugins)", one,
                       [flake8_plain, "--isolated", "--select", "E"], warmup=False))
    if derived is not None:
        found = one_file(derived, FOUND)
        more, not_run = _warm_rows(amp, found, derived, work, "found", " with findings (derived copy)", amp_plugin)
        out += more
        skipped += not_run
    return out, skipped


def _warm_rows(amp: Amplint, one: FileSet, project: FileSet, work: Path, tag: str, what: str,
               amp_plugin: Optional[str]) -> Tuple[List[Row], List[Tuple[str, str]]]:
    """`amplint check FILE` and `flake8 --select AMP FILE` on `one`, with `project` as its project, warm."""
    work.mkdir(parents=True, exist_ok=True)  # `run.py --one-file` on a new machine: nothing made it yet
    config = work / f"{tag}-file.toml"
    # The rows run in the corpus's root with relative paths, so amplint sees the resolved root (the work
    # folder may be a link): `src` must name that one, or the file would be checked without its project.
    config.write_text(f"src = [{json.dumps(str(project.root.resolve()))}]\n")
    cache = work / f"cache-{tag}"
    shutil.rmtree(cache, ignore_errors=True)
    warm = common.amplint_env(cache)
    out = [Row(f"amp_warm_{tag}", f"amplint check FILE{what} (project indexed), warm cache", one,
               [*amp.base(), "--config", str(config)], warm, NOTE)]
    if amp_plugin is not None:
        return out, [(f"flake8 --select AMP FILE{what}", amp_plugin)]
    out.append(Row(f"amp_warm_f8amp_{tag}", f"flake8 --select AMP FILE{what} (project indexed), warm cache", one,
                   [str(common.MAIN_FLAKE8), "--isolated", "--select", "AMP", f"--amplint-config={config}"],
                   warm, NOTE))
    return out, []
