"""Hand-built SiteSpecs for the verifier tests, in the shape the analysis produces (no tests here)."""
from __future__ import annotations

from typing import Optional, Tuple

from amplint.model import ArgSpec, DistSpec, Precision, RegionInfo, SiteSpec


def arg(code: str, position: Optional[int] = None, name: Optional[str] = None, cast: bool = False,
        literal: bool = False) -> ArgSpec:
    return ArgSpec(name, position, code, cast, literal)


def dist(qualname: str, *args: ArgSpec, components: Tuple[DistSpec, ...] = ()) -> DistSpec:
    return DistSpec(qualname, tuple(args), components)


def log_prob(spec: DistSpec, value: str = "x") -> SiteSpec:
    return SiteSpec("log_prob", (spec,), (arg(value, 0),))


def region(precision: Precision = Precision.FLOAT16, enabled: bool = True, device: str = "cuda") -> RegionInfo:
    return RegionInfo(1, precision, enabled, device, f'"{device}"')


NORMAL = dist("torch.distributions.Normal", arg("mu", 0), arg("sigma", 1))
