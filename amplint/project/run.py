"""Project mode end to end: scan, summarize, walk, then each file's findings."""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import AbstractSet, Callable, Dict, List, Optional, Sequence, Tuple

from amplint.config import Config
from amplint.cpython_trees import CPythonTrees
from amplint.files import discover_checked
from amplint.model import DistributionBase, FileError, FileResult, Notice
from amplint.parallel import RunPool
from amplint.project.cache import DiskCache, PassCache, code_fingerprint
from amplint.project import configfiles
from amplint.project.accelflow import accel_seeds, held_accelerators
from amplint.project.answer import Answer, AnswerStore, answer_key
from amplint.project.ahead import walk_in_waves
from amplint.project.covered import covered_density_calls, probability_callees, resolved_density_calls
from amplint.project.implied import hf_seeds, lightning_seeds
from amplint.project.loader import Loader, Stats, cache_directory
from amplint.project.modules import ModuleIndex, display_root, project_top
from amplint.project.preparedflow import prepared_seeds
from amplint.project.reading import SUMMARY_READERS
from amplint.project.resolve import Resolver
from amplint.project.float32flow import float32_reads
from amplint.project.returnflow import Returns, call_returns, dist_arguments
from amplint.project.distsubclasses import project_distributions
from amplint.project.spellings import Spelling, project_spellings, with_spellings
from amplint.project.solution import Solution, SolutionStore, project_state
from amplint.project.summary import EntryContext
from amplint.project.textfindings import TextFindings, not_kept
from amplint.project.budget import STACK_CUT
from amplint.project.walk import Seed, Walked, call_seeds, shown, walk
from amplint.witness import Witness


@dataclass
class ProjectRun:
    results: List[FileResult]
    entries: Dict[str, Tuple[EntryContext, ...]]
    stats: Stats = field(default_factory=Stats)
    # The project's own autocast spellings and distribution classes: `with_spellings(config, ...)`.
    spellings: Tuple["Spelling | DistributionBase", ...] = ()
    texts: TextFindings = field(default_factory=not_kept)  # the run's cache, for texts a front end analyses itself
    notices: Tuple[Notice, ...] = ()  # what the run says of itself: its work bound reached (`project.budget`)


def run_project(
    paths: Sequence[str], config: Config, cache_dir: Optional[str] = None, use_cache: Optional[bool] = None,
    report: Optional[AbstractSet[str]] = None,
) -> ProjectRun:
    """Check `paths` as one project.

    `report` names the files (as discovered) whose results are computed and returned, None every file:
    the walk is the same, so their findings are those of the whole run (`amplint.scope`).

    `cache_dir` overrides where summaries are cached (default: `$AMPLINT_CACHE_DIR`,
    else `.amplint_cache/` in the project top); `use_cache=False`, or
    `AMPLINT_NO_CACHE=1` in the environment, runs without reading or writing it.
    """
    tops = sorted({project_top(p) for p in paths})
    directory = cache_dir or cache_directory(paths, tops[0] if tops else ".")
    if use_cache is None:
        use_cache = os.environ.get("AMPLINT_NO_CACHE", "") in ("", "0")
    cache = DiskCache(directory if use_cache else None)
    fingerprint = code_fingerprint()
    given = AnswerStore(cache, answer_key(fingerprint, config, paths, report, tops))
    kept = given.answer()
    if kept is not None:  # nothing the last run looked at has changed: its answer, with nothing read
        return ProjectRun(list(kept.results), kept.entries, Stats(solution_cached=True, answer_cached=True),
                          kept.spellings, TextFindings(cache, fingerprint), kept.notices)
    witness = Witness() if use_cache else None  # what the run looks at, for its answer's stamps
    files, errors = discover_checked(paths, config, prefer=tuple(report or ()), witness=witness)
    parsed = CPythonTrees()  # the run's CPython trees: several passes read the same files
    # The run's workers, if a pass pays for them: every later pass uses them too.
    pool = RunPool(config.jobs, SUMMARY_READERS)
    passes = PassCache(cache, fingerprint, tuple(tops))
    try:
        names = project_spellings(files, config.jobs, parsed, pool, passes)
        modules = ModuleIndex.build(files, tops, witness)
        classes = project_distributions(names.classes, modules, parsed, frozenset(config.extend_distributions))
        spellings = names.spellings + classes
        config = with_spellings(config, spellings)
        root = display_root(paths)
        loader = Loader(files, config, cache, modules, fingerprint, parsed, pool, passes)
        results, contexts, said = _walk_and_report(loader, files, errors, config, tops, root, report, witness)
    finally:
        pool.close()
    notices = tuple(Notice(shown(root, os.getcwd()), message) for message in said)
    if witness is not None and not witness.racy:  # racy: a change made as it was read could go unseen
        given.keep(Answer(witness.seen, tuple(results), contexts, spellings, notices))
    return ProjectRun(results, contexts, loader.stats, spellings, TextFindings(cache, fingerprint), notices)


