"""Step5 (docs/vllm-rules.md §2.1; vllm/models/step5/nvidia/model.py Step5DecoderLayer,
Step5Attention, config.py get_step5_sparse_config): full and sliding attention, each layer's heads
from attention_other_setting where it names the layer's type, and with sparse_config enabled a
DSA layer (its KV, a summary cache and a CSA ring) for every full one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HEADS, MAX_HIDDEN_SIZE, MAX_LAYERS, MAX_TOKENS
from ...model.geometry import Geometry, pos_int
from ..family import Reading
from ..fields import cfg_int, config_geometry, leading_fields, quant_dtypes

MODEL_TYPE = "step5"
# Step5's sparse_config keys and the values vLLM's DSA path accepts
# (vllm/models/step5/nvidia/config.py get_step5_sparse_config); a key left out takes the default.
_SPARSE_FIXED: dict[str, Any] = {
    "proxy_dim": 256,
    "region_block_size": 8,
    "sparse_indexer_num_k_heads": 1,
    "sparse_indexer_use_rope": True,
    "sparse_indexer_q_norm_type": "rmsnorm",
    "sparse_indexer_k_norm_type": "layernorm",
    "sparse_indexer_csa_z_norm_type": "none",
    "compression_method": "csa_block_compress",
    "attention_impl": "sparse_gqa",
    "sparse_indexer_ssmax_s_granularity": "q_head",
}
# Step5 DSA kernels: head dim 192 (sparse_attention.py); their query heads per KV group are
# core/kv/parallel.py STEP5_DSA_Q_PER_KV's.
DSA_HEAD_DIM = 192


def claim(r: Reading) -> Reading:
    """vLLM builds Step5's layers whatever else the config calls itself."""
    return r._replace(model_type=MODEL_TYPE)


def read(r: Reading) -> Geometry:
    """Step5 from its config, after the fields every layout reads first."""
    cfg = r.cfg
    n = cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    _, dtype, max_pos = leading_fields(cfg, r.top, MODEL_TYPE)
    weight_dtype, expert_dtype = quant_dtypes(cfg)
    return _geometry(cfg, r.name, n, dtype, max_pos, weight_dtype, expert_dtype)


