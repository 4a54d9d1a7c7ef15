"""The shape of a rule's documentation, shared by every module in `rules/`.

Modelled on ruff's rule pages (what it does / why is this bad / example /
fix) and Fixit's inline VALID/INVALID cases, which the test suite runs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag, with the 1-based (line, column) it must report."""

    code: str
    line: int
    column: int


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str
    what_it_does: str
    why_bad: str
    example: str
    fix: str
    valid: Tuple[str, ...]
    invalid: Tuple[Invalid, ...]

    def documentation(self) -> str:
        """Markdown text for `amplint rule CODE`."""
        return (
            f"# {self.code} ({self.name})\n\n{self.summary}\n\n"
            f"## What it does\n{self.what_it_does}\n\n"
            f"## Why is this bad?\n{self.why_bad}\n\n"
            f"## Example\n```python\n{self.example.strip()}\n```\n\n"
            f"## Fix\n{self.fix}\n"
        )
