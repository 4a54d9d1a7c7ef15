"""The rule catalogue: one module per rule, installed as `amplint.rules`.

A new rule is one new module here (its documentation, examples and detection in
one `RULE = Rule(...)`, see `amplint.rulebase`) plus one line in `ALL_RULES`.
Order matters only for a site two rules would both flag: the first one wins.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

from amplint.rulebase import Rule

from . import (
    amp001_unprotected_probability, amp002_disabled_autocast_without_cast, amp003_handwritten_density,
    amp004_vanishing_epsilon,
)

ALL_RULES: Tuple[Rule, ...] = (
    amp001_unprotected_probability.RULE,
    amp002_disabled_autocast_without_cast.RULE,
    amp003_handwritten_density.RULE,
    amp004_vanishing_epsilon.RULE,
)
BY_CODE: Dict[str, Rule] = {rule.code: rule for rule in ALL_RULES}


def rule_for(code: str) -> Optional[Rule]:
    """The registered rule with this code, or None."""
    return BY_CODE.get(code)
