"""flake8 plugin: the same findings as `amplint check`, through flake8.

Registered as `AMP` under `flake8.extension`. It runs `engine.analyze_source`
on the text flake8 already read, so there is no second copy of the analysis
and each file is parsed by LibCST once, and in project mode not at all when the
project's cache holds its findings for that text (`engine.analyze_in_project`).
Files that never mention autocast stop at the engine's text prefilter before
any parsing. `# noqa` is left to flake8 (the engine is asked not to apply it),
so `--disable-noqa` and flake8's noqa reporting behave as for any other plugin.
Settings come from the nearest `[tool.amplint]` / `amplint.toml`; flake8's own
--select/--ignore/--per-file-ignores still apply on top because flake8 filters
what we yield.
"""
from __future__ import annotations

import ast
import logging
import sys
from typing import TYPE_CHECKING, Any, ClassVar, Iterator, Optional, Sequence, Tuple, Type, Union

from amplint import __version__
from amplint.config import Config
from amplint.model import FileError, Finding
from amplint.selection import path_matches

if TYPE_CHECKING:  # pragma: no cover
    from amplint.scope import Context, Given

LOG = logging.getLogger("flake8.amplint")

Report = Tuple[int, int, str, Type[Any]]


class AmpLintConfigError(Exception):
    """A configuration amplint cannot use: `run` turns it into one AMP000 row, never a traceback.

    Raised out of a plugin, flake8 stops the whole run (with a multiprocessing traceback when it runs jobs), and
    since the plugin is on by default that broke flake8 for every other plugin of the repository.
    """


CONFIG_ERROR_CODE = "AMP000"  # the row that says amplint could not run, as flake8's own E902 does for a file


