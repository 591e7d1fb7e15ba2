"""KV-cache and weight dtypes with exact byte counts (vllm/config/cache.py, vllm/utils/torch_utils.py)."""

from __future__ import annotations

from ..errors import InvalidInput, UnknownName

MODEL_DTYPES: dict[str, int] = {
    "bfloat16": 2,
    "float16": 2,
    "float32": 4,
}
MODEL_DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "float": "float32",
    "fp32": "float32",
}

# kv_cache_dtype → how one (token, head) cell is laid out.
KV_CACHE_DTYPES: tuple[str, ...] = (
    "auto",
    "bfloat16",
    "float16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "int8_per_token_head",
    "fp8_per_token_head",
    "int4_per_token_head",
    "nvfp4",
    "fp8_ds_mla",
)
FP8_PER_TENSOR = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"})
PER_TOKEN_HEAD = frozenset({"int8_per_token_head", "fp8_per_token_head", "int4_per_token_head"})
# One MLA token-layer in DeepSeek-V3.2's fp8_ds_mla layout: 512 fp8 + 4×fp32 scales + 64 bf16 rope.
FP8_DS_MLA_BYTES = 656
# DeepSeek-V3.2 indexer cache per token-layer: index_head_dim fp8 + one fp32 scale.
INDEXER_SCALE_BYTES = 4


def check_kv_dtype(name: str, field: str = "kv_cache_dtype") -> str:
    if name not in KV_CACHE_DTYPES:
        raise UnknownName(field, "kv_cache_dtype", name, KV_CACHE_DTYPES)
    return name


def resolve_kv_dtype(kv_dtype: str, model_dtype: str) -> str:
    """`auto` means the model dtype."""
    return model_dtype if kv_dtype == "auto" else kv_dtype


def attention_cell_bytes(kv_dtype: str, dk: int, dv: int, field: str = "kv_cache_dtype") -> int:
    """Bytes of one (token, KV head) cell holding K (dk) and V (dv); kv_dtype already resolved."""
    if kv_dtype in MODEL_DTYPES:
        return (dk + dv) * MODEL_DTYPES[kv_dtype]
    if kv_dtype in FP8_PER_TENSOR:
        return dk + dv
    if kv_dtype in ("int8_per_token_head", "fp8_per_token_head"):
        return dk + dv + 8
    if kv_dtype == "int4_per_token_head":
        if dk % 2 or dv % 2:
            raise InvalidInput(field, f"int4 packs two values a byte: head dims {dk}/{dv} must be even")
        return dk // 2 + dv // 2 + 8
    if kv_dtype == "nvfp4":
        if dk % 16 or dv % 16:
            raise InvalidInput(
                field, f"nvfp4 scales every 16 values: head dims {dk}/{dv} must be multiples of 16"
            )
        return dk // 2 + dk // 16 + dv // 2 + dv // 16
    if kv_dtype == "fp8_ds_mla":
        raise InvalidInput(field, "fp8_ds_mla is the DeepSeek-V3.2 MLA layout; this layer is not MLA")
    raise UnknownName(field, "kv_cache_dtype", kv_dtype, KV_CACHE_DTYPES)


def mla_cell_bytes(kv_dtype: str, latent_dim: int, has_indexer: bool, field: str = "kv_cache_dtype") -> int:
    """Bytes of one MLA token-layer latent (head_size_v = 0, one 'head')."""
    if kv_dtype == "fp8_ds_mla" or (has_indexer and kv_dtype in FP8_PER_TENSOR):
        # DeepSeek-V3.2 turns any fp8 KV dtype into fp8_ds_mla (vllm/model_executor/models/config.py).
        if not has_indexer:
            raise InvalidInput(
                field, "fp8_ds_mla is only for sparse-attention MLA models (DeepSeek-V3.2 family)"
            )
        return FP8_DS_MLA_BYTES
    if kv_dtype in MODEL_DTYPES:
        return latent_dim * MODEL_DTYPES[kv_dtype]
    if kv_dtype in FP8_PER_TENSOR:
        return latent_dim
    raise InvalidInput(
        field, f"{kv_dtype} is not supported for MLA layers; use auto, bfloat16, float16 or an fp8 type"
    )


# Weight dtypes: bytes per parameter as an exact (numerator, denominator);
# mxfp4 is 4 bits + one e8m0 scale per 32 values, nvfp4 4 bits + one fp8 scale per 16.
WEIGHT_DTYPES: dict[str, tuple[int, int]] = {
    "float32": (4, 1),
    "bfloat16": (2, 1),
    "float16": (2, 1),
    "fp8": (1, 1),
    "int8": (1, 1),
    "int4": (1, 2),
    "mxfp4": (17, 32),
    "nvfp4": (9, 16),
}
WEIGHT_DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "float": "float32",
    "half": "float16",
    "fp8_e4m3": "fp8",
    "w8a8": "int8",
    "awq": "int4",
    "gptq": "int4",
}


def normalize_weight_dtype(name: str, field: str = "weight_dtype") -> str:
    n = WEIGHT_DTYPE_ALIASES.get(name, name)
    if n not in WEIGHT_DTYPES:
        raise UnknownName(field, "weight dtype", name, tuple(WEIGHT_DTYPES))
    return n


def weight_bytes(params: int, dtype: str) -> int:
    """params × bytes per parameter, rounded up to a whole byte."""
    num, den = WEIGHT_DTYPES[dtype]
    return -(-params * num // den)
