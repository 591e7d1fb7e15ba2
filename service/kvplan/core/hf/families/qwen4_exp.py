"""Qwen4-exp (vllm/models/qwen4_exp/nvidia/model.py Qwen4ExpDecoderLayer, ple_layer.py;
common/qsa_cache.py, indexer_qsa.py; transformers' Qwen4ExpTextConfig): gated delta nets beside
full attention, QSA (an indexer ring and compressed keys beside the KV) when the config has
indexer_n_heads, and a PLE short-conv state on the layers ple_layer_ids names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from ...engine.dtypes import MODEL_DTYPES
from ...errors import InvalidConfig
from ...limits import MAX_STATE_BYTES, MAX_TOKENS
from ...model.geometry import QsaCaches, pos_int
from ...model.mamba import MambaState
from ..family import AttentionExtras, AttentionReading, Config, KvSlots
from ..fields import cfg_count, cfg_dim
from ..states import gated_delta_net_state

# Qwen4-exp's attention layer types (model.py _QSA_LAYER_TYPES): QSA when the config has
# indexer_n_heads, else plain full attention (Qwen3NextAttention).
_ATTENTION = ("qwen_sparse_attention", "indexed_attention")
_QSA_FIELDS = (
    "indexer_n_heads",
    "indexer_kv_heads",
    "indexer_head_dim",
    "indexer_budget",
    "indexer_compress_ratio",
)


def decoder_config(cfg: Config, n: int) -> Config:
    """Qwen4-exp read as vLLM builds it (Qwen4ExpDecoderLayer): every layer listed in layer_types,
    linear_attention layers gated delta nets, the others full attention (QSA when the config has
    indexer_n_heads); a layer whose 1-based index is in ple_layer_ids also keeps a PLE short-conv
    state. The standard reader then reads the layers as listed."""
    ple = cfg.get("ple_layer_ids") or []
    if not isinstance(ple, list) or any(
        isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= n for i in ple
    ):
        raise InvalidConfig("ple_layer_ids", f"must list 1-based layer indices up to {n}")
    hc = cfg.get("hc_count", 4)
    if not isinstance(hc, int) or isinstance(hc, bool) or hc <= 1:
        raise InvalidConfig("hc_count", f"vLLM's Qwen4-exp requires hc_count > 1, got {hc!r}")
    _qsa_fields(cfg)
    types = cfg.get("layer_types")
    if types is None:
        # Qwen4ExpTextConfig: every full_attention_interval-th layer (4) is indexed attention.
        every = cfg_count({"full_attention_interval": 4, **cfg}, "full_attention_interval")
        types = ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]
    if not isinstance(types, list) or len(types) != n:
        raise InvalidConfig("layer_types", f"must list the {n} layers")
    out = []
    for i, t in enumerate(types):
        # transformers reads a checkpoint's full_attention as indexed_attention.
        if t not in ("linear_attention", "full_attention", *_ATTENTION):
            raise InvalidConfig(
                f"layer_types[{i}]", f"Qwen4-exp takes linear_attention or indexed_attention, got {t!r}"
            )
        out.append("linear_attention" if t == "linear_attention" else "full_attention")
    return {**cfg, "layer_types": out}


def _qsa_fields(cfg: Mapping[str, Any]) -> None:
    """QSA's fields as Qwen4ExpTextConfig.validate_architecture checks them: all or none,
    positive, one indexer KV head, the budget a multiple of the compress ratio."""
    given = {k: cfg.get(k) for k in _QSA_FIELDS}
    if all(v is None for v in given.values()):
        return
    vals = {k: pos_int(v, k, MAX_TOKENS, InvalidConfig) for k, v in given.items()}
    if vals["indexer_kv_heads"] != 1:
        raise InvalidConfig("indexer_kv_heads", "Qwen4-exp QSA requires 1")
    if vals["indexer_budget"] % vals["indexer_compress_ratio"]:
        raise InvalidConfig("indexer_budget", "must be a multiple of indexer_compress_ratio")


def kv_slots(cfg: Mapping[str, Any], model_type: str, n: int) -> KvSlots:
    """With QSA or PLE layers: a PLE layer registers first; Qwen4ExpQSAAttention's indexer ring
    and compressed key cache before its KV. Else one KV layer a decoder layer."""
    if cfg.get("indexer_n_heads") is None and not cfg.get("ple_layer_ids"):
        return None, n
    attn: tuple[str, ...] = ("full_attention",)
    if cfg.get("indexer_n_heads") is not None:
        attn = ("circular_buffer", "compressed_mla", "full_attention")
    ple = set(cfg.get("ple_layer_ids") or ())
    entries: list[tuple[str, int]] = []
    for i, t in enumerate(cfg["layer_types"]):
        if i + 1 in ple:
            entries.append(("mamba_replicated", i))
        entries += [(k, i) for k in (attn if t == "full_attention" else (t,))]
    return tuple(entries), n


def state(cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...]) -> MambaState:
    """The gated delta net's state, with the PLE state the attention block is sized for."""
    return replace(gated_delta_net_state(cfg, dtype, archs), replicated_state_bytes=_ple_state(cfg, dtype))


def _ple_state(cfg: Mapping[str, Any], dtype: str) -> int:
    """The PLE short-conv state, TP-replicated, which vLLM's platform sizes the attention block
    for whether or not a layer keeps it (Qwen4ExpForCausalLM.get_mamba_specs_from_config,
    get_ple_mamba_state_shape_from_config): (ple_conv_kernel_size − 1) × ngram_size rows of
    hidden_size × hc_count, in the model dtype."""
    factors = {k: cfg_dim(cfg, k) for k in ("ple_conv_kernel_size", "ngram_size", "hc_count")}
    rows = (factors["ple_conv_kernel_size"] - 1) * factors["ngram_size"]
    state = rows * cfg_dim(cfg, "hidden_size") * factors["hc_count"] * MODEL_DTYPES[dtype]
    if state > MAX_STATE_BYTES:  # the inline form's bound (mamba.replicated_state_bytes)
        raise InvalidConfig(
            max(factors, key=lambda k: factors[k]),
            f"the PLE state (ple_conv_kernel_size − 1) × ngram_size × hidden_size × hc_count × dtype "
            f"bytes is {state} B, above {MAX_STATE_BYTES}",
        )
    return state


def attention_extras(a: AttentionReading) -> AttentionExtras:
    """QSA's side caches (qsa_cache.py, indexer_qsa.py): a ring of bf16 raw keys (beside exact
    MRoPE positions, four bf16 words per int64 axis, where the multimodal model keeps MRoPE) and
    bf16 compressed keys (vLLM's default indexer KV dtype). None without indexer_n_heads."""
    cfg = a.cfg
    if cfg.get("indexer_n_heads") is None:
        return AttentionExtras()
    if a.dtype != "bfloat16":
        raise InvalidConfig("torch_dtype", "Qwen4-exp QSA requires bfloat16")
    head = cfg_dim(cfg, "indexer_head_dim")
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    mrope = (
        "Qwen4ExpForConditionalGeneration" in a.archs
        and isinstance(rope, Mapping)
        and "mrope_section" in rope
    )
    row = head + (-head) % 4 + 3 * 4 if mrope else head
    qsa = QsaCaches(
        compress_ratio=cfg_dim(cfg, "indexer_compress_ratio"), ring_row_bytes=row * 2, key_bytes=head * 2
    )
    return AttentionExtras(qsa=qsa)
