"""The rule catalogue: one module per rule, installed as `amplint.rules`."""
from __future__ import annotations

from typing import Dict, Tuple

from amplint.rulebase import Rule

from . import amp001_unprotected_probability, amp002_disabled_autocast_without_cast

ALL_RULES: Tuple[Rule, ...] = (
    amp001_unprotected_probability.RULE,
    amp002_disabled_autocast_without_cast.RULE,
)
BY_CODE: Dict[str, Rule] = {rule.code: rule for rule in ALL_RULES}
