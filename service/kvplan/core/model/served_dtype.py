"""The dtype vLLM 0.33 serves a model in under --dtype (vllm/config/model.py _get_and_verify_dtype):
the unquantized weights' dtype, and the KV cache's and Mamba state's under "auto"
(docs/vllm-rules.md §2.4).

A geometry's `dtype` is already what --dtype auto serves (core/hf/fields.py model_dtype: the config's
torch_dtype, a float32 checkpoint served as bfloat16), so "auto" changes nothing; any other value
is the dtype itself, as vLLM takes it (half → float16, float → float32)."""

from __future__ import annotations

from msgspec.structs import replace

from ..engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from ..errors import InvalidInput
from .geometry import Geometry

FIELD = "dtype"
# Model types vLLM refuses to run in float16 (vllm/config/model.py _FLOAT16_NOT_SUPPORTED_MODELS).
FLOAT16_NOT_SUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def served_dtype(dtype: str, geometry: Geometry) -> str:
    """The model dtype --dtype `dtype` serves `geometry` in; a refusal (400 naming `dtype`) where
    vLLM's _check_valid_dtype raises."""
    if dtype == "auto":
        return geometry.dtype
    served = MODEL_DTYPE_ALIASES.get(dtype, dtype)
    if served not in MODEL_DTYPES:
        raise InvalidInput(FIELD, f"{dtype!r} is not one of auto, bfloat16, float16, half, float32, float")
    if served == "float16" and geometry.model_type in FLOAT16_NOT_SUPPORTED:
        raise InvalidInput(
            FIELD,
            f"vLLM refuses float16 for model type {geometry.model_type!r} (numerical instability; "
            "vllm/config/model.py _check_valid_dtype): use bfloat16 or float32",
        )
    return served


def with_served_dtype(geometry: Geometry, dtype: str) -> Geometry:
    """The geometry as vLLM serves it under --dtype `dtype`: its model dtype (the KV cache's under
    kv_cache_dtype auto, and the unquantized weights'), the Mamba conv state's and, unless the
    config names its own, the SSM state's (mamba_cache_dtype auto). A checkpoint's tensor list
    is stored bytes: where the served dtype's width differs from the config's, the weights are
    counted from the parameters instead (when known)."""
    served = served_dtype(dtype, geometry)
    if served == geometry.dtype:
        return geometry
    changes: dict[str, object] = {"dtype": served}
    m = geometry.mamba
    if m is not None:
        ssm = served if m.ssm_dtype == geometry.dtype else m.ssm_dtype
        changes["mamba"] = replace(m, conv_dtype=served, ssm_dtype=ssm)
    resized = MODEL_DTYPES[served] != MODEL_DTYPES[geometry.dtype]
    if resized and geometry.loaded_weights is not None and geometry.params_total is not None:
        changes["loaded_weights"] = None
    return replace(geometry, **changes)
