"""Measure the hand-written shapes of AMP003/AMP004 under each device's float16 autocast.

The same snippets as tests/test_handwritten_numeric.py (1,024 x 16 logits in [-30, 30] out of an
identity Linear inside the region), plus a sigmoid head, run under CPU float16 autocast and, when
torch sees a GPU, under real CUDA autocast; before and after the cast fix A writes. CUDA's policy
runs `softmax`, `exp`, `log` and `sum` in float32 but `sigmoid`, `add` and `clamp` in their inputs'
dtype, so which shapes stay hazardous depends on the device. Prints a markdown table:

    python benchmarks/handwritten_devices.py
"""
from __future__ import annotations

from typing import Callable, Dict, List, Tuple

import torch
import torch.nn.functional as F

ROWS, CLASSES = 1_024, 16
Shape = Callable[[torch.Tensor, bool], torch.Tensor]


def _log_softmax(logits: torch.Tensor, cast: bool) -> torch.Tensor:
    return torch.log(F.softmax(logits.float() if cast else logits, dim=1))


def _entropy_eps(logits: torch.Tensor, cast: bool) -> torch.Tensor:
    probs = logits.softmax(dim=1)
    return -(probs * torch.log((probs.float() if cast else probs) + 1e-10)).sum(dim=1)


def _clamped(logits: torch.Tensor, cast: bool) -> torch.Tensor:
    probs = logits.softmax(dim=1)
    return torch.log((probs.float() if cast else probs).clamp(min=1e-12))


def _sigmoid_eps(logits: torch.Tensor, cast: bool) -> torch.Tensor:
    probs = torch.sigmoid(logits.float() if cast else logits)
    return torch.log(probs + 1e-10)


SHAPES: Dict[str, Shape] = {
    "`torch.log(F.softmax(x, 1))` (AMP003)": _log_softmax,
    "`-(p * torch.log(p + 1e-10)).sum(1)`, p = softmax (AMP003, AMP004)": _entropy_eps,
    "`torch.log(p.clamp(min=1e-12))`, p = softmax (AMP003, AMP004)": _clamped,
    "`torch.log(torch.sigmoid(x) + 1e-10)` (AMP003, AMP004)": _sigmoid_eps,
}


def _inputs(device: str) -> Tuple[torch.nn.Linear, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    h = (torch.rand(ROWS, CLASSES, generator=generator) * 60.0) - 30.0
    head = torch.nn.Linear(CLASSES, CLASSES)
    with torch.no_grad():
        head.weight.copy_(torch.eye(CLASSES))
        head.bias.zero_()
    return head.to(device), h.to(device)


def measure(device: str) -> List[Tuple[str, str, int, int, int]]:
    """(shape, output dtype, values, non-finite before, non-finite after the cast) per shape."""
    head, h = _inputs(device)
    rows = []
    for name, shape in SHAPES.items():
        outputs = []
        for cast in (False, True):
            with torch.no_grad(), torch.autocast(device, dtype=torch.float16):
                outputs.append(shape(head(h), cast))
        before, after = (int((~torch.isfinite(out)).sum().item()) for out in outputs)
        rows.append((name, str(outputs[0].dtype).replace("torch.", ""), outputs[0].numel(), before, after))
    return rows


def main() -> None:
    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"torch {torch.__version__}; devices: {', '.join(devices)}"
          + (f" ({torch.cuda.get_device_name(0)})" if "cuda" in devices else ""))
    print()
    print("| shape | device | output dtype | non-finite / values | after fix A |")
    print("|---|---|---|---|---|")
    for device in devices:
        for name, dtype, total, before, after in measure(device):
            print(f"| {name} | {device} | {dtype} | {before:,} / {total:,} | {after:,} |")


if __name__ == "__main__":
    main()
