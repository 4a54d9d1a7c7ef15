"""Modules kept in containers: `nn.ModuleDict`, `nn.ModuleList`, `nn.Sequential`, dict and list literals.

Real models keep their heads in containers and call them by key or in a loop:
`self.heads[name](h)`, `for head in self.heads.values(): head(h)`,
`self.layers(x)` on an `nn.Sequential`. The collector records, per `self.`
attribute, the classes of the modules it holds (`heads[]` in the project
summary), and writes such calls as calls of `self.heads[]`, which the
project walk resolves to each element's `forward`.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from amplint.facts.mathenv import self_attribute
from amplint.facts.modulecalls import CONTAINERS, ELEMENT, constructed_classes
from amplint.names import ImportTable, dotted_name


def element_classes(value: cst.BaseExpression, imports: ImportTable) -> Tuple[str, ...]:
    """The classes constructed as elements of a container value, as written (`("HeadA", "HeadB")`)."""
    if isinstance(value, cst.Call) and imports.matches(value.func, CONTAINERS):
        if not value.args:
            return ()
        if len(value.args) == 1 and isinstance(value.args[0].value, (cst.Dict, cst.List, cst.Tuple,
                                                                     cst.ListComp, cst.DictComp)):
            return element_classes(value.args[0].value, imports)
        return _constructed([a.value for a in value.args if not a.star])
    if isinstance(value, (cst.List, cst.Tuple)):
        return _constructed([e.value for e in value.elements if isinstance(e, cst.Element)])
    if isinstance(value, cst.Dict):
        return _constructed([e.value for e in value.elements if isinstance(e, cst.DictElement)])
    if isinstance(value, (cst.ListComp, cst.GeneratorExp)):
        return _constructed([value.elt])
    if isinstance(value, cst.DictComp):
        return _constructed([value.value])
    return ()


def _constructed(values: List[cst.BaseExpression]) -> Tuple[str, ...]:
    return constructed_classes(dotted_name(value.func) if isinstance(value, cst.Call) else None for value in values)


def loop_elements(node: cst.For) -> Dict[str, str]:
    """`for head in self.heads:` / `.values()` / `for name, head in self.heads.items():` -> {"head": "self.heads[]"}."""
    source = node.iter
    method = None
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and not source.args:
        method, source = source.func.attr.value, source.func.value
    attr = self_attribute(source)
    if attr is None or method not in (None, "values", "items"):
        return {}
    target = node.target
    if method == "items":
        if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2):
            return {}
        target = target.elements[1].value
    return {target.value: f"self.{attr}{ELEMENT}"} if isinstance(target, cst.Name) else {}


def element_callee(func: cst.BaseExpression, elements: Dict[str, str]) -> Optional[str]:
    """`self.heads[k]` or a loop's `head` as the dotted callee `self.heads[]`; None for any other callee."""
    if isinstance(func, cst.Subscript):
        attr = self_attribute(func.value)
        return None if attr is None else f"self.{attr}{ELEMENT}"
    if isinstance(func, cst.Name):
        return elements.get(func.value)
    return None
