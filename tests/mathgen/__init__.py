"""Random density expressions whose float16 truth is measured, to score AMP003/AMP004 against.

`generate(seed, index)` writes one expression over a head's outputs as a
function with a float16 autocast region (`render` for amplint, `runnable` for
torch); `truth.Runner` runs it under CPU float16 autocast and under CUDA's
policy (emulated) against float32 on the input regimes of `regimes`; `score`
asks amplint about each one and sets its findings against the truth, per
device. See tests/test_mathgen.py and benchmarks/mathgen.py.
"""
from .generate import MathCase, generate, render, runnable

__all__ = ["MathCase", "generate", "render", "runnable"]
