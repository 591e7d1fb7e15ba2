"""gpt-oss's MXFP4 experts as vLLM 0.33 allocates them, which is not as the checkpoint stores them:
the kernel vLLM picks for the GPU (vllm/model_executor/layers/fused_moe/oracle/mxfp4.py
select_mxfp4_moe_backend over _get_priority_backends_for_gpt_oss, each kernel's
_supports_current_device), the sizes that kernel pads the hidden and the per-rank intermediate
size to (mxfp4_round_up_hidden_size_and_intermediate_size), and the tensors
GptOssMxfp4MoEMethod.create_weights makes at those sizes (vllm/model_executor/layers/quantization/
mxfp4.py): the padding is allocated, and "Model loading took" counts it."""

from __future__ import annotations

import msgspec

from ..errors import InvalidInput

# --moe-backend → (hidden alignment, per-rank intermediate alignment) of the kernel it names for
# MXFP4 (oracle/mxfp4.py map_mxfp4_backend, then the round-up; 1: no padding). The final branch of
# the round-up (Triton and the others it does not name) pads the intermediate size to 64.
KERNEL_ALIGNMENT: dict[str, tuple[int, int]] = {
    "flashinfer_trtllm": (256, 128),
    "marlin": (256, 128),
    "flashinfer_cutlass": (128, 128),
    "deep_gemm": (128, 128),
    "triton": (1, 64),
    "triton_unfused": (1, 64),
    "humming": (1, 64),
    "emulation": (32, 32),
    "b12x": (1, 1),  # plans for the exact dimensions
    "flashinfer_moe_ep_cutedsl": (1, 1),  # the megakernels read the checkpoint's tensors
    "flashinfer_moe_ep_mega_deep_gemm": (1, 1),
}
# ROCm's kernels: their alignment depends on the AITER kernel and the CDNA generation.
_ROCM_ONLY = ("aiter", "aiter_triton_mxfp4_bf16", "aiter_triton_mxfp4_mxfp4")
_MXFP4_BLOCK = 32  # elements a scale covers (OCP MX)


class Mxfp4Experts(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU's MXFP4 experts as vLLM allocates them."""

    kernel: str  # the --moe-backend name of the kernel vLLM runs
    chosen_by: str  # why that kernel
    hidden: int
    intermediate: int  # per rank, before padding
    padded_hidden: int
    padded_intermediate: int
    experts: int  # on the fullest rank
    layers: int
    bytes: int  # what the rank holds
    unpadded_bytes: int  # the same tensors at the model's own sizes


def gpt_oss_kernel(sm: int | None, moe_backend: str) -> tuple[str, str] | None:
    """(kernel, why) vLLM 0.33 runs gpt-oss's MXFP4 experts on, for a GPU of compute-capability
    major `sm` (None: not known, planned as Hopper), or None where kvplan does not model the choice
    (AMD's ROCm kernels). A --moe-backend that names no MXFP4 kernel is refused, as vLLM refuses it."""
    if moe_backend != "auto":
        if moe_backend in KERNEL_ALIGNMENT:
            return moe_backend, "--moe-backend"
        if moe_backend in _ROCM_ONLY:
            return None
        raise InvalidInput(
            "moe_backend",
            f"vLLM runs no MXFP4 MoE kernel under --moe-backend {moe_backend} and fails to start "
            "(fused_moe/oracle/mxfp4.py map_mxfp4_backend); gpt-oss's experts run on "
            f"{', '.join(sorted([*KERNEL_ALIGNMENT, *_ROCM_ONLY]))} or auto",
        )
    if sm == 0:
        return None
    if sm == 10:
        return "flashinfer_trtllm", "auto on data-center Blackwell (SM 10.x): FlashInfer TRT-LLM MXFP4 × BF16"
    if sm is None or sm == 9:
        return "triton", "auto on Hopper (SM 9.x): the OAI Triton kernels vLLM ships"
    why = "the OAI Triton kernels need SM 9.0+; on SM 12.x they rank after Marlin"
    return "marlin", f"auto on SM {sm}.x: Marlin ({why})"


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
    return -(-n // to) * to


def _tensor_bytes(experts: int, hidden: int, inter: int) -> int:
    """GptOssMxfp4MoEMethod.create_weights, one layer: w13 [E, 2I, H/2] and w2 [E, H, I/2] packed
    uint8, their scales [E, 2I, H/32] and [E, H, I/32] uint8, biases [E, 2I] and [E, H] bf16 (w2's
    whole on every rank)."""
    w13 = 2 * inter * (hidden // 2 + hidden // _MXFP4_BLOCK + 2)
    w2 = hidden * (inter // 2 + inter // _MXFP4_BLOCK + 2)
    return experts * (w13 + w2)


def gpt_oss_experts(
    *,
    sm: int | None,
    moe_backend: str,
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
    chosen = gpt_oss_kernel(sm, moe_backend)
    if chosen is None:
        return None
    kernel, why = chosen
    h_align, i_align = KERNEL_ALIGNMENT[kernel]
    on_rank = -(-experts // ranks) if expert_parallel else experts
    inter = intermediate if expert_parallel else intermediate // ranks
    ph, pi = _round_up(hidden, h_align), _round_up(inter, i_align)
    return Mxfp4Experts(
        kernel=kernel,
        chosen_by=why,
        hidden=hidden,
        intermediate=inter,
        padded_hidden=ph,
        padded_intermediate=pi,
        experts=on_rank,
        layers=layers,
        bytes=layers * _tensor_bytes(on_rank, ph, pi),
        unpadded_bytes=layers * _tensor_bytes(on_rank, hidden, inter),
    )
