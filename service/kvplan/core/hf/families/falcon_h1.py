"""Falcon-H1 (vllm/model_executor/models/falcon_h1.py; transformers' FalconH1Config): attention
and a MambaMixer2 side by side in every decoder layer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...model.mamba import MambaState
from ..family import KvSlots
from ..fields import cfg_dim
from ..states import MAMBA_D_KEYS, mamba2_state


def kv_slots(cfg: Mapping[str, Any], model_type: str, n: int) -> KvSlots:
    """Two KV layers a decoder layer: its attention, then its Mamba."""
    return tuple(s for i in range(n) for s in (("full_attention", i), ("mamba", i))), n


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """A Mamba2 state of mamba_d_ssm (else mamba_expand × hidden_size) over mamba_n_heads of
    mamba_d_head (FalconH1Config: "auto" is the inner width over the heads)."""
    d_ssm = cfg.get("mamba_d_ssm")
    inner = (
        int(cfg.get("mamba_expand", 2) * cfg_dim(cfg, "hidden_size"))
        if d_ssm is None
        else cfg_dim(cfg, "mamba_d_ssm")
    )
    heads = cfg_dim(cfg, "mamba_n_heads")
    head_dim = inner // heads if cfg.get("mamba_d_head") == "auto" else cfg_dim(cfg, "mamba_d_head")
    return mamba2_state(cfg, MAMBA_D_KEYS, inner, heads, head_dim, dtype)
