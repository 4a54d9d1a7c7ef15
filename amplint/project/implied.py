"""Seeds for framework-implied regions (rules L and H of `frameworks.py`).

Rule A (Accelerate) is file-local and read by the collector itself: its
regions are ordinary seeds of `walk.call_seeds`.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from amplint.model import Hop, Precision, RegionInfo
from amplint.facts import frameworks
from amplint.project import configfiles
from amplint.project.configfiles import ConfigPrecision
from amplint.project.loader import Loader
from amplint.project.resolve import ClassRef, Resolver
from amplint.project.summary import FrameworkCall, RegionRef
from amplint.project.walk import Seed, shown


def _region(path: str, call: FrameworkCall, keyword: str, precision: Precision) -> Tuple[int, str, int, RegionRef]:
    label = frameworks.describe(call.callee, keyword, call.keyword(keyword), call.double_star) + " region"
    info = RegionInfo(call.line, precision, True, "cuda", '"cuda"')
    rank = 0 if precision is Precision.FLOAT16 else 1  # a certain float16 Trainer is named first
    return rank, path, call.line, RegionRef(info, label)


def _strongest(loader: Loader, names: frozenset, keyword: str, rule) -> Optional[Tuple[str, RegionRef]]:
    """The float16 construction that names the region: float16 before maybe-float16, then path and line."""
    found = []
    for path in loader.region_files():
        summary = loader.summary(path)
        for call in summary.framework_calls if summary is not None else ():
            if frameworks.matches(call.qualnames, names):
                precision = rule(call.keyword(keyword), call.double_star)
                if precision in (Precision.FLOAT16, Precision.MAYBE_FLOAT16):
                    found.append(_region(path, call, keyword, precision))
    if not found:
        return None
    _, path, _, region = min(found, key=lambda item: item[:3])
    return path, region


def _hook_seeds(resolver: Resolver, classes: List[ClassRef], hooks: Tuple[str, ...], where: str,
                region: RegionRef, root: str) -> List[Seed]:
    seeds: List[Seed] = []
    region_path = shown(where, root)
    for cls in classes:
        for hook in hooks:
            for target in resolver.method(cls, hook, exact=True):
                # The framework calls the hook: the chain's place is the construction (or setting) that implies it.
                hop = Hop(resolver.display(target), where, region.info.line, 0, region_path)
                seeds.append(Seed(target, region, region_path, (hop,), where))
    return seeds


def _from_config(setting: ConfigPrecision) -> Tuple[str, RegionRef]:
    """A float16 precision written in a config file: the region is named by the file and line that set it."""
    info = RegionInfo(setting.line, Precision.FLOAT16, True, "cuda", '"cuda"')
    return setting.path, RegionRef(info, f"`{setting.text}` region")


def lightning_seeds(loader: Loader, resolver: Resolver, root: str,
                    settings: Sequence[ConfigPrecision] = ()) -> List[Seed]:
    """Rule L: the step hooks and `forward` of every LightningModule, once a float16 Trainer is built.

    A project that builds its Trainer from a config (Hydra, LightningCLI, an INI of defaults) says
    `precision: 16-mixed` there: that setting counts when no Trainer construction is a literal float16.
    """
    strongest = _strongest(loader, frameworks.LIGHTNING_TRAINER, "precision", frameworks.lightning_precision)
    setting = configfiles.strongest(settings, "lightning")
    if setting is not None and (strongest is None or strongest[1].info.precision is not Precision.FLOAT16):
        strongest = _from_config(setting)
    if strongest is None:
        return []
    path, region = strongest
    modules = resolver.classes_deriving(frameworks.LIGHTNING_MODULE, ("LightningModule",))
    return _hook_seeds(resolver, modules, frameworks.LIGHTNING_HOOKS, path, region, root)


def hf_seeds(loader: Loader, resolver: Resolver, root: str) -> List[Seed]:
    """Rule H: `compute_loss` of Trainer subclasses and `forward` of the model given to a Trainer."""
    strongest = _strongest(loader, frameworks.HF_TRAINING_ARGS, "fp16", frameworks.hf_precision)
    if strongest is None:
        return []
    path, region = strongest
    trainers = resolver.classes_deriving(frameworks.HF_TRAINER, ("Trainer", "Seq2SeqTrainer"))
    seeds = _hook_seeds(resolver, trainers, frameworks.HF_HOOKS, path, region, root)
    region_path = shown(path, root)
    for where in loader.region_files():
        summary = loader.summary(where)
        for call in summary.framework_calls if summary is not None else ():
            if call.model is None or not _is_trainer(resolver, where, call, trainers):
                continue
            text, exact = call.model
            for cls in resolver.class_of(where, text):
                for target in resolver.instance_call(cls, exact):
                    hop = Hop(resolver.display(target), where, call.line, call.column, shown(where, root))
                    seeds.append(Seed(target, region, region_path, (hop,), path))
    return seeds


def _is_trainer(resolver: Resolver, path: str, call: FrameworkCall, trainers: List[ClassRef]) -> bool:
    if frameworks.matches(call.qualnames, frameworks.HF_TRAINER):
        return True
    return any(cls in trainers for cls in resolver.class_of(path, call.callee))
