"""Cheap text tests that decide which files project mode parses at all.

Parsing with LibCST is the cost of a run (issue 8), so project mode parses:
- *region files*, which may open a float16 region: they spell `autocast`
  (or a configured autocast name), or construct a framework object that
  implies one (`Trainer` + `precision`, `TrainingArguments` + `fp16`,
  `Accelerator` + `prepare`);
- files a call from a region reaches, but only if a *candidate file* (one that
  mentions `log_prob`, `distributions`, `kl_divergence`, `entropy`, `cdf` or a
  configured distribution name) is among them or among the files they import
  or that subclass their classes, by the text-level graph below.
Everything else is read (to run these tests) and never parsed.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Sequence, Tuple

REGION_WORDS = ("autocast",)
FRAMEWORK_WORDS = (("Trainer", "precision"), ("TrainingArguments", "fp16"), ("Accelerator", "prepare"))
CANDIDATE_WORDS = ("log_prob", "distributions", "kl_divergence", "entropy", "cdf")

_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)", re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([^\n#;]+)", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _last_parts(names: Iterable[str]) -> Tuple[str, ...]:
    return tuple(name.rsplit(".", 1)[-1] for name in names)


def is_region_file(text: str, extend_autocast: Sequence[str] = ()) -> bool:
    """May this file open a float16 region (a superset of single-file mode's prefilter)?"""
    if any(word in text for word in REGION_WORDS + _last_parts(extend_autocast)):
        return True
    return any(a in text and b in text for a, b in FRAMEWORK_WORDS)


def is_candidate_file(text: str, extend_distributions: Sequence[str] = ()) -> bool:
    """May this file hold a probability computation?"""
    return any(word in text for word in CANDIDATE_WORDS + _last_parts(extend_distributions))


def class_bases(text: str) -> List[Tuple[str, Tuple[str, ...]]]:
    """(class name, last names of its bases) for every `class` line: the subclass index of the project."""
    found = []
    for match in _CLASS.finditer(text):
        bases = match.group(2) or ""
        names = [n for n in _IDENT.findall(bases) if n not in ("metaclass", "object")]
        found.append((match.group(1), _last_parts(names)))
    return found


def imported_names(text: str) -> List[str]:
    """Dotted names a file imports, as `names.ImportTable` would bind them (relative ones keep their dots)."""
    out: List[str] = []
    for match in _FROM.finditer(text):
        module = match.group(1)
        for name in _IDENT.findall(match.group(2).replace("(", " ").replace(")", " ")):
            if name == "as":
                continue
            out.append(module + name if not module.strip(".") else f"{module}.{name}")
    for match in _IMPORT.finditer(text):
        out.extend(n for n in _IDENT.findall(match.group(1)) if n != "as")
    return out
