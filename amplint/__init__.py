"""amplint: find and fix float16 autocast hazards in PyTorch probability code.

Importing this package imports neither torch nor libcst: both load lazily.
"""
__version__ = "0.2.0"

from amplint.guard import AmpLintNonFiniteError, guard  # noqa: E402  (torch-free until a guard is entered)

__all__ = ["AmpLintNonFiniteError", "__version__", "guard"]
