"""Which modules vLLM's LoRA manager wraps in a model, and their sizes, from config.json: for the
architectures whose vLLM model class has the Llama layout (merged QKV, o_proj, merged gate_up and
down_proj, or fused experts with a router and an optional shared expert; no other linear layer).
Other architectures have other modules (MLA projections, Mamba mixers, a single-slice QKV): None,
and kvplan says LoRA is not modelled for them rather than guess."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model.lora import LoraModules
from .defaults import with_defaults
from .fields import architectures, language_config
from .params import _PerLayerSizes, moe_layer_count

# Architecture → (its class lists embed_tokens and lm_head in embedding_modules, is_3d_moe_weight),
# read from vllm/model_executor/models/{llama,mistral,qwen2,qwen3,qwen2_moe,qwen3_moe,mixtral,
# gemma2,gemma3}.py (MistralForCausalLM: "We don't support LoRA on the embedding layers").
_LLAMA_LAYOUT: dict[str, tuple[bool, bool]] = {
    "LlamaForCausalLM": (True, False),
    "MistralForCausalLM": (False, False),
    "Qwen2ForCausalLM": (False, False),
    "Qwen3ForCausalLM": (True, False),
    "Qwen2MoeForCausalLM": (False, False),
    "Qwen3MoeForCausalLM": (True, False),
    "MixtralForCausalLM": (True, False),
    "Gemma2ForCausalLM": (False, False),
    "Gemma3ForCausalLM": (False, False),
}


def _size(cfg: Mapping[str, Any], *keys: str) -> int:
    for k in keys:
        v = cfg.get(k)
        if type(v) is int and v > 0:
            return v
    return 0


def lora_modules(
    config: Mapping[str, Any], layers: int, heads: int, kv_heads: int, head_dim: int
) -> LoraModules | None:
    """The wrapped modules of a Llama-layout model (the attention sizes from its geometry), or None
    for an architecture of another layout or a config without the sizes."""
    arch = next((a for a in architectures(config) if a in _LLAMA_LAYOUT), None)
    if arch is None:
        return None
    embeddings, moe_3d = _LLAMA_LAYOUT[arch]
    lang = language_config(config)
    cfg = with_defaults(dict(lang), str(lang.get("model_type") or ""))
    hidden, vocab = _size(cfg, "hidden_size"), _size(cfg, "vocab_size")
    inter = _size(cfg, "intermediate_size")
    experts = _size(cfg, "num_local_experts", "num_experts")
    if not (hidden and vocab and layers and heads and kv_heads and head_dim):
        return None
    try:
        moe = moe_layer_count(cfg, layers) if experts else 0
    except _PerLayerSizes:  # a layout the count does not read: no LoRA plan rather than a guess
        return None
    moe_inter = _size(cfg, "moe_intermediate_size") or inter
    if (layers - moe and not inter) or (moe and not moe_inter):
        return None
    return LoraModules(
        hidden_size=hidden,
        vocab_size=vocab,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        layers=layers,
        intermediate_size=inter,
        dense_layers=layers - moe,
        moe_layers=moe,
        num_experts=experts,
        moe_intermediate_size=moe_inter if moe else 0,
        shared_expert_intermediate_size=_size(cfg, "shared_expert_intermediate_size") if moe else 0,
        embeddings=embeddings,
        moe_3d_weights=moe_3d,
    )


__all__ = ["lora_modules"]
