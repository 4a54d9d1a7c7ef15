"""Cheap text tests that decide which files project mode parses at all.

Parsing with LibCST is the cost of a run (issue 8), so project mode parses:
- the files single-file mode parses (`engine.will_parse`), whose own
  findings project mode keeps;
- *region files* that may lead somewhere: a file that may open an enabled
  float16 region (`may_open_float16_region`) or that builds an Accelerator
  and prepares models, parsed only when it may lead to a probability
  computation (`Loader.worth_entering`, below); a file that builds a
  Lightning `Trainer(precision=...)` when some class line names
  `LightningModule`; a file that builds `TrainingArguments(fp16=...)`;
- files a call from a region reaches, when they may lead to a probability
  computation: a *candidate file* (one that names `log_prob`,
  `distributions`, `kl_divergence` or `entropy`, mentions `cdf`, a tensor log,
  `log(2`, a log-gamma, a tensor exp, a literal below float16's smallest
  subnormal, a density-like call or a configured distribution name) is the file itself or is within
  `LEAD_HOPS` steps of it in the text-level graph of imports and subclass lines,
  or runs its code through any number of project modules (importing it, or defining a base class whose
  override in such a file a `self.` call runs: `leads.py`);
- the files that define the classes such calls need (bases, for the MRO).
Everything else is read (to run these tests) and never parsed.
"""
from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Callable, FrozenSet, Iterable, Iterator, List, Sequence, Tuple

from amplint.densitynames import may_call_density

# A construction and the argument that makes it float16 (rules L, H of frameworks.py): the
# argument must be inside the construction's parentheses (or `**` may pass it).
LIGHTNING = (re.compile(r"(?<!\w)Trainer\("), re.compile(r"\bprecision\s*=|^\s*\*\*|,\s*\*\*"))
HF = (re.compile(r"TrainingArguments\("), re.compile(r"\bfp16\s*=|^\s*\*\*|,\s*\*\*"))
ACCELERATE = (re.compile(r"(?<!\w)Accelerator\("), re.compile(r"\.prepare\("))
# Identifiers that name probability code. Each must start an identifier: a letter before it makes another
# word (`Redistributions`, in every BSD license header, made most files of some projects candidates).
NAME_WORDS = ("log_prob", "distributions", "kl_divergence", "entropy")
# Hand-written math: a tensor log, a log method, log(2*pi); `cdf` also as the end of `icdf`; a log-gamma; an
# exp, as a density in log-parameter form spells it (`logvar.exp()`, `torch.exp(-s)`: `facts.logparams`).
MATH_WORDS = ("cdf", "torch.log", ".log()", "log(2", "lgamma", "gammaln", ".exp()", "torch.exp(")
_NAME_WORD = re.compile("|".join(NAME_WORDS))  # where no ASCII letter comes before (`_found`)
# A literal below float16's smallest subnormal (5.96e-8) that the text can show: 1e-8, 5e-9, 1e-12, 1.e-20;
# `1e-1` and `1e-2` are not tiny, nor is `stage-1`. A digit or a dot comes before it (`_found`).
_TINY_EXPONENT = re.compile(r"e-(?:[12][0-9]|[89])")
_LETTERS = frozenset(string.ascii_letters)
_MANTISSA_ENDS = frozenset(string.digits + ".")

# Each starts with a literal, which `re` searches for fast (10-20x faster than `^[ \t]*...` with re.M).
_AUTOCAST = re.compile(r"(?<!\w)autocast\b")
_HARMLESS = re.compile(r"enabled\s*=\s*False\s*(?:,|$)")
_NOT_FLOAT16 = re.compile(r"bfloat16|float32|float64")
_FLOAT16 = re.compile(r"(?<!b)float16|\bhalf\b")
_ALIAS = re.compile(r"=\s*[\w.]*autocast\b|partial\(\s*[\w.]*autocast\b|\bas\s+\w+")
_CLASS = re.compile(r"class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:")
# These two count only where they begin a line (`_line_starts`).
_FROM = re.compile(r"from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]+)")
_IMPORT = re.compile(r"import[ \t]+([^\n#;]+)")
_DEF = re.compile(r"def[ \t]+(\w+)[ \t]*\(")
_SELF_ATTR = re.compile(r"self\.(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")
# `<owner>.attr = ...`, any owner: `policy.head = NormalHead()`, `heads["pi"].net = n` (and some non-code)
_STORED_ATTR = re.compile(r"\.(\w+)[ \t]*(?::[^=\n]*)?=(?!=)")
_SELF_OWNER = re.compile(r"(?<![\w.])self$")
_IDENT = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


