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
from amplint.model import DistSpec, FileError, Finding, Notice, Precision, RegionInfo, SiteSpec


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
    built: Tuple[Tuple[str, int], ...] = ()  # (path, line) of each constructor check names (`built` hops)
    # The constructor at the first `built` place with its slots read (`slots.read_built`): one per class it may
    # be (and per slot the receiver takes of it), run when check's text of it cannot be rebuilt or the receiver
    # is a slot of it (`preferred`); and what that reading found.
    alternatives: Tuple[DistSpec, ...] = ()
    alternative_notes: Tuple[str, ...] = ()
    preferred: bool = False

    @classmethod
    def from_finding(cls, finding: Finding) -> "Target":
        """The finding as verify runs it, naming where check says its distribution is built (the chain's
        `built` hops): one construction site in both outputs."""
        hops = [hop for hop in finding.chain if hop.role == "built" and hop.line is not None]
        built = tuple(f"rebuilt from `{hop.name}`, built at {hop.path}:{hop.line} as check reports" for hop in hops)
        return cls(finding.path, finding.line, finding.column, finding.code, finding.site, finding.region,
                   notes=built, end=(finding.end_line, finding.end_column),
                   built=tuple((hop.path or finding.path, hop.line) for hop in hops))  # type: ignore[misc]


@dataclass
class Collected:
    targets: List[Target] = field(default_factory=list)
    errors: List[FileError] = field(default_factory=list)
    checked: int = 0
    notices: Tuple[Notice, ...] = ()  # what check's walk said of itself (its work bound reached)


def collect(paths: Sequence[str], config: Config = Config()) -> Collected:
    """Check's findings and the bfloat16 sites under `paths`, in path/line order; unreadable files become errors."""
    from amplint.engine import check
    from amplint.project.run import run_project

    # check's list; in project mode without the disk cache, so verify writes nothing into the user's tree
    if config.project:
        run = run_project(paths, config, use_cache=False)
        results, notices = run.results, run.notices
    else:
        results, notices = check(paths, config).results, ()
    out = Collected(notices=notices)
    for result in results:
        if result.error is not None:
            out.errors.append(result.error)
            continue
        out.checked += 1
        out.targets.extend(Target.from_finding(finding) for finding in result.findings)
    out.targets = _with_alternatives(out.targets, paths)
    out.targets.extend(_bfloat16_sites(paths, config))
    out.targets.sort(key=lambda t: (t.path, t.line, t.column))
    return out


def _with_alternatives(targets: List[Target], paths: Sequence[str]) -> List[Target]:
    """Targets with their distribution read at the place check says it is built, slots and all."""
    from amplint.verify.sliceimports import Finder, bases_of
    from amplint.verify.slicer import Parsed, Slicer
    from amplint.verify.slots import first_alternatives, receiver_of, viewed

    finder = Finder(bases_of(paths))
    files: Dict[str, Parsed] = {}  # files read, shared by every target's slicer
    out = []
    for target in targets:
        if target.built and target.site is not None and len(target.site.dists) == 1:
            slicer = Slicer(finder, cache=files)
            found = first_alternatives(slicer, target.built)
            if found is not None:
                receiver = receiver_of(slicer, target.path, target.line, target.column, target.end,
                                       target.site.method)
                specs = [each for view in receiver.views for each in (viewed(spec, view) for spec in found.specs)
                         if each is not None]
                notes = found.notes + ((receiver.note,) if receiver.note else ())
                target = replace(target, alternatives=tuple(specs), alternative_notes=notes,
                                 preferred=receiver.views != (None,))
        out.append(target)
    return out


def _bfloat16_sites(paths: Sequence[str], config: Config) -> List[Target]:
    """Sites in enabled bfloat16 regions of each file (errors were reported by the check pass)."""
    from amplint.analysis import site_spec
    from amplint.engine import analyze_source
    from amplint.files import discover_checked, read_source

    files, _ = discover_checked(paths, config)
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
