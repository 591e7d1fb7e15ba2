"""HY-V4 (vllm/models/hy_v4/nvidia/attention.py HYV4MLAAttention; HYV4Config,
vllm/transformers_utils/configs/hy_v4.py): every layer MLA, the ones layer_types names sparse with
an indexer (unless they reuse an earlier layer's top-k), the rest dense."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM
from ..family import MlaReading
from ..fields import cfg_int

# HY-V4's spellings of a sparse (indexed) MLA layer in layer_types; any other entry is dense MLA
# (attention.py _SPARSE_LAYER_TYPES).
_SPARSE = frozenset({"sparse_attention", "sparse", "indexed_attention", "deepseek_sparse_attention"})


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """Every layer MLA (uniform); which are sparse is the MLA reading's."""
    return None


def mla(cfg: Mapping[str, Any], n: int, q_heads: int) -> MlaReading:
    """HY-V4's MLA: the indexer head dim where any layer is sparse, and the sparse layers and
    those with an indexer when not all."""
    rope = cfg_int(cfg, "qk_rope_head_dim", MAX_HEAD_DIM)
    idx = cfg.get("index_head_dim")
    indexed, sparse_layers, indexer_layers = _sparse(cfg, n)
    return MlaReading(
        qk_rope_head_dim=rope,
        index_head_dim=idx if indexed else None,
        sparse_mla_layers=sparse_layers,
        mla_indexer_layers=indexer_layers,
    )


def _sparse(cfg: Mapping[str, Any], n: int) -> tuple[bool, tuple[int, ...] | None, tuple[int, ...] | None]:
    """HY-V4's sparse layers: a layer is sparse MLA only when layer_types names it so, whatever
    index_topk says; a sparse layer keeps an indexer cache unless it reuses an earlier layer's
    top-k (compute_skip_topk_layers: indexer_types "shared", which HYV4Config fills in as every
    layer but the first and every 4th from the second). Returns (any sparse layer, the sparse
    layers when not all, the sparse layers with an indexer when not all of them). The learnable
    sink only picks which sparse backend runs; on Hopper the spec is the same either way
    (FLASHMLA_SPARSE, or FLASH_ATTN_MLA_SPARSE for a 16-bit cache without the sink)."""
    types = cfg.get("layer_types")
    if types is None:
        return False, None, None
    if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise InvalidConfig("layer_types", f"must list one layer type for each of the {n} layers")
    for i, t in enumerate(types):
        if t not in _SPARSE and t != "full_attention":
            raise InvalidConfig(f"layer_types[{i}]", f"HY-V4 layers are full_attention or sparse, got {t!r}")
    sparse = tuple(i for i, t in enumerate(types) if t in _SPARSE)
    if not sparse:
        return False, None, None
    indexers = cfg.get("indexer_types")
    if indexers is None:  # HYV4Config.__post_init__
        indexers = ["full" if i == 0 or (i - 1) % 4 == 0 else "shared" for i in range(n)]
    if (
        not isinstance(indexers, list)
        or len(indexers) != n
        or not all(t in ("full", "shared") for t in indexers)
    ):
        raise InvalidConfig("indexer_types", f"must be full or shared for each of the {n} layers")
    own = tuple(i for i in sparse if indexers[i] == "full")
    return True, None if len(sparse) == n else sparse, None if own == sparse else own
