"""gpt-oss's MXFP4 experts as vLLM 0.33 runs and allocates them, which is not as the checkpoint
stores them: the kernel vLLM picks for the GPU and the activations asked for
(vllm/model_executor/layers/fused_moe/oracle/mxfp4.py select_mxfp4_moe_backend over
_get_priority_backends_for_gpt_oss and _filter_by_activation, each kernel's _supports_current_device
and _supports_quant_scheme in fused_moe/experts/), the sizes that kernel pads the hidden and the
per-rank intermediate size to (mxfp4_round_up_hidden_size_and_intermediate_size), and the tensors
GptOssMxfp4MoEMethod.create_weights makes at those sizes (vllm/model_executor/layers/quantization/
mxfp4.py): "Model loading took" counts the padding. One home for the kernel: the budget pads by it,
the step-time model picks its table by it."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..errors import InvalidInput
from ..units import cdiv
from .geometry import Geometry

# The kernels, by their --moe-backend name; "_mxfp8" marks the MXFP8-activation variant.
Kernel = Literal[
    "flashinfer_trtllm",
    "flashinfer_trtllm_mxfp8",
    "flashinfer_cutlass",
    "flashinfer_cutlass_mxfp8",
    "marlin",
    "triton",
    "triton_unfused",
    "humming",
    "deep_gemm",
    "emulation",
    "b12x",
    "flashinfer_moe_ep_cutedsl",
    "flashinfer_moe_ep_mega_deep_gemm",
]
# Kernel → (hidden alignment, per-rank intermediate alignment) of the round-up (1: none; its last
# branch, Triton and the kernels it does not name, pads the intermediate size to 64).
KERNEL_ALIGNMENT: dict[Kernel, tuple[int, int]] = {
    "flashinfer_trtllm": (256, 128),
    "flashinfer_trtllm_mxfp8": (256, 128),
    "flashinfer_cutlass": (128, 128),
    "flashinfer_cutlass_mxfp8": (128, 128),
    "marlin": (256, 128),
    "deep_gemm": (128, 128),
    "triton": (1, 64),
    "triton_unfused": (1, 64),
    "humming": (1, 64),
    "emulation": (32, 32),
    "b12x": (1, 1),  # plans for the exact dimensions
    "flashinfer_moe_ep_cutedsl": (1, 1),  # the megakernels read the checkpoint's tensors
    "flashinfer_moe_ep_mega_deep_gemm": (1, 1),
}
# The kernels that turn both biases to fp32 after loading (oracle/mxfp4.py
# convert_gpt_oss_weight_to_mxfp4_moe_kernel_format: TRT-LLM's and Triton's branches).
_FP32_BIASES = frozenset({"flashinfer_trtllm", "flashinfer_trtllm_mxfp8", "triton", "triton_unfused"})
# What compute capability (major) each kernel runs on (its _supports_current_device, and for
# FlashInfer's CUTLASS its _supports_quant_scheme: MXFP4 × BF16 on SM 9.0 only, × MXFP8 from 10.0).
_RUNS_ON: dict[Kernel, frozenset[int]] = {
    "flashinfer_trtllm": frozenset({10}),
    "flashinfer_trtllm_mxfp8": frozenset({10}),
    "flashinfer_cutlass": frozenset({9}),
    "flashinfer_cutlass_mxfp8": frozenset({10, 12}),
    "marlin": frozenset({8, 9, 10, 11, 12}),
    "triton": frozenset({9, 10, 11, 12}),
    "triton_unfused": frozenset({9, 10, 11, 12}),
    "humming": frozenset({8, 9, 10, 11, 12}),
    "deep_gemm": frozenset({10, 12}),
    "emulation": frozenset({8, 9, 10, 11, 12}),
    "b12x": frozenset({12}),
    "flashinfer_moe_ep_cutedsl": frozenset({10}),
    "flashinfer_moe_ep_mega_deep_gemm": frozenset(),  # DeepSeek-V4 only (vllm/config/kernel.py)
}
# --moe-backend → its MXFP4 kernels, MXFP8 variant first (oracle/mxfp4.py map_mxfp4_backend; the
# MXFP8 variant is taken when MXFP8 activations are asked for, else the BF16 one).
_BY_FLAG: dict[str, tuple[Kernel, ...]] = {
    "flashinfer_trtllm": ("flashinfer_trtllm_mxfp8", "flashinfer_trtllm"),
    "flashinfer_cutlass": ("flashinfer_cutlass_mxfp8", "flashinfer_cutlass"),
    **{k: (k,) for k in ("marlin", "triton", "triton_unfused", "humming", "deep_gemm", "emulation", "b12x")},
    "flashinfer_moe_ep_cutedsl": ("flashinfer_moe_ep_cutedsl",),
    "flashinfer_moe_ep_mega_deep_gemm": ("flashinfer_moe_ep_mega_deep_gemm",),
}
_MXFP8_ORDER: tuple[Kernel, ...] = ("flashinfer_trtllm_mxfp8", "flashinfer_cutlass_mxfp8")
# ROCm's kernels: their alignment depends on the AITER kernel and the CDNA generation.
_ROCM_ONLY = ("aiter", "aiter_triton_mxfp4_bf16", "aiter_triton_mxfp4_mxfp4")
_MXFP4_BLOCK = 32  # elements a scale covers (OCP MX)


class KernelChoice(msgspec.Struct, frozen=True, kw_only=True):
    kernel: Kernel
    why: str
    mxfp8_fallback: bool = False  # MXFP8 activations asked for, none of its kernels runs here


class Mxfp4Experts(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU's MXFP4 experts as vLLM allocates them."""

    kernel: Kernel
    chosen_by: str  # why that kernel
    hidden: int
    intermediate: int  # per rank, before padding
    padded_hidden: int
    padded_intermediate: int
    experts: int  # on the fullest rank
    layers: int
    bias_bytes: int  # 2 (bf16), or 4 where the kernel turns the biases to fp32
    bytes: int  # what the rank holds
    unpadded_bytes: int  # the same tensors at the model's own sizes


