"""Which GEMM kernels a model's linear layers run on: the weights' dtype, from what the budget
resolved (a weight_dtype given, the checkpoint's quantization_config, --quantization), in the
names steptime.py prices (GEMM_DTYPES and WEIGHT_ONLY, here)."""

from __future__ import annotations

from ..model.geometry import Geometry

# kvplan's weight dtypes → (AIC GEMM table, bytes a weight); "weight-only" dtypes (4-bit AWQ/GPTQ,
# MXFP4, int8) run as bf16 compute over a memory-bound read of their packed weights.
GEMM_DTYPES: dict[str, tuple[str, float]] = {
    "bfloat16": ("bfloat16", 2.0),
    "float16": ("bfloat16", 2.0),
    "float32": ("bfloat16", 4.0),
    "fp8": ("fp8", 1.0),
    "fp8_e4m3": ("fp8", 1.0),
    "fp8_block": ("fp8_block", 1.0 + 4 / 128**2),
    "nvfp4": ("nvfp4", 0.5 + 1 / 16),
    "fp4": ("nvfp4", 0.5 + 1 / 16),
}
WEIGHT_ONLY: dict[str, float] = {
    "int4": 0.5 + 2 / 128,
    "w4a16": 0.5 + 2 / 128,
    "awq": 0.5 + 2 / 128,
    "gptq": 0.5 + 2 / 128,
    "mxfp4": 0.5 + 1 / 32,
    "int8": 1.0 + 2 / 128,
    "w8a16": 1.0 + 2 / 128,
}

# QuantScheme names (core/model/quant.py) by their leading words → the GEMM dtype.
_SCHEMES: tuple[tuple[str, str], ...] = (
    ("fp8 block", "fp8_block"),
    ("fp8", "fp8"),
    ("modelopt fp8", "fp8"),
    ("modelopt nvfp4", "nvfp4"),
    ("compressed-tensors fp4", "nvfp4"),
    ("compressed-tensors fp8", "fp8"),
    ("compressed-tensors int4", "w4a16"),
    ("compressed-tensors int8", "int8"),
    ("awq int4", "w4a16"),
    ("awq int8", "int8"),
    ("gptq int4", "w4a16"),
    ("gptq int8", "int8"),
    ("bitsandbytes nf4", "int4"),
    ("bitsandbytes int8", "int8"),
)


def gemm_dtype(geometry: Geometry, weight_dtype: str | None) -> str:
    """The dense linear layers' GEMM dtype: a weight_dtype given wins, then the checkpoint's
    scheme, then its own dtype (bf16/fp16)."""
    if weight_dtype is not None:
        return weight_dtype
    if geometry.weight_dtype is not None:
        return geometry.weight_dtype
    if geometry.quant is not None:
        name = geometry.quant.name
        for prefix, dtype in _SCHEMES:
            if name.startswith(prefix):
                return dtype
    return geometry.dtype