@dataclass(frozen=True)
class Flags:
    """What the text of one file says it may contain."""

    autocast: bool  # may open an enabled, not-bfloat16 autocast region
    lightning: bool  # builds a Trainer with a precision argument
    hf: bool  # builds TrainingArguments with an fp16 argument
    accelerate: bool  # builds an Accelerator and prepares models
    candidate: bool  # may hold a probability computation

    @property
    def region(self) -> bool:
        """May the file open a region of its own: autocast, a Lightning or HF construction, an Accelerator?"""
        return self.autocast or self.lightning or self.hf or self.accelerate


def _last_parts(names: Iterable[str]) -> Tuple[str, ...]:
    return tuple(name.rsplit(".", 1)[-1] for name in names)


def _call_arguments(text: str, end: int) -> "str | None":
    """The text between the parentheses of a call whose name ends at `end`; None when it is not a call."""
    index = end  # no space before "(": prose such as "no autocast (as trained)" is not a call
    if index >= len(text) or text[index] != "(":
        return None
    depth = 0
    for position in range(index, min(len(text), index + 4000)):
        char = text[position]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                return text[index + 1:position]
    return text[index + 1:index + 4000]


def _in_code(text: str, start: int) -> bool:
    """Is `start` outside comments, doctests and (one-line) string literals of its line?"""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    if before.lstrip().startswith((">>>", "...")):
        return False
    quote = ""
    for char in before:  # no escapes or triple quotes: a cheap test, erring towards "code"
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char == "#":
            return False
    return not quote


def _constructs(text: str, pair: Tuple["re.Pattern[str]", "re.Pattern[str]"]) -> bool:
    """A construction in code whose own arguments match (e.g. `Trainer(..., precision=16)`)."""
    built, argument = pair
    for match in built.finditer(text):
        if not _in_code(text, match.start()):
            continue
        arguments = _call_arguments(text, match.end() - 1)
        if arguments is not None and argument.search(arguments):
            return True
    return False


def may_open_float16_region(text: str, extend_autocast: Sequence[str] = ()) -> bool:
    """Could an `autocast` here open an enabled region that is not bfloat16? (conservative)

    Every `autocast(...)` call must say `enabled=False`, or name `bfloat16` (or
    a float32/float64 dtype) and no float16, for the answer to be no; an alias (`ac = torch.autocast`,
    `partial(autocast, ...)`, `import ... as ...`) or a configured autocast
    name means yes. Mentions in import lines, comments, doctests, prose and
    names that merely end in `autocast` (`maybe_autocast`) do not count.
    Most library code only ever disables autocast (measured: 52 of 63 files
    that spell `autocast` in the benchmark corpus).
    """
    if any(name in text for name in _last_parts(extend_autocast)):
        return True
    for match in _AUTOCAST.finditer(text):
        arguments = _call_arguments(text, match.end())
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        line = text[line_start:line_end if line_end >= 0 else len(text)]
        stripped = line.lstrip()
        if not _in_code(text, match.start()) or stripped.startswith(("def ", "async def ", "return ", "yield ")):
            # A comment, a doctest, a string, a method named autocast being defined, or a context
            # manager handed back to a caller: the analysis sees no region in this file for those.
            continue
        if arguments is None:
            if stripped.startswith(("from ", "import ")):
                if " as " in line:
                    return True
                continue
            if _ALIAS.search(line):
                return True
            continue
        if _HARMLESS.search(arguments):
            continue
        if _NOT_FLOAT16.search(arguments) and not _FLOAT16.search(arguments):
            continue  # bfloat16 or float32 autocast
        return True
    return False


def flags(text: str, extend_autocast: Sequence[str] = (),
          names_a_distribution: Callable[[str], bool] = lambda text: False) -> Flags:
    """`names_a_distribution`: does a text name a configured distribution class (`Config.names_a_distribution`)?"""
    return Flags(
        autocast="autocast" in text and may_open_float16_region(text, extend_autocast)
        or any(name in text for name in _last_parts(extend_autocast)),
        lightning="Trainer(" in text and _constructs(text, LIGHTNING),
        hf="TrainingArguments(" in text and _constructs(text, HF),
        accelerate="Accelerator(" in text and ACCELERATE[0].search(text) is not None
        and ACCELERATE[1].search(text) is not None,
        candidate=is_candidate_file(text, names_a_distribution),
    )


def is_candidate_file(text: str, names_a_distribution: Callable[[str], bool] = lambda text: False) -> bool:
    """May this file hold a probability computation?"""
    if any(word in text for word in MATH_WORDS) or names_a_distribution(text):
        return True
    if any(word in text for word in NAME_WORDS) and _found(_NAME_WORD, text, _starts_identifier):
        return True
    return ("e-" in text and _found(_TINY_EXPONENT, text, _ends_mantissa)) or may_call_density(text)


def _starts_identifier(text: str, start: int) -> bool:
    return start == 0 or text[start - 1] not in _LETTERS


def _ends_mantissa(text: str, start: int) -> bool:
    return start > 0 and text[start - 1] in _MANTISSA_ENDS


