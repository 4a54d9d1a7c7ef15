"""`python -m amplint`: the CLI, with the current directory taken off `sys.path` first.

`python -m` puts the current directory first on `sys.path`, so a checked-out repository holding a
`tomllib/` or `libcst/` folder would have that code run by amplint's own lazy imports, although `check`
promises never to run the code it reads. Every subcommand therefore drops the entry before anything
beyond the standard library is imported (as `verify` already did for the analysed paths; see
docs/security.md). amplint's own modules still load: they are found through the package, not `sys.path`.
"""
import os
import sys


def strip_working_directory(search: list) -> None:
    """Remove (in place) the entries of `search` that name the current directory."""
    here = os.path.realpath(os.curdir)
    search[:] = [entry for entry in search if entry not in ("", os.curdir) and os.path.realpath(entry) != here]


strip_working_directory(sys.path)

from amplint.cli import main  # noqa: E402  (after the strip, on purpose)

sys.exit(main())
