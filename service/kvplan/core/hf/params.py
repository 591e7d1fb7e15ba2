"""Parameter counts from a config.json: the weights memory of a model sent without a preset.

Sums embeddings, attention (GQA or MLA), MLP or routed/shared experts, routers and norms, as
the Hugging Face / vLLM model definitions lay them out. Exact for the Llama, Qwen, Mixtral,
DeepSeek and gpt-oss families; an estimate (within about 1 %) for architectures with extra
modules (vision towers, MTP layers, indexers).

Every field read is checked first: a count is a whole number from 0 to its limit, a layer index
names a layer that exists, so every term of the sum, and the sum, is ≥ 0."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgspec

from ..errors import InvalidConfig
from ..limits import (
    MAX_EXPERTS,
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_INTERMEDIATE_SIZE,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_VOCAB_SIZE,
)
from ..model.mamba import MambaState, Mixer
from .defaults import with_defaults
from .mla import MLA_MODEL_TYPES


class ParamCount(msgspec.Struct, frozen=True):
    total: int
    expert: int
    active: int
    # Embeddings, the LM head and norms: what quantized checkpoints keep in the model dtype.
    unquantized: int = 0
    tower: int = 0  # a vision tower and its projector (in total)


class _PerLayerSizes(Exception):
    """A size given as a list or object (per-layer sizes): a layout this sum does not read."""


def _int(cfg: Mapping[str, Any], *keys: str, maximum: int, default: int = 0) -> int:
    """The first of `keys` the config sets (null counts as unset): a whole number from 0 to
    `maximum`, else InvalidConfig naming that key."""
    for k in keys:
        v = cfg.get(k)
        if v is None:
            continue
        if isinstance(v, (list, Mapping)):
            raise _PerLayerSizes(k)
        if isinstance(v, float) and math.isfinite(v) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidConfig(k, f"must be a whole number, got {v!r}")
        if not 0 <= v <= maximum:
            raise InvalidConfig(k, f"must be from 0 to {maximum:,}, got {v:,}")
        return v
    return default


def _at_least_one(cfg: Mapping[str, Any], key: str) -> int:
    """A period such as moe_layer_freq: 1 when unset, else from 1 to MAX_LAYERS."""
    v = _int(cfg, key, maximum=MAX_LAYERS, default=1)
    if v < 1:
        raise InvalidConfig(key, "must be at least 1")
    return v


def _layer_list(cfg: Mapping[str, Any], key: str, layers: int) -> frozenset[int]:
    """Layer indices: each from 0 to layers − 1, none twice."""
    raw = cfg.get(key)
    if raw is None:
        return frozenset()
    if not isinstance(raw, list):
        raise InvalidConfig(key, f"must be a list of layer indices, got {raw!r}")
    seen: set[int] = set()
    for i, v in enumerate(raw):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidConfig(f"{key}[{i}]", f"must be a layer index, got {v!r}")
        if not 0 <= v < layers:
            raise InvalidConfig(
                f"{key}[{i}]", f"layer {v} does not exist: the model has {layers} (0 to {layers - 1})"
            )
        if v in seen:
            raise InvalidConfig(f"{key}[{i}]", f"layer {v} is listed twice")
        seen.add(v)
    return frozenset(seen)


def moe_layer_count(cfg: Mapping[str, Any], layers: int) -> int:
    """Layers with routed experts, by the rules of vLLM's model files: DeepSeek-style
    (deepseek_v2.py) skips the first `first_k_dense_replace` and keeps every `moe_layer_freq`-th;
    Qwen-MoE (qwen2_moe.py, qwen3_moe.py) skips `mlp_only_layers` and keeps every
    `decoder_sparse_step`-th. A config sets one family's keys; the others keep their neutral
    defaults. Between 0 and `layers` by construction."""
    first_dense = _int(cfg, "first_k_dense_replace", maximum=MAX_LAYERS)
    if first_dense > layers:
        raise InvalidConfig(
            "first_k_dense_replace", f"{first_dense} dense layers, but the model has {layers}"
        )
    freq = _at_least_one(cfg, "moe_layer_freq")
    step = _at_least_one(cfg, "decoder_sparse_step")
    period = _at_least_one(cfg, "expert_layer_period")  # Jamba (jamba.py): i % period == offset
    offset = _int(cfg, "expert_layer_offset", maximum=MAX_LAYERS) % period
    dense_only = _layer_list(cfg, "mlp_only_layers", layers)
    return sum(
        1
        for i in range(first_dense, layers)
        if i % freq == 0 and (i + 1) % step == 0 and i % period == offset and i not in dense_only
    )


# MLPs of two matrices with biases (GELU), and attention with biases on all four projections.
_TWO_MATRIX_MLP = ("phi", "gpt2", "gpt_neox", "gpt_bigcode", "starcoder2", "opt")


def vision_tower_params(config: Mapping[str, Any], text_hidden: int) -> int:
    """A multimodal model's vision encoder (ViT layers: attention and a two-matrix MLP with
    biases and two norms) and its projector into the language model (a patch-merging linear and
    one more), from `vision_config`; 0 without one. An estimate: towers differ in details."""
    v = config.get("vision_config")
    if not isinstance(v, Mapping):
        return 0
    try:
        h = _int(v, "hidden_size", "embed_dim", "width", maximum=MAX_HIDDEN_SIZE)
        i = _int(v, "intermediate_size", maximum=MAX_INTERMEDIATE_SIZE, default=4 * h)
        layers = _int(v, "num_hidden_layers", "depth", "layers", maximum=MAX_LAYERS)
        patch = _int(v, "patch_size", maximum=MAX_HEAD_DIM, default=14)
        merge = (
            _int(config, "spatial_merge_size", maximum=16) or _int(v, "spatial_merge_size", maximum=16) or 1
        )
    except _PerLayerSizes:
        return 0
    if not (h and layers):
        return 0
    per_layer = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
    projector = h * merge * merge * text_hidden + text_hidden * text_hidden
    return layers * per_layer + 3 * patch * patch * h + projector


def estimate_params(
    config: Mapping[str, Any],
    attention_layers: int | None = None,
    state: MambaState | None = None,
    state_layers: int = 0,
) -> ParamCount | None:
    """None when the config lacks what the sum needs (hidden size, vocabulary, MLP width) or
    gives a size per layer; InvalidConfig, naming the field, when a field it reads is out of range.
    A hybrid's geometry says how many layers attend (`attention_layers`, every decoder layer when
    None) and how many keep a recurrent `state` instead: those count their mixer's weights."""
    try:
        return _estimate(config, attention_layers, state, state_layers)
    except _PerLayerSizes:
        return None


