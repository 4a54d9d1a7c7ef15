"""What `amplint verify` runs: every finding of `amplint check`, plus bfloat16 sites.

Sites in enabled bfloat16 regions are not findings (bfloat16 has float32's
range), so check never reports them. Verify runs them anyway to show the
expected `not-reproduced`; they carry no rule code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Sequence

from amplint.config import Config
from amplint.model import FileError, Precision
from amplint.verify.runner import Target


@dataclass
class Collected:
    targets: List[Target] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    checked: int = 0


def collect(paths: Sequence[str], config: Config = Config()) -> Collected:
    """Findings and bfloat16 sites under `paths`, in path/line order; unreadable files become errors."""
    from amplint.analysis import site_spec
    from amplint.engine import analyze_source
    from amplint.files import discover, read_source

    files, errors = discover(paths, config.exclude, config.max_file_size)
    out = Collected(errors=list(errors))
    for path in files:
        source = read_source(path)
        if isinstance(source, FileError):
            out.errors.append(source)
            continue
        outcome = analyze_source(source.text, path, config)
        if isinstance(outcome, FileError):
            out.errors.append(outcome)
            continue
        out.checked += 1
        targets = [Target.from_finding(finding) for finding in outcome.findings]
        analysis = outcome.analysis
        if analysis is not None:
            for scope in analysis.scopes.values():
                for site in scope.sites:
                    state = site.state
                    if state is None or not state.spec.enabled or state.spec.precision is not Precision.BFLOAT16:
                        continue
                    start = site.position.start
                    targets.append(Target(path, start.line, start.column + 1, None,
                                          site_spec(site, analysis.module, analysis.imports), state.info))
        out.targets.extend(sorted(targets, key=lambda t: (t.line, t.column)))
    return out
