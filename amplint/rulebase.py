"""The rule API: what a module in `rules/` declares, and the `Diagnosis` its detection makes.

A rule is one `Rule` value: its documentation (modelled on ruff's rule pages:
what it does / why is this bad / example / fix) with Fixit-style inline
VALID/INVALID cases the test suite runs, and its behaviour:

- detection, read from the fact layer (`amplint.facts`): `at_site(site)` for
  a site under its own function's region (`site.state`), `when_reached(site,
  reach)` for a site in a function entered from a region elsewhere (same file
  or, in project mode, another one), and `check_file(facts, claimed)` for
  anything else about the file;
- the message of a finding;
- what `--fix` may do (`fix_strategies`, `wraps_statement`) and how
  `amplint verify` runs it (`verify_recipe`).

Nothing outside `rules/` tests a rule's code: the engine, the fixer and the
verifier ask the rule (`amplint.rules.rule_for`). See docs/architecture.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence, Set, Tuple

from amplint.model import Hop, chain_text
from amplint.facts.probes import ENVELOPE

if TYPE_CHECKING:  # pragma: no cover
    from amplint.facts.model import FileFacts, RegionEntry, Site
    from amplint.facts.reach import Reach

CAST, DISABLE = "cast", "disable-autocast"  # fix A and fix C (`amplint.fix`)
ENABLED_REGION, DISABLED_REGION = "enabled-region", "disabled-region"  # verify recipes (`amplint.verify.runner`)


@dataclass(frozen=True)
class Invalid:
    """Code the rule must flag, with the 1-based (line, column) it must report."""

    code: str
    line: int
    column: int


@dataclass(frozen=True)
class Project:
    """Files checked together (`amplint check DIR`), for what one file cannot show: a helper defined in another.

    `flagged`: the (path, line, column) the rule must report, and no other; none for a VALID project.
    """

    files: Tuple[Tuple[str, str], ...]  # (path, code)
    flagged: Tuple[Tuple[str, int, int], ...] = ()


@dataclass
class Diagnosis:
    """A finding before it becomes plain data: the site, its rule and its region."""

    code: str
    site: "Site"
    region: "RegionEntry"
    chain: Tuple[Hop, ...] = ()  # the calls from the region to the site's function (`amplint.model.Hop`)
    origin: str = ""  # the region's file (display path) when it is not this file's own analysis that found it
    origin_file: str = ""  # the same file as discovered (like `Finding.path`)


# The source text of a node of the analysed file. Rules quote code only through it, so they read no parse
# tree's API: which tree the facts come from is the fact layer's business.
Code = Callable[[object], str]


def _no_message(diagnosis: Diagnosis, code: Code) -> str:
    return diagnosis.code


def _no_fix(diagnosis: Diagnosis) -> Tuple[str, ...]:
    return ()


HIDDEN_DISTRIBUTION = (
    "not fixable: a distribution argument is built where amplint cannot see its constructor "
    "(cast that constructor's inputs to float32)"
)


def _constructor_hidden(diagnosis: Diagnosis) -> str:
    if any(not ref.remote and not ref.has_star and not ref.castable() for ref in diagnosis.site.dists):
        return HIDDEN_DISTRIBUTION  # `Independent(dist, 1)` with `dist` a parameter or an attribute
    remote = [ref for ref in diagnosis.site.dists if ref.remote and ref.inputs and ref.built_in is not None]
    if remote:
        owner, where = remote[0].built_in  # type: ignore[misc]
        if not remote[0].remote_castable:
            return (f"not fixable: the distribution built in `{owner}` at {where} holds one whose constructor is "
                    "not visible there (a parameter or an attribute); cast that constructor's inputs to float32")
        return (f"not fixable here: the distribution is built in `{owner}` at {where}; cast its parameters there "
                "(that changes the function for every caller, which is safe)")
    return "not fixable: the distribution's constructor is not visible where it is used"


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
    projects: Tuple[Project, ...] = ()  # VALID and INVALID examples across files
    # Detection. A site gets at most one diagnosis: rules run in registry order and the first that flags it wins.
    at_site: Optional[Callable[["Site"], bool]] = None  # flag a site under its own region (`site.state`, not None)
    when_reached: Optional[Callable[["Site", "Reach"], bool]] = None  # flag a site entered through a call chain
    check_file: Optional[Callable[["FileFacts", Set[int]], Iterable[Diagnosis]]] = None  # claimed: id(site)s taken
    # Reporting, fixing and verifying.
    message: Callable[[Diagnosis, Code], str] = _no_message
    fix_strategies: Callable[[Diagnosis], Tuple[str, ...]] = _no_fix  # strategies that fix it without guessing
    why_unfixable: Callable[[Diagnosis], str] = _constructor_hidden  # the reason shown when no strategy applies
    wraps_statement: bool = False  # fix C wraps the site's statement in a disabled region (else it only casts)
    verify_recipe: str = ENABLED_REGION  # DISABLED_REGION: inputs made under autocast, computed with it off

    def documentation(self) -> str:
        """Markdown text for `amplint rule CODE`."""
        return (
            f"# {self.code} ({self.name})\n\n{self.summary}\n\n"
            f"## What it does\n{self.what_it_does}\n\n"
            f"## Why is this bad?\n{self.why_bad}\n\n"
            f"## Example\n```python\n{self.example.strip()}\n```\n\n"
            f"## Fix\n{self.fix}\n"
        )


def uncast_under_float16(site: "Site", kind: str) -> bool:
    """A site of `kind` with an input not cast, under its own enabled float16 region (`at_site` of AMP001/3/4)."""
    assert site.state is not None
    return site.kind == kind and site.state.is_float16 and bool(site.uncast)


def spared_on(diagnosis: Diagnosis) -> str:
    """`(CUDA autocast computes ... in float32)` when the region's policy spares every uncast input
    (`Site.promoted`), or `(... stay in range on activations up to ±20 ...)` when its float16 ops do on the probe
    activations (`Site.probed`): the finding stands, the inputs are float16 with no cast, and the message says why
    the device holds."""
    site, device = diagnosis.site, diagnosis.region.spec.device
    if not site.uncast or device is None:
        return ""
    name = device.split(':')[0].upper()
    if len(site.promoted) == len(site.uncast):
        return (f" ({name} autocast computes it in float32, so it holds there; it fails under CPU autocast or with "
                "autocast off)")
    if site.probed is not None and site.probed.holds:
        return (f" (under {name} autocast its float16 ops stay in range on activations up to ±{ENVELOPE:g}, so it "
                "holds there unless they grow beyond)")
    return ""


def region_phrase(diagnosis: Diagnosis) -> str:
    """How a message names the region: `autocast region at line 12 (reached via f (13:9) → g (20:5))`, or,
    when the project walk found it in another file, `autocast region at train.py:12 via model(x) (train.py:12:9)
    → Net.forward → helper (model.py:30:9)`: each call of the chain with its place, so the finding in a
    helper's body names the call that reached it."""
    region = diagnosis.region
    if diagnosis.origin:
        return f"{region.label} at {diagnosis.origin}:{region.line} via {chain_text(diagnosis.chain)}"
    return f"{region.label} at line {region.line}{reached_via(diagnosis)}"


def reached_via(diagnosis: Diagnosis) -> str:
    """` (reached via f (13:9) → g (20:5))` for a site reached through calls of its own file; "" otherwise."""
    return f" (reached via {chain_text(diagnosis.chain)})" if diagnosis.chain else ""


def short(code: str, limit: int = 40) -> str:
    """Source text on one line, cut to `limit` characters: how messages quote expressions."""
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


def listing(nodes: Sequence[object], code: Code) -> str:
    """Up to four expressions, quoted, each once (two constructors may share an input), then how many more."""
    texts = list(dict.fromkeys(short(code(node)) for node in nodes))
    text = ", ".join(f"`{each}`" for each in texts[:4])
    return text + (f" and {len(texts) - 4} more" if len(texts) > 4 else "")
