"""Which measured MoE table prices a model's routed experts: their dtype's, on the kernel vLLM
runs for it (its fused_moe/oracle/), the Marlin or MXFP8-activation kernel where the deployment
asks for one, and the GPU's shard of each expert at its tensor-parallel size."""

from __future__ import annotations

from .coeffs import SystemCoeffs
from .weights import GEMM_DTYPES, WEIGHT_ONLY

# Experts' weight dtype → (fitted MoE table, bytes a weight): the GEMM dtypes' own (float32 experts
# as bf16), MXFP4 and the 4-bit weight-only formats on their MoE kernels' tables.
MOE_DTYPES: dict[str, tuple[str, float]] = {
    **{d: table for d, table in GEMM_DTYPES.items() if d != "float32"},
    "mxfp4": ("w4a16_mxfp4", WEIGHT_ONLY["mxfp4"]),
    **{d: ("int4_wo", WEIGHT_ONLY[d]) for d in ("int4", "w4a16", "awq", "gptq")},
}
# MXFP8 activations for MXFP4 experts (vLLM 0.33: --quantization-config moe.activation mxfp8; earlier
# VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1): FlashInfer's TRT-LLM MXFP4 × MXFP8 kernel where it runs
# (data-center Blackwell), after an explicit --moe-backend; elsewhere vLLM 0.33 falls back to BF16
# activations with a warning (fused_moe/oracle/mxfp4.py _filter_by_activation, _warn_on_bf16_fallback).
MXFP8_TABLE = "w4a8_mxfp4_mxfp8"


def expert_table(
    table: SystemCoeffs,
    system: str,
    dtype: str,
    tp: int,
    moe_backend: str,
    mxfp8_activations: bool,
) -> tuple[str, float, str]:
    """(the table's key, bytes a weight, a note) for experts of `dtype` on this GPU's tables; a key
    the tables lack (A100 has no MoE table) leaves the caller to price the experts as a GEMM. The
    note says when MXFP8 activations were asked for and vLLM falls back to BF16 ones."""
    key, nbytes = MOE_DTYPES.get(dtype, ("bfloat16", WEIGHT_ONLY.get(dtype, 2.0)))
    mxfp4 = key == "w4a16_mxfp4"  # before a GPU without MoE tables falls back to bf16
    note = ""
    if key == "fp8" and "fp8_block" in table.moe:
        key = "fp8_block"  # fp8 MoE checkpoints (DeepSeek, Qwen3-FP8, Kimi) are block-quantized
    if key not in table.moe:
        key = "bfloat16"
    if moe_backend == "marlin" and f"{key}_marlin" in table.moe:
        key = f"{key}_marlin"  # the Marlin kernel's own table, where AIC measured another too
    elif mxfp8_activations and mxfp4 and moe_backend == "auto":
        if MXFP8_TABLE not in table.moe:
            note = (
                f"MXFP8 activations asked for, but no MXFP4 × MXFP8 kernel runs on {system} (data-center "
                "Blackwell only): vLLM 0.33 falls back to BF16 activations with a warning"
            )
        else:
            key = MXFP8_TABLE
    if f"{key}@tp{tp}" in table.moe:
        key = f"{key}@tp{tp}"  # the GPU's shard of each expert, measured at this TP
    return key, nbytes, note
