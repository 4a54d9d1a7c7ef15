"""What an inherited setter stores: `def set_head(self, head): self.head = head`, called on several models.

`self.head` on an instance of `Policy` held the join over every call of `set_head`, on any receiver, so the
head given to `Critic` was the policy's too, and its `Laplace.log_prob`, which the run computes outside any
float16 region, was reported through `policy(x, y)`. A parameter stored on `self` now holds, for an
instance of a class, what the calls on such an instance give it; a call whose receiver the flow does not
know still counts. A head stored from outside the class (`policy.head = ...`) was not read at all; it is
now, on the models its owner may hold. Where the owner and the head are both parameters of a helper
(`def attach(model, head)`, `Trainer.setup(self, agent, head)`), each call of the helper keeps its pair:
the helper was read once for all its callers, and gave every model every head (`CallSites.given_where`).

Each project runs under `amplint trace`; the check reports exactly what the run computed in float16.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import TWO_HEADS, found_places, traced_comparison

MODEL = TWO_HEADS + """

class Agent(nn.Module):
    def set_head(self, head):
        self.head = head

    def forward(self, x, y):
        return self.head(x, y)


class Policy(Agent):
    pass


class Critic(Agent):
    pass
"""
TRAIN = """\
import types

import torch
from model import Agent, Critic, LaplaceHead, NormalHead, Policy
{defs}

def main():
    x, y = torch.randn(64, 4), torch.randn(64, 1)
    policy, critic = Policy(), Critic()
{setup}
    with torch.autocast("cpu", dtype=torch.float16):
        print(policy(x, y))
    print(critic(x, y))


main()
"""
NORMAL, LAPLACE = ("model.py", 13, 17, "AMP001"), ("model.py", 23, 17, "AMP001")  # `model.py`'s sites
ATTACH = "\n\ndef attach(model, head):\n    model.set_head(head)\n"
SETUP = "\n\nclass Trainer:\n    def setup(self, agent, head):\n        agent.head = head\n"
CONFIGURE = "\n\ndef configure(agent: Agent, head):\n    agent.set_head(head)\n"
CHAIN = ATTACH + "\n\ndef prepare(net, head=None):\n    attach(head=head, model=net)\n"
OWNED = ("\n\nclass Owned(Policy):\n    def __init__(self, head):\n        super().__init__()\n"
         "        self.set_head(head)\n\n\nclass Audited(Critic):\n    def __init__(self, head):\n"
         "        super().__init__()\n        self.set_head(head)\n")
# name -> (helpers, the lines that set the heads, what is reported, what is reported that never runs in float16)
CASES: Dict[str, Tuple[str, str, List[Tuple[str, int, int, str]], List[Tuple[str, int]]]] = {
    # each model its own head: the policy's runs in float16, the critic's does not
    "own_heads": ("", "    policy.set_head(NormalHead())\n    critic.set_head(LaplaceHead())", [NORMAL], []),
    # a receiver the flow does not know (`*[policy]`): that call may set any model's head, and does set the policy's
    "unknown_receiver": (CONFIGURE, "    configure(*[policy], head=NormalHead())\n    critic.set_head(LaplaceHead())",
                         [NORMAL], []),
    # the Laplace head given to the policy last: both may run in float16, the Laplace one does
    "shared": ("", "    policy.set_head(NormalHead())\n    critic.set_head(LaplaceHead())\n"
               "    if x.shape[0] > 1:\n        policy.set_head(LaplaceHead())", [NORMAL, LAPLACE], [("model.py", 13)]),
    # a receiver reached through an object of a library class (`SimpleNamespace`): `holder.agent` is of no
    # class the flow knows, so `set_head` is found by its name, and its call may set any model's head
    "unknown_chain": ("", "    holder = types.SimpleNamespace(agent=policy)\n    holder.agent.set_head(NormalHead())\n"
                      "    critic.set_head(LaplaceHead())", [NORMAL], []),
    # a receiver that is an expression of no known class (a library call's result): `set_head` is found by its
    # name, as for `holder.agent` (missed: an expression's method was followed only on a value the flow knew)
    "expression_receiver": ("\nimport random\n", "    random.choice([policy]).set_head(NormalHead())\n"
                            "    critic.set_head(LaplaceHead())", [NORMAL], []),
    # the head stored from outside the class, on each model (`policy.head = ...`): no method of the class
    # stores it, and the policy's `self.head` held nothing (the run's float16 site was missed)
    "outside": ("", "    policy.head = NormalHead()\n    critic.head = LaplaceHead()", [NORMAL], []),
    # stored from outside by a method of another class, from its parameters: each call keeps its pair (read
    # once for both models, the critic's head was reported through the policy)
    "another_class": (SETUP, "    trainer = Trainer()\n    trainer.setup(policy, NormalHead())\n"
                      "    trainer.setup(critic, LaplaceHead())", [NORMAL], []),
    # through a helper that calls the setter of the model it is given: the same
    "helper": (ATTACH, "    attach(policy, NormalHead())\n    attach(critic, LaplaceHead())", [NORMAL], []),
    # through two helpers, by keyword, one with a default: the pair is kept at every step
    "helper_chain": (CHAIN, "    prepare(policy, NormalHead())\n    prepare(critic, head=LaplaceHead())", [NORMAL], []),
    # a constructor that calls the setter: the instance each construction makes is the receiver
    "constructor": (OWNED, "    policy, critic = Owned(NormalHead()), Audited(LaplaceHead())", [NORMAL], []),
    # the same helper given one model twice, and the other never: both heads may be the policy's
    "helper_twice": (ATTACH, "    attach(policy, NormalHead())\n    if x.shape[0] > 1:\n"
                     "        attach(policy, LaplaceHead())\n    attach(critic, NormalHead())",
                     [NORMAL, LAPLACE], [("model.py", 13)]),
}


def _project(root: Path, case: str) -> Path:
    defs, setup, _, _ = CASES[case]
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'setters'\n")
    (root / "model.py").write_text(MODEL)
    (root / "train.py").write_text(TRAIN.format(defs=defs, setup=setup))
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_setter_stores_for_each_model_what_it_is_given(tmp_path: Path, case: str) -> None:
    assert found_places(_project(tmp_path / case, case)) == CASES[case][2]


@pytest.mark.parametrize("case", sorted(CASES))
def test_what_is_reported_is_what_the_run_computes_in_float16(tmp_path: Path, case: str) -> None:
    report = traced_comparison(_project(tmp_path / case, case))
    assert report["missed"] == [], report
    assert [(u["path"], u["line"]) for u in report["unreached"]] == CASES[case][3], report
