"""Qwen3-Next and Qwen3.5 / 3.6 (vllm/model_executor/models/qwen3_next.py, qwen3_5.py; their text
configs included): gated delta nets beside full attention, every full_attention_interval-th layer
full unless layer_types lists them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.mamba import MambaState
from ..fields import cfg_count
from ..layers import listed_layer_types
from ..states import gated_delta_net_state


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed, else Qwen3NextConfig / Qwen3_5Config's: every full_attention_interval-th layer
    (4 unless the config says) is full attention."""
    listed = listed_layer_types(cfg)
    if listed is not None:
        return listed
    every = cfg_count({"full_attention_interval": 4, **cfg}, "full_attention_interval")
    return tuple("full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n))


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """The gated delta net's state (core/hf/states.py)."""
    return gated_delta_net_state(cfg, dtype, archs)
