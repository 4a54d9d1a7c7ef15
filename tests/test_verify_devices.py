"""cuda-emulated gives CUDA autocast's documented dtype policy on a CPU-only torch."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from amplint.verify.devices import CPU, CUDA_EMULATED, EmulatedCudaTensor, resolve_device, to_host  # noqa: E402


def _emulated(fn):
    with CUDA_EMULATED.session(), CUDA_EMULATED.autocast(True, torch.float16):
        return fn()


def test_documented_cuda_autocast_ops() -> None:
    """CUDA autocast docs: linear runs in float16; exp, pow, sum, softmax, log are promoted to float32."""
    x = EmulatedCudaTensor(torch.randn(4, 3))
    w = EmulatedCudaTensor(torch.randn(2, 3))

    def run():
        y = torch.nn.functional.linear(x, w)
        return {
            "linear": y.dtype, "exp": torch.exp(y).dtype, "pow": (y ** 2).dtype, "sum": y.sum().dtype,
            "softmax": torch.softmax(y, -1).dtype, "log": y.abs().log().dtype, "mul": (y * y).dtype,
            "device": y.device.type,
        }

    got = _emulated(run)
    assert got == {"linear": torch.float16, "exp": torch.float32, "pow": torch.float32, "sum": torch.float32,
                   "softmax": torch.float32, "log": torch.float32, "mul": torch.float16, "device": "cuda"}


def test_cpu_autocast_differs_exp_stays_float16() -> None:
    """The reason for the emulation: CPU autocast leaves exp/pow in float16."""
    with CPU.autocast(True, torch.float16):
        y = torch.nn.functional.linear(torch.randn(4, 3), torch.randn(2, 3))
        assert (y.dtype, torch.exp(y).dtype, (y ** 2).dtype) == (torch.float16,) * 3


def test_indexing_factories_and_values_survive_emulation() -> None:
    data = torch.arange(12.0).reshape(3, 4)

    def run():
        t = EmulatedCudaTensor(data)
        return t[..., :1], t[1], t[:, None].shape, torch.tensor(2.0, device=t.device) * t

    sliced, row, shape, doubled = _emulated(run)
    assert torch.equal(to_host(sliced), data[..., :1]) and torch.equal(to_host(row), data[1])
    assert shape == (3, 1, 4) and torch.equal(to_host(doubled), 2 * data)


def test_autocast_state_is_restored() -> None:
    before = (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"))
    with CUDA_EMULATED.autocast(True, torch.float16):
        assert torch.is_autocast_enabled("cuda")
        with CUDA_EMULATED.autocast(False):
            assert not torch.is_autocast_enabled("cuda")
        assert torch.is_autocast_enabled("cuda")
    assert (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda")) == before


def test_device_choice() -> None:
    assert resolve_device("cpu").device is CPU
    assert resolve_device("cuda-emulated").device is CUDA_EMULATED
    auto = resolve_device("auto").device
    assert auto is not None and auto.name == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        choice = resolve_device("cuda")
        assert choice.device is None and "cuda-emulated" in (choice.error or "")