def gpt_oss_kernel(sm: int | None, moe_backend: str, mxfp8: bool) -> KernelChoice | None:
    """The kernel vLLM 0.33 runs gpt-oss's MXFP4 experts on, for a GPU of compute-capability major
    `sm` (None: not known, planned as Hopper), or None where kvplan does not model the choice (AMD's
    ROCm kernels). A --moe-backend with no MXFP4 kernel, or one that does not run on the GPU, is
    refused, as vLLM refuses to start with it."""
    if moe_backend in _ROCM_ONLY and sm not in (0, None):
        raise InvalidInput(
            "moe_backend",
            f"--moe-backend {moe_backend} is ROCm's (AITER): it runs on AMD GPUs only, and vLLM fails "
            f"to start with it on compute capability {sm}.x",
        )
    if sm == 0 or moe_backend in _ROCM_ONLY:
        return None
    place = 9 if sm is None else sm
    if place < 8:
        raise InvalidInput("gpu", f"vLLM runs MXFP4 models from compute capability 8.0 (this GPU: {sm}.x)")
    if moe_backend != "auto":
        kernels = _BY_FLAG.get(moe_backend)
        if kernels is None:
            raise InvalidInput(
                "moe_backend",
                f"vLLM runs no MXFP4 MoE kernel under --moe-backend {moe_backend} and fails to start "
                "(fused_moe/oracle/mxfp4.py map_mxfp4_backend); gpt-oss's experts run on "
                f"{', '.join(sorted([*_BY_FLAG, *_ROCM_ONLY]))} or auto",
            )
        wanted = [k for k in kernels if mxfp8 or not k.endswith("_mxfp8")]
        fits = [k for k in wanted if place in _RUNS_ON[k]]
        if not fits:
            raise InvalidInput(
                "moe_backend",
                f"--moe-backend {moe_backend} has no MXFP4 kernel for gpt-oss on this GPU (compute "
                f"capability {place}.x) and vLLM fails to start (fused_moe/oracle/mxfp4.py _return_or_raise)",
            )
        return KernelChoice(
            kernel=fits[0], why="--moe-backend", mxfp8_fallback=mxfp8 and not fits[0].endswith("_mxfp8")
        )
    if mxfp8:  # _filter_by_activation: the MXFP8 variants first, in the gpt-oss order
        for k in _MXFP8_ORDER:
            if place in _RUNS_ON[k]:
                return KernelChoice(kernel=k, why=f"auto with MXFP8 activations on SM {place}.x")
    if place == 10:
        choice = KernelChoice(kernel="flashinfer_trtllm", why="auto on data-center Blackwell (SM 10.x)")
    elif place in (9, 11):
        choice = KernelChoice(kernel="triton", why=f"auto on SM {place}.x: the OAI Triton kernels vLLM ships")
    else:
        why = "the OAI Triton kernels need SM 9.0+; on SM 12.x they rank after Marlin"
        choice = KernelChoice(kernel="marlin", why=f"auto on SM {place}.x: Marlin ({why})")
    return msgspec.structs.replace(choice, mxfp8_fallback=mxfp8)


