"""Which aten ops CUDA and CPU autocast cast to float16, to float32, or to the widest input.

Why data and not prose: whether a float16 finding is real depends on the
device. CUDA autocast runs `exp`, `log`, `pow`, `softplus`, `softmax`,
`log_softmax`, `logsumexp` and `sum` in float32; CPU autocast leaves all of
them in the input's dtype, so `Normal.log_prob` on float16 heads overflows on
CPU and not on CUDA. The lists are PyTorch's own (`aten/src/ATen/autocast_mode.h`:
`AT_FORALL_LOWER_PRECISION_FP`, `AT_FORALL_FP32`, `AT_FORALL_FP32_SET_OPT_DTYPE`,
`AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE`, `AT_FORALL_PROMOTE`, expanded for
AutocastCUDA in `autocast_mode.cpp`; the AutocastCPU list is written out in
`autocast_mode.cpp`), as registered by torch 2.13. `logsumexp` is on CUDA's
float32 list although the autocast docs omit it. Ops on no list run in their
inputs' dtype (`div`, `mul`, `lgamma`, `digamma`, `log_sigmoid`, ...).

Names are aten schema names with their overload, as the dispatcher registers
them (`pow.Tensor_Scalar`). `tests/test_policies.py` compares these sets with
the kernels the installed torch registers for AutocastCUDA and AutocastCPU.
This module imports nothing: the linter reads it without torch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import FrozenSet, Optional


def _ops(text: str) -> FrozenSet[str]:
    return frozenset(text.split())


# AT_FORALL_LOWER_PRECISION_FP, plus the cuDNN convolutions autocast_mode.cpp registers for CUDA only.
_CUDA_LOWER = _ops("""
    _convolution.deprecated _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d
    conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul einsum
    mm mv linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
    _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention
    scaled_dot_product_attention cudnn_convolution cudnn_convolution_transpose
""")
# AT_FORALL_FP32 + AT_FORALL_FP32_SET_OPT_DTYPE + the fp32_append_dtype `norm` overloads.
_CUDA_FLOAT32 = _ops("""
    acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan
    pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm group_norm
    rms_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim cosine_similarity poisson_nll_loss
    cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div l1_loss smooth_l1_loss
    huber_loss mse_loss margin_ranking_loss multilabel_margin_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss binary_cross_entropy_with_logits dist pdist cdist renorm logsumexp
    upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d _upsample_nearest_exact2d
    upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d
    _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa
    prod prod.dim_int softmax.int log_softmax.int cumprod cumsum linalg_vector_norm
    linalg_matrix_norm linalg_matrix_norm.str_ord sum sum.dim_IntList
    norm.Scalar norm.ScalarOpt_dim
""")
_CUDA_PROMOTE = _ops("addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add")
# Registered for AutocastCUDA to raise: "unsafe to autocast", use binary_cross_entropy_with_logits.
_CUDA_BANNED = _ops("binary_cross_entropy")

_CPU_LOWER = _ops("""
    conv1d conv1d.padding conv2d conv2d.padding conv3d conv3d.padding bmm mm linalg_vecdot baddbmm addmm
    _addmm_activation addbmm linear _convolution.deprecated matmul conv_tbc mkldnn_rnn_layer
    conv_transpose1d conv_transpose2d.input conv_transpose3d.input prelu scaled_dot_product_attention
    _native_multi_head_attention
