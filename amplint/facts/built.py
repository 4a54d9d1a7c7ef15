"""Where a site's distribution was built, as the last hops of its finding's chain (`amplint.model.Hop`).

A finding on `policy(x).log_prob(a)` whose distribution `Policy.forward` builds
names that constructor in its message; its chain then ends with the
constructor's place too, so JSON, SARIF's code flows and the language server's
related information can point at it. Only the distributions whose inputs the
finding quotes (those not cast where they are built) are named, as in the
message. A constructor of the analysed file has its line and column; one in
another file has the line the walk recorded (`Constructor`), no column.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

from amplint.model import Hop

if TYPE_CHECKING:  # pragma: no cover
    import libcst as cst

    from amplint.facts.model import DistRef, Site
    from amplint.positions import Positions

BUILT = "built"


def built_hops(site: "Site", module: "cst.Module", positions: "Optional[Positions]") -> Tuple[Hop, ...]:
    """A hop per constructor that builds a distribution of `site` elsewhere with inputs the finding quotes."""
    uncast = {id(node) for node in site.uncast}
    hops: List[Hop] = []
    for ref in site.dists:
        if ref.built_in is None or not any(id(node) in uncast for node in ref.all_inputs()):
            continue
        if ref.remote:
            hops.extend(Hop(_short(each.ctor), each.file, each.line, 0, role=BUILT) for each in ref.built_at)
        else:
            hop = _local(ref, module, positions)
            hops.extend([hop] if hop is not None else [])
    return tuple(dict.fromkeys(hops))


def _local(ref: "DistRef", module: "cst.Module", positions: "Optional[Positions]") -> Optional[Hop]:
    """The constructor in a function of this file (its path is the finding's: `pipeline.to_finding`)."""
    if positions is None:
        return None
    try:
        start = positions.start(ref.ctor)
    except KeyError:  # a position the collector did not record: the message still names the line
        return None
    return Hop(_short(module.code_for_node(ref.ctor)), "", start.line, start.column + 1, role=BUILT)


def _short(code: str, limit: int = 40) -> str:
    """The constructor on one line, cut as chains cut a call (`facts.nodes.call_text`)."""
    text = " ".join(code.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
