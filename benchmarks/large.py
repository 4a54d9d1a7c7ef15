"""A corpus of more than 20,000 files of real code, for issue 50's "cost linear in files" goal.

The benchmark corpus (`corpus.py`, 4,637 files) plus pinned source distributions
of other machine-learning and scientific projects, downloaded by name with
``pip download`` like it, `.py` members only, into `.work/large/<project>`.
Project mode once took 10 minutes on 20,000 files against 24 s for
`--no-project`; `project_speed.py` on this folder measures where it stands
(cold `-j 1` and `-j 2`, all against half, and ruff ALL on the same files):

    python benchmarks/large.py                      # download + extract, print counts
    python benchmarks/project_speed.py benchmarks/.work/large --reps 1
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Dict

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpus import PROJECTS, WORK, ensure_corpus, extract_project, py_files  # noqa: E402

LARGE = WORK / "large"
DOWNLOAD_TIMEOUT = 180  # seconds per sdist: pip may run a build backend to read its metadata
# Pinned so that numbers from different days compare; bump deliberately.
MORE: Dict[str, str] = {
    "nemo_toolkit": "3.0.0",
    "espnet": "202511",
    "mmdet": "3.3.0",
    "fairseq": "0.12.2",
    "homeassistant": "2024.3.3",
    "sktime": "1.2.0",
    "astropy": "8.0.2",
    "sympy": "1.14.0",
    "django": "5.2.19",
    "kornia": "0.9.0",
    "monai": "1.6.1",
    "gluonts": "0.17.0",
    "deepspeed": "0.19.8",
    "speechbrain": "1.1.2",
}


def ensure_large() -> Dict[str, int]:
    """Every project extracted under `.work/large` (the benchmark corpus's copied in); files per project."""
    LARGE.mkdir(parents=True, exist_ok=True)
    for name, root in ensure_corpus().items():
        if not (LARGE / name).exists():
            shutil.copytree(root, LARGE / name)
    counts: Dict[str, int] = {name: 0 for name in [*PROJECTS, *MORE]}
    for name, version in MORE.items():
        try:
            extract_project(name, version, LARGE, timeout=DOWNLOAD_TIMEOUT)
        except Exception as exc:  # a project the registry cannot give: counted as 0, said
            print(f"{name}=={version}: {type(exc).__name__}: {exc}", file=sys.stderr)
    for name in counts:
        if (LARGE / name).exists():
            counts[name] = len(py_files(LARGE / name))
    return counts


def main() -> int:
    counts = ensure_large()
    for name, count in counts.items():
        print(f"{name:20} {count:6,}")
    print(f"{'total':20} {sum(counts.values()):6,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
