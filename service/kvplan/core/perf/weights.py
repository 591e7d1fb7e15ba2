"""Which GEMM kernels a model's linear layers run on: the weights' dtype, from what the budget
resolved (a weight_dtype given, the checkpoint's quantization_config, --quantization), in the
names steptime.py prices (its _GEMM_DTYPES and _WEIGHT_ONLY)."""

from __future__ import annotations

from ..model.geometry import Geometry

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