def mixer_params(s: MambaState, hidden: int, dt_rank: int) -> int:
    """One recurrent layer's weights, as vLLM's mixers hold them (vllm/model_executor/layers/mamba/
    mamba_mixer.py, mamba_mixer2.py, gdn/, short_conv.py; the linear attention of
    bailing_moe_linear.py has the four projections of attention)."""
    H, k = hidden, s.conv_kernel
    if s.mixer is Mixer.MAMBA1:  # in, conv (+bias), x, dt (+bias), A, D, out
        inner, n = s.intermediate_size, s.state_size
        return (
            H * 2 * inner
            + inner * k
            + inner
            + inner * (dt_rank + 2 * n)
            + dt_rank * inner
            + 3 * inner
            + inner * n
            + inner * H
        )
    if s.mixer is Mixer.MAMBA2:  # in (z, x, B, C, dt), conv (+bias), A, D, dt bias, norm, out
        inner, gn, heads = s.intermediate_size, 2 * s.n_groups * s.state_size, s.num_heads
        return H * (2 * inner + gn + heads) + (inner + gn) * (k + 1) + 3 * heads + inner + inner * H
    if s.mixer is Mixer.GATED_DELTA_NET:  # in (q, k, v, z; b, a), conv, dt bias, A, norm, out
        kd, vd, hv = s.num_k_heads * s.head_k_dim, s.num_v_heads * s.head_v_dim, s.num_v_heads
        return H * (2 * kd + 2 * vd) + H * 2 * hv + (2 * kd + vd) * k + 2 * hv + s.head_v_dim + vd * H
    if s.mixer is Mixer.SHORT_CONV:  # in (B, C, x), conv, out
        return H * 3 * s.intermediate_size + s.intermediate_size * k + s.intermediate_size * H
    d = s.num_heads * s.head_dim  # LINEAR_ATTENTION: q, k, v, o
    return 4 * H * d


