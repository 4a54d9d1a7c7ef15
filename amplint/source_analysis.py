"""`SourceAnalysis`: one file's result as the engine, `--fix` and the flake8 plugin hold it.

Kept in a module of its own that imports nothing heavy: the engine and the
fixability checks name it without importing LibCST or the analysis.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, List, Optional, Tuple

from amplint.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from amplint.analysis import ModuleAnalysis
    from amplint.rulebase import Diagnosis


@dataclass
class SourceAnalysis:
    """One file's analysis: kept diagnoses paired with their findings, and the tree."""

    path: str
    text: str
    module: Optional["cst.Module"] = None
    analysis: Optional["ModuleAnalysis"] = None
    pairs: List[Tuple["Diagnosis", Finding]] = field(default_factory=list)
    retabbed: bool = False  # analysed on a tab-expanded copy (`amplint.tabs`): the tree's columns are not the text's

    @property
    def findings(self) -> List[Finding]:
        return [finding for _, finding in self.pairs]
