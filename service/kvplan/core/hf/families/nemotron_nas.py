"""Nemotron-NAS, DeciLM (vllm/model_executor/models/nemotron_nas.py DeciLMDecoderLayer; vLLM's
NemotronNasModelArchConfigConvertor): block_configs gives each decoder layer's attention, a no-op
(no attention, so no KV cache) or n_heads_in_group query heads a KV head."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEADS
from ...model.geometry import pos_int
from ..family import Config, KvSlots


def attention_config(cfg: Config, n: int, q_heads: int) -> Config:
    """num_key_value_heads = num_attention_heads // n_heads_in_group, alike for every attention
    layer (the convertor reads the first; layers of other KV widths would need per-layer page
    sizes kvplan does not model yet, so they are refused)."""
    groups = {g for g in _blocks(cfg, n) if g}
    if len(groups) != 1:
        raise InvalidConfig("block_configs", "attention layers with different n_heads_in_group: not modelled")
    group = groups.pop()
    if q_heads % group:
        raise InvalidConfig("block_configs", f"n_heads_in_group {group} does not divide {q_heads} heads")
    return {**cfg, "num_key_value_heads": q_heads // group}


def kv_slots(cfg: Mapping[str, Any], model_type: str, n: int) -> KvSlots:
    """A KV layer for each block whose attention is not a no-op."""
    kept = tuple(("full_attention", i) for i, g in enumerate(_blocks(cfg, n)) if g)
    if not kept:
        raise InvalidConfig("block_configs", "has no attention layer")
    return kept, n


def _blocks(cfg: Mapping[str, Any], n: int) -> list[int]:
    """Each layer's attention n_heads_in_group, 0 where the attention is a no-op."""
    blocks = cfg.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n:
        raise InvalidConfig("block_configs", f"must list one block for each of the {n} layers")
    out = []
    for i, b in enumerate(blocks):
        a = b.get("attention") if isinstance(b, Mapping) else None
        f = f"block_configs[{i}].attention"
        if not isinstance(a, Mapping):
            raise InvalidConfig(f, "must be an object")
        out.append(0 if a.get("no_op") else pos_int(a.get("n_heads_in_group"), f + ".n_heads_in_group",
                                                     MAX_HEADS, InvalidConfig))  # fmt: skip
    return out