def _estimate(
    config: Mapping[str, Any], attention_layers: int | None, state: MambaState | None, state_layers: int
) -> ParamCount | None:
    """The parameter count as the sum of its parts (embeddings, the attending layers' attention,
    MLA or plain, the recurrent layers' mixers, dense and expert MLPs, norms, a vision tower),
    total and active (routed experts counted by top-k); None when a size it needs is missing.
    estimate_params' body, kept apart so that a size given per layer (_PerLayerSizes, raised from
    anywhere in the sum) reads as no estimate rather than as a refusal."""
    text = config.get("text_config")
    cfg: Mapping[str, Any] = {**config, **text} if isinstance(text, Mapping) else config
    mt = str(cfg.get("model_type", ""))
    cfg = with_defaults(dict(cfg), mt)
    H = _int(cfg, "hidden_size", "d_model", "n_embd", maximum=MAX_HIDDEN_SIZE)
    L = _int(cfg, "num_hidden_layers", maximum=MAX_LAYERS)
    V = _int(cfg, "vocab_size", maximum=MAX_VOCAB_SIZE)
    q = _int(cfg, "num_attention_heads", maximum=MAX_HEADS)
    if not (H and L and V and q):
        return None
    kv = _int(cfg, "num_key_value_heads", "num_kv_heads", maximum=MAX_HEADS, default=q)
    hd = _int(cfg, "head_dim", maximum=MAX_HEAD_DIM) or H // q
    inter = _int(cfg, "intermediate_size", "ffn_hidden_size", maximum=MAX_INTERMEDIATE_SIZE)
    experts = _int(cfg, "n_routed_experts", "num_experts", "num_local_experts", maximum=MAX_EXPERTS)
    # Kimi-Linear names the top-k num_experts_per_token, and its shared experts num_shared_experts.
    top_k_keys = ("num_experts_per_tok", "moe_topk", "num_experts_per_token")
    per_tok = _int(cfg, *top_k_keys, maximum=MAX_EXPERTS, default=experts)
    if experts and per_tok > experts:
        key = next(k for k in top_k_keys if cfg.get(k) is not None)
        raise InvalidConfig(key, f"{per_tok} experts a token, but the model has {experts}")
    e_inter = _int(cfg, "moe_intermediate_size", maximum=MAX_INTERMEDIATE_SIZE, default=inter)
    if not (inter or e_inter):
        return None
    shared = _int(cfg, "n_shared_experts", "num_shared_experts", maximum=MAX_EXPERTS) * 3 * H * e_inter
    shared += 3 * H * _int(cfg, "shared_expert_intermediate_size", maximum=MAX_INTERMEDIATE_SIZE)

    # Layers with a feed-forward block: every decoder layer, except where Nemotron-H's pattern
    # has MLP (-) and MoE (E) layers apart from its Mamba and attention ones (nemotron_h.py, a
    # two-matrix ReLU² MLP) and where Zamba2's shared transformer blocks are all there is
    # (zamba2.py: num_mem_blocks blocks, their weights shared by every hybrid layer).
    pattern = str(cfg.get("hybrid_override_pattern") or "") if mt == "nemotron_h" else ""
    ffn_layers, mlp_matrices = L, 3
    if pattern:
        ffn_layers, mlp_matrices = pattern.count("-") + pattern.count("E"), 2
    if mt == "zamba2":
        ffn_layers = attention_layers = _at_least_one(cfg, "num_mem_blocks")
    if mt in MLA_MODEL_TYPES and cfg.get("kv_lora_rank"):
        r_kv = _int(cfg, "kv_lora_rank", maximum=MAX_HEAD_DIM)
        r_q = _int(cfg, "q_lora_rank", maximum=MAX_HEAD_DIM)
        rope = _int(cfg, "qk_rope_head_dim", maximum=MAX_HEAD_DIM)
        nope = _int(cfg, "qk_nope_head_dim", maximum=MAX_HEAD_DIM)
        v = _int(cfg, "v_head_dim", maximum=MAX_HEAD_DIM, default=nope)
        qk = nope + rope
        attn = (H * r_q + r_q + r_q * q * qk) if r_q else H * q * qk
        attn += H * (r_kv + rope) + r_kv + r_kv * q * (nope + v) + q * v * H
        if cfg.get("index_head_dim"):
            ih = _int(cfg, "index_n_heads", maximum=MAX_HEADS)
            ihd = _int(cfg, "index_head_dim", maximum=MAX_HEAD_DIM)
            attn += (r_q or H) * ih * ihd + H * ihd + 2 * ihd + H * ih
    else:
        attn = H * q * hd + 2 * H * kv * hd + q * hd * H
        if cfg.get("attention_bias") or mt in ("qwen2", "qwen2_moe", "gpt_oss", *_TWO_MATRIX_MLP):
            attn += q * hd + 2 * kv * hd + (H if mt in ("gpt_oss", *_TWO_MATRIX_MLP) else 0)
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
        moe_layers = pattern.count("E") if pattern else moe_layer_count(cfg, L)
        dense_layers = ffn_layers - moe_layers
        expert = moe_layers * experts * one_expert
        mlp = expert + moe_layers * (shared + router) + dense_layers * mlp_matrices * H * inter
        active_experts = moe_layers * per_tok * one_expert
    elif mt in _TWO_MATRIX_MLP:  # fc1 and fc2 with biases, no gate
        expert = active_experts = 0
        mlp = L * (2 * H * inter + inter + H)
    else:
        expert = active_experts = 0
        mlp = ffn_layers * mlp_matrices * H * inter
    norms = L * 2 * H + H
    if mt in _TWO_MATRIX_MLP:
        norms += H + (V if mt == "phi" else 0)  # the final norm's bias; Phi's LM head has one too
    if mt in ("gemma3", "gemma3_text"):
        norms += L * 2 * H  # pre/post feed-forward norms
    tied = bool(cfg.get("tie_word_embeddings", True))  # the Hugging Face default
    emb = V * H * (1 if tied else 2)
    mixers = 0
    if state is not None and state_layers:
        dt_rank = _int(cfg, "mamba_dt_rank", "time_step_rank", maximum=MAX_HIDDEN_SIZE) or math.ceil(H / 16)
        mixers = state_layers * mixer_params(state, H, dt_rank)
    attending = L if attention_layers is None else attention_layers
    tower = vision_tower_params(config, H)
    total = emb + attending * attn + mixers + mlp + norms + tower
    if total > MAX_PARAMS:
        raise InvalidConfig(
            "config", f"its sizes make {total:,} parameters, above the limit of {MAX_PARAMS:,} (MAX_PARAMS)"
        )
    active = total - expert + active_experts
    return ParamCount(total=total, expert=expert, active=active, unquantized=emb + norms, tower=tower)


