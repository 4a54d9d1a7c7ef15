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
    from amplint.identifiers import Respelled
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
    # Analysed on a copy whose identifiers are as Python reads them (`amplint.identifiers`): `module` is its tree.
    identifiers: Optional["Respelled"] = None

    @property
    def findings(self) -> List[Finding]:
        return [finding for _, finding in self.pairs]

    @property
    def parsed_text(self) -> str:
        """The text `module` was parsed from: `text`, or the copy with its identifiers normalised."""
        return self.text if self.identifiers is None else self.identifiers.text

    @property
    def moves_columns(self) -> bool:
        """Are the tree's columns not all the text's (tabs expanded, an identifier that NFKC makes longer)?"""
        return self.retabbed or (self.identifiers is not None and self.identifiers.moves_columns)

    def as_written(self, respelled: "Respelled") -> "SourceAnalysis":
        """This analysis of `respelled.text` as the analysis of the file's own text: findings in its columns."""
        self.text = respelled.original
        self.identifiers = respelled
        if respelled.moves_columns:
            self.pairs = [(diagnosis, respelled.finding(finding)) for diagnosis, finding in self.pairs]
        return self
