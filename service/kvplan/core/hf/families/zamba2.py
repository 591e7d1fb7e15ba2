"""Zamba2 (vllm/model_executor/models/zamba2.py; transformers' Zamba2Config): a MambaMixer2 in
every block, and in the hybrid blocks an attention of its own (shared weights, but its own KV
cache)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HIDDEN_SIZE
from ...model.geometry import pos_int
from ...model.mamba import MambaState
from ..family import Config, KvSlots
from ..fields import cfg_dim
from ..states import mamba2_state

# Zamba2Config's layers_block_type when the config gives none: Mamba2 layers, and "hybrid" ones
# that also run the shared attention block.
_BLOCKS = ("mamba",) + (("mamba",) * 5 + ("hybrid",)) * 7 + ("mamba",) * 4 + ("hybrid",) + \
    ("mamba",) * 3 + ("hybrid",) + ("mamba",) * 2  # fmt: skip
# transformers remaps the legacy "mamba" to "linear_attention"; both are a Mamba2 layer.
_KV_LAYERS = {
    "hybrid": ("full_attention", "mamba"),
    "mamba": ("mamba",),
    "linear_attention": ("mamba",),
}


def config_class(cfg: Config, n: int) -> Config:
    """Zamba2Config.__post_init__: use_long_context sets the context to 16384."""
    if cfg.get("use_long_context"):
        return {**cfg, "max_position_embeddings": 16384}
    return cfg


def kv_slots(cfg: Mapping[str, Any], model_type: str, n: int) -> KvSlots:
    """A Mamba layer a block, a hybrid block's attention before it; the decoder's blocks are
    layers_block_type's (Zamba2Config's pattern when absent)."""
    blocks = cfg.get("layers_block_type", cfg.get("layer_types"))
    blocks = _BLOCKS if blocks is None else blocks
    if (
        not isinstance(blocks, list | tuple)
        or not blocks
        or any(not isinstance(b, str) or b not in _KV_LAYERS for b in blocks)
    ):
        raise InvalidConfig("layers_block_type", "must list hybrid or mamba for each layer")
    return tuple((k, i) for i, b in enumerate(blocks) for k in _KV_LAYERS[b]), len(blocks)


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """get_mamba_state_shape_from_config: a Mamba2 state of mamba_expand × hidden_size over
    n_mamba_heads; Zamba2Config derives mamba_headdim from the inner width when the config does
    not state it."""
    inner = cfg_dim(cfg, "mamba_expand") * cfg_dim(cfg, "hidden_size")
    heads = cfg_dim(cfg, "n_mamba_heads")
    head_dim = cfg.get("mamba_headdim") or inner // heads
    head_dim = pos_int(head_dim, "mamba_headdim", MAX_HIDDEN_SIZE, InvalidConfig)
    keys = ("mamba_d_state", "mamba_d_conv", "mamba_ngroups")
    return mamba2_state(cfg, keys, inner, heads, head_dim, dtype)


def attention_dims(cfg: Mapping[str, Any], q_heads: int) -> tuple[int, int]:
    """Zamba2Attention: Attention(num_heads, attention_head_dim), no KV-head count of its own;
    Zamba2Config makes the head 2 × hidden / heads unless the config states it."""
    key = next((k for k in ("attention_head_dim", "head_dim") if cfg.get(k) is not None), None)
    dim = cfg[key] if key else 2 * cfg_dim(cfg, "hidden_size") // q_heads
    return q_heads, pos_int(dim, key or "hidden_size", MAX_HEAD_DIM, InvalidConfig)
