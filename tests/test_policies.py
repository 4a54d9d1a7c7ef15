"""amplint.policies against the installed torch: the registered kernels, and the dtypes ops really produce."""
from __future__ import annotations

import pytest

from amplint import policies

torch = pytest.importorskip("torch")

from amplint.verify.devices import CPU as CPU_DEVICE, CUDA_EMULATED, EmulatedCudaTensor  # noqa: E402


def _registered(key: str) -> set:
    return {name.split("::", 1)[1] for name in torch._C._dispatch_get_registrations_for_dispatch_key(key)}


@pytest.mark.parametrize("key, policy", [("AutocastCUDA", policies.CUDA), ("AutocastCPU", policies.CPU)])
def test_op_lists_are_the_kernels_torch_registers(key: str, policy: policies.AutocastPolicy) -> None:
    """Every op the installed torch casts under this autocast is on a list, and nothing else is."""
    registered = _registered(key)
    assert sorted(registered - policy.registered) == []
    assert sorted(policy.registered - registered) == []


def test_the_lists_do_not_overlap() -> None:
    for policy in (policies.CUDA, policies.CPU):
        lists = [policy.lower_precision, policy.float32, policy.promote, policy.banned]
        assert sum(len(ops) for ops in lists) == len(policy.registered)


# (op name in the policy, how to call it on a float16 tensor `y`)
PROBES = {
    "exp": lambda y: torch.exp(y),
    "log": lambda y: torch.log(y.abs() + 1),
    "log1p": lambda y: torch.log1p(y.abs()),
    "expm1": lambda y: torch.expm1(y),
    "pow": lambda y: y ** 2,
    "softplus": lambda y: torch.nn.functional.softplus(y),
    "softmax": lambda y: torch.softmax(y, -1),
    "log_softmax": lambda y: torch.log_softmax(y, -1),
    "logsumexp": lambda y: torch.logsumexp(y, -1),
    "sum": lambda y: y.sum(-1),
    "prod": lambda y: y.prod(-1),
    "reciprocal": lambda y: torch.reciprocal(y),
    "rsqrt": lambda y: torch.rsqrt(y.abs() + 1),
    "cumsum": lambda y: y.cumsum(-1),
    "addcmul": lambda y: torch.addcmul(y, y, y),
    "atan2": lambda y: torch.atan2(y, y),
    "div": lambda y: y / 3,
    "mul": lambda y: y * y,
    "lgamma": lambda y: torch.lgamma(y.abs() + 1),
    "digamma": lambda y: torch.digamma(y.abs() + 1),
    "log_sigmoid": lambda y: torch.nn.functional.logsigmoid(y),
    "erf": lambda y: torch.erf(y),
    "sigmoid": lambda y: torch.sigmoid(y),
    "matmul": lambda y: y @ y.transpose(-1, -2),
}


def _run_probes(device, wrap) -> dict:
    out = {}
    with device.session(), device.autocast(True, torch.float16):
        x = wrap(torch.randn(4, 3))
        w = wrap(torch.eye(3))
        y = torch.nn.functional.linear(x, w)  # the float16 head every finding starts from
        assert y.dtype == torch.float16
        for name, probe in PROBES.items():
            out[name] = str(probe(y).dtype).replace("torch.", "")
    return out


@pytest.mark.parametrize("device, policy, wrap", [
    (CPU_DEVICE, policies.CPU, lambda t: t),
    (CUDA_EMULATED, policies.CUDA, EmulatedCudaTensor),
])
def test_policy_predicts_the_dtype_each_op_produces(device, policy, wrap) -> None:
    """`runs_in` says what torch does to a float16 input, op by op (CUDA via the emulation's real kernels)."""
    got = _run_probes(device, wrap)
    expected = {name: policy.runs_in(name, "float16") for name in PROBES}
    assert got == expected


def test_the_difference_that_matters() -> None:
    assert policies.promoted_ops(policies.CUDA) == policies.PROBABILITY_OPS
    assert policies.promoted_ops(policies.CPU) == ()
    assert policies.CUDA.policy_of("logsumexp") == policies.FLOAT32  # on the list, not in the docs
    assert policies.CUDA.policy_of("lgamma") == policies.INPUT
    assert policies.policy_for("cuda:1") is policies.CUDA and policies.policy_for(None) is None
