"""Framework-implied regions: the rules now live with the facts (`amplint.facts.frameworks`).

Kept so that `amplint.project.frameworks` still names them; the fact layer
reads file-local framework regions (rule A) and must not import `project`.
"""
from amplint.facts.frameworks import *  # noqa: F401,F403
from amplint.facts.frameworks import FrameworkCall, LiteralArg, LiteralValue  # noqa: F401