# Model types whose MTP module defaults to one layer when the config names none (vLLM's
# qwen3_next_mtp.py, qwen3_5_mtp.py: getattr(config, …, 1)).
_MTP_DEFAULT_ONE = ("qwen3_next", "qwen3_5")


def mtp_layers(config: Mapping[str, Any]) -> int:
    """The multi-token-prediction layers a checkpoint ships (num_nextn_predict_layers, or Qwen3.5's
    mtp_num_hidden_layers; vllm/config/speculative.py hf_config_override), 0 when none."""
    text = config.get("text_config")
    cfg: Mapping[str, Any] = {**config, **text} if isinstance(text, Mapping) else config
    try:
        n = _int(cfg, "num_nextn_predict_layers", "mtp_num_hidden_layers", maximum=MAX_LAYERS, default=-1)
    except _PerLayerSizes:
        return 0
    if n >= 0:
        return n
    return 1 if str(cfg.get("model_type", "")).startswith(_MTP_DEFAULT_ONE) else 0


def mtp_params(config: Mapping[str, Any], layers: int) -> tuple[int, int] | None:
    """(parameters, of them routed experts) of `layers` MTP layers: each a decoder layer of the
    model's MoE kind (vllm/model_executor/models/deepseek_mtp.py DeepSeekMultiTokenPredictorLayer:
    the block, enorm, hnorm, eh_proj of 2H × H, the shared head's norm), without the embedding and
    LM head the drafter shares with the target. None when the sum lacks a size."""
    text = config.get("text_config")
    cfg = {**config, **text} if isinstance(text, Mapping) else dict(config)
    for key in ("text_config", "vision_config", "hybrid_override_pattern", "layer_types", "mlp_only_layers"):
        cfg.pop(key, None)
    cfg |= {"num_hidden_layers": 1, "first_k_dense_replace": 0, "tie_word_embeddings": True}
    try:
        est = _estimate(cfg, 1, None, 0)
    except _PerLayerSizes:
        return None
    if est is None:
        return None
    h = _int(cfg, "hidden_size", "d_model", "n_embd", maximum=MAX_HIDDEN_SIZE)
    v = _int(cfg, "vocab_size", maximum=MAX_VOCAB_SIZE)
    one = est.total - v * h + 2 * h + 2 * h * h  # less the tied embedding; enorm, hnorm, eh_proj
    return layers * one, layers * est.expert