def kernel_from_log(said: str) -> str | None:
    """The --moe-backend name of the MXFP4 kernel a vLLM log names: 0.19 on print the kernel's enum
    value ("Using 'MARLIN' Mxfp4 MoE backend."), earlier ones a phrase ("Using Marlin backend",
    "Using FlashInfer MXFP4 BF16 backend for SM100", Marlin's weight-only FP4 warning). None for a
    name kvplan does not map."""
    enum = said.upper()
    if "SM90" in enum or "CUTLASS" in enum:
        return "flashinfer_cutlass"  # SM90_FI_MXFP4_BF16 (FlashInfer's CUTLASS on Hopper), *_CUTLASS
    for key, name in (
        ("BATCHED_MARLIN", "marlin"),
        ("MARLIN", "marlin"),
        ("TRITON_UNFUSED", "triton_unfused"),
        ("TRITON", "triton"),
        ("TRTLLM", "flashinfer_trtllm"),
        ("FLASHINFER MXFP4", "flashinfer_trtllm"),  # "… BF16 backend for SM100": SM100_FI_MXFP4_BF16
        ("DEEPGEMM", "deep_gemm"),
        ("HUMMING", "humming"),
        ("EMULATION", "emulation"),
        ("B12X", "b12x"),
    ):
        if key in enum:
            return name
    return None


def _round_up(n: int, to: int) -> int:
    return cdiv(n, to) * to


def has_gpt_oss_mxfp4_experts(g: Geometry) -> bool:
    """gpt-oss with its experts in MXFP4: the model whose experts vLLM pads for its kernel."""
    return g.model_type == "gpt_oss" and g.expert_weight_dtype == "mxfp4"


def _tensor_bytes(experts: int, hidden: int, inter: int, bias: int) -> int:
    """GptOssMxfp4MoEMethod.create_weights, one layer: w13 [E, 2I, H/2] and w2 [E, H, I/2] packed
    uint8, their scales [E, 2I, H/32] and [E, H, I/32] uint8, biases [E, 2I] and [E, H] (w2's whole
    on every rank) of `bias` bytes."""
    w13 = 2 * inter * (hidden // 2 + hidden // _MXFP4_BLOCK + bias)
    w2 = hidden * (inter // 2 + inter // _MXFP4_BLOCK + bias)
    return experts * (w13 + w2)


def gpt_oss_experts(
    *,
    sm: int | None,
    moe_backend: str,
    mxfp8: bool,
    hidden: int,
    intermediate: int,
    experts: int,
    layers: int,
    ranks: int,
    expert_parallel: bool,
) -> Mxfp4Experts | None:
    """One GPU's MXFP4 experts over `ranks` (TP × DP): each expert's intermediate size split over
    them, or whole experts with expert parallelism (the fullest rank, ⌈E / ranks⌉). None where the
    kernel is not modelled."""
    chosen = gpt_oss_kernel(sm, moe_backend, mxfp8)
    if chosen is None:
        return None
    h_align, i_align = KERNEL_ALIGNMENT[chosen.kernel]
    on_rank = cdiv(experts, ranks) if expert_parallel else experts
    inter = intermediate if expert_parallel else intermediate // ranks
    ph, pi = _round_up(hidden, h_align), _round_up(inter, i_align)
    bias = 4 if chosen.kernel in _FP32_BIASES else 2
    return Mxfp4Experts(
        kernel=chosen.kernel,
        chosen_by=chosen.why,
        hidden=hidden,
        intermediate=inter,
        padded_hidden=ph,
        padded_intermediate=pi,
        experts=on_rank,
        layers=layers,
        bias_bytes=bias,
        bytes=layers * _tensor_bytes(on_rank, ph, pi, bias),
        unpadded_bytes=layers * _tensor_bytes(on_rank, hidden, inter, bias),
    )
