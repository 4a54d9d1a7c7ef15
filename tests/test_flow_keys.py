"""A container read by key: `self.heads["policy"]`, `REGISTRY[name]`, `bundle.get("pi")`, and one filled by stores.

A dict's elements were joined whatever the key, so `self.heads["policy"](x, y)` entered the critic's head too,
and its `Laplace.log_prob`, which the run computes outside any float16 region, was reported. A dict whose keys
are all string literals now keeps what each key holds (`flowvalues.Container.keyed`), and a subscript whose key
the flow can spell (a literal, a name or parameter holding known strings: `flowstrings`) reads only those keys;
any other key still reads every element. A container filled by stores (`self.heads[name] = NormalHead()` in a
loop, `blocks.append(block)`) held nothing, and its heads were missed; the stores now fill it, with a call's
result (`build_head()`, `REGISTRY[k]()`, `.to(...)`) or a loop's variable, or by `extend` and `update`; a
comprehension holds what its element does, and a `types.SimpleNamespace` its keywords as attributes. An
attribute stored under a computed
name (`setattr(self, f"head_{name}", m)`) is read where a name or prefix it may spell is asked. A registering
decorator's store keeps each class under the name its own decoration gave.

Each project runs under `amplint trace`; the check reports exactly what the run computed in float16.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import TWO_HEADS as MODEL, found_places, traced_comparison

TRAIN = """\
import copy
import os
import types

import torch
from torch import nn
from model import LaplaceHead, NormalHead


def build_head():
    return NormalHead()


REGISTRY = {{"normal": NormalHead, "laplace": LaplaceHead}}
LOCAL = {{"pi": NormalHead(), "v": LaplaceHead()}}


class Agent(nn.Module):
    def __init__(self, names=("policy",)):
        super().__init__()
{init}

    def act(self, key, x, y):
        return self.heads[key](x, y)

    def forward(self, x, y):
{forward}


def main():
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    agent = Agent()
    name = "normal"
    with torch.autocast("cpu", dtype=torch.float16):
        print({inside})
    print({outside})


