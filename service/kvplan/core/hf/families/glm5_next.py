"""GLM-5-next (vllm/models/glm5next: common/model.py, common/attention.py, common/kda.py;
transformers' Glm5NextTextConfig, also the text_config of the multimodal model): KDA layers beside
NoPE sparse MLA layers whose indexer is a kpool indexer (index_topk an int)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HIDDEN_SIZE
from ...model.geometry import non_neg_int, pos_int
from ...model.mamba import MambaState
from ..family import MlaReading, Reading
from ..fields import cfg_dim
from ..states import flashkda_checkpoint_blocks, kda_state

MODEL_TYPE = "glm5_next_text"


def claim(r: Reading) -> Reading:
    """A GLM-5-next architecture is read as its text model, its linear_attn_config applied."""
    return r._replace(model_type=MODEL_TYPE, cfg=_linear_keys(r.cfg))


def _linear_keys(cfg: dict[str, Any]) -> dict[str, Any]:
    """Glm5NextTextConfig.__post_init__: a linear_attn_config object overrides the linear_* keys,
    and its safe_gate (on unless said) bounds an unbounded gate at −5."""
    lac = cfg.get("linear_attn_config")
    if lac is None:
        return cfg
    if not isinstance(lac, Mapping):
        raise InvalidConfig("linear_attn_config", "must be an object (head_dim, num_heads, ...)")
    out = dict(cfg)
    for key, name in (("head_dim", "linear_head_dim"), ("num_heads", "linear_num_heads"),
                      ("short_conv_kernel_size", "linear_conv_kernel_dim"),
                      ("gate_lower_bound", "linear_lower_bound")):  # fmt: skip
        if key in lac:
            out[name] = lac[key]
            if key != "gate_lower_bound":  # named as sent, not as the key it overrides
                pos_int(lac[key], f"linear_attn_config.{key}", MAX_HIDDEN_SIZE, InvalidConfig)
    if lac.get("safe_gate", True) and out.get("linear_lower_bound") is None:
        out["linear_lower_bound"] = -5.0
    return out


def layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...]
) -> tuple[str, ...] | None:
    """Glm5NextTextConfig's layer_types (every 4th layer indexed attention when none is given);
    vLLM makes a layer KDA when it says linear_attention, else sparse MLA
    (vllm/models/glm5next/common/model.py _is_kda_layer)."""
    types = cfg.get("layer_types")
    if types is None:
        types = ["linear_attention" if i % 4 != 3 else "indexed_attention" for i in range(n)]
    if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise InvalidConfig("layer_types", f"must list one layer type for each of the {n} layers")
    out = tuple("linear_attention" if t == "linear_attention" else "full_attention" for t in types)
    if "linear_attention" not in out:
        raise InvalidConfig(
            "layer_types", "GLM-5-next without KDA layers is a layout kvplan does not model; send it inline"
        )
    return out


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """Glm5NextLinearAttention (common/kda.py): KDA of linear_num_heads heads of linear_head_dim;
    FlashKDA (SM 9.x/10.x/12.x, head dim 128, bf16, a gate bound) keeps a prefill checkpoint
    (_resolve_kda_prefill_backend)."""
    heads, dim = cfg_dim(cfg, "linear_num_heads"), cfg_dim(cfg, "linear_head_dim")
    kda = kda_state(heads, dim, cfg_dim(cfg, "linear_conv_kernel_dim"), dtype)
    bounded = cfg.get("linear_lower_bound") is not None
    return replace(kda, checkpoint_blocks=flashkda_checkpoint_blocks(dim, dtype, bounded))


def mla(cfg: Mapping[str, Any], n: int, q_heads: int) -> MlaReading:
    """NoPE sparse MLA (Glm5NextTextConfig: qk_rope_head_dim 0), the latent alone, with a kpool
    indexer in place of DeepSeek's."""
    rope = non_neg_int(cfg.get("qk_rope_head_dim"), "qk_rope_head_dim", MAX_HEAD_DIM)
    return MlaReading(qk_rope_head_dim=rope, kpool_indexer=_kpool_indexer(cfg, q_heads))


def _kpool_indexer(cfg: Mapping[str, Any], q_heads: int) -> tuple[int, int]:
    """(index_head_dim, index_kpool) of GLM-5-next's sparse MLA layers, with the checks
    Glm5NextTextConfig.validate_architecture and vLLM's model make (a config failing them does not
    load)."""
    topk = cfg.get("index_topk")
    if isinstance(topk, bool) or not isinstance(topk, int) or topk < 1:
        raise InvalidConfig("index_topk", f"must be a positive integer (Glm5NextTextConfig), got {topk!r}")
    kpool = pos_int(cfg.get("index_kpool"), "index_kpool", MAX_HEAD_DIM, InvalidConfig)
    if kpool < 2:  # vllm/models/glm5next/common/attention.py Glm5NextIndexerCache
        raise InvalidConfig("index_kpool", "vLLM's kpool indexer needs index_kpool > 1")
    if topk % kpool:
        raise InvalidConfig("index_topk", f"must be a multiple of index_kpool ({kpool})")
    if not cfg.get("index_kpool_always_select_tail", True):
        raise InvalidConfig("index_kpool_always_select_tail", "vLLM 0.33 serves GLM-5-next only with true")
    if cfg.get("qk_rope_head_dim"):
        raise InvalidConfig("qk_rope_head_dim", "GLM-5-next's sparse MLA layers are NoPE (0)")
    kv = cfg.get("num_key_value_heads", q_heads)
    if kv != q_heads:
        raise InvalidConfig("num_key_value_heads", "Glm5NextTextConfig needs as many as num_attention_heads")
    ihd = pos_int(cfg.get("index_head_dim"), "index_head_dim", MAX_HEAD_DIM, InvalidConfig)
    return ihd, kpool