""")
_CPU_FLOAT32 = _ops("""
    avg_pool3d binary_cross_entropy grid_sampler polar prod prod.dim_int quantile quantile.scalar
    nanquantile nanquantile.scalar stft stft.center cdist grid_sampler_2d _grid_sampler_2d_cpu_fallback
    grid_sampler_3d trace view_as_complex cholesky cholesky_inverse cholesky_solve inverse lu_solve orgqr
    ormqr pinverse max_pool3d max_unpool2d max_unpool3d adaptive_avg_pool3d reflection_pad1d
    reflection_pad2d replication_pad1d replication_pad2d replication_pad3d mse_loss cosine_embedding_loss
    nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss smooth_l1_loss cross_entropy_loss l1_loss
    huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss multi_margin_loss ctc_loss.IntList
    ctc_loss.Tensor kl_div multilabel_margin_loss binary_cross_entropy_with_logits fft_fft fft_ifft
    fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn
    fft_hfft fft_ihfft linalg_cond linalg_cond.p_str linalg_matrix_rank linalg_matrix_rank.tol_tensor
    linalg_matrix_rank.atol_rtol_tensor linalg_matrix_rank.atol_rtol_float linalg_solve linalg_cholesky
    linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv linalg_householder_product linalg_tensorinv
    linalg_tensorsolve fake_quantize_per_tensor_affine geqrf _lu_with_info qr svd triangular_solve
    fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d multilabel_margin_loss_forward
    linalg_qr linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh linalg_lstsq linalg_inv_ex
""")
_CPU_PROMOTE = _ops("stack cat index_copy")

LOWER, FLOAT32, PROMOTE, BANNED, INPUT = "lower-precision", "float32", "promote", "banned", "input dtype"


@dataclass(frozen=True)
class AutocastPolicy:
    """One device's autocast op lists; `runs_in` answers for a single op."""

    device: str  # "cuda" or "cpu", as `torch.autocast(device_type=...)` spells it
    lower_precision: FrozenSet[str]  # cast to the autocast dtype (float16 here)
    float32: FrozenSet[str]  # cast to float32 (fp32, fp32_set_opt_dtype, fp32_append_dtype)
    promote: FrozenSet[str]  # run in the widest floating dtype among the inputs
    banned: FrozenSet[str] = frozenset()  # raise under autocast

    @property
    def registered(self) -> FrozenSet[str]:
        """Every op this device's autocast has a kernel for."""
        return self.lower_precision | self.float32 | self.promote | self.banned

    def policy_of(self, op: str) -> str:
        """The cast policy of `op` ("exp", "pow.Tensor_Scalar"); an op name alone matches any overload."""
        for name, ops in ((LOWER, self.lower_precision), (FLOAT32, self.float32), (PROMOTE, self.promote),
                          (BANNED, self.banned)):
            if op in ops or ("." not in op and any(o.split(".", 1)[0] == op for o in ops)):
                return name
        return INPUT

    def runs_in(self, op: str, input_dtype: str, low: str = "float16") -> str:
        """The dtype `op` computes in when its floating inputs are all `input_dtype`."""
        policy = self.policy_of(op)
        if policy == LOWER and input_dtype in ("float32", low):
            return low
        if policy == FLOAT32 and input_dtype in ("float32", low):
            return "float32"
        return input_dtype


CUDA = AutocastPolicy("cuda", _CUDA_LOWER, _CUDA_FLOAT32, _CUDA_PROMOTE, _CUDA_BANNED)
CPU = AutocastPolicy("cpu", _CPU_LOWER, _CPU_FLOAT32, _CPU_PROMOTE)
POLICIES = {"cuda": CUDA, "cpu": CPU}

# The ops probability code leans on, in the order the rule docs list them.
PROBABILITY_OPS = ("exp", "log", "log1p", "expm1", "pow", "softplus", "softmax", "log_softmax", "logsumexp", "sum")


def policy_for(device: Optional[str]) -> Optional[AutocastPolicy]:
    """The policy for a region's literal device ("cuda", "cuda:1", "cpu"), None when unknown."""
    if device is None:
        return None
    return POLICIES.get(device.split(":", 1)[0])


def promoted_ops(policy: AutocastPolicy) -> tuple:
    """Which of PROBABILITY_OPS `policy` runs in float32 (CUDA: all of them; CPU: none)."""
    return tuple(op for op in PROBABILITY_OPS if policy.policy_of(op) == FLOAT32)
