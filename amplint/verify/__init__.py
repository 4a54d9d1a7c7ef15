"""`amplint verify`: run each flagged computation before and after its fix.

The verifier never executes the user's code. It rebuilds the computation from
the analysis's `SiteSpec` (distribution class, how each argument is passed,
which are cast, the method) and feeds it tensors it synthesises itself.

Importing this package does not import torch: only `run_verify` does, so the
linter stays torch-free and a missing torch is an exit code, not a traceback.
"""
from amplint.verify.cli import add_verify_parser, run_verify

__all__ = ["add_verify_parser", "run_verify"]
