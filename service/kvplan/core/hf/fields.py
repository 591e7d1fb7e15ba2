"""The field readers every family shares: a config.json's counts, dtype, quantization and
longest context read as vLLM reads them through transformers (docs/vllm-rules.md §2;
vllm/config/model.py, vllm/transformers_utils/config.py), and the refusals named after the
config's own keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from ..errors import InvalidConfig, InvalidInput
from ..limits import MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN_SIZE, MAX_LAYERS, MAX_TOKENS
from ..model.geometry import Geometry, make_geometry, non_neg_int, pos_int


def config_error(e: InvalidInput) -> InvalidConfig:
    """A geometry refusal as the config's: its num_layers are KV-cache layers (two or three a
    decoder layer in some families), and a config.json counts num_hidden_layers."""
    if e.field == "num_layers":
        return InvalidConfig("num_hidden_layers", f"the KV-cache layers it makes {e.reason}")
    return InvalidConfig(e.field, e.reason)


def config_geometry(**fields: Any) -> Geometry:
    """make_geometry over fields read from a config.json, a refusal named after the config's key
    (config_error) rather than the inline form's."""
    try:
        return make_geometry(**fields)
    except InvalidConfig:
        raise
    except InvalidInput as e:
        raise config_error(e) from None


def cfg_int(cfg: Mapping[str, Any], key: str, maximum: int) -> int:
    return pos_int(cfg.get(key), key, maximum, InvalidConfig)


def cfg_count(cfg: Mapping[str, Any], key: str) -> int:
    return pos_int(cfg.get(key), key, MAX_LAYERS, InvalidConfig)


def cfg_dim(cfg: Mapping[str, Any], key: str) -> int:
    return pos_int(cfg.get(key), key, MAX_HIDDEN_SIZE, InvalidConfig)


