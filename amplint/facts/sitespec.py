"""The plain-data description of a site (`model.SiteSpec`) that findings carry and the verifier rebuilds."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set

import libcst as cst

from amplint import dtypes
from amplint.facts.model import DistRef, Site
from amplint.facts.sites import DISTRIBUTION
from amplint.model import ArgSpec, DistributionBase, DistSpec, SiteSpec
from amplint.names import ImportTable


def site_spec(site: Site, module: cst.Module, imports: ImportTable,
              bases: Sequence[DistributionBase] = ()) -> SiteSpec:
    """The plain-data description of a site that the verifier rebuilds; `bases`: the project's distribution
    classes (`FileFacts.distribution_bases`), whose library bases their specs name."""
    specs = _Specs(module, imports, site.wide_names, {base.name: base for base in bases})
    values = []
    position = 0
    for arg in site.call.args if isinstance(site.call, cst.Call) else ():  # a site of another kind: no values
        if site.method == "kl_divergence" or arg.star:
            break
        values.append(specs.arg_spec(arg, position if arg.keyword is None else None))
        position += 1
    math = site.kind != DISTRIBUTION and bool(site.uncast)
    spared = math and len(site.promoted) == len(site.uncast)
    return SiteSpec(site.method, tuple(specs.dist_spec(d) for d in site.dists), tuple(values), site.kind, spared,
                    site.probed if math and not spared else None, site.reached if math else ())


@dataclass(frozen=True)
class _Specs:
    """The specs of one site's arguments and constructors.

    Methods, not closures: `dist_spec` calls itself, and a recursive closure is a cycle that would keep the
    module's whole tree until the cyclic collector ran (`amplint.collection`).
    """

    module: cst.Module
    imports: ImportTable
    wide_names: Set[str]
    bases: Dict[str, DistributionBase]

    def arg_spec(self, arg: cst.Arg, position: Optional[int]) -> ArgSpec:
        name = arg.keyword.value if arg.keyword is not None else None
        wide = dtypes.is_wide(arg.value, self.imports, self.wide_names.__contains__)
        return ArgSpec(name, position, self.module.code_for_node(arg.value), wide, dtypes.is_number(arg.value))

    def dist_spec(self, ref: DistRef) -> DistSpec:
        args: List[ArgSpec] = []
        components: List[DistSpec] = []
        comp_nodes = {id(c.ctor): c for c in ref.components}
        position = 0
        for arg in ref.ctor.args:
            index = position if arg.keyword is None else None
            if arg.keyword is None:
                position += 1
            if arg.star:
                continue
            component = next((c for c in ref.components
                              if c.ctor is arg.value or (c.binding is not None and c.binding == _name_of(arg.value))),
                             None)
            if component is not None and id(component.ctor) in comp_nodes:
                components.append(self.dist_spec(component))
            else:
                args.append(self.arg_spec(arg, index))
        return DistSpec(ref.qualname, tuple(args), tuple(components), derived=self.bases.get(ref.qualname))


def _name_of(node: cst.BaseExpression) -> Optional[str]:
    return node.value if isinstance(node, cst.Name) else None
