"""The autocast region and the script that runs one step.

`run.py` builds the model, an encoder and a random batch, and opens the
region in one of nine spellings, in `main` or in a trainer module. Inside the
region the encoder runs (its output is float16), and the chain of calls to
the computation starts there, or, for the `outside` variant, only after the
region has closed, on the features cast back to float32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

from .codegen import Module, Project, indent
from .models import Construct
from .units import Call


@dataclass
class Sizes:
    batch: int
    d_in: int
    k: int
    seed: int


def _autocast(proj: Project, dtype: str) -> str:
    device = proj.rng.choice(('"cpu"', '"cpu"', 'device_type="cpu"'))
    return f"torch.autocast({device}, dtype={dtype})"


def _chain(proj: Project, caller: Module, call: Call, model: str, feats: str, x: str, target: str) -> List[str]:
    prelude, expr = call.render(caller, model, feats, x)
    return prelude + [f"{target} = {expr}"]


def _helper(proj: Project, host: Module, region: str) -> str:
    """A project helper that opens `region` for its caller, in `host` or a module it can import: the call that
    opens it, as `host` writes it."""
    rng = proj.rng
    below = [m for m in proj.modules if m.level < host.level]
    home = rng.choice(below) if below and rng.random() < 0.7 else host
    home.need("torch")
    style = rng.choice(("returns", "maybe", "generator"))
    name = proj.name("amp_context", "mixed_precision", "maybe_autocast", "precision_scope")
    if style == "returns":
        home.add([f"def {name}():", '    """The context the training steps run in."""', f"    return {region}"])
    elif style == "maybe":
        home.need("nullcontext")
        home.add([f"def {name}(enabled: bool = True):", '    """Mixed precision unless it is turned off."""',
                  "    if enabled:", f"        return {region}", "    return nullcontext()"])
    else:
        home.need("import contextlib")
        home.add(["@contextlib.contextmanager", f"def {name}():", '    """Runs the block in mixed precision."""',
                  f"    with {region}:", "        yield"])
    return f"{proj.ref(host, home, name)}()"


def _opened(proj: Project, kind: str, dtype: str, body: List[str], after: List[str], host: Module) -> List[str]:
    """`body` inside the region (for with, named_ctx, cond_ctx, helper), then `after` outside it."""
    rng = proj.rng
    region = _autocast(proj, dtype)
    if kind == "helper":
        return [f"with {_helper(proj, host, region)}:", *indent(body)] + after
    if kind == "with":
        return [f"with {region}:", *indent(body)] + after
    if kind == "named_ctx":
        name = proj.name("amp", "autocast_ctx", "mixed", "half")
        return [f"{name} = {region}", f"with {name}:", *indent(body)] + after
    if kind == "exit_stack":  # the region entered on a stack of contexts, maybe under a flag
        host.need("import contextlib")
        stack = proj.name("stack", "contexts", "es")
        enter = [f"{stack}.enter_context({region})"]
        if rng.random() < 0.5:
            flag = proj.name("use_amp", "amp_enabled", "mixed_precision")
            return [f"{flag} = {rng.choice(('True', 'bool(1)', 'not False'))}",
                    f"with contextlib.ExitStack() as {stack}:", f"    if {flag}:", *indent(enter, 2),
                    *indent(body)] + after
        return [f"with contextlib.ExitStack() as {stack}:", *indent(enter), *indent(body)] + after
    if kind == "kwargs_dict":  # the autocast's arguments in a dict spread into the call
        name = proj.name("amp_kwargs", "autocast_kwargs", "amp_args")
        device = rng.choice(('"device_type": "cpu"', '"device_type": "cpu", "enabled": True'))
        made = rng.choice((f'{{{device}, "dtype": {dtype}}}', f'dict(device_type="cpu", dtype={dtype})'))
        return [f"{name} = {made}", f"with torch.autocast(**{name}):", *indent(body)] + after
    flag = proj.name("use_amp", "amp_enabled", "mixed_precision")
    ctx = proj.name("ctx", "precision_ctx", "amp_ctx")
    return [f"{flag} = {rng.choice(('True', 'bool(1)', 'not False'))}",
            f"{ctx} = {region} if {flag} else nullcontext()", f"with {ctx}:", *indent(body)] + after


def build(proj: Project, kind: str, twin: Optional[str], call: Call, construct: Construct, sizes: Sizes,
          consts: Tuple[str, str, str]) -> None:
    """Fills run.py (and the trainer modules the spelling needs)."""
    rng = proj.rng
    run = proj.run
    run.need("torch", "nn")
    dtype = "torch.bfloat16" if twin == "bf16" else "torch.float16"
    outside = twin == "outside"
    d_in, k, batch = consts
    prelude, model_expr = construct(run)
    main = [f"torch.manual_seed({sizes.seed})", *prelude, f"model = {model_expr}",
            f"encoder = nn.Linear({d_in}, {d_in})", f"h = torch.randn({batch}, {d_in})",
            f"x = torch.randn({batch}, {k})"]
    if kind == "base_hook":
        main += _base_hook(proj, dtype, outside, call)
    elif kind == "self_ctx":
        main += _self_ctx(proj, dtype, outside, call)
    elif kind == "decorator":
        host = run if rng.random() < 0.4 else proj.place(call.module, role="trainer", docstring="Training steps.")
        host.need("torch")
        step = proj.name("train_step", "training_step", "amp_step")
        region = _autocast(proj, dtype)
        if outside:
            enc = proj.name("encode", "embed", "features")
            host.add([f"@{region}", f"def {enc}(encoder, h: torch.Tensor) -> torch.Tensor:",
                      '    """The encoder pass, in mixed precision."""', "    return encoder(h)"])
            body = [f"feats = {enc}(encoder, h)", *_chain(proj, host, call, "model", "feats.float()", "x", "loss")]
            host.add([f"def {step}(model, encoder, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:",
                      '    """One step: features in mixed precision, the loss after."""', *indent(body),
                      "    return loss"])
        else:
            body = ["feats = encoder(h)", *_chain(proj, host, call, "model", "feats", "x", "loss")]
            host.add([f"@{region}", f"def {step}(model, encoder, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:",
                      '    """One step in mixed precision."""', *indent(body), "    return loss"])
        main.append(f"loss = {proj.ref(run, host, step)}(model, encoder, h, x)")
    else:
        host = run if rng.random() < 0.5 else proj.place(call.module, role="trainer", docstring="Training steps.")
        host.need("torch")
        if kind == "cond_ctx":
            host.need("nullcontext")
        if outside:
            lines = _opened(proj, kind, dtype, ["feats = encoder(h)"],
                            _chain(proj, host, call, "model", "feats.float()", "x", "loss"), host)
        else:
            inside = ["feats = encoder(h)", *_chain(proj, host, call, "model", "feats", "x", "loss")]
            lines = _opened(proj, kind, dtype, inside, [], host)
        if host is run:
            main += lines
        else:
            step = proj.name("train_step", "training_step", "run_batch")
            host.add([f"def {step}(model, encoder, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:",
                      '    """One training step."""', *indent(lines), "    return loss"])
            main.append(f"loss = {proj.ref(run, host, step)}(model, encoder, h, x)")
    main.append('print(f"loss {float(loss.detach()):.4f}")')
    run.add(["def main() -> None:", '    """One step on a random batch, on the CPU."""', *indent(main)])
    run.add(['if __name__ == "__main__":', "    main()"])


def _base_hook(proj: Project, dtype: str, outside: bool, call: Call) -> List[str]:
    """A base trainer whose step opens the region and calls `compute`, which a subclass overrides."""
    base_mod = proj.place(role="trainer", docstring="The training loop shared by every trainer.")
    base_mod.need("torch")
    base = proj.name("BaseTrainer", "TrainerBase", "LoopBase")
    region = _autocast(proj, dtype)
    if outside:
        step = [f"with {region}:", "    feats = self.encoder(h)", "return self.compute(feats.float(), x)"]
    else:
        step = [f"with {region}:", "    feats = self.encoder(h)", "    return self.compute(feats, x)"]
    base_mod.add([f"class {base}:", '    """Runs a step in mixed precision; subclasses say what the loss is."""', "",
                  "    def __init__(self, model, encoder) -> None:", "        self.model = model",
                  "        self.encoder = encoder", "",
                  "    def step(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:",
                  *indent(step, 2), "",
                  "    def compute(self, feats: torch.Tensor, x: torch.Tensor) -> torch.Tensor:",
                  "        raise NotImplementedError"])
    sub_mod = proj.place(proj.above(base_mod, call.module), role="trainer", docstring="Trainers.")
    sub_mod.need("torch")
    sub = proj.name("Trainer", "LikelihoodTrainer", "FitTrainer")
    prelude, expr = call.render(sub_mod, "self.model", "feats", "x")
    sub_mod.add([f"class {sub}({proj.ref(sub_mod, base_mod, base)}):", '    """The trainer this script uses."""', "",
                 "    def compute(self, feats: torch.Tensor, x: torch.Tensor) -> torch.Tensor:",
                 *indent(prelude + [f"return {expr}"], 2)])
    trainer = proj.name("trainer", "loop")
    return [f"{trainer} = {proj.ref(proj.run, sub_mod, sub)}(model, encoder)", f"loss = {trainer}.step(h, x)"]


def _self_ctx(proj: Project, dtype: str, outside: bool, call: Call) -> List[str]:
    """A trainer that keeps its autocast context on `self` in `__init__` and enters it in its step: the context
    itself, a `functools.partial` of `torch.autocast` entered by calling it, or either behind a flag."""
    rng = proj.rng
    host = proj.run if rng.random() < 0.4 else proj.place(call.module, role="trainer", docstring="Training steps.")
    host.need("torch")
    cls = proj.name("Trainer", "AmpTrainer", "Learner_")
    attr = rng.choice(("amp", "autocast_ctx", "ctx", "precision_ctx"))
    style = rng.choice(("object", "partial", "flag"))
    region = _autocast(proj, dtype)
    if style == "partial":
        host.need("import functools")
        stored, entered = f'functools.partial(torch.autocast, "cpu", dtype={dtype})', f"self.{attr}()"
    elif style == "flag":
        host.need("nullcontext")
        stored, entered = f"{region} if use_amp else nullcontext()", f"self.{attr}"
    else:
        stored, entered = region, f"self.{attr}"
    inside = ["feats = self.encoder(h)"]
    chain = _chain(proj, host, call, "self.model", "feats.float()" if outside else "feats", "x", "loss")
    body = [f"with {entered}:", *indent(inside), *chain] if outside else [f"with {entered}:", *indent(inside + chain)]
    host.add([f"class {cls}:", '    """Owns the model and the precision it trains in."""', "",
              "    def __init__(self, model, encoder, use_amp: bool = True) -> None:",
              "        self.model = model", "        self.encoder = encoder", f"        self.{attr} = {stored}", "",
              "    def step(self, h: torch.Tensor, x: torch.Tensor) -> torch.Tensor:", *indent(body, 2),
              "        return loss"])
    return [f"trainer = {proj.ref(proj.run, host, cls)}(model, encoder)", "loss = trainer.step(h, x)"]
