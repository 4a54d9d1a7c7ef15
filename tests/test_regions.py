"""How each autocast call is read: device, dtype, enabled, under every signature."""
from __future__ import annotations

import pytest

from amplint.engine import check_source
from amplint.model import Precision

TEMPLATE = """import torch
import torch.cuda.amp
from torch.distributions import Normal
with {call}:
    lp = Normal(mu, sigma).log_prob(x)
"""


@pytest.mark.parametrize(
    "call,precision,device",
    [
        ('torch.autocast("cuda")', Precision.FLOAT16, "cuda"),
        ('torch.autocast("cuda:1")', Precision.FLOAT16, "cuda"),
        ('torch.autocast(device_type="cuda", dtype=torch.half)', Precision.FLOAT16, "cuda"),
        ('torch.autocast("cuda", torch.float16)', Precision.FLOAT16, "cuda"),
        ('torch.autocast("cpu", dtype=torch.float16)', Precision.FLOAT16, "cpu"),
        ('torch.autocast("mps")', Precision.FLOAT16, "mps"),
        ('torch.autocast(dev)', Precision.MAYBE_FLOAT16, None),
        ('torch.autocast("cuda", dtype=cfg.dtype)', Precision.MAYBE_FLOAT16, "cuda"),
        ('torch.autocast("cuda", dtype=None)', Precision.FLOAT16, "cuda"),
        ("torch.cuda.amp.autocast()", Precision.FLOAT16, "cuda"),
        ("torch.cuda.amp.autocast(True, torch.float16)", Precision.FLOAT16, "cuda"),
        ("torch.cuda.amp.autocast(enabled=flag)", Precision.FLOAT16, "cuda"),
    ],
)
def test_float16_like_regions(call: str, precision: Precision, device: str) -> None:
    [finding] = check_source(TEMPLATE.format(call=call), "m.py").findings
    assert finding.region is not None
    assert (finding.region.precision, finding.region.device, finding.region.enabled) == (precision, device, True)
    assert finding.region.line == 4


@pytest.mark.parametrize(
    "call",
    [
        'torch.autocast("cuda", dtype=torch.bfloat16)',
        'torch.autocast("cpu")',
        'torch.autocast("cuda", torch.bfloat16)',
        'torch.autocast("cuda", dtype=torch.float32)',
        "torch.cpu.amp.autocast()",
        "torch.cuda.amp.autocast(dtype=torch.bfloat16)",
        'torch.autocast("cuda", enabled=False)',
        'torch.autocast("cuda", None, False)',
        "torch.cuda.amp.autocast(False)",
        "torch.cuda.amp.autocast(enabled=False)",
    ],
)
def test_regions_that_are_not_float16_or_are_disabled(call: str) -> None:
    assert check_source(TEMPLATE.format(call=call), "m.py").findings == []


def test_a_name_imported_twice_matches_if_any_import_is_autocast() -> None:
    source = (
        "import torch\nfrom torch.distributions import Normal\n"
        "try:\n    from torch.amp import autocast\nexcept ImportError:\n    from mylib import autocast\n"
        'with autocast("cuda"):\n    lp = Normal(mu, sigma).log_prob(x)\n'
    )
    [finding] = check_source(source, "m.py").findings
    assert finding.line == 8


def test_star_import_resolves_autocast_and_distributions() -> None:
    source = "from torch import *\nfrom torch.distributions import *\nwith autocast('cuda'):\n    Normal(a, b).entropy()\n"
    [finding] = check_source(source, "m.py").findings
    assert (finding.line, finding.code) == (4, "AMP001")
