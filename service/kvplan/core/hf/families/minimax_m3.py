"""MiniMax-M3 (vllm/models/minimax_m3/nvidia/model.py; vLLM's MiniMaxM3TextConfig,
vllm/transformers_utils/configs/minimax_m3.py): attention whose sparse layers each keep an
indexer cache beside their K/V. vLLM reads only the text_config of a minimax_m3_vl config, the top
level's dtype aside, through its own config class."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM
from ...model.geometry import pos_int
from ..defaults import with_defaults
from ..family import NO_EXTRAS, AttentionExtras, AttentionReading, Reading
from ..fields import text_of

MODEL_TYPE = "minimax_m3_text"
_VL = "minimax_m3_vl"
_SPARSE = "sparse_attention_config"


def claim(r: Reading) -> Reading:
    """Known by the top level's model type or the architecture, as well as its own: a text_config
    may name the family otherwise (transformers' minimax_m3_vl_text), which vLLM's own config class
    ignores."""
    return r._replace(cfg=text_of(r.top, _VL), model_type=MODEL_TYPE)


def attention_extras(a: AttentionReading) -> AttentionExtras:
    """MiniMax-M3's sparse layers and the indexer's key width: layer i is sparse when
    sparse_attention_config.sparse_attention_freq[i] != 0 (model.py _sparse_attention_layer_ids).
    A null sparse_attention_config is the config class's default; an empty one has no sparse
    layer."""
    sparse = a.cfg.get(_SPARSE)
    if sparse is None:
        sparse = with_defaults({}, MODEL_TYPE)[_SPARSE]
    if not isinstance(sparse, Mapping):
        raise InvalidConfig(_SPARSE, "must be an object")
    freq = sparse.get("sparse_attention_freq") if sparse else None
    if freq is None:
        return NO_EXTRAS
    field = f"{_SPARSE}.sparse_attention_freq"
    if not isinstance(freq, list) or not all(isinstance(f, (int, float)) for f in freq):
        raise InvalidConfig(field, "must be a list of numbers, one a layer (non-zero: sparse)")
    layers = tuple(i for i, f in enumerate(freq[: a.n]) if f != 0)
    if not layers:
        return NO_EXTRAS
    for key in ("sparse_num_index_heads", "sparse_topk_blocks", "sparse_block_size"):
        if sparse.get(key) is None:  # the model reads them for every sparse layer
            raise InvalidConfig(f"{_SPARSE}.{key}", "required when a layer is sparse")
    dim = sparse.get("sparse_index_dim")
    if dim is None:
        raise InvalidConfig(f"{_SPARSE}.sparse_index_dim", "required when a layer is sparse")
    dim = pos_int(dim, f"{_SPARSE}.sparse_index_dim", MAX_HEAD_DIM, InvalidConfig)
    return AttentionExtras(indexer_layers=layers, indexer_dim=dim)
