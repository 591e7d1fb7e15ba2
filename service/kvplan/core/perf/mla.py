"""DeepSeek-V3's MLA attention as AIConfigurator measured it (its MLA module tables): which fit a
model's MLA reads, and the projections' parameters a layer (steptime.py prices them)."""

from __future__ import annotations

from ..engine.dtypes import FP8_PER_TENSOR, MODEL_DTYPES, resolve_kv_dtype
from ..model.geometry import MLA, Geometry
from .coeffs import MlaFit, SystemCoeffs

# DeepSeek-V3's MLA dims (hidden, kv_lora_rank, qk_rope, qk_nope, v head; q_lora_rank 1536 is not
# in the geometry), the shape AIC measured its MLA module on; other MLA models (and DeepSeek-V3.2's
# sparse attention) are priced on their latent width over the GQA fits.
_DSV3_MLA = (7168, 512, 64, 128, 128)


def mla_module(
    geometry: Geometry, table: SystemCoeffs, gemm_key: str, kv_cache_dtype: str
) -> tuple[MlaFit | None, str]:
    """The MLA module fit for a DeepSeek-V3-shaped MLA model (not sparse), by its KV dtype and
    projection dtype (fp8 checkpoints of this family are block-quantized); else (None, "")."""
    shape = geometry.shape
    dims = (
        shape.hidden_size if shape else 0,
        geometry.kv_lora_rank,
        geometry.qk_rope_head_dim,
        geometry.qk_nope_head_dim,
        geometry.mla_v_head_dim,
    )
    if dims != _DSV3_MLA or geometry.index_head_dim is not None or set(geometry.layer_pattern) != {MLA}:
        return None, ""
    kv = resolve_kv_dtype(kv_cache_dtype, geometry.dtype)
    kv_key = "bfloat16" if kv in MODEL_DTYPES else "fp8" if kv in FP8_PER_TENSOR or kv == "fp8_ds_mla" else ""
    gemm = {"bfloat16": "bfloat16", "fp8": "fp8_block", "fp8_block": "fp8_block", "nvfp4": "nvfp4"}.get(
        gemm_key
    )
    key = f"{kv_key}/{gemm}"
    fit = table.mla.get(key)
    return (fit, key) if fit is not None else (None, "")


def mla_params(geometry: Geometry) -> float:
    """DeepSeek-V3's attention projections a layer: q_a, q_b, kv_a (latent + rope), kv_b, o."""
    shape = geometry.shape
    h = shape.hidden_size if shape else 0
    heads = geometry.num_attention_heads
    q_lora = 1536
    return float(
        h * q_lora
        + q_lora * heads * (128 + 64)
        + h * (512 + 64)
        + 512 * heads * (128 + 128)
        + heads * 128 * h
    )
