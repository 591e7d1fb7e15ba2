"""OLMo-hybrid (vllm/model_executor/models/olmo_hybrid.py; transformers' OlmoHybridConfig): gated
delta nets beside full attention, every 4th layer full unless layer_types lists them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.mamba import MambaState
from ..layers import listed_layer_types
from ..states import gated_delta_net_state


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed, else OlmoHybridConfig's: every 4th layer is full attention (it reads no
    interval), and the last one when that leaves none."""
    listed = listed_layer_types(cfg)
    if listed is not None:
        return listed
    types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)]
    if "full_attention" not in types:
        types[-1] = "full_attention"
    return tuple(types)


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """The gated delta net's state (core/hf/states.py)."""
    return gated_delta_net_state(cfg, dtype, archs)