def class_bases(text: str) -> List[Tuple[str, Tuple[str, ...]]]:
    """(class name, last names of its bases) for every `class` line: the subclass index of the project."""
    found = []
    for match in _CLASS.finditer(text):
        bases = match.group(2) or ""
        names = [n for n in _IDENT.findall(bases) if n not in ("metaclass", "object")]
        found.append((match.group(1), _last_parts(names)))
    return found


def defined_names(text: str) -> List[str]:
    """Names of every `def` in the file (functions and methods alike)."""
    return sorted(set(_DEF.findall(text)))


def assigned_attributes(text: str) -> List[str]:
    """Names of every `self.<name> = ...` in the file."""
    return sorted(set(_SELF_ATTR.findall(text)))


def stored_attributes(text: str) -> List[str]:
    """Names of every `owner.attr = ...` in the file whose owner is not `self` (a superset: no parse)."""
    return sorted({match.group(1) for match in _STORED_ATTR.finditer(text)
                   if not _SELF_OWNER.search(text, max(0, match.start() - 5), match.start())})


def imported_names(text: str) -> List[str]:
    """Dotted names a file imports, as `names.ImportTable` would bind them (relative ones keep their dots),
    and the module of each `from m import *`: its names are the file's too."""
    out: List[str] = []
    for match in _line_starts(_FROM, text):
        module = match.group(1)
        if match.group(2).strip() == "*":
            out.append(module)
            continue
        for name in _IDENT.findall(match.group(2).replace("(", " ").replace(")", " ")):
            if name == "as":
                continue
            out.append(module + name if not module.strip(".") else f"{module}.{name}")
    for match in _line_starts(_IMPORT, text):
        out.extend(n for n in _IDENT.findall(match.group(1)) if n != "as")
    return out


def method_definitions(text: str, name: str) -> int:
    """How many indented `def name(` (or `async def name(`) lines the text has: the methods of that name."""
    pattern = re.compile(r"def[ \t]+%s[ \t]*\(" % re.escape(name))
    return sum(1 for _ in _where(pattern, text, _IN_METHOD_LINE))


def _line_starts(pattern: "re.Pattern[str]", text: str) -> Iterator["re.Match[str]"]:
    """The matches `^[ \\t]*` + `pattern` would give with re.M, in order: those only indentation precedes."""
    return _where(pattern, text, _AFTER_INDENTATION)


def _after_on_its_line(prefix: "re.Pattern[str]") -> Callable[[str, int], bool]:
    """A `_where` test: does `prefix` make up all of the match's line before it (as `^prefix` with re.M)?"""
    def test(text: str, start: int) -> bool:
        return prefix.fullmatch(text, text.rfind("\n", 0, start) + 1, start) is not None
    return test


_AFTER_INDENTATION = _after_on_its_line(re.compile(r"[ \t]*"))
_IN_METHOD_LINE = _after_on_its_line(re.compile(r"[ \t]+(?:async[ \t]+)?"))  # before a method's `def`


def _found(pattern: "re.Pattern[str]", text: str, context: Callable[[str, int], bool]) -> bool:
    return next(_where(pattern, text, context), None) is not None


def _where(pattern: "re.Pattern[str]", text: str, context: Callable[[str, int], bool]) -> Iterator["re.Match[str]"]:
    """The matches of `pattern` whose start `context(text, start)` accepts, as a lookbehind would give them.

    A pattern that starts with a literal is searched for fast; the same test as a lookbehind or a `^` with
    re.M makes `re` try every position (several times slower on the text pass, issue 12). A search goes on
    after the last match, or after the start of a match that does not count, as the regex engine's would.
    """
    position = 0
    while position <= len(text):
        match = pattern.search(text, position)
        if match is None:
            return
        start = match.start()
        if context(text, start):
            yield match
            position = max(match.end(), start + 1)  # an empty match must not stop the search where it is
        else:
            position = start + 1


_CLASS_LINE = re.compile(r"[ \t]*class[ \t]")

# A use that may construct a class: a call, a value in a container or an argument (an annotation too), a name
# in a string. Three scans, not one pattern of three alternatives: a match of one would swallow the text that
# starts another (`Sub3(Sub4, x)` holds both).
_USES = (
    re.compile(r"\b(\w+)[ \t]*\("),
    re.compile(r"[\[(:=,][ \t]*(?:\w+\.)*(\w+)[ \t]*(?=[,\])}]|$)", re.M),
    re.compile(r"['\".](\w+)['\"]"),
)


def used_names(text: str) -> FrozenSet[str]:
    """The names `text` uses as constructing them, `class` lines left out (`class Sub(Base):` makes no `Base`)."""
    found = set()
    for pattern in _USES:
        for match in pattern.finditer(text):
            name = match.group(1)
            if name not in found and not _CLASS_LINE.match(text, text.rfind("\n", 0, match.start()) + 1):
                found.add(name)
    return frozenset(found)
