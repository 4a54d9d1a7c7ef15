"""What `amplint verify` runs: every finding of `amplint check`, plus bfloat16 sites.

The findings are check's own list (`engine.check_paths`: project mode, so
sites reached from regions in other files are included, with the config
check would use), so the two commands agree on targets and precision.
Sites in enabled bfloat16 regions are not findings (bfloat16 has float32's
range), so check never reports them. Verify runs them anyway to show the
expected `not-reproduced`; they carry no rule code.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.model import FileError, Finding, Precision, RegionInfo, SiteSpec


@dataclass(frozen=True)
class Target:
    """Something to verify: a finding, or a site in a bfloat16 region that check does not flag."""

    path: str
    line: int
    column: int
    code: Optional[str]
    site: Optional[SiteSpec]
    region: Optional[RegionInfo]
    notes: Tuple[str, ...] = ()  # e.g. where a distribution built elsewhere was rebuilt from
    end: Optional[Tuple[int, int]] = None  # the finding's end (line, column): which expression it covers

    @classmethod
    def from_finding(cls, finding: Finding) -> "Target":
        """The finding as verify runs it, naming where check says its distribution is built (the chain's
        `built` hops): one construction site in both outputs."""
        built = tuple(f"rebuilt from `{hop.name}`, built at {hop.path}:{hop.line} as check reports"
                      for hop in finding.chain if hop.role == "built" and hop.line is not None)
        return cls(finding.path, finding.line, finding.column, finding.code, finding.site, finding.region,
                   notes=built, end=(finding.end_line, finding.end_column))


@dataclass
class Collected:
    targets: List[Target] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    checked: int = 0


def collect(paths: Sequence[str], config: Config = Config()) -> Collected:
    """Check's findings and the bfloat16 sites under `paths`, in path/line order; unreadable files become errors."""
    from amplint.engine import check_paths
    from amplint.project.run import run_project

    # check's list; in project mode without the disk cache, so verify writes nothing into the user's tree
    results = run_project(paths, config, use_cache=False).results if config.project else check_paths(paths, config)
    out = Collected()
    for result in results:
        if result.error is not None:
            out.errors.append(result.error)
            continue
        out.checked += 1
        out.targets.extend(Target.from_finding(finding) for finding in result.findings)
    out.targets = _with_constructors(out.targets)
    out.targets.extend(_bfloat16_sites(paths, config))
    out.targets.sort(key=lambda t: (t.path, t.line, t.column))
    return out


def _with_constructors(targets: List[Target]) -> List[Target]:
    """Targets whose distribution is built out of the site's sight, rebuilt from its constructor where found."""
    from amplint.files import read_source
    from amplint.verify.construction import rebuild

    texts: Dict[str, Optional[str]] = {}
    out = []
    for target in targets:
        if target.site is not None and not target.site.dists:
            if target.path not in texts:
                source = read_source(target.path)
                texts[target.path] = None if isinstance(source, FileError) else source.text
            text = texts[target.path]
            rebuilt = rebuild(text, target.line, target.column, target.site) if text is not None else None
            if rebuilt is not None:
                target = replace(target, site=rebuilt.site, notes=target.notes + (rebuilt.note,))
        out.append(target)
    return out


def _bfloat16_sites(paths: Sequence[str], config: Config) -> List[Target]:
    """Sites in enabled bfloat16 regions of each file (errors were reported by the check pass)."""
    from amplint.analysis import site_spec
    from amplint.engine import analyze_source
    from amplint.files import discover, read_source

    files, _ = discover(paths, config.exclude, config.max_file_size)
    targets: List[Target] = []
    for path in files:
        source = read_source(path)
        if isinstance(source, FileError) or "bfloat16" not in source.text:
            continue
        outcome = analyze_source(source.text, path, config)
        if isinstance(outcome, FileError) or outcome.analysis is None:
            continue
        analysis = outcome.analysis
        for scope in analysis.scopes.values():
            for site in scope.sites:
                state = site.state
                if state is None or not state.spec.enabled or state.spec.precision is not Precision.BFLOAT16:
                    continue
                start = site.position.start
                targets.append(Target(path, start.line, start.column + 1, None,
                                      site_spec(site, analysis.module, analysis.imports), state.info))
    return targets
