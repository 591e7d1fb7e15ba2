"""Qwen2, Qwen2-MoE, Qwen3 and Qwen3-MoE (vllm/model_executor/models/qwen2.py, qwen2_moe.py,
qwen3.py, qwen3_moe.py): a model-wide window over the layers from max_window_layers on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...limits import MAX_LAYERS
from ...model.geometry import non_neg_int
from ..layers import windowed_layer_types


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed (or Llama-4's chunks), else, with a window, the layers from max_window_layers on
    slide (qwen2.py); unset or null: none does, so every layer is full."""

    def pattern() -> tuple[str, ...]:
        start_raw = cfg.get("max_window_layers")
        start = n if start_raw is None else non_neg_int(start_raw, "max_window_layers", MAX_LAYERS)
        return tuple("sliding_attention" if i >= start else "full_attention" for i in range(n))

    return windowed_layer_types(cfg, n, window, pattern)
