"""The spellings of autocast that torch defines, and the style each one's signature has.

Kept apart from `amplint.regions` (which reads LibCST nodes) so that the
project pass can recognise autocast names on CPython's tree without
importing LibCST.
"""
from __future__ import annotations

import enum
from typing import Dict


class Style(enum.Enum):
    GENERIC = "generic"  # torch.autocast(device_type, dtype=None, enabled=True)
    CUDA = "cuda"  # torch.cuda.amp.autocast(enabled=True, dtype=float16)
    CPU = "cpu"  # torch.cpu.amp.autocast(enabled=True, dtype=bfloat16)
    EXTENDED = "extended"  # a project's own wrapper: keywords only, dtype unknown


AUTOCAST_NAMES: Dict[str, Style] = {
    "torch.autocast": Style.GENERIC,
    "torch.amp.autocast": Style.GENERIC,
    "torch.amp.autocast_mode.autocast": Style.GENERIC,
    "torch.cuda.amp.autocast": Style.CUDA,
    "torch.cuda.amp.autocast_mode.autocast": Style.CUDA,
    "torch.cpu.amp.autocast": Style.CPU,
    "torch.cpu.amp.autocast_mode.autocast": Style.CPU,
}
PARTIAL_NAMES = frozenset({"functools.partial"})