main()
"""
HEADS = '        self.heads = nn.ModuleDict({"policy": NormalHead(), "critic": LaplaceHead()})'
POLICY = '        return self.heads["policy"](x, y)'
FILLED = '        self.heads = nn.ModuleDict()\n        for name in names:\n            self.heads[name] = {}'
COMPUTED = ('        for name in names:\n            setattr(self, {}, NormalHead())\n'
            '        self.critic = LaplaceHead()')
LOOP = ('        total = 0\n        for block in self.heads:\n            total = total + block(x, y)\n'
        '        return total')
EVERY = '        return sum(self.heads[k](x, y) for k in self.heads)'
NORMAL, LAPLACE = ("model.py", 13, 17, "AMP001"), ("model.py", 23, 17, "AMP001")  # `model.py`'s sites
# name -> (__init__'s body, forward's body, what runs in float16, what runs outside, what is reported, what is
# reported that never runs in float16)
CASES: Dict[str, Tuple[str, str, str, str, List[Tuple[str, int, int, str]], List[Tuple[str, int]]]] = {
    # an `nn.ModuleDict` display read by a literal key in the region, by the other key outside it
    "module_dict": (HEADS, POLICY, "agent(x, y)", 'agent.heads["critic"](x, y)', [NORMAL], []),
    # the same built from `dict(k=v)`
    "dict_keywords": ('        self.heads = nn.ModuleDict(dict(policy=NormalHead(), critic=LaplaceHead()))', POLICY,
                      "agent(x, y)", 'agent.heads["critic"](x, y)', [NORMAL], []),
    # a module-level dict read with `.get` and a literal key
    "get": (HEADS, POLICY, 'LOCAL.get("pi")(x, y)', 'LOCAL["v"](x, y)', [NORMAL], []),
    # a registry of classes read with a name that holds one known string
    "registry_name": (HEADS, POLICY, "REGISTRY[name]()(x, y)", 'REGISTRY["laplace"]()(x, y)', [NORMAL], []),
    # the key a parameter, given a literal by its only caller
    "key_parameter": (HEADS, POLICY, 'agent.act("policy", x, y)', 'agent.heads["critic"](x, y)', [NORMAL], []),
    # a key the flow cannot spell: every element, so the critic's head is reported too
    "unknown_key": (HEADS, '        return self.heads[os.environ.get("HEAD", "policy")](x, y)', "agent(x, y)",
                    'agent.heads["critic"](x, y)', [NORMAL, LAPLACE], [("model.py", 23)]),
    # stored by key after the container is made: by key too
    "stored_by_key": ('        self.heads = nn.ModuleDict()\n        self.heads["policy"] = NormalHead()\n'
                      '        self.heads["critic"] = LaplaceHead()', POLICY, "agent(x, y)",
                      'agent.heads["critic"](x, y)', [NORMAL], []),
    # filled in a loop under names from a parameter, and every element called (missed: the dict held nothing)
    "filled_in_loop": (FILLED.format("NormalHead()"), EVERY, "agent(x, y)", "0", [NORMAL], []),
    # filled with what a call returns: a factory function, a registry's class called, `.to`, `copy.deepcopy`
    # (each missed: only a capitalized constructor's store was followed, so the dict held nothing)
    "filled_by_factory": (FILLED.format("build_head()"), EVERY, "agent(x, y)", "0", [NORMAL], []),
    "filled_from_registry": (FILLED.format('REGISTRY["normal"]()'), EVERY, "agent(x, y)", "0", [NORMAL], []),
    "filled_moved": (FILLED.format('NormalHead().to("cpu")'), EVERY, "agent(x, y)", "0", [NORMAL], []),
    "filled_copies": ("        head = NormalHead()\n" + FILLED.format("copy.deepcopy(head)"), EVERY, "agent(x, y)",
                      "0", [NORMAL], []),
    # filled in a loop over a display's items, or over a name bound to one (missed: a loop's variable was not
    # followed)
    "filled_from_items": ('        self.heads = nn.ModuleDict()\n'
                          '        for name, head in {"policy": NormalHead()}.items():\n'
                          '            self.heads[name] = head', EVERY, "agent(x, y)", "0", [NORMAL], []),
    "filled_from_values": ('        made = [NormalHead()]\n        self.heads = nn.ModuleList()\n'
                           '        for head in made:\n'
                           '            self.heads.append(head)',
                           '        return sum(head(x, y) for head in self.heads)', "agent(x, y)", "0", [NORMAL], []),
    # the same stored by key: read by key, so the critic's head, called only outside the region, is not reported
    "factories_by_key": ('        self.heads = nn.ModuleDict()\n        self.heads["policy"] = build_head()\n'
                         '        self.heads["critic"] = copy.deepcopy(LaplaceHead())', POLICY, "agent(x, y)",
                         'agent.heads["critic"](x, y)', [NORMAL], []),
    # a list filled by `append`, then wrapped in an `nn.ModuleList` and iterated (missed: the list held nothing)
    "appended": ('        blocks = []\n        blocks.append(NormalHead())\n        self.heads = nn.ModuleList(blocks)',
                 LOOP, "agent(x, y)", "0", [NORMAL], []),
    # attributes stored under a computed name (`setattr`, `add_module`), read by a name or a prefix (each missed:
    # only a literal name was a store); the critic, stored under a literal name, runs only outside the region
    "setattr_named": (COMPUTED.format("name"), '        return self.policy(x, y)', "agent(x, y)", "agent.critic(x, y)",
                      [NORMAL], []),
    "setattr_formatted": (COMPUTED.format('f"head_{name}"'), '        return getattr(self, "head_policy")(x, y)',
                          "agent(x, y)", "agent.critic(x, y)", [NORMAL], []),
    "setattr_read_by_prefix": (COMPUTED.format('f"head_{name}"'),
                               '        total = 0\n        for k in ("policy",):\n'
                               '            total = total + getattr(self, f"head_{k}")(x, y)\n        return total',
                               "agent(x, y)", "agent.critic(x, y)", [NORMAL], []),
    "add_module_computed": ('        for i, name in enumerate(names):\n'
                            '            self.add_module("head%d" % i, NormalHead())\n'
                            '        self.critic = LaplaceHead()', '        return self.head0(x, y)', "agent(x, y)",
                            "agent.critic(x, y)", [NORMAL], []),
    # a comprehension of what a factory returns, and a container extended or updated (each missed: a
    # comprehension held nothing, and `extend`/`update` stored nothing); `update` keeps each key
    "comprehension": ('        self.heads = nn.ModuleList([build_head() for _ in names])', LOOP, "agent(x, y)", "0",
                      [NORMAL], []),
    "dict_comprehension": ('        self.heads = nn.ModuleDict({name: build_head() for name in names})', EVERY,
                           "agent(x, y)", "0", [NORMAL], []),
    "extended": ('        self.heads = nn.ModuleList()\n        self.heads.extend([NormalHead()])', LOOP, "agent(x, y)",
                 "0", [NORMAL], []),
    "updated_by_key": ('        self.heads = nn.ModuleDict()\n'
                       '        self.heads.update({"policy": NormalHead(), "critic": LaplaceHead()})', POLICY,
                       "agent(x, y)", 'agent.heads["critic"](x, y)', [NORMAL], []),
    # a dict filled by `setdefault`, and the keywords of a `types.SimpleNamespace` read as its attributes (each
    # missed: no store, and no value)
    "set_default": ('        self.heads = {}\n        self.heads.setdefault("policy", NormalHead())\n'
                    '        self.heads.setdefault("critic", LaplaceHead())', POLICY, "agent(x, y)",
                    'agent.heads["critic"](x, y)', [NORMAL], []),
    "namespace": ('        self.ns = types.SimpleNamespace(policy=NormalHead(), critic=LaplaceHead())',
                  '        return self.ns.policy(x, y)', "agent(x, y)", "agent.ns.critic(x, y)", [NORMAL], []),
    "appended_factory": ('        blocks = []\n        blocks.append(build_head())\n'
                         '        self.heads = nn.ModuleList(blocks)',
                         LOOP, "agent(x, y)", "0", [NORMAL], []),
}


def _project(root: Path, case: str) -> Path:
    init, forward, inside, outside, _, _ = CASES[case]
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'keys'\n")
    (root / "model.py").write_text(MODEL)
    (root / "train.py").write_text(TRAIN.format(init=init, forward=forward, inside=inside, outside=outside))
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_container_is_read_by_key(tmp_path: Path, case: str) -> None:
    assert found_places(_project(tmp_path / case, case)) == CASES[case][4]


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_is_reported_is_what_the_run_computes_in_float16(tmp_path: Path, case: str) -> None:
    report = traced_comparison(_project(tmp_path / case, case))
    assert report["missed"] == [], report
    assert [(u["path"], u["line"]) for u in report["unreached"]] == CASES[case][5], report


REGISTRY = """\
MODELS = {}


