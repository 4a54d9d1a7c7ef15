"""Framework-implied float16 regions: the rules, each one stated and tested.

Some frameworks turn autocast on for code that never spells `autocast`. Each
rule below names the construct that switches float16 on, the code it runs in
that region, and how its precision argument is read. A precision that is not a
literal (a config value, `**kwargs`) cannot be read statically, so the region
is *maybe-float16*, as for `torch.autocast(dtype=variable)`.

Rule L (PyTorch Lightning). When the project constructs
`Trainer(precision=16 | "16" | "16-mixed" | "16-true")`, the `training_step`,
`validation_step`, `test_step`, `predict_step` and `forward` methods of every
`LightningModule` subclass in the project run in a float16 region. Lightning
wraps these hooks in `torch.autocast(dtype=float16)` (the `MixedPrecision`
plugin). `"bf16*"`, `32`, `64` and a missing `precision` give no region.

Rule A (Hugging Face Accelerate). `Accelerator(mixed_precision="fp16")`:
`accelerator.autocast()` used as a context manager opens a float16 region, and
a model returned by `accelerator.prepare(...)` runs its `forward` in one
(Accelerate replaces `model.forward` by an autocast-wrapped copy), so every
call `model(...)` of a prepared model is a call made in a float16 region, even
under `autocast(enabled=False)`. `"bf16"` gives a bfloat16 region, `"no"` none.
A missing `mixed_precision` is read from `accelerate config`/the environment:
maybe-float16. The receiver is bound to an `Accelerator(...)` in the same
file (a local, a module global or a `self.` attribute), or, in project mode,
it holds one the project builds elsewhere (`project/accelflow.py`): a
parameter given one at some call site (the join over every call site in the
project), a local bound to a factory that returns one (`return
Accelerator(...)`, `return acc or Accelerator(...)`), a `self.` attribute
assigned one (`self.accelerator = accelerator` in `__init__`). Of several, the
most float16 counts. `x.autocast()` on an object the project never gives an
`Accelerator(...)` (a library entry point's parameter, configured by code
outside the project) is not a region: its precision cannot be read, and a
guess would report code the project never runs in float16.

Rule H (Hugging Face Trainer). When the project constructs
`TrainingArguments(fp16=True)` (or `Seq2SeqTrainingArguments`), `compute_loss`
of every `transformers.Trainer` subclass in the project, and the `forward` of
the model passed to a `Trainer(model=...)` the project constructs, run in a
float16 region (`Trainer.autocast_smart_context_manager`).

This module holds names and pure functions only: no LibCST, so the project
pass can use it on cached summaries without importing the parser.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional, Tuple, Union

from amplint.model import Precision

LiteralValue = Union[str, int, float, bool, None]

LIGHTNING_TRAINER = frozenset(
    {
        "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
        "lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
        "lightning.pytorch.trainer.trainer.Trainer",
    }
)
LIGHTNING_MODULE = frozenset(
    {
        "pytorch_lightning.LightningModule", "pytorch_lightning.core.LightningModule",
        "pytorch_lightning.core.module.LightningModule", "pytorch_lightning.core.lightning.LightningModule",
        "lightning.LightningModule", "lightning.pytorch.LightningModule", "lightning.pytorch.core.LightningModule",
        "lightning.pytorch.core.module.LightningModule",
    }
)
LIGHTNING_HOOKS = ("training_step", "validation_step", "test_step", "predict_step", "forward")
HF_TRAINING_ARGS = frozenset(
    {
        "transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments",
        "transformers.training_args.TrainingArguments", "transformers.training_args_seq2seq.Seq2SeqTrainingArguments",
    }
)
HF_TRAINER = frozenset(
    {"transformers.Trainer", "transformers.Seq2SeqTrainer", "transformers.trainer.Trainer",
     "transformers.trainer_seq2seq.Seq2SeqTrainer"}
)
HF_HOOKS = ("compute_loss",)
HF_PRETRAINED = frozenset({"transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel"})
ACCELERATOR = frozenset({"accelerate.Accelerator", "accelerate.accelerator.Accelerator"})
NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "torch.nn.modules.Module"})
# Bases whose subclasses are nn.Modules: a call `model(x)` runs `forward`.
MODULE_BASES = NN_MODULE | LIGHTNING_MODULE | HF_PRETRAINED
# Calls the collector records for the rules above (Trainer subclasses are matched by name too).
RECORDED_CALLS = LIGHTNING_TRAINER | HF_TRAINING_ARGS | HF_TRAINER
# A call is recorded as a `FrameworkCall` when its callee's last name ends so (`MyTrainer(...)` too),
RECORDED_SUFFIXES = ("Trainer", "TrainingArguments")
# with these keywords' values.
PRECISION_KEYWORDS = ("precision", "fp16", "bf16")
FRAMEWORK_LABELS = {"lightning": "Lightning Trainer", "hf": "Hugging Face TrainingArguments"}


@dataclass(frozen=True)
class LiteralArg:
    """An argument as the rules read it: a literal value, or only its source text."""

    text: str
    value: LiteralValue = None
    literal: bool = False


def lightning_precision(precision: Optional[LiteralArg], double_star: bool) -> Optional[Precision]:
    """Rule L: the float16-ness of `Trainer(precision=...)`; None means no float16 region."""
    if precision is None:
        return Precision.MAYBE_FLOAT16 if double_star else None
    if not precision.literal:
        return Precision.MAYBE_FLOAT16
    value = str(precision.value)
    if value in ("16", "16-mixed", "16-true", "half"):
        return Precision.FLOAT16
    return None


def hf_precision(fp16: Optional[LiteralArg], double_star: bool) -> Optional[Precision]:
    """Rule H: `TrainingArguments(fp16=...)`; None means no float16 region."""
    if fp16 is None:
        return Precision.MAYBE_FLOAT16 if double_star else None
    if not fp16.literal:
        return Precision.MAYBE_FLOAT16
    return Precision.FLOAT16 if fp16.value is True else None


def accelerate_precision(mixed: Optional[LiteralArg], double_star: bool) -> Optional[Precision]:
    """Rule A: `Accelerator(mixed_precision=...)`; None means autocast() is a no-op."""
    if mixed is None or not mixed.literal:
        return Precision.MAYBE_FLOAT16
    value = str(mixed.value)
    if value == "fp16":
        return Precision.FLOAT16
    if value == "bf16":
        return Precision.BFLOAT16
    return None


def describe(callee: str, keyword: str, arg: Optional[LiteralArg], double_star: bool) -> str:
    """How a framework region is named in messages, e.g. `Trainer(precision="16-mixed")`."""
    short = callee.rsplit(".", 1)[-1]
    if arg is not None:
        return f"{short}({keyword}={_short(arg.text)})"
    return f"{short}(**...)" if double_star else f"{short}()"


def _short(text: str, limit: int = 30) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def matches(names: Tuple[str, ...], wanted: FrozenSet[str]) -> bool:
    return any(name in wanted for name in names)


@dataclass(frozen=True)
class FrameworkCall:
    """A `Trainer(...)`/`TrainingArguments(...)` construction (rules L and H)."""

    qualnames: Tuple[str, ...]
    callee: str
    line: int
    column: int
    keywords: Tuple[Tuple[str, LiteralArg], ...]
    double_star: bool
    function: str  # scope key of the function it is made in
    model: Optional[Tuple[str, bool]]  # the instance passed as `model=` (or first argument)

    def keyword(self, name: str) -> Optional[LiteralArg]:
        return next((value for key, value in self.keywords if key == name), None)