def first_present(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    for k in keys:
        if cfg.get(k) is not None:
            return k, cfg[k]
    return None


# The names families give the KV head count, the first present winning.
KV_HEAD_KEYS = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
# The keys vLLM derives the longest context from, the smallest present winning
# (vllm/transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key).
_MAX_POS_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip
# vLLM's context when a config names none of them (vllm/config/model.py _get_and_verify_max_len).
DEFAULT_MAX_MODEL_LEN = 2048
# RoPE types whose max_position_embeddings is already the scaled length; other types' factor
# multiplies it (Gemma-3's too is already scaled).
_ROPE_TYPES_ALREADY_SCALED = frozenset(
    {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}
)


def derived_max_model_len(cfg: Mapping[str, Any], model_type: str) -> int:
    """The longest context vLLM allows without VLLM_ALLOW_LONG_MAX_MODEL_LEN: the smallest of
    the length keys (model_max_length overriding them, as for Command-R), times the RoPE scaling
    factor of types that do not scale max_position_embeddings themselves
    (vllm/config/model.py _get_and_verify_max_len)."""
    found = [(k, cfg[k]) for k in _MAX_POS_KEYS if cfg.get(k) is not None]
    lengths = [(k, pos_int(v, k, MAX_TOKENS, InvalidConfig)) for k, v in found]
    if cfg.get("model_max_length"):
        derived = pos_int(cfg["model_max_length"], "model_max_length", MAX_TOKENS, InvalidConfig)
    elif lengths:
        derived = min(v for _, v in lengths)
    else:
        derived = DEFAULT_MAX_MODEL_LEN
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    rope_key = "rope_parameters" if cfg.get("rope_parameters") else "rope_scaling"
    if isinstance(rope, Mapping) and "gemma3" not in model_type:
        kind = rope.get("rope_type") or rope.get("type") or "default"
        if not isinstance(kind, str):
            raise InvalidConfig(f"{rope_key}.rope_type", f"must be a string, got {kind!r}")
        factor = rope.get("factor")
        if kind not in _ROPE_TYPES_ALREADY_SCALED and kind != "default" and factor is not None:
            if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= 1 << 20:
                raise InvalidConfig(f"{rope_key}.factor", f"must be a positive number, got {factor!r}")
            derived = min(MAX_TOKENS, int(derived * factor))
    return derived


def model_dtype(cfg: Mapping[str, Any], top: Mapping[str, Any]) -> str:
    """The dtype a config states (the text config's, else the top level's; bfloat16 when none)."""
    raw = cfg.get("torch_dtype") or cfg.get("dtype") or top.get("torch_dtype") or "bfloat16"
    dtype = MODEL_DTYPE_ALIASES.get(str(raw), str(raw))
    if dtype == "float32":
        # vLLM's dtype="auto" serves float32 checkpoints in 16-bit (vllm/config/model.py).
        dtype = "bfloat16"
    if dtype not in MODEL_DTYPES:
        raise InvalidConfig("torch_dtype", f"unsupported dtype {raw!r}")
    return dtype


def leading_fields(cfg: Mapping[str, Any], top: Mapping[str, Any], model_type: str) -> tuple[int, str, int]:
    """(query heads, dtype, longest context): what every attention layout reads after its layer
    count, in the order the standard reader reads them (so a config wrong in two of them is
    refused for the same one whichever family reads it)."""
    q_heads = cfg_int(cfg, "num_attention_heads", MAX_HEADS)
    return q_heads, model_dtype(cfg, top), derived_max_model_len(cfg, model_type)


def quant_dtypes(cfg: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(weight dtype, expert weight dtype) implied by `quantization_config`, if any."""
    q = cfg.get("quantization_config")
    if not isinstance(q, Mapping):
        return None, None
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        return "fp8", None
    if method == "mxfp4":
        return None, "mxfp4"
    if method in ("awq", "gptq") and q.get("bits") == 4:
        return "int4", None
    return None, None


def attention_dims(cfg: Mapping[str, Any], q_heads: int) -> tuple[int, int]:
    """(KV heads, head dim) of a non-MLA attention layer: the first KV-head key present (else
    one a query head), head_dim (0 or null: derived), hidden_size_per_head, else hidden ÷ heads."""
    kv = first_present(cfg, KV_HEAD_KEYS)
    kv_heads = q_heads if kv is None else pos_int(kv[1], kv[0], MAX_HEADS, InvalidConfig)
    hd = cfg.get("head_dim")
    if hd is not None:  # 0 or null: derived from the hidden size below
        hd = non_neg_int(hd, "head_dim", MAX_HEAD_DIM)
    if hd:
        return kv_heads, hd
    if cfg.get("hidden_size_per_head") is not None:
        return kv_heads, cfg_int(cfg, "hidden_size_per_head", MAX_HEAD_DIM)
    hidden = cfg_int(cfg, "hidden_size", MAX_HIDDEN_SIZE)
    if hidden // q_heads < 1:
        raise InvalidConfig("hidden_size", f"{hidden} is smaller than num_attention_heads")
    return kv_heads, hidden // q_heads


def language_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields the attention geometry is read from: a multi-modal config's `text_config` over
    its top level, else the config itself."""
    text = config.get("text_config")
    return {**config, **text} if isinstance(text, Mapping) else config


def architectures(top: Mapping[str, Any]) -> tuple[str, ...]:
    archs = top.get("architectures")
    if archs is None:
        return ()
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise InvalidConfig("architectures", "must be a list of class names")
    return tuple(archs)


def text_of(config: Mapping[str, Any], wrapper: str) -> dict[str, Any]:
    """A multimodal wrapper's text_config (absent: every default) with the top level's dtype,
    as vLLM reads families whose config class builds the text config itself; else the config."""
    if config.get("model_type") != wrapper:
        return dict(config)
    text = config.get("text_config")
    if text is not None and not isinstance(text, Mapping):
        raise InvalidConfig("text_config", "must be an object")
    dtypes = {k: config[k] for k in ("torch_dtype", "dtype") if config.get(k) is not None}
    return {**(text or {}), **dtypes}
