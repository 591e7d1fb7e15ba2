"""Granite-4.0-H (vllm/model_executor/models/granitemoehybrid.py; transformers'
GraniteMoeHybridConfig): MambaMixer2 layers beside attention, as layer_types lists them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.mamba import MambaState
from ..fields import cfg_dim
from ..states import MAMBA_D_KEYS, mamba2_state


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """A Mamba2 state of mamba_expand × hidden_size over mamba_n_heads of mamba_d_head."""
    inner = cfg_dim(cfg, "mamba_expand") * cfg_dim(cfg, "hidden_size")
    heads, head_dim = cfg_dim(cfg, "mamba_n_heads"), cfg_dim(cfg, "mamba_d_head")
    return mamba2_state(cfg, MAMBA_D_KEYS, inner, heads, head_dim, dtype)
