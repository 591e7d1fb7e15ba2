"""Parameter counts from a config.json: the weights memory of a model sent without a preset.

Sums embeddings, attention (GQA or MLA), MLP or routed/shared experts, routers and norms, as
the Hugging Face / vLLM model definitions lay them out. Exact for the Llama, Qwen, Mixtral,
DeepSeek and gpt-oss families; an estimate (within about 1 %) for architectures with extra
modules (vision towers, MTP layers, indexers)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .families import MLA_MODEL_TYPES


class ParamCount(msgspec.Struct, frozen=True):
    total: int
    expert: int
    active: int


def _int(cfg: Mapping[str, Any], *keys: str, default: int = 0) -> int:
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            return v
    return default


def estimate_params(config: Mapping[str, Any]) -> ParamCount | None:
    """None when the config lacks what the sum needs (hidden size, vocabulary, MLP width)."""
    text = config.get("text_config")
    cfg: Mapping[str, Any] = {**config, **text} if isinstance(text, Mapping) else config
    mt = str(cfg.get("model_type", ""))
    H = _int(cfg, "hidden_size", "d_model", "n_embd")
    L = _int(cfg, "num_hidden_layers")
    V = _int(cfg, "vocab_size")
    q = _int(cfg, "num_attention_heads")
    if not (H and L and V and q):
        return None
    kv = _int(cfg, "num_key_value_heads", "num_kv_heads", default=q)
    hd = _int(cfg, "head_dim") or H // q
    inter = _int(cfg, "intermediate_size", "ffn_hidden_size")
    experts = _int(cfg, "n_routed_experts", "num_experts", "num_local_experts")
    per_tok = _int(cfg, "num_experts_per_tok", "moe_topk", default=experts)
    e_inter = _int(cfg, "moe_intermediate_size", default=inter)
    if not (inter or e_inter):
        return None
    shared = _int(cfg, "n_shared_experts") * 3 * H * e_inter
    shared += 3 * H * _int(cfg, "shared_expert_intermediate_size")

    if mt in MLA_MODEL_TYPES and cfg.get("kv_lora_rank"):
        r_kv = _int(cfg, "kv_lora_rank")
        r_q = _int(cfg, "q_lora_rank")
        rope = _int(cfg, "qk_rope_head_dim")
        nope = _int(cfg, "qk_nope_head_dim")
        v = _int(cfg, "v_head_dim", default=nope)
        qk = nope + rope
        attn = (H * r_q + r_q + r_q * q * qk) if r_q else H * q * qk
        attn += H * (r_kv + rope) + r_kv + r_kv * q * (nope + v) + q * v * H
        if cfg.get("index_head_dim"):
            ih, ihd = _int(cfg, "index_n_heads"), _int(cfg, "index_head_dim")
            attn += (r_q or H) * ih * ihd + H * ihd + 2 * ihd + H * ih
    else:
        attn = H * q * hd + 2 * H * kv * hd + q * hd * H
        if cfg.get("attention_bias") or mt in ("qwen2", "qwen2_moe", "gpt_oss"):
            attn += q * hd + 2 * kv * hd + (H if mt == "gpt_oss" else 0)
        if mt in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"):
            attn += 2 * hd  # q_norm, k_norm
        if mt == "gpt_oss":
            attn += q  # attention sinks

    if experts:
        # gpt-oss fuses gate_up with biases and biases down; the rest use three bias-free matrices.
        one_expert = (H * 2 * e_inter + 2 * e_inter + e_inter * H + H) if mt == "gpt_oss" else 3 * H * e_inter
        router = experts * H + (
            experts
            if mt in ("gpt_oss", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe", "glm_moe_dsa")
            else 0
        )
        dense_layers = _int(cfg, "first_k_dense_replace")
        only = cfg.get("mlp_only_layers") or []
        dense_layers += len(only) if isinstance(only, list) else 0
        moe_layers = L - dense_layers
        expert = moe_layers * experts * one_expert
        mlp = expert + moe_layers * (shared + router) + dense_layers * 3 * H * inter
        active_experts = moe_layers * per_tok * one_expert
    else:
        expert = active_experts = 0
        mlp = L * 3 * H * inter
    norms = L * 2 * H + H
    if mt in ("gemma3", "gemma3_text"):
        norms += L * 2 * H  # pre/post feed-forward norms
    tied = bool(cfg.get("tie_word_embeddings", True))  # the Hugging Face default
    emb = V * H * (1 if tied else 2)
    total = emb + L * attn + mlp + norms
    return ParamCount(total=total, expert=expert, active=total - expert + active_experts)