def register(name):
    def deco(cls):
        MODELS[name] = cls
        return cls
    return deco
"""
REGISTERED = """\
from model import LaplaceHead, NormalHead
from registry import register


@register("normal")
class Policy(NormalHead):
    pass


@register("laplace")
class Critic(LaplaceHead):
    pass
"""
REGISTRY_TRAIN = """\
import torch
import heads  # noqa: F401 - registers the heads
from registry import MODELS


def main():
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    net = MODELS[{key}]()
    with torch.autocast("cpu", dtype=torch.float16):
        print(net(x, y))


main()
"""


CALLED = """\
from model import LaplaceHead, NormalHead
from registry import register


class Policy(NormalHead):
    pass


class Critic(LaplaceHead):
    pass


register("normal")(Policy)
register("laplace")(Critic)
"""


@pytest.mark.parametrize("key, registered, reported, unreached", [
    # a key from the environment: either class may be made, and the Laplace one is not
    ('__import__("os").environ.get("HEAD", "normal")', REGISTERED, [NORMAL, LAPLACE], [("model.py", 23)]),
    # a literal key: each decoration stores its class under the name its own `register(...)` call gave (the flow
    # read one `deco` for both, so each class was under both names, and the Laplace head was reported)
    ('"normal"', REGISTERED, [NORMAL], []),
    # the same, the decorator called by hand
    ('"normal"', CALLED, [NORMAL], []),
])
def test_a_registering_decorator_fills_its_registry(tmp_path: Path, key: str, registered: str, reported: list,
                                                    unreached: list) -> None:
    """`@register("normal") class Policy`: the decorator `register("normal")` gives is called with the class, and
    stores it in the module's `MODELS` (missed: the registry held nothing, and no head was reached)."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'registry'\n")
    for name, text in {"model.py": MODEL, "registry.py": REGISTRY, "heads.py": registered,
                       "train.py": REGISTRY_TRAIN.format(key=key)}.items():
        (tmp_path / name).write_text(text)
    assert found_places(tmp_path) == reported
    report = traced_comparison(tmp_path)
    assert report["missed"] == [] and [(u["path"], u["line"]) for u in report["unreached"]] == unreached, report
