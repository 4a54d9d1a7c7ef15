"""`amplint check --fix`: rewrite AMP001/AMP002 findings with fix A or fix C.

The codemod reuses the findings and LibCST nodes of `engine.analyze_source`;
it never runs an analysis of its own. Modules:

- `expr`:    how one input expression is cast to float32 (before transforms);
- `safety`:  when wrapping a statement in a disabled autocast block is safe;
- `plan`:    which nodes to cast and which statements to wrap, per finding;
- `cast`:    fix A, a transformer that casts the planned inputs;
- `disable`: fix C, fix A plus `with torch.autocast(..., enabled=False):`;
- `apply`:   files in, rewritten text, diffs and atomic writes out (no printing);
- `command`: the `check --fix/--diff` front end that prints.

This package imports nothing heavy: the engine imports `safety` from here.
"""
