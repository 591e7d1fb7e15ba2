"""Jamba (vllm/model_executor/models/jamba.py; transformers' JambaConfig): Mamba1 layers beside
attention, every attn_layer_period-th layer from attn_layer_offset attention."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...limits import MAX_LAYERS
from ...model.geometry import non_neg_int
from ...model.mamba import MambaState, Mixer
from ..fields import cfg_count, cfg_dim
from ..layers import listed_layer_types


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """As listed, else JambaConfig.layers_block_type: attention where i % period == offset, else
    Mamba."""
    listed = listed_layer_types(cfg)
    if listed is not None:
        return listed
    period = cfg_count(cfg, "attn_layer_period")
    offset = non_neg_int(cfg.get("attn_layer_offset"), "attn_layer_offset", MAX_LAYERS)
    return tuple("full_attention" if i % period == offset else "mamba" for i in range(n))


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """A Mamba1 state of mamba_expand × hidden_size, in the model dtype."""
    return MambaState(
        mixer=Mixer.MAMBA1,
        intermediate_size=cfg_dim(cfg, "mamba_expand") * cfg_dim(cfg, "hidden_size"),
        state_size=cfg_dim(cfg, "mamba_d_state"),
        conv_kernel=cfg_dim(cfg, "mamba_d_conv"),
        conv_dtype=dtype,
        ssm_dtype=dtype,
    )
