"""Which measured MoE table prices a model's routed experts: their dtype's, on the kernel vLLM
runs for it (its fused_moe/oracle/), the Marlin or MXFP8-activation kernel where the deployment
asks for one, and the GPU's shard of each expert at its tensor-parallel size."""

from __future__ import annotations

from ..model.mxfp4 import gpt_oss_kernel
from .coeffs import SystemCoeffs
from .weights import GEMM_DTYPES, WEIGHT_ONLY

# Experts' weight dtype → (fitted MoE table, bytes a weight): the GEMM dtypes' own (float32 experts
# as bf16), MXFP4 and the 4-bit weight-only formats on their MoE kernels' tables.
MOE_DTYPES: dict[str, tuple[str, float]] = {
    **{d: table for d, table in GEMM_DTYPES.items() if d != "float32"},
    "mxfp4": ("w4a16_mxfp4", WEIGHT_ONLY["mxfp4"]),
    **{d: ("int4_wo", WEIGHT_ONLY[d]) for d in ("int4", "w4a16", "awq", "gptq")},
}
# MXFP4 experts with MXFP8 activations (vLLM 0.33: --quantization-config moe.activation mxfp8; earlier
# VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1) run the kernel core/model/mxfp4.py picks: FlashInfer's
# MXFP4 × MXFP8 TRT-LLM kernel on data-center Blackwell, its CUTLASS one on SM 12.x, and BF16
# activations, with a warning, where neither runs. AIConfigurator measured the TRT-LLM one only.
MXFP8_TABLE = "w4a8_mxfp4_mxfp8"


def expert_table(
    table: SystemCoeffs,
    system: str,
    dtype: str,
    tp: int,
    moe_backend: str,
    mxfp8_activations: bool,
    sm: int | None = None,
) -> tuple[str, float, str]:
    """(the table's key, bytes a weight, a note) for experts of `dtype` on this GPU's tables (of
    compute-capability major `sm`); a key the tables lack (A100 has no MoE table) leaves the caller
    to price the experts as a GEMM. The note says what of MXFP8 activations vLLM honours here."""
    key, nbytes = MOE_DTYPES.get(dtype, ("bfloat16", WEIGHT_ONLY.get(dtype, 2.0)))
    mxfp4 = key == "w4a16_mxfp4"  # before a GPU without MoE tables falls back to bf16
    note = ""
    if key == "fp8" and "fp8_block" in table.moe:
        key = "fp8_block"  # fp8 MoE checkpoints (DeepSeek, Qwen3-FP8, Kimi) are block-quantized
    if key not in table.moe:
        key = "bfloat16"
    if moe_backend == "marlin" and f"{key}_marlin" in table.moe:
        key = f"{key}_marlin"  # the Marlin kernel's own table, where AIC measured another too
    elif mxfp8_activations and mxfp4:
        chosen = gpt_oss_kernel(sm, moe_backend, True)
        if chosen is not None and chosen.mxfp8_fallback:
            note = (
                f"MXFP8 activations asked for, but no MXFP4 × MXFP8 kernel runs on {system}: vLLM 0.33 "
                "falls back to BF16 activations with a warning"
            )
        elif chosen is not None and chosen.kernel == "flashinfer_trtllm_mxfp8" and MXFP8_TABLE in table.moe:
            key = MXFP8_TABLE
        elif chosen is not None:
            note = (
                f"vLLM runs {chosen.kernel} here; AIConfigurator measured no such kernel on {system}: "
                "priced on the MXFP4 × BF16 table"
            )
    if f"{key}@tp{tp}" in table.moe:
        key = f"{key}@tp{tp}"  # the GPU's shard of each expert, measured at this TP
    return key, nbytes, note
