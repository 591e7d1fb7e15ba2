"""Dots3 (vllm/models/dots3_note/nvidia/model.py Dots3NoteDecoderLayer, Dots3NotePaddedMLAAttention;
vllm/transformers_utils/configs/dots3_note.py): sliding-window MLA layers over their own latent
beside DeepSeek-V3.2 sparse MLA layers with an indexer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_LAYERS, MAX_TOKENS
from ...model.geometry import Geometry, make_geometry
from ..family import Reading
from ..fields import cfg_int, leading_fields, quant_dtypes

MODEL_TYPE = "dots3_note"


def read(r: Reading) -> Geometry:
    """Dots3: a layer that layer_types names sliding_attention is sliding-window MLA over its own
    latent (swa_kv_lora_rank + swa_qk_rope_head_dim, window sliding_window_size: a
    SlidingWindowMLASpec); every other layer is DeepSeek-V3.2 sparse MLA with an indexer, its
    latent rows padded to the sliding layers' width (Dots3NotePaddedMLAAttention's
    physical_head_size); one that reuses an earlier layer's top-k keeps no indexer cache."""
    cfg = r.cfg
    n = cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    q_heads, dtype, max_pos = leading_fields(cfg, r.top, MODEL_TYPE)
    types = cfg.get("layer_types")
    if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise InvalidConfig("layer_types", f"Dots3 needs a layer type for each of the {n} layers")
    sliding = [t == "sliding_attention" for t in types]
    swa_rank = cfg_int(cfg, "swa_kv_lora_rank", MAX_HEAD_DIM)
    swa_rope = cfg_int(cfg, "swa_qk_rope_head_dim", MAX_HEAD_DIM)
    rank = cfg_int(cfg, "kv_lora_rank", MAX_HEAD_DIM)
    rope = cfg_int(cfg, "qk_rope_head_dim", MAX_HEAD_DIM)
    if not all(sliding) and swa_rank + swa_rope < rank + rope:
        raise InvalidConfig(
            "swa_kv_lora_rank", "the sparse layers pad their latent rows to the sliding layers' width"
        )
    window = cfg_int(cfg, "sliding_window_size", MAX_TOKENS) if any(sliding) else None
    cfg_int(cfg, "index_topk", MAX_TOKENS)  # Dots3NoteModel sizes its top-k buffer by it
    idx = None if all(sliding) else cfg_int(cfg, "index_head_dim", MAX_HEAD_DIM)
    sparse = [i for i, s in enumerate(sliding) if not s]
    own = _indexer_layers(cfg, sparse)
    weight_dtype, expert_dtype = quant_dtypes(cfg)
    return make_geometry(
        name=r.name,
        model_type=MODEL_TYPE,
        num_layers=n,
        num_attention_heads=q_heads,
        kv_lora_rank=rank,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=cfg.get("qk_nope_head_dim"),
        mla_v_head_dim=cfg.get("v_head_dim"),
        index_head_dim=idx,
        layer_types=tuple("sliding_window_mla" if s else "mla" for s in sliding),
        sliding_window=window,
        sliding_mla_dim=swa_rank + swa_rope,
        mla_row_dim=None if all(sliding) else swa_rank + swa_rope,
        mla_indexer_layers=None if len(own) == len(sparse) else own,
        dtype=dtype,
        max_position_embeddings=max_pos,
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_dtype,
        prefix="",
    )


def _indexer_layers(cfg: Mapping[str, Any], sparse: list[int]) -> tuple[int, ...]:
    """The sparse layers that compute their own top-k, so keep an indexer cache: DeepseekV2MLAAttention's
    IndexCache keys (vllm/model_executor/models/deepseek_v2.py), by each layer's index among all
    layers: index_topk_pattern's F (S reuses), else every index_topk_freq-th from
    index_skip_topk_offset."""
    freq = cfg.get("index_topk_freq", 1)
    pattern = cfg.get("index_topk_pattern")
    offset = cfg.get("index_skip_topk_offset", 2)
    if pattern is not None and not isinstance(pattern, (list, str)):
        raise InvalidConfig("index_topk_pattern", "must give F or S for each layer")
    if isinstance(freq, bool) or not isinstance(freq, int) or freq < 1:
        raise InvalidConfig("index_topk_freq", f"must be a positive integer, got {freq!r}")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise InvalidConfig("index_skip_topk_offset", f"must be an integer, got {offset!r}")

    def computes_top_k(i: int) -> bool:
        if pattern is None:
            return max(i - offset + 1, 0) % freq == 0
        return not (i < len(pattern) and pattern[i] == "S")

    return tuple(i for i in sparse if computes_top_k(i))
