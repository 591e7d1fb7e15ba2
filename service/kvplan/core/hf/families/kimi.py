"""Kimi-Linear and Kimi-K3 (vllm/models/kimi_k3/nvidia/model.py, kda.py;
vllm/transformers_utils/configs/kimi_linear.py, kimi_k3.py): KDA layers beside MLA, as
linear_attn_config lists them. KimiK3Config wraps a KimiLinearConfig text_config, which the
Kimi-Linear model reads; K3's full-rank-gate KDA may keep a FlashKDA prefill checkpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HEADS
from ...model.geometry import pos_int
from ...model.mamba import MambaState
from ..family import Reading
from ..states import flashkda_checkpoint_blocks, kda_state

MODEL_TYPE = "kimi_linear"
# KimiK3DeltaAttention asserts the gate's lower bound lies in [−5, 0).
_KDA_GATE_LOGBOUND_MIN = -5.0


def claim(r: Reading) -> Reading:
    """Kimi-K3 is read as Kimi-Linear: KimiK3Config builds its text_config as a KimiLinearConfig,
    whose model_type vLLM's MLA check reads (vllm/config/model.py is_deepseek_mla)."""
    text = r.top.get("text_config")
    text_type = text.get("model_type", MODEL_TYPE) if isinstance(text, Mapping) else MODEL_TYPE
    if text_type != MODEL_TYPE:
        raise InvalidConfig(
            "text_config.model_type", f"Kimi-K3's text model is kimi_linear, got {text_type!r}"
        )
    return r._replace(model_type=MODEL_TYPE)


def shape_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """Kimi-K3's text_config is a KimiLinearConfig, defaults and all."""
    return {**config, "model_type": MODEL_TYPE}


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """KimiLinearConfig.is_kda_layer: layer i is a KDA layer iff i + 1 is in kda_layers; the rest
    are MLA. layer_types is not read."""
    kda = set(_layer_list(_linear_config(cfg), "kda_layers"))
    return tuple("linear_attention" if i + 1 in kda else "full_attention" for i in range(n))


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """KDA of linear_attn_config's num_heads of head_dim, with K3's prefill checkpoint."""
    lac = _linear_config(cfg)
    p = "linear_attn_config."
    heads = pos_int(lac.get("num_heads"), p + "num_heads", MAX_HEADS, InvalidConfig)
    dim = pos_int(lac.get("head_dim"), p + "head_dim", MAX_HEAD_DIM, InvalidConfig)
    kernel = pos_int(
        lac.get("short_conv_kernel_size"), p + "short_conv_kernel_size", MAX_HEAD_DIM, InvalidConfig
    )
    return replace(
        kda_state(heads, dim, kernel, dtype), checkpoint_blocks=_checkpoint_blocks(lac, dim, dtype)
    )


def _linear_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """Kimi-Linear's linear_attn_config, which vLLM 0.33 needs to build the model (its hybrid
    block-size alignment reads the KDA state from it)."""
    lac = cfg.get("linear_attn_config")
    if not isinstance(lac, Mapping):
        raise InvalidConfig("linear_attn_config", "must be an object (kda_layers, num_heads, head_dim, ...)")
    return lac


def _layer_list(lac: Mapping[str, Any], key: str) -> list[int]:
    layers = lac.get(key)
    if not isinstance(layers, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in layers):
        raise InvalidConfig(f"linear_attn_config.{key}", "must be a list of 1-based layer numbers")
    return layers


def _checkpoint_blocks(lac: Mapping[str, Any], dim: int, dtype: str) -> int:
    """Kimi-K3's KDA (use_full_rank_gate: KimiK3DeltaAttention) keeps a prefill checkpoint block
    when it prefills with FlashKDA (vllm/models/kimi_k3/nvidia/kda.py get_kv_cache_spec,
    resolve_kda_prefill_backend): on the SM 9.x / 10.x / 12.x GPUs kvplan plans for, with a head
    dim of 128, a bf16 model and a gate lower bound (the recurrent state is float32). Else Triton
    prefills it, without one; Kimi-Linear's low-rank-gate KDA never keeps one."""
    if not lac.get("use_full_rank_gate"):
        return 0
    bound = lac.get("gate_lower_bound")
    if bound is None:
        return 0
    number = not isinstance(bound, bool) and isinstance(bound, int | float)
    if not number or not _KDA_GATE_LOGBOUND_MIN <= bound < 0:
        raise InvalidConfig(
            "linear_attn_config.gate_lower_bound",
            f"must be at least {_KDA_GATE_LOGBOUND_MIN} and below 0, as KimiK3DeltaAttention asserts; "
            f"got {bound!r}",
        )
    return flashkda_checkpoint_blocks(dim, dtype, bounded=True)
