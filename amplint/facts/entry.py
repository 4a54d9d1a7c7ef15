"""`EntryContext`: a function of a file entered from a region elsewhere, as the project walk hands it to the facts.

The walk (`amplint.project`) makes these; `facts.reach.entered` reads them. Plain
data, no LibCST: cached project runs name it without importing the parser.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from amplint.model import RegionInfo


@dataclass(frozen=True)
class EntryContext:
    """A function entered from a float16 region elsewhere: what `analyze_source(entries=...)` needs."""

    function: str  # scope key in the entered file
    region: RegionInfo
    label: str  # "autocast region", 'Trainer(precision="16-mixed") region', ...
    region_path: str  # the region's file, as shown in messages (relative to the checked directory)
    chain: Tuple[str, ...]
    region_file: str = ""  # the region's file as discovered (like `Finding.path`)