def _walk_and_report(
    loader: Loader, files: Sequence[str], errors: Sequence[FileError], config: Config, tops: Sequence[str],
    root: str, report: Optional[AbstractSet[str]], witness: Optional[Witness] = None,
) -> Tuple[List[FileResult], Dict[str, Tuple[EntryContext, ...]], List[str]]:
    """The text pass, the project's solution (from the cache when nothing changed), then each wanted file's
    contexts and results, and what the run must say of itself: where the flow's work bound cut the walk, and
    whether Python's stack cut a question, if either did."""
    loader.scan()
    # The config files under the tops: the key, the Lightning settings and the built classes read them, and the
    # walk for them is made once, when the first of those asks.
    settings_files = functools.cache(lambda: tuple(configfiles.config_files(tops, config, witness)))
    store = SolutionStore(loader.cache, project_state(
        loader.fingerprint, config, files, {path: info.content for path, info in loader.info.items()},
        {path: error.message for path, error in loader.errors.items()}, tops, root, settings_files))
    targets = functools.cache(lambda: configfiles.built_targets(settings_files()))
    loader.know_configured(targets)
    resolver = Resolver(loader, targets)
    solution = store.solution()
    if solution is None:
        solution = _solve(loader, resolver, files, settings_files, config, root)
        store.keep_solution(solution)
    else:
        loader.stats.solution_cached = True
        loader.errors.update(solution.errors)
        loader.know_region_files(solution.region_files)
    entries = solution.entries
    eager = set(loader.region_files())
    wanted = files if report is None else [path for path in files if path in report]
    parsed = [p for p in wanted if p in eager or p in entries]
    # What each file is analysed with; a walk for a front end that analyses files itself (`report` empty)
    # gives it for every file.
    contextual = parsed if report else [p for p in files if p in eager or p in entries]
    returns: Returns = {}  # what each function returns, once for every file that calls it
    contexts = {p: entries.get(p, ()) + call_returns(loader, resolver, p, root, entries.get(p, ()), returns)
                + solution.arguments.get(p, ()) + covered_density_calls(loader, resolver, p)
                + resolved_density_calls(loader, resolver, p, root, entries.get(p, ()))
                + probability_callees(loader, resolver, p) + _float32_reads(loader, resolver, p, entries.get(p, ()))
                + held_accelerators(loader, resolver, p, root)
                for p in contextual}
    contexts = {p: found for p, found in contexts.items() if found}
    results = [FileResult(error.path, error=error) for error in errors if report is None or error.path in report]
    loader.prepare_findings([(path, contexts.get(path, ())) for path in parsed])
    for path in wanted:
        if path in loader.errors:
            results.append(FileResult(path, error=loader.errors[path]))
            continue
        if path not in eager and path not in entries:
            results.append(FileResult(path))
            continue
        outcome = loader.findings(path, contexts.get(path, ()))
        if isinstance(outcome, FileError):
            results.append(FileResult(path, error=outcome))
        else:
            results.append(FileResult(path, findings=sorted(outcome, key=lambda f: f.sort_key())))
    said = [solution.cut.message()] if solution.cut is not None else []
    if solution.stack_cut or resolver.doubts.stack_cuts:  # the solving's, or the contexts' questions since
        said.append(STACK_CUT)
    return results, contexts, said