def _sparse(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The enabled sparse_config section, None when disabled; a checkpoint without one, or with
    one vLLM refuses, is refused naming the field (vllm/models/step5/nvidia/config.py)."""
    for legacy in ("step5_sparse_config", "step3p5_sparse_config"):
        if cfg.get(legacy) is not None:
            raise InvalidConfig(legacy, "unsupported: vLLM reads Step5's sparse layout from sparse_config")
    section = cfg.get("sparse_config")
    if not isinstance(section, Mapping):
        raise InvalidConfig(
            "sparse_config", "Step5 needs a sparse_config section; vLLM serves no dense-only Step5 checkpoint"
        )
    enabled = section.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise InvalidConfig("sparse_config.enabled", f"must be a bool, got {enabled!r}")
    if enabled is False:
        return None
    for key, want in _SPARSE_FIXED.items():
        got = section.get(key)
        if (
            got not in (None, "")
            and (got if isinstance(want, bool | int) else str(got).strip().lower()) != want
        ):
            raise InvalidConfig(f"sparse_config.{key}", f"vLLM's Step5 DSA requires {want!r}, got {got!r}")
    apply_to = section.get("apply_to_layer_types")
    if apply_to is not None and (
        not isinstance(apply_to, list)
        or [str(t).strip().lower() for t in apply_to if str(t).strip()] != ["full_attention"]
    ):
        raise InvalidConfig(
            "sparse_config.apply_to_layer_types", "vLLM's Step5 DSA takes ['full_attention'] only"
        )
    return section


def _layer_dims(
    cfg: Mapping[str, Any],
    other: Mapping[str, Any] | None,
    typed: bool,
    kind: str,
    sliding: bool,
    hidden: int,
) -> tuple[int, int, int]:
    """(query heads, KV groups, head dim) of one layer: attention_other_setting's where it names the
    layer's type, its query heads swa_num_attention_heads when sliding."""
    src: Mapping[str, Any] = cfg
    if other and typed and other.get("attention_type") == kind:
        src = {**cfg, **{k: v for k, v in other.items() if v}}
    heads = cfg_int(src, "num_attention_heads", MAX_HEADS)
    if sliding and cfg.get("swa_num_attention_heads") is not None:
        heads = cfg_int(cfg, "swa_num_attention_heads", MAX_HEADS)
    kv = cfg_int(src, "num_attention_groups", MAX_HEADS)
    if src.get("head_dim"):
        return heads, kv, cfg_int(src, "head_dim", MAX_HEAD_DIM)
    if hidden % heads:
        raise InvalidConfig(
            "head_dim", f"absent, and hidden_size {hidden} is not a multiple of {heads} heads"
        )
    return heads, kv, hidden // heads


def _dsa_layer(cfg: Mapping[str, Any], sparse: Mapping[str, Any], kv: int, head_dim: int) -> None:
    """A DSA layer's refusals: its KV (Step5DSAAttentionBackend) takes the head-wise gate and head
    dim 192, its indexer one provider group a KV group and 2 or 4 indexer heads a group."""
    if not cfg.get("use_head_wise_attn_gate"):
        raise InvalidConfig("use_head_wise_attn_gate", "vLLM's Step5 DSA layers require true")
    if head_dim != DSA_HEAD_DIM:
        raise InvalidConfig("head_dim", f"vLLM's Step5 DSA kernels take head dim 192, got {head_dim}")
    index_tp = sparse.get("index_tp_size") or sparse.get("num_provider_groups") or 4
    idx_heads = sparse.get("sparse_indexer_num_heads") or 16
    idx_heads = pos_int(idx_heads, "sparse_config.sparse_indexer_num_heads", MAX_HEADS, InvalidConfig)
    if index_tp != kv:
        raise InvalidConfig(
            "sparse_config.index_tp_size", f"must equal the DSA layers' {kv} KV groups, got {index_tp}"
        )
    if idx_heads % index_tp or idx_heads // index_tp not in (2, 4):
        raise InvalidConfig(
            "sparse_config.sparse_indexer_num_heads",
            f"÷ index_tp_size must be 2 or 4, got {idx_heads} ÷ {index_tp}",
        )


def _geometry(
    cfg: Mapping[str, Any],
    name: str,
    n: int,
    dtype: str,
    max_pos: int,
    weight_dtype: str | None,
    expert_dtype: str | None,
) -> Geometry:
    """Step5's layers: a layer slides where layer_types says sliding_attention (without
    layer_types: the even layers) and the config has a window; with sparse_config enabled every
    other layer is DSA: its KV, a summary cache (sparse_summary_cache.py) and a CSA ring of one
    page (csa_tail_ring.py). The sliding and the full layers must each be alike."""
    sparse = _sparse(cfg)
    if cfg.get("att_impl_type", "GQA") != "GQA":
        raise InvalidConfig("att_impl_type", f"vLLM's Step5 takes GQA only, got {cfg.get('att_impl_type')!r}")
    types = cfg.get("layer_types_with_mtp") or cfg.get("layer_types") or []
    types_key = "layer_types_with_mtp" if cfg.get("layer_types_with_mtp") else "layer_types"
    if not isinstance(types, list):
        raise InvalidConfig(types_key, "must be a list")
    if types and len(types) < n:
        raise InvalidConfig(types_key, f"has {len(types)} entries for {n} layers")
    other = cfg.get("attention_other_setting") or None
    if other is not None and not isinstance(other, Mapping):
        raise InvalidConfig("attention_other_setting", "must be an object")
    window_raw = cfg.get("sliding_window")
    hidden = cfg_int(cfg, "hidden_size", MAX_HIDDEN_SIZE)
    kinds: list[str] = []
    slots: list[int] = []
    dims: dict[str, set[tuple[int, int, int]]] = {"sliding": set(), "full": set()}
    for i in range(n):
        kind = types[i] if types else ("sliding_attention" if i % 2 == 0 else "full_attention")
        if kind not in ("sliding_attention", "full_attention"):
            raise InvalidConfig(
                f"{types_key}[{i}]", f"Step5 layers are full_attention or sliding_attention, got {kind!r}"
            )
        sliding = window_raw is not None and kind == "sliding_attention"
        heads, kv, head_dim = _layer_dims(cfg, other, bool(types), kind, sliding, hidden)
        dims["sliding" if sliding else "full"].add((heads, kv, head_dim))
        if sliding:
            kinds.append("sliding_attention")
            slots.append(i)
        elif sparse is None:
            kinds.append("full_attention")
            slots.append(i)
        elif kind != "full_attention":
            # Typed sliding with no window: vLLM runs it as plain full attention, not DSA.
            raise InvalidConfig(
                "sliding_window",
                "absent, so sliding_attention layers would run dense beside DSA ones: not modelled",
            )
        else:
            _dsa_layer(cfg, sparse, kv, head_dim)
            kinds += ["full_attention", "sparse_summary", "circular_buffer"]
            slots += [i, i, i]
    for key, found in dims.items():
        if len(found) > 1:
            raise InvalidConfig(
                "attention_other_setting",
                f"Step5's {key} layers differ in heads or head dim: {sorted(found)}",
            )
    window = None
    if dims["sliding"]:
        window = pos_int(window_raw, "sliding_window", MAX_TOKENS, InvalidConfig)
    q_heads, kv_heads, head_dim = next(iter(dims["full"] or dims["sliding"]))
    full_kv = full_dim = None
    if dims["sliding"] and dims["full"]:
        _, kv_heads, head_dim = next(iter(dims["sliding"]))
        _, full_kv, full_dim = next(iter(dims["full"]))
    uniform = len(set(kinds)) == 1
    return config_geometry(
        name=name,
        model_type=MODEL_TYPE,
        num_layers=len(kinds),
        num_attention_heads=q_heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        layer_types=None if uniform and kinds[0] == "full_attention" else tuple(kinds),
        sliding_window=window,
        dtype=dtype,
        max_position_embeddings=max_pos,
        full_head_dim=full_dim,
        full_kv_heads=full_kv,
        decoder_layers=tuple(slots) if len(slots) != n else None,
        num_decoder_layers=n if len(slots) != n else None,
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_dtype,
        prefix="",
    )