class AmpLintChecker:
    """A flake8 tree plugin; it takes `tree` only because flake8 classifies plugins by their parameters."""

    name = "amplint"
    version = __version__
    config_file: ClassVar[Optional[str]] = None
    _said: ClassVar[set] = set()  # the configuration errors this process has reported (each once)
    _shared_said: ClassVar[Any] = None  # a flag flake8's forked workers share: the run's config error was reported
    _told: ClassVar[set] = set()  # the project runs' notices this process has printed (each once)
    _shared_told: ClassVar[Any] = None  # likewise shared: the run's first notice was printed
    filenames: ClassVar[Tuple[str, ...]] = ()  # flake8's positional paths, for project mode
    _context: ClassVar[Optional["Context"]] = None  # the project walks, per process, computed on first use

    def __init__(self, tree: ast.AST, lines: Sequence[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename

    @classmethod
    def add_options(cls, option_manager: Any) -> None:
        option_manager.add_option(
            "--amplint-config",
            default=None,
            parse_from_config=True,
            help="amplint.toml or pyproject.toml to read instead of the nearest one to each file",
        )

    @classmethod
    def parse_options(cls, options: Any) -> None:
        cls.config_file = getattr(options, "amplint_config", None)
        cls.filenames = tuple(getattr(options, "filenames", None) or ())
        cls._context = None
        cls._said, cls._told = set(), set()
        cls._shared_said = _shared_flag()  # made before flake8 forks its workers, so that they share it
        cls._shared_told = _shared_flag()

    def _config(self) -> Config:
        from amplint import configfile

        if self.config_file:
            loaded = configfile.load_config_file(self.config_file)
        else:
            loaded = configfile.config_for_file(self.filename)
        if isinstance(loaded, configfile.ConfigError):
            raise AmpLintConfigError(f"amplint: {loaded}")
        return loaded.config

    def _project_context(self) -> "Given":
        """What this file's project walk gives it (project mode): the functions entered from regions in other
        files, the project's own autocast spellings, and the walk's cache, which keeps this file's findings.

        A file named on flake8's command line is walked with its project (`amplint.scope`), as
        `amplint check FILE` walks it, so `flake8 model.py` reports what a whole-project run reports for
        it; files found under a named directory are walked with flake8's other paths. The walks run once
        per process and compute no findings: the file's own text is analysed below.
        """
        from amplint.scope import Given

        cls = type(self)
        if self.filename in ("stdin", "-") or not cls.filenames or "-" in cls.filenames:
            return Given()
        if cls._context is None:
            from amplint import configfile
            from amplint.scope import Context

            loaded = configfile.resolve_config(cls.filenames, cls.config_file)
            if isinstance(loaded, configfile.ConfigError):
                raise AmpLintConfigError(f"amplint: {loaded}")
            from amplint.cstimport import own_classes_compiled_once

            with own_classes_compiled_once():  # as `amplint check` has them: compiled once per machine
                cls._context = Context.build(list(cls.filenames), loaded.config) if loaded.config.project else Context()
            for notice in cls._context.notices:  # a work bound reached: flake8 has no row for it, so stderr
                if _first_time(str(notice), cls._told, cls._shared_told):
                    print(f"amplint: {notice}", file=sys.stderr)
        return cls._context.of(self.filename)

    def run(self) -> Iterator[Report]:
        from amplint.collection import batch_collection

        # As `amplint check` runs: no cyclic collections over the many objects a walk and a parse build, which
        # hold no cycles (`amplint.collection`); flake8's own thresholds come back after.
        try:
            with batch_collection():
                findings = self._findings()
        except AmpLintConfigError as exc:
            # One row, once per process, on the first file it governs: flake8 exits 1 and the other plugins run.
            if _first_time(str(exc), type(self)._said, type(self)._shared_said):
                yield 1, 0, f"{CONFIG_ERROR_CODE} {exc}; amplint's checks are off", type(self)
            return
        if isinstance(findings, FileError):
            LOG.warning("amplint skipped %s", findings)
            return
        for finding in findings:
            # flake8 adds 1 to the column we yield; amplint's columns are already 1-based.
            yield finding.line, finding.column - 1, f"{finding.code} {finding.message}", type(self)

    def _findings(self) -> Union[Sequence[Finding], FileError]:
        from amplint.engine import analyze_in_project, analyze_source
        from amplint.project.spellings import with_spellings

        config = self._config()
        if any(path_matches(self.filename, pattern) for pattern in config.exclude):
            return ()
        text = "".join(self.lines)
        if not config.project:
            outcome = analyze_source(text, self.filename, config, noqa=False)
            return outcome if isinstance(outcome, FileError) else outcome.findings
        given = self._project_context()
        config = with_spellings(config, given.spellings)
        if not given.entries and not _may_report_alone(text, config):
            return ()  # no finding of its own can be here, and no region elsewhere calls in
        return analyze_in_project(text, self.filename, config, given.entries, noqa=False, texts=given.texts)


def _first_time(message: str, said: set, flag: Any) -> bool:
    """Is this message new to the run? Each is said once per process (`said`); the first one also once
    across flake8's forked workers, which share `flag` (so `flake8 .` prints one AMP000 line)."""
    if message in said:
        return False
    said.add(message)
    if flag is None or len(said) > 1:
        return True
    with flag.get_lock():
        first, flag.value = not flag.value, 1
    return first


def _shared_flag() -> Any:
    """A 0/1 value in shared memory with a lock (None where the platform has none): forked workers share it."""
    try:
        import multiprocessing

        return multiprocessing.Value("b", 0)
    except (ImportError, OSError):  # no semaphores (some sandboxes): each process says it once
        return None


def _may_report_alone(text: str, config: Config) -> bool:
    """Can project mode report a finding in this file without entries from other files?

    A finding sits at a probability call of this file, under a region: one spelled `autocast` in
    code (the check `engine.will_parse` makes, CPython's tree included), or a framework's (a
    Lightning Trainer, Hugging Face TrainingArguments, an Accelerate-prepared model), which the
    text flags find. Anything else is spared a LibCST parse, as `amplint check` spares it.
    """
    from amplint.engine import will_parse
    from amplint.identifiers import analysis_text
    from amplint.project import prefilter

    if will_parse(text, config):
        return True
    flags = prefilter.flags(analysis_text(text), config.extend_autocast, config.names_a_distribution)
    return flags.lightning or flags.hf or flags.accelerate
