"""Gemma-2, Gemma-3, Gemma-3n and Gemma-4 (vllm/model_executor/models/gemma2.py, gemma3.py,
gemma3n.py, gemma4.py; transformers' Gemma2Config ... Gemma4TextConfig): sliding layers around
global ones, the last layers of Gemma-3n and Gemma-4 reading an earlier layer's KV cache, and
Gemma-4's full layers with heads of their own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HEADS
from ...model.geometry import pos_int
from ..family import NO_EXTRAS, AttentionExtras, AttentionReading
from ..layers import windowed_layer_types

_KV_SHARING = frozenset({"gemma3n", "gemma3n_text", "gemma4", "gemma4_text"})
_GEMMA4 = "gemma4"  # Gemma4Config, Gemma4TextConfig and their kin: a prefix


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed (or Llama-4's chunks), else, with a window: Gemma-2's even layers slide;
    Gemma-3's every sliding_window_pattern-th layer (6) is global (Gemma3Config); the others'
    every layer slides. Gemma-4's last layer is full attention whatever layer_types says
    (Gemma4TextConfig)."""

    def pattern() -> tuple[str, ...]:
        if model_type == "gemma2":
            return tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n))
        if model_type in ("gemma3", "gemma3_text"):
            period = pos_int(
                cfg.get("sliding_window_pattern", 6), "sliding_window_pattern", n + 1, InvalidConfig
            )
            return tuple("full_attention" if (i + 1) % period == 0 else "sliding_attention" for i in range(n))
        return tuple("sliding_attention" for _ in range(n))

    types = windowed_layer_types(cfg, n, window, pattern)
    if model_type.startswith(_GEMMA4) and types:
        return (*types[:-1], "full_attention")
    return types


def kv_shared_layers(cfg: Mapping[str, Any], model_type: str, n: int) -> int:
    """Gemma-3n / Gemma-4 (gemma3n.py, gemma4.py): the last num_kv_shared_layers read the KV cache
    of an earlier layer of their kind and keep none."""
    if model_type not in _KV_SHARING:
        return 0
    shared = cfg.get("num_kv_shared_layers") or 0
    if shared and pos_int(shared, "num_kv_shared_layers", n - 1, InvalidConfig) >= n:
        raise InvalidConfig("num_kv_shared_layers", f"must leave a layer of its own of the {n}")
    return int(shared)


def attention_extras(a: AttentionReading) -> AttentionExtras:
    """Gemma-4's full-attention layers' own head dim and KV heads (its decoder layers' types given)."""
    if not a.model_type.startswith(_GEMMA4) or not a.layer_types:
        return NO_EXTRAS
    full_dim, full_kv = _gemma4_full_heads(a.cfg, a.layer_types, a.head_dim, a.kv_heads)
    return AttentionExtras(full_head_dim=full_dim, full_kv_heads=full_kv)


def _gemma4_full_heads(
    cfg: Mapping[str, Any], layer_types: tuple[str, ...], head_dim: int, kv_heads: int
) -> tuple[int, int]:
    """Gemma-4's full-attention layers' own (head dim, KV heads), as Gemma4TextConfig builds its
    per_layer_config (transformers' configuration_gemma4.py: global_head_dim, 512 by default; the
    KV heads num_global_key_value_heads where attention_k_eq_v allows) and vLLM's Gemma4DecoderLayer
    reads it. Given per layer, the overrides must be the full layers' and alike."""
    given = cfg.get("per_layer_config")
    if given is None:
        dim = pos_int(cfg.get("global_head_dim", 512), "global_head_dim", MAX_HEAD_DIM, InvalidConfig)
        kv = cfg.get("num_global_key_value_heads") if cfg.get("attention_k_eq_v", True) else None
        if kv is None:
            return dim, kv_heads
        return dim, pos_int(kv, "num_global_key_value_heads", MAX_HEADS, InvalidConfig)
    if not isinstance(given, Mapping):
        raise InvalidConfig("per_layer_config", "must map layer indices to overrides")
    found: set[tuple[int, int]] = set()
    for key, o in given.items():
        f = f"per_layer_config.{key}"
        i = int(key) if isinstance(key, str) and re.fullmatch(r"[0-9]{1,6}", key) else -1
        full = 0 <= i < len(layer_types) and layer_types[i] == "full_attention"
        if not full or not isinstance(o, Mapping):
            raise InvalidConfig(f, "kvplan reads overrides of full-attention layers only")
        dim = pos_int(o.get("head_dim", head_dim), f + ".head_dim", MAX_HEAD_DIM, InvalidConfig)
        kv = pos_int(
            o.get("num_key_value_heads", kv_heads), f + ".num_key_value_heads", MAX_HEADS, InvalidConfig
        )
        found.add((dim, kv))
    if len(found) > 1:
        raise InvalidConfig(
            "per_layer_config", "full-attention layers with different sizes: not modelled yet"
        )
    return found.pop() if found else (head_dim, kv_heads)
