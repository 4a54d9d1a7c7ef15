"""amplint: find and fix float16 autocast hazards in PyTorch probability code.

Importing this package imports neither torch nor libcst: both load lazily.
"""
__version__ = "0.1.0"