def _solve(loader: Loader, resolver: Resolver, files: Sequence[str], settings_files: Callable[[], Sequence[str]],
           config: Config, root: str) -> Solution:
    """The region files' summaries, the walk in waves, and the join over call sites: what the project's float16
    regions enter, and the distributions they hand on, with the files found unreadable on the way."""
    known_errors = set(loader.errors)
    loader.prepare_summaries(loader.region_files())  # the parses, in a process pool when it pays
    for path in loader.region_files():
        loader.summary(path)
    settings = configfiles.scan(settings_files()) if loader.subclass_files("LightningModule") else ()

    def walk_pass() -> Walked:
        resolver.new_pass()
        budget = resolver.flow.budget
        budget.start(recording=loader.speculating)
        try:
            walked = walk(_seeds(loader, resolver, root, settings), loader, resolver, config.max_depth, root)
        finally:
            budget.stop()
            loader.stats.walk_work = budget.spent
        walked.stack_cut = resolver.doubts.stack_cuts > 0
        if walked.cut is not None:
            resolver.new_pass()  # the answers the bound cut are unsure: the contexts after the walk ask again
        return walked

    walked = walk_in_waves(loader, walk_pass)  # the walk's summaries parsed in a pool, wave by wave
    entries = walked.entries
    eager = set(loader.region_files())
    reached = {p: entries.get(p, []) + walked.givers.get(p, []) for p in set(entries) | set(walked.givers)}
    joined, arguments = dist_arguments(
        loader, resolver, [p for p in files if p in eager or p in reached], reached, root)
    for path, found in joined.items():  # callees given a distribution: analysed as entered too
        known = {entry.function for entry in entries.get(path, ())}
        for entry in found:
            if entry.function not in known:
                known.add(entry.function)
                entries.setdefault(path, []).append(entry)
    return Solution({path: tuple(found) for path, found in entries.items()},
                    {path: tuple(found) for path, found in arguments.items()},
                    {path: error for path, error in loader.errors.items() if path not in known_errors},
                    tuple(loader.region_files()), walked.cut,
                    walked.stack_cut or resolver.doubts.stack_cuts > 0)  # the walk's last pass, or the join


def _seeds(loader: Loader, resolver: Resolver, root: str, settings: tuple) -> List[Seed]:
    """Every seed source's seeds, in turn, until the work bound is reached: the source during which it is
    reached is dropped whole, with those after it (`budget.cut`), and the walk then enters nothing."""
    sources: List[Tuple[str, Callable[[], List[Seed]]]] = [
        ("calls made in float16 regions", lambda: call_seeds(loader, resolver, root)),
        ("calls made in Accelerate's regions", lambda: accel_seeds(loader, resolver, root)),
        ("Lightning's entry points", lambda: lightning_seeds(loader, resolver, root, settings)),
        ("Hugging Face Trainer's entry points", lambda: hf_seeds(loader, resolver, root)),
        ("the calls of models prepared by Accelerate", lambda: prepared_seeds(loader, resolver, root)),
    ]
    budget = resolver.flow.budget
    seeds: List[Seed] = []
    for number, (name, source) in enumerate(sources):
        found = source()
        if budget.reached:
            budget.cut_at(name, 0, len(sources) - number - 1)
            break
        seeds.extend(found)
    return seeds


def _float32_reads(loader: Loader, resolver: Resolver, path: str, entered: Sequence[EntryContext]) -> tuple:
    """What the functions of `path` that hold sites read that is float32 on every path (`project.float32flow`);
    also those the walk entered, whose sites the summary may not see (`self.p` stored from a project helper)."""
    summary = loader.summary(path) if path in loader.info else None
    walked = {entry.function for entry in entered}
    scopes = [key for key, function in (summary.functions.items() if summary is not None else ())
              if function.sites or key in walked]
    return float32_reads(resolver.flow, path, scopes) if scopes else ()
