"""Reading a Hugging Face config.json into a Geometry as vLLM reads it through transformers
(docs/vllm-rules.md §2; vllm/config/model.py, vllm/transformers_utils/config.py): the family
rules for layer kinds, recurrent state, KV heads and the longest context."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec.structs import replace

from ..engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from ..engine.nonkv import model_shape
from ..errors import InvalidConfig, InvalidInput
from ..limits import (
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_LAYERS,
    MAX_STATE_BYTES,
    MAX_TOKENS,
)
from ..model.geometry import (
    FULL,
    LAYER_TYPE_CODES,
    MAMBA,
    SCONV,
    Geometry,
    QsaCaches,
    make_dsv4_geometry,
    make_dsv41_geometry,
    make_geometry,
    non_neg_int,
    pos_int,
)
from ..model.mamba import MambaState, Mixer
from ..model.quant import quant_scheme
from .defaults import with_defaults
from .mla import MLA_MODEL_TYPES
from .params import estimate_params


def _config_error(e: InvalidInput) -> InvalidConfig:
    """A geometry refusal as the config's: its num_layers are KV-cache layers (two or three a
    decoder layer in some families), and a config.json counts num_hidden_layers."""
    if e.field == "num_layers":
        return InvalidConfig("num_hidden_layers", f"the KV-cache layers it makes {e.reason}")
    return InvalidConfig(e.field, e.reason)


def _cfg_int(cfg: Mapping[str, Any], key: str, maximum: int) -> int:
    return pos_int(cfg.get(key), key, maximum, InvalidConfig)


def _first_present(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, Any] | None:
    for k in keys:
        if cfg.get(k) is not None:
            return k, cfg[k]
    return None


_KV_HEAD_KEYS = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
# MiniMax-M3: vLLM reads only the text_config of a minimax_m3_vl config, through its own
# MiniMaxM3TextConfig (vllm/transformers_utils/configs/minimax_m3.py), the top level's dtype aside.
_MINIMAX_M3 = "minimax_m3_text"
_MINIMAX_M3_VL = "minimax_m3_vl"
_MINIMAX_M3_SPARSE = "sparse_attention_config"
_MINIMAX_M3_ARCHS = frozenset({"MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration"})
# Inkling: vLLM reads an inkling_mm_model config's text_config (none: every default) through its
# own InklingModelConfig (vllm/models/inkling/configs.py), the top level's dtype aside.
_INKLING = "inkling_model"
_INKLING_MM = "inkling_mm_model"
_INKLING_ARCHS = frozenset({"InklingForCausalLM", "InklingForConditionalGeneration"})
# Kimi-K3 (vllm/models/kimi_k3/nvidia/model.py): KimiK3Config wraps a KimiLinearConfig
# text_config, which the Kimi-Linear model reads (vllm/transformers_utils/configs/kimi_k3.py).
_KIMI_K3 = "KimiK3ForConditionalGeneration"
# FlashKDA, the prefill backend the full-rank-gate KDA picks on SM 9.x / 10.x / 12.x GPUs, takes
# this head dim only (vllm/models/kimi_k3/nvidia/kda.py is_flashkda_supported); the gate's lower
# bound must lie in [−5, 0) (KimiK3DeltaAttention asserts it).
_FLASHKDA_HEAD_DIM = 128
_KDA_GATE_LOGBOUND_MIN = -5.0
# GLM-5-next (vllm/models/glm5next): transformers' Glm5NextTextConfig, also the text_config of
# the multimodal model. Its MLA layers are sparse with a kpool indexer (index_topk is an int).
_GLM5_NEXT = "glm5_next_text"
_GLM5_NEXT_ARCHS = frozenset({"Glm5NextForCausalLM", "Glm5NextForConditionalGeneration"})
_KV_SHARING_FAMILIES = frozenset({"gemma3n", "gemma3n_text", "gemma4", "gemma4_text"})
# HY-V4's spellings of a sparse (indexed) MLA layer in layer_types; any other entry is dense MLA
# (vllm/models/hy_v4/nvidia/attention.py _SPARSE_LAYER_TYPES).
_HY_V4 = "hy_v4"
_HY_V4_SPARSE = frozenset({"sparse_attention", "sparse", "indexed_attention", "deepseek_sparse_attention"})
# Muse Spark's text config (vllm/transformers_utils/configs/muse_spark.py MuseSparkTextConfig): no
# defaults of its own, so the keys its attention reads must be in config.json.
_MUSE_SPARK = frozenset({"muse_spark", "muse_spark_text"})
_MUSE_SPARK_LAYER_TYPES = frozenset({"full_attention", "sliding_attention"})
_DOTS3 = "dots3_note"
# AliceAI has no config class in transformers (its config.json comes with the repository's own):
# it is known by its architecture and read under this family name.
_ALICE_AI = "AliceAIForCausalLM"
_ALICE_AI_FAMILY = "alice_ai"
# Gated-delta-net families (Qwen3-Next, Qwen3.5 / 3.6, OLMo-hybrid), their text configs included.
_GDN_FAMILIES = frozenset(
    {"qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text", "olmo_hybrid",
     "qwen4_exp", "qwen4_exp_text"}
)  # fmt: skip
# Attention-free Mamba models: every layer keeps a state.
_PURE_MAMBA = frozenset({"mamba", "falcon_mamba", "mamba2"})
# Hybrid families whose recurrent layers are read from config.json, and ones that are not (yet):
# a config of the latter, or any config with state keys, is refused rather than read as attention.
_READ_HYBRIDS = frozenset({"jamba", "granitemoehybrid", "falcon_h1", "nemotron_h", "lfm2", "lfm2_moe",
                           "kimi_linear", "bailing_hybrid", "zamba2", _ALICE_AI_FAMILY, _GLM5_NEXT,
                           *_GDN_FAMILIES, *_PURE_MAMBA})  # fmt: skip
_UNREAD_HYBRIDS = frozenset({"bamba", "zamba", "plamo2", "minimax", "minimax_text_01",
                             "bailing_moe_linear"})  # fmt: skip
# Zamba2Config's layers_block_type when the config gives none: Mamba2 layers, and "hybrid" ones
# that also run the shared attention block.
_ZAMBA2_BLOCKS = ("mamba",) + (("mamba",) * 5 + ("hybrid",)) * 7 + ("mamba",) * 4 + ("hybrid",) + \
    ("mamba",) * 3 + ("hybrid",) + ("mamba",) * 2  # fmt: skip
# The architectures whose Mamba SSM state vLLM keeps in the config's mamba_ssm_dtype
# (vllm/model_executor/models/config.py MODELS_CONFIG_MAP: Qwen3_5ForConditionalGenerationConfig).
_QWEN35_SSM_DTYPE_ARCHS = frozenset({
    "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForCausalLM",
    "Qwen3_5MoeForConditionalGeneration", "ColQwen3_5", "D3ForSequenceClassification",
    "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"})  # fmt: skip
# vllm/model_executor/models/registry.py: the two models of model_type "bailing_hybrid", with
# linear attention (Ring-2.5) or KDA (Bailing V3) beside MLA.
_BAILING_LINEAR = "BailingMoeV2_5ForCausalLM"
_BAILING_KDA = "BailingMoeV3ForCausalLM"
_STATE_KEY_PREFIXES = ("mamba_", "ssm_", "linear_num_", "linear_key_", "linear_value_")
# Old names transformers maps to their current ones, so the current defaults apply.
_MODEL_TYPE_ALIASES = {"RefinedWeb": "falcon", "RefinedWebModel": "falcon"}
_ATTRIBUTE_MAP = (("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"))
# The keys vLLM derives the longest context from, the smallest present winning
# (vllm/transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key).
_MAX_POS_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip
# vLLM's context when a config names none of them (vllm/config/model.py _get_and_verify_max_len).
DEFAULT_MAX_MODEL_LEN = 2048
# RoPE types whose max_position_embeddings is already the scaled length; other types' factor
# multiplies it (Gemma-3's too is already scaled).
_ROPE_TYPES_ALREADY_SCALED = frozenset(
    {"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"}
)


def derived_max_model_len(cfg: Mapping[str, Any], model_type: str) -> int:
    """The longest context vLLM allows without VLLM_ALLOW_LONG_MAX_MODEL_LEN: the smallest of
    the length keys (model_max_length overriding them, as for Command-R), times the RoPE scaling
    factor of types that do not scale max_position_embeddings themselves
    (vllm/config/model.py _get_and_verify_max_len)."""
    found = [(k, cfg[k]) for k in _MAX_POS_KEYS if cfg.get(k) is not None]
    lengths = [(k, pos_int(v, k, MAX_TOKENS, InvalidConfig)) for k, v in found]
    if cfg.get("model_max_length"):
        derived = pos_int(cfg["model_max_length"], "model_max_length", MAX_TOKENS, InvalidConfig)
    elif lengths:
        derived = min(v for _, v in lengths)
    else:
        derived = DEFAULT_MAX_MODEL_LEN
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling")
    rope_key = "rope_parameters" if cfg.get("rope_parameters") else "rope_scaling"
    if isinstance(rope, Mapping) and "gemma3" not in model_type:
        kind = rope.get("rope_type") or rope.get("type") or "default"
        if not isinstance(kind, str):
            raise InvalidConfig(f"{rope_key}.rope_type", f"must be a string, got {kind!r}")
        factor = rope.get("factor")
        if kind not in _ROPE_TYPES_ALREADY_SCALED and kind != "default" and factor is not None:
            if isinstance(factor, bool) or not isinstance(factor, int | float) or not 0 < factor <= 1 << 20:
                raise InvalidConfig(f"{rope_key}.factor", f"must be a positive number, got {factor!r}")
            derived = min(MAX_TOKENS, int(derived * factor))
    return derived


def _layer_types(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...] = ()
) -> tuple[str, ...] | None:
    """Per-layer types from `layer_types`, or the family's own rule, or None for uniform. The
    rules are the ones transformers applies when the config class fills `layer_types` in."""
    if model_type == "kimi_linear":
        # vllm/models/kimi_k3/nvidia/model.py (KimiLinearConfig.is_kda_layer): layer i is a KDA
        # layer iff i + 1 is in kda_layers; the rest are MLA. layer_types is not read.
        kda = set(_kimi_layer_list(_kimi_linear_config(cfg), "kda_layers"))
        return tuple("linear_attention" if i + 1 in kda else "full_attention" for i in range(n))
    if model_type == "bailing_hybrid":
        # Every layer_group_size-th layer is MLA, the rest linear attention (bailing_moe_linear.py
        # is_linear_layer); Bailing V3's layers past the last whole group are MLA too
        # (bailing_moe_v3.py _is_kda_layer). layer_types is not read.
        group = _cfg_count(cfg, "layer_group_size")
        whole = n if _BAILING_KDA not in archs else n // group * group
        return tuple(
            "linear_attention" if (i + 1) % group and i < whole else "full_attention" for i in range(n)
        )
    if model_type == _HY_V4:  # every layer MLA; which are sparse is _hy_v4_sparse's
        return None
    if model_type == _GLM5_NEXT:
        return _glm5_next_layer_types(cfg, n)
    layer_types = cfg.get("layer_types") or cfg.get("layers_block_type")
    if layer_types is None and model_type == _ALICE_AI_FAMILY:
        raise InvalidConfig("layer_types", "AliceAI's layers are read from layer_types, which is missing")
    if layer_types is not None:
        if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
            raise InvalidConfig("layer_types", "must be a list of strings")
        return tuple(layer_types)
    if model_type in _PURE_MAMBA:
        return tuple("mamba" for _ in range(n))
    if model_type == "jamba":
        # JambaConfig.layers_block_type: attention where i % period == offset, else Mamba.
        period = _cfg_count(cfg, "attn_layer_period")
        offset = non_neg_int(cfg.get("attn_layer_offset"), "attn_layer_offset", MAX_LAYERS)
        return tuple("full_attention" if i % period == offset else "mamba" for i in range(n))
    if model_type == "olmo_hybrid":
        # OlmoHybridConfig: every 4th layer is full attention (it reads no interval), and the last
        # one when that leaves none.
        types = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(n)]
        if "full_attention" not in types:
            types[-1] = "full_attention"
        return tuple(types)
    if model_type in _GDN_FAMILIES:
        # Qwen3NextConfig / Qwen3_5Config: every full_attention_interval-th layer (4 unless the
        # config says) is full attention.
        every = _cfg_count({"full_attention_interval": 4, **cfg}, "full_attention_interval")
        return tuple("full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n))
    if cfg.get("attention_chunk_size"):
        # Llama-4 (vllm/model_executor/models/llama4.py): layers with RoPE attend within their
        # chunk; the NoPE layers (no_rope_layers[i] == 0, every 4th by default) are global.
        no_rope = cfg.get("no_rope_layers")
        if not no_rope:
            every = _cfg_count({"no_rope_layer_interval": 4, **cfg}, "no_rope_layer_interval")
            no_rope = [int((i + 1) % every != 0) for i in range(n)]
        if not isinstance(no_rope, list) or len(no_rope) != n:
            raise InvalidConfig("no_rope_layers", f"must list one flag for each of the {n} layers")
        return tuple("chunked_attention" if v else "full_attention" for v in no_rope)
    if model_type == "flint":  # FlintConfig: no layer_types means every layer full
        return tuple("full_attention" for _ in range(n))
    if not window:
        return None
    if model_type == "gpt_oss":
        # gpt-oss: even layer indices use the sliding window.
        return tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n))
    if model_type in ("gemma3", "gemma3_text", "cohere2"):
        # Every sliding_window_pattern-th layer is global (Gemma3Config, Cohere2Config).
        period = cfg.get("sliding_window_pattern", 6 if model_type != "cohere2" else 4)
        period = pos_int(period, "sliding_window_pattern", n + 1, InvalidConfig)
        return tuple("full_attention" if (i + 1) % period == 0 else "sliding_attention" for i in range(n))
    if model_type == "gemma2":
        return tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(n))
    if model_type in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        # Layers from max_window_layers on slide (vllm/model_executor/models/qwen2.py); unset or
        # null: none does, so the uniform pattern stays.
        start_raw = cfg.get("max_window_layers")
        start = n if start_raw is None else non_neg_int(start_raw, "max_window_layers", MAX_LAYERS)
        return tuple("sliding_attention" if i >= start else "full_attention" for i in range(n))
    return tuple("sliding_attention" for _ in range(n))


def _muse_spark_text(cfg: Mapping[str, Any], n: int) -> None:
    """Muse Spark's text layers are plain attention, windowed by sliding_window where layer_types
    says sliding_attention (vllm/models/muse_spark/nvidia/model.py MuseSpark1xAttention). Its
    config class has no defaults and refuses what it cannot serve (MuseSparkTextConfig): the
    same fields are refused here, by name."""
    types = cfg.get("layer_types")
    if (
        not isinstance(types, list)
        or len(types) != n
        or not all(isinstance(t, str) and t in _MUSE_SPARK_LAYER_TYPES for t in types)
    ):
        raise InvalidConfig(
            "layer_types", f"Muse Spark needs full_attention or sliding_attention for each of the {n} layers"
        )
    for key in ("num_key_value_heads", "head_dim"):  # read as attributes, no default
        if cfg.get(key) is None:
            raise InvalidConfig(key, "Muse Spark's attention reads it and its config class has no default")
    if "sliding_attention" in types and not cfg.get("sliding_window"):
        raise InvalidConfig("sliding_window", "Muse Spark's sliding_attention layers read it")
    rope = cfg.get("rope_parameters")
    if not isinstance(rope, Mapping) or rope.get("rope_type") != "default":
        raise InvalidConfig("rope_parameters", "Muse Spark serves only rope_type 'default'")


def _dots3_geometry(
    cfg: Mapping[str, Any], name: str, n: int, q_heads: int, dtype: str, max_pos: int
) -> Geometry:
    """Dots3 (vllm/models/dots3_note/nvidia/model.py Dots3NoteDecoderLayer): a layer that
    layer_types names sliding_attention is sliding-window MLA over its own latent
    (swa_kv_lora_rank + swa_qk_rope_head_dim, window sliding_window_size: a
    SlidingWindowMLASpec); every other layer is DeepSeek-V3.2 sparse MLA with an indexer, its
    latent rows padded to the sliding layers' width (Dots3NotePaddedMLAAttention's
    physical_head_size); one that reuses an earlier layer's top-k keeps no indexer cache."""
    types = cfg.get("layer_types")
    if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise InvalidConfig("layer_types", f"Dots3 needs a layer type for each of the {n} layers")
    sliding = [t == "sliding_attention" for t in types]
    swa_rank = _cfg_int(cfg, "swa_kv_lora_rank", MAX_HEAD_DIM)
    swa_rope = _cfg_int(cfg, "swa_qk_rope_head_dim", MAX_HEAD_DIM)
    rank = _cfg_int(cfg, "kv_lora_rank", MAX_HEAD_DIM)
    rope = _cfg_int(cfg, "qk_rope_head_dim", MAX_HEAD_DIM)
    if not all(sliding) and swa_rank + swa_rope < rank + rope:
        raise InvalidConfig(
            "swa_kv_lora_rank", "the sparse layers pad their latent rows to the sliding layers' width"
        )
    window = _cfg_int(cfg, "sliding_window_size", MAX_TOKENS) if any(sliding) else None
    _cfg_int(cfg, "index_topk", MAX_TOKENS)  # Dots3NoteModel sizes its top-k buffer by it
    idx = None if all(sliding) else _cfg_int(cfg, "index_head_dim", MAX_HEAD_DIM)
    # DeepseekV2MLAAttention's IndexCache keys: a sparse layer that reuses an earlier layer's top-k
    # builds no indexer (vllm/model_executor/models/deepseek_v2.py), by its index among all layers.
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

    sparse = [i for i, s in enumerate(sliding) if not s]
    own = tuple(i for i in sparse if computes_top_k(i))
    weight_dtype, expert_dtype = _quant_dtypes(cfg)
    return make_geometry(
        name=name,
        model_type=_DOTS3,
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


def _hy_v4_sparse(
    cfg: Mapping[str, Any], n: int
) -> tuple[bool, tuple[int, ...] | None, tuple[int, ...] | None]:
    """HY-V4's sparse layers (vllm/models/hy_v4/nvidia/attention.py HYV4MLAAttention): a layer is
    sparse MLA only when layer_types names it so, whatever index_topk says; a sparse layer keeps
    an indexer cache unless it reuses an earlier layer's top-k (compute_skip_topk_layers:
    indexer_types "shared", which HYV4Config fills in as every layer but the first and every 4th
    from the second). Returns (any sparse layer, the sparse layers when not all, the sparse layers
    with an indexer when not all of them). The learnable sink only picks which sparse backend
    runs; on Hopper the spec is the same either way (FLASHMLA_SPARSE, or FLASH_ATTN_MLA_SPARSE for
    a 16-bit cache without the sink)."""
    types = cfg.get("layer_types")
    if types is None:
        return False, None, None
    if not isinstance(types, list) or len(types) != n or not all(isinstance(t, str) for t in types):
        raise InvalidConfig("layer_types", f"must list one layer type for each of the {n} layers")
    for i, t in enumerate(types):
        if t not in _HY_V4_SPARSE and t != "full_attention":
            raise InvalidConfig(f"layer_types[{i}]", f"HY-V4 layers are full_attention or sparse, got {t!r}")
    sparse = tuple(i for i, t in enumerate(types) if t in _HY_V4_SPARSE)
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


def _kimi_linear_config(cfg: Mapping[str, Any]) -> Mapping[str, Any]:
    """Kimi-Linear's linear_attn_config, which vLLM 0.33 needs to build the model (its hybrid
    block-size alignment reads the KDA state from it)."""
    lac = cfg.get("linear_attn_config")
    if not isinstance(lac, Mapping):
        raise InvalidConfig("linear_attn_config", "must be an object (kda_layers, num_heads, head_dim, ...)")
    return lac


def _kimi_k3_text_model_type(config: Mapping[str, Any]) -> str:
    """Kimi-K3 is read as Kimi-Linear: KimiK3Config builds its text_config as a KimiLinearConfig,
    whose model_type vLLM's MLA check reads (vllm/config/model.py is_deepseek_mla)."""
    text = config.get("text_config")
    text_type = text.get("model_type", "kimi_linear") if isinstance(text, Mapping) else "kimi_linear"
    if text_type != "kimi_linear":
        raise InvalidConfig(
            "text_config.model_type", f"Kimi-K3's text model is kimi_linear, got {text_type!r}"
        )
    return "kimi_linear"


def _kda_checkpoint_blocks(lac: Mapping[str, Any], dim: int, dtype: str) -> int:
    """Kimi-K3's KDA (use_full_rank_gate: KimiK3DeltaAttention) keeps a prefill checkpoint block
    when it prefills with FlashKDA (vllm/models/kimi_k3/nvidia/kda.py get_kv_cache_spec,
    resolve_kda_prefill_backend): on the SM 9.x / 10.x / 12.x GPUs kvplan plans for, with a head
    dim of 128, a bf16 model and a gate lower bound (the recurrent state is float32). Else Triton
    prefills it, without one; Kimi-Linear's low-rank-gate KDA never keeps one."""
    if not lac.get("use_full_rank_gate"):
        return 0
    bound = lac.get("gate_lower_bound")
    if bound is None:
        return 0
    number = not isinstance(bound, bool) and isinstance(bound, int | float)
    if not number or not _KDA_GATE_LOGBOUND_MIN <= bound < 0:
        raise InvalidConfig(
            "linear_attn_config.gate_lower_bound",
            f"must lie in [{_KDA_GATE_LOGBOUND_MIN}, 0) (KimiK3DeltaAttention asserts it), got {bound!r}",
        )
    return _flashkda_checkpoint_blocks(dim, dtype, bounded=True)


def _flashkda_checkpoint_blocks(dim: int, dtype: str, bounded: bool) -> int:
    """1 where vLLM prefills a KDA layer with FlashKDA, which keeps a prefill checkpoint: a head
    dim of 128, a bf16 model and a bounded gate (vllm/models/kimi_k3/nvidia/kda.py
    is_flashkda_supported; its SM 9.x / 10.x / 12.x condition is core/model/gpu_arch.py's)."""
    return int(bounded and dim == _FLASHKDA_HEAD_DIM and dtype == "bfloat16")


def _glm5_next_linear_keys(cfg: dict[str, Any]) -> dict[str, Any]:
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


def _glm5_next_layer_types(cfg: Mapping[str, Any], n: int) -> tuple[str, ...]:
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


def _glm5_next_kpool_indexer(cfg: Mapping[str, Any], q_heads: int) -> tuple[int, int]:
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


def _kimi_layer_list(lac: Mapping[str, Any], key: str) -> list[int]:
    layers = lac.get(key)
    if not isinstance(layers, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in layers):
        raise InvalidConfig(f"linear_attn_config.{key}", "must be a list of 1-based layer numbers")
    return layers


def _cfg_count(cfg: Mapping[str, Any], key: str) -> int:
    return pos_int(cfg.get(key), key, MAX_LAYERS, InvalidConfig)


def _cfg_dim(cfg: Mapping[str, Any], key: str) -> int:
    return pos_int(cfg.get(key), key, MAX_HIDDEN_SIZE, InvalidConfig)


def _mamba_state(
    cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...] = ()
) -> MambaState:
    """The recurrent state a family keeps, read as its vLLM model class reads it
    (get_mamba_state_shape_from_config in vllm/model_executor/models/<family>.py). The state
    is kept in the model dtype (mamba_cache_dtype "auto")."""
    if model_type == "jamba":
        return MambaState(
            mixer=Mixer.MAMBA1,
            intermediate_size=_cfg_dim(cfg, "mamba_expand") * _cfg_dim(cfg, "hidden_size"),
            state_size=_cfg_dim(cfg, "mamba_d_state"),
            conv_kernel=_cfg_dim(cfg, "mamba_d_conv"),
            conv_dtype=dtype,
            ssm_dtype=dtype,
        )
    if model_type in ("mamba", "falcon_mamba"):  # vllm/model_executor/models/mamba.py
        inner = cfg.get("intermediate_size") or int(cfg.get("expand", 2) * _cfg_dim(cfg, "hidden_size"))
        return MambaState(
            mixer=Mixer.MAMBA1,
            intermediate_size=pos_int(inner, "intermediate_size", MAX_HIDDEN_SIZE, InvalidConfig),
            state_size=_cfg_dim(cfg, "state_size"),
            conv_kernel=_cfg_dim(cfg, "conv_kernel"),
            conv_dtype=dtype,
            ssm_dtype=dtype,
        )
    if model_type == "mamba2":  # vllm/model_executor/models/mamba2.py
        inner = int(cfg.get("expand", 2) * _cfg_dim(cfg, "hidden_size"))
        heads, head_dim = _cfg_dim(cfg, "num_heads"), _cfg_dim(cfg, "head_dim")
        return _mamba2_state(cfg, ("state_size", "conv_kernel", "n_groups"), inner, heads, head_dim, dtype)
    if model_type in ("lfm2", "lfm2_moe"):  # vllm/model_executor/models/lfm2*.py: a short convolution
        return MambaState(
            mixer=Mixer.SHORT_CONV,
            # LFM2 reads conv_dim, LFM2-MoE the hidden size.
            intermediate_size=_cfg_dim(cfg, "conv_dim" if model_type == "lfm2" else "hidden_size"),
            conv_kernel=_cfg_dim(cfg, "conv_L_cache"),
            conv_dtype=dtype,
            ssm_dtype=dtype,
        )
    if model_type == "granitemoehybrid":
        inner = _cfg_dim(cfg, "mamba_expand") * _cfg_dim(cfg, "hidden_size")
        heads, head_dim = _cfg_dim(cfg, "mamba_n_heads"), _cfg_dim(cfg, "mamba_d_head")
        return _mamba2_state(cfg, _MAMBA_D_KEYS, inner, heads, head_dim, dtype)
    if model_type == "falcon_h1":
        d_ssm = cfg.get("mamba_d_ssm")
        inner = (
            int(cfg.get("mamba_expand", 2) * _cfg_dim(cfg, "hidden_size"))
            if d_ssm is None
            else _cfg_dim(cfg, "mamba_d_ssm")
        )
        heads = _cfg_dim(cfg, "mamba_n_heads")
        # FalconH1Config: "auto" is the inner width over the heads.
        head_dim = inner // heads if cfg.get("mamba_d_head") == "auto" else _cfg_dim(cfg, "mamba_d_head")
        return _mamba2_state(cfg, _MAMBA_D_KEYS, inner, heads, head_dim, dtype)
    if model_type == "nemotron_h":
        heads, head_dim = _cfg_dim(cfg, "mamba_num_heads"), _cfg_dim(cfg, "mamba_head_dim")
        # vllm/model_executor/models/config.py NemotronHForCausalLMConfig: the SSM state is kept
        # in float32 unless the config names its own mamba_ssm_cache_dtype.
        ssm_dtype = MODEL_DTYPE_ALIASES.get(str(cfg.get("mamba_ssm_cache_dtype", "float32")),
                                            str(cfg.get("mamba_ssm_cache_dtype", "float32")))  # fmt: skip
        if ssm_dtype not in MODEL_DTYPES:
            raise InvalidConfig("mamba_ssm_cache_dtype", f"unsupported dtype {ssm_dtype!r}")
        keys = ("ssm_state_size", "conv_kernel", "n_groups")
        return _mamba2_state(cfg, keys, heads * head_dim, heads, head_dim, dtype, ssm_dtype)
    if model_type in _GDN_FAMILIES:
        # Qwen3.5 keeps the state in its config's mamba_ssm_dtype (vllm/model_executor/models/
        # config.py Qwen3_5ForConditionalGenerationConfig), an update vLLM makes for the Qwen3.5
        # architectures only: Qwen3-Next, and MiniCPM-V 4.6 around a Qwen3.5 text model, keep it
        # in the model dtype.
        own = not archs or any(a in _QWEN35_SSM_DTYPE_ARCHS for a in archs)
        ssm = str((cfg.get("mamba_ssm_dtype") if own else None) or dtype)
        ssm = MODEL_DTYPE_ALIASES.get(ssm, ssm)
        if ssm not in MODEL_DTYPES:
            raise InvalidConfig("mamba_ssm_dtype", f"unsupported dtype {ssm!r}")
        return MambaState(
            mixer=Mixer.GATED_DELTA_NET,
            conv_kernel=_cfg_dim(cfg, "linear_conv_kernel_dim"),
            num_k_heads=_cfg_dim(cfg, "linear_num_key_heads"),
            num_v_heads=_cfg_dim(cfg, "linear_num_value_heads"),
            head_k_dim=_cfg_dim(cfg, "linear_key_head_dim"),
            head_v_dim=_cfg_dim(cfg, "linear_value_head_dim"),
            conv_dtype=dtype,
            ssm_dtype=ssm,
            replicated_state_bytes=_qwen4_exp_ple_state(cfg, dtype) if model_type in _QWEN4_EXP else 0,
        )
    if model_type == "zamba2":
        # vllm/model_executor/models/zamba2.py get_mamba_state_shape_from_config; Zamba2Config
        # derives mamba_headdim from the inner width when the config does not state it.
        inner = _cfg_dim(cfg, "mamba_expand") * _cfg_dim(cfg, "hidden_size")
        heads = _cfg_dim(cfg, "n_mamba_heads")
        head_dim = cfg.get("mamba_headdim") or inner // heads
        head_dim = pos_int(head_dim, "mamba_headdim", MAX_HIDDEN_SIZE, InvalidConfig)
        keys = ("mamba_d_state", "mamba_d_conv", "mamba_ngroups")
        return _mamba2_state(cfg, keys, inner, heads, head_dim, dtype)
    if model_type == "bailing_hybrid" and _BAILING_KDA in archs:
        # vllm/model_executor/models/bailing_moe_v3.py: KDA (as Kimi-Linear's) over
        # num_attention_heads of head_dim, which BailingHybridConfig sets to qk_rope_head_dim.
        heads, dim = _cfg_dim(cfg, "num_attention_heads"), _cfg_dim(cfg, "qk_rope_head_dim")
        return _kda_state(heads, dim, _cfg_dim(cfg, "short_conv_kernel_size"), dtype)
    if model_type == "bailing_hybrid":
        # vllm/model_executor/models/bailing_moe_linear.py: one (heads, head_dim, head_dim) state
        # in the model dtype. Its head_dim is transformers' BailingHybridConfig.head_dim, which
        # the config class sets to qk_rope_head_dim whatever config.json says.
        return MambaState(
            mixer=Mixer.LINEAR_ATTENTION,
            conv_kernel=1,  # no convolution
            num_heads=_cfg_dim(cfg, "num_attention_heads"),
            head_dim=_cfg_dim(cfg, "qk_rope_head_dim"),
            conv_dtype=dtype,
            ssm_dtype=dtype,
        )
    if model_type == _ALICE_AI_FAMILY:
        # vllm/model_executor/models/alice_ai.py: KDA (as Kimi-Linear's) of linear_num_key_heads
        # heads of linear_key_head_dim; the value heads and dims must match (_make_kimi_kda_config).
        heads, dim = _cfg_dim(cfg, "linear_num_key_heads"), _cfg_dim(cfg, "linear_key_head_dim")
        for key, same in (("linear_num_value_heads", heads), ("linear_value_head_dim", dim)):
            if cfg.get(key, same) != same:
                raise InvalidConfig(key, "AliceAI's KDA needs as many value heads and dims as key ones")
        return _kda_state(heads, dim, _cfg_dim(cfg, "linear_conv_kernel_dim"), dtype)
    if model_type == _GLM5_NEXT:
        # vllm/models/glm5next/common/kda.py Glm5NextLinearAttention: KDA of linear_num_heads heads
        # of linear_head_dim; FlashKDA (SM 9.x/10.x/12.x, head dim 128, bf16, a gate bound) keeps
        # a prefill checkpoint (_resolve_kda_prefill_backend).
        heads, dim = _cfg_dim(cfg, "linear_num_heads"), _cfg_dim(cfg, "linear_head_dim")
        state = _kda_state(heads, dim, _cfg_dim(cfg, "linear_conv_kernel_dim"), dtype)
        bounded = cfg.get("linear_lower_bound") is not None
        return replace(state, checkpoint_blocks=_flashkda_checkpoint_blocks(dim, dtype, bounded))
    if model_type == "kimi_linear":
        lac = _kimi_linear_config(cfg)
        p = "linear_attn_config."
        heads = pos_int(lac.get("num_heads"), p + "num_heads", MAX_HEADS, InvalidConfig)
        dim = pos_int(lac.get("head_dim"), p + "head_dim", MAX_HEAD_DIM, InvalidConfig)
        kernel = pos_int(
            lac.get("short_conv_kernel_size"), p + "short_conv_kernel_size", MAX_HEAD_DIM, InvalidConfig
        )
        state = _kda_state(heads, dim, kernel, dtype)
        return replace(state, checkpoint_blocks=_kda_checkpoint_blocks(lac, dim, dtype))
    raise InvalidConfig(
        "model_type",
        f"{model_type!r} has Mamba or linear-attention layers whose state layout kvplan does not "
        "read yet; send the model as inline geometry with mamba (state dims) or mamba_state_bytes",
    )


def _kv_shared_layers(cfg: Mapping[str, Any], model_type: str, n: int) -> int:
    """How many of the last layers share an earlier layer's KV cache (Gemma-3n, Gemma-4)."""
    if model_type not in _KV_SHARING_FAMILIES:
        return 0
    shared = cfg.get("num_kv_shared_layers") or 0
    if shared and pos_int(shared, "num_kv_shared_layers", n - 1, InvalidConfig) >= n:
        raise InvalidConfig("num_kv_shared_layers", f"must leave a layer of its own of the {n}")
    return int(shared)


def _gemma4_full_heads(
    cfg: Mapping[str, Any], layer_types: tuple[str, ...], head_dim: int, kv_heads: int
) -> tuple[int, int]:
    """Gemma-4's full-attention layers' own (head dim, KV heads), as Gemma4TextConfig builds its
    per_layer_config (transformers' configuration_gemma4.py: global_head_dim, 512 by default; the
    KV heads num_global_key_value_heads where attention_k_eq_v allows) and vLLM's Gemma4DecoderLayer
    reads it. Given per layer, the overrides must be the full layers' and alike."""
    given = cfg.get("per_layer_config")
    if given is None:
        dim = pos_int(cfg.get("global_head_dim", 512), "global_head_dim", MAX_HEAD_DIM, InvalidConfig)
        kv = cfg.get("num_global_key_value_heads") if cfg.get("attention_k_eq_v", True) else None
        if kv is None:
            return dim, kv_heads
        return dim, pos_int(kv, "num_global_key_value_heads", MAX_HEADS, InvalidConfig)
    if not isinstance(given, Mapping):
        raise InvalidConfig("per_layer_config", "must map layer indices to overrides")
    found: set[tuple[int, int]] = set()
    for key, o in given.items():
        f = f"per_layer_config.{key}"
        i = int(key) if isinstance(key, str) and key.isdigit() else -1
        full = 0 <= i < len(layer_types) and layer_types[i] == "full_attention"
        if not full or not isinstance(o, Mapping):
            raise InvalidConfig(f, "kvplan reads overrides of full-attention layers only")
        dim = pos_int(o.get("head_dim", head_dim), f + ".head_dim", MAX_HEAD_DIM, InvalidConfig)
        kv = pos_int(
            o.get("num_key_value_heads", kv_heads), f + ".num_key_value_heads", MAX_HEADS, InvalidConfig
        )
        found.add((dim, kv))
    if len(found) > 1:
        raise InvalidConfig(
            "per_layer_config", "full-attention layers with different sizes: not modelled yet"
        )
    return found.pop() if found else (head_dim, kv_heads)


def _deci_blocks(cfg: Mapping[str, Any], n: int) -> list[int]:
    """Nemotron-NAS (DeciLM) block_configs: each layer's attention n_heads_in_group, 0 where the
    attention is a no-op."""
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


def _deci_kv_heads(cfg: Mapping[str, Any], n: int, q_heads: int) -> int:
    """num_attention_heads // n_heads_in_group, alike for every attention layer (vLLM's
    NemotronNasModelArchConfigConvertor reads the first; layers of other KV widths would need
    per-layer page sizes kvplan does not model yet, so they are refused)."""
    groups = {g for g in _deci_blocks(cfg, n) if g}
    if len(groups) != 1:
        raise InvalidConfig("block_configs", "attention layers with different n_heads_in_group: not modelled")
    group = groups.pop()
    if q_heads % group:
        raise InvalidConfig("block_configs", f"n_heads_in_group {group} does not divide {q_heads} heads")
    return q_heads // group


# Granite-4.0-H and Falcon-H1 name their Mamba2 state, conv kernel and groups alike.
_MAMBA_D_KEYS = ("mamba_d_state", "mamba_d_conv", "mamba_n_groups")


def _mamba2_state(
    cfg: Mapping[str, Any],
    keys: tuple[str, str, str],
    inner: int,
    heads: int,
    head_dim: int,
    dtype: str,
    ssm_dtype: str | None = None,
) -> MambaState:
    """A MambaMixer2 layer's state from a family's (state size, conv kernel, groups) keys; the
    mixer exports a prefill checkpoint, one block (vllm/model_executor/layers/mamba/mamba_mixer2.py)."""
    state_key, conv_key, groups_key = keys
    return MambaState(
        mixer=Mixer.MAMBA2,
        intermediate_size=inner,
        state_size=_cfg_dim(cfg, state_key),
        conv_kernel=_cfg_dim(cfg, conv_key),
        n_groups=_cfg_dim(cfg, groups_key),
        num_heads=heads,
        head_dim=head_dim,
        conv_dtype=dtype,
        ssm_dtype=ssm_dtype or dtype,
        checkpoint_blocks=1,
    )


def _kda_state(heads: int, dim: int, kernel: int, dtype: str) -> MambaState:
    """KDA, Kimi Delta Attention (vllm/model_executor/layers/mamba/mamba_utils.py kda_state_shape
    and kda_state_dtype): the gated delta net's layout with as many value heads as key heads, all
    of one dim, the recurrent state in float32 (mamba_ssm_cache_dtype "auto"); no prefill
    checkpoint (KimiGatedDeltaNetAttention keeps MambaBase's spec)."""
    return MambaState(
        mixer=Mixer.GATED_DELTA_NET,
        conv_kernel=kernel,
        num_k_heads=heads,
        num_v_heads=heads,
        head_k_dim=dim,
        head_v_dim=dim,
        conv_dtype=dtype,
        ssm_dtype="float32",
    )


def _kv_slots(
    cfg: Mapping[str, Any], model_type: str, n: int
) -> tuple[tuple[tuple[str, int], ...] | None, int]:
    """For families whose KV layers are not one per decoder layer: (kind, decoder layer) of each
    KV layer in order, and the decoder's layer count. Falcon-H1 runs attention and Mamba side by
    side in every layer (vllm/model_executor/models/falcon_h1.py); Nemotron-H's
    hybrid_override_pattern has Mamba (M), attention (*) and MLP or MoE layers (-, E) that keep
    no KV (vllm/model_executor/models/nemotron_h.py); Zamba2's hybrid layers keep an attention
    layer beside their Mamba layer."""
    if model_type == "falcon_h1":
        return tuple(s for i in range(n) for s in (("full_attention", i), ("mamba", i))), n
    if model_type == "zamba2":
        # vllm/model_executor/models/zamba2.py: every block has a MambaMixer2; a hybrid block also
        # an Attention of its own (shared weights, but its own KV cache).
        blocks = cfg.get("layers_block_type", cfg.get("layer_types"))
        blocks = _ZAMBA2_BLOCKS if blocks is None else blocks
        # transformers remaps the legacy "mamba" to "linear_attention"; both are a Mamba2 layer.
        kv_layers = {
            "hybrid": ("full_attention", "mamba"),
            "mamba": ("mamba",),
            "linear_attention": ("mamba",),
        }
        if (
            not isinstance(blocks, list | tuple)
            or not blocks
            or any(not isinstance(b, str) or b not in kv_layers for b in blocks)
        ):
            raise InvalidConfig("layers_block_type", "must list hybrid or mamba for each layer")
        return tuple((k, i) for i, b in enumerate(blocks) for k in kv_layers[b]), len(blocks)
    if model_type in _QWEN4_EXP and (cfg.get("indexer_n_heads") is not None or cfg.get("ple_layer_ids")):
        # Qwen4ExpDecoderLayer: a PLE layer registers first; Qwen4ExpQSAAttention's indexer ring
        # and compressed key cache before its KV.
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
    if model_type == "nemotron-nas":
        # vllm/model_executor/models/nemotron_nas.py DeciLMDecoderLayer: a block whose attention
        # is a no-op has no attention layer, so no KV cache.
        kept = tuple(("full_attention", i) for i, g in enumerate(_deci_blocks(cfg, n)) if g)
        if not kept:
            raise InvalidConfig("block_configs", "has no attention layer")
        return kept, n
    if model_type == "nemotron_h":
        pattern = cfg.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set("M*-E"):
            raise InvalidConfig(
                "hybrid_override_pattern", f"must be one of M, *, -, E for each of the {n} layers"
            )
        kinds = {"M": "mamba", "*": "full_attention"}
        slots = tuple((kinds[c], i) for i, c in enumerate(pattern) if c in kinds)
        if not slots:
            raise InvalidConfig("hybrid_override_pattern", "has no Mamba or attention layer")
        return slots, n
    return None, n


def _attention_dims(cfg: Mapping[str, Any], model_type: str, q_heads: int) -> tuple[int, int]:
    """(KV heads, head dim) of a non-MLA attention layer."""
    if model_type == "zamba2":
        # zamba2.py Zamba2Attention: Attention(num_heads, attention_head_dim), no KV-head count of
        # its own; Zamba2Config makes the head 2 × hidden / heads unless the config states it.
        key = next((k for k in ("attention_head_dim", "head_dim") if cfg.get(k) is not None), None)
        dim = cfg[key] if key else 2 * _cfg_dim(cfg, "hidden_size") // q_heads
        return q_heads, pos_int(dim, key or "hidden_size", MAX_HEAD_DIM, InvalidConfig)
    kv = _first_present(cfg, _KV_HEAD_KEYS)
    kv_heads = q_heads if kv is None else pos_int(kv[1], kv[0], MAX_HEADS, InvalidConfig)
    hd = cfg.get("head_dim")
    if hd is not None:  # 0 or null: derived from the hidden size below
        hd = non_neg_int(hd, "head_dim", MAX_HEAD_DIM)
    if hd:
        return kv_heads, hd
    if cfg.get("hidden_size_per_head") is not None:
        return kv_heads, _cfg_int(cfg, "hidden_size_per_head", MAX_HEAD_DIM)
    hidden = _cfg_int(cfg, "hidden_size", MAX_HIDDEN_SIZE)
    if hidden // q_heads < 1:
        raise InvalidConfig("hidden_size", f"{hidden} is smaller than num_attention_heads")
    return kv_heads, hidden // q_heads


def _falcon_kv_heads(cfg: Mapping[str, Any], q_heads: int) -> int | None:
    """Falcon (vllm/config/model.py get_total_num_kv_heads): the old decoder with multi_query
    keeps one KV head; the new decoder reads num_kv_heads / n_head_kv."""
    if cfg.get("new_decoder_architecture"):
        return None
    return 1 if cfg.get("multi_query") else q_heads


_QWEN4_EXP = frozenset({"qwen4_exp", "qwen4_exp_text"})
# Qwen4-exp's attention layer types (vllm/models/qwen4_exp/nvidia/model.py _QSA_LAYER_TYPES): QSA
# when the config has indexer_n_heads, else plain full attention (Qwen3NextAttention).
_QWEN4_EXP_ATTENTION = ("qwen_sparse_attention", "indexed_attention")


def _qwen4_exp_config(cfg: dict[str, Any], n: int) -> dict[str, Any]:
    """Qwen4-exp read as vLLM builds it (vllm/models/qwen4_exp/nvidia/model.py
    Qwen4ExpDecoderLayer): linear_attention layers are gated delta nets, the others full
    attention, QSA when the config has indexer_n_heads; a layer whose 1-based index is in
    ple_layer_ids also keeps a PLE short-conv state (ple_layer.py)."""
    ple = cfg.get("ple_layer_ids") or []
    if not isinstance(ple, list) or any(
        isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= n for i in ple
    ):
        raise InvalidConfig("ple_layer_ids", f"must list 1-based layer indices up to {n}")
    hc = cfg.get("hc_count", 4)
    if not isinstance(hc, int) or isinstance(hc, bool) or hc <= 1:
        raise InvalidConfig("hc_count", f"vLLM's Qwen4-exp requires hc_count > 1, got {hc!r}")
    _qwen4_exp_qsa_fields(cfg)
    types = cfg.get("layer_types")
    if types is None:
        # Qwen4ExpTextConfig: every full_attention_interval-th layer (4) is indexed attention.
        every = _cfg_count({"full_attention_interval": 4, **cfg}, "full_attention_interval")
        types = ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]
    if not isinstance(types, list) or len(types) != n:
        raise InvalidConfig("layer_types", f"must list the {n} layers")
    out = []
    for i, t in enumerate(types):
        # transformers reads a checkpoint's full_attention as indexed_attention.
        if t not in ("linear_attention", "full_attention", *_QWEN4_EXP_ATTENTION):
            raise InvalidConfig(
                f"layer_types[{i}]", f"Qwen4-exp takes linear_attention or indexed_attention, got {t!r}"
            )
        out.append("linear_attention" if t == "linear_attention" else "full_attention")
    return {**cfg, "layer_types": out}


_QWEN4_EXP_QSA_FIELDS = (
    "indexer_n_heads",
    "indexer_kv_heads",
    "indexer_head_dim",
    "indexer_budget",
    "indexer_compress_ratio",
)


def _qwen4_exp_qsa_fields(cfg: Mapping[str, Any]) -> None:
    """QSA's fields as Qwen4ExpTextConfig.validate_architecture checks them: all or none,
    positive, one indexer KV head, the budget a multiple of the compress ratio."""
    given = {k: cfg.get(k) for k in _QWEN4_EXP_QSA_FIELDS}
    if all(v is None for v in given.values()):
        return
    vals = {k: pos_int(v, k, MAX_TOKENS, InvalidConfig) for k, v in given.items()}
    if vals["indexer_kv_heads"] != 1:
        raise InvalidConfig("indexer_kv_heads", "Qwen4-exp QSA requires 1")
    if vals["indexer_budget"] % vals["indexer_compress_ratio"]:
        raise InvalidConfig("indexer_budget", "must be a multiple of indexer_compress_ratio")


def _qwen4_exp_qsa(cfg: Mapping[str, Any], dtype: str, archs: tuple[str, ...]) -> QsaCaches | None:
    """QSA's side caches (vllm/models/qwen4_exp/common/qsa_cache.py, indexer_qsa.py): a ring of
    bf16 raw keys (beside exact MRoPE positions, four bf16 words per int64 axis, where the
    multimodal model keeps MRoPE) and bf16 compressed keys (vLLM's default indexer KV dtype)."""
    if cfg.get("indexer_n_heads") is None:
        return None
    if dtype != "bfloat16":
        raise InvalidConfig("torch_dtype", "Qwen4-exp QSA requires bfloat16")
    head = _cfg_dim(cfg, "indexer_head_dim")
    rope = cfg.get("rope_parameters") or cfg.get("rope_scaling") or {}
    mrope = (
        "Qwen4ExpForConditionalGeneration" in archs and isinstance(rope, Mapping) and "mrope_section" in rope
    )
    row = head + (-head) % 4 + 3 * 4 if mrope else head
    return QsaCaches(
        compress_ratio=_cfg_dim(cfg, "indexer_compress_ratio"), ring_row_bytes=row * 2, key_bytes=head * 2
    )


def _qwen4_exp_ple_state(cfg: Mapping[str, Any], dtype: str) -> int:
    """The PLE short-conv state, TP-replicated, which vLLM's platform sizes the attention block
    for whether or not a layer keeps it (Qwen4ExpForCausalLM.get_mamba_specs_from_config,
    get_ple_mamba_state_shape_from_config): (ple_conv_kernel_size − 1) × ngram_size rows of
    hidden_size × hc_count, in the model dtype."""
    factors = {k: _cfg_dim(cfg, k) for k in ("ple_conv_kernel_size", "ngram_size", "hc_count")}
    rows = (factors["ple_conv_kernel_size"] - 1) * factors["ngram_size"]
    state = rows * _cfg_dim(cfg, "hidden_size") * factors["hc_count"] * MODEL_DTYPES[dtype]
    if state > MAX_STATE_BYTES:  # the inline form's bound (mamba.replicated_state_bytes)
        raise InvalidConfig(
            max(factors, key=lambda k: factors[k]),
            f"the PLE state (ple_conv_kernel_size − 1) × ngram_size × hidden_size × hc_count × dtype "
            f"bytes is {state} B, above {MAX_STATE_BYTES}",
        )
    return state


_STEP5 = "step5"
_STEP5_ARCHS = frozenset({"Step5ForCausalLM", "Step5ForConditionalGeneration"})
# Step5's sparse_config keys and the values vLLM's DSA path accepts
# (vllm/models/step5/nvidia/config.py get_step5_sparse_config); a key left out takes the default.
_STEP5_SPARSE_FIXED: dict[str, Any] = {
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
# parallel.STEP5_DSA_Q_PER_KV's.
STEP5_DSA_HEAD_DIM = 192


def _step5_sparse(cfg: Mapping[str, Any]) -> Mapping[str, Any] | None:
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
    for key, want in _STEP5_SPARSE_FIXED.items():
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


def _step5_geometry(
    cfg: Mapping[str, Any],
    name: str,
    n: int,
    dtype: str,
    max_pos: int,
    weight_dtype: str | None,
    expert_dtype: str | None,
) -> Geometry:
    """Step5 (docs/vllm-rules.md §2.1; vllm/models/step5/nvidia/model.py Step5DecoderLayer,
    Step5Attention): a layer slides
    where layer_types says sliding_attention (without layer_types: the even layers) and the
    config has a window; its heads, KV groups and head dim are attention_other_setting's where that
    names its type, its query heads swa_num_attention_heads when sliding. With sparse_config
    enabled every other layer is DSA: its KV, a summary cache (sparse_summary_cache.py) and a CSA
    ring of one page (csa_tail_ring.py)."""
    sparse = _step5_sparse(cfg)
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
    hidden = _cfg_int(cfg, "hidden_size", MAX_HIDDEN_SIZE)
    kinds: list[str] = []
    slots: list[int] = []
    dims: dict[str, set[tuple[int, int, int]]] = {"sliding": set(), "full": set()}
    for i in range(n):
        kind = types[i] if types else ("sliding_attention" if i % 2 == 0 else "full_attention")
        if kind not in ("sliding_attention", "full_attention"):
            raise InvalidConfig(
                f"{types_key}[{i}]", f"Step5 layers are full_attention or sliding_attention, got {kind!r}"
            )
        src: Mapping[str, Any] = cfg
        if other and types and other.get("attention_type") == kind:
            src = {**cfg, **{k: v for k, v in other.items() if v}}
        heads = _cfg_int(src, "num_attention_heads", MAX_HEADS)
        sliding = window_raw is not None and kind == "sliding_attention"
        if sliding and cfg.get("swa_num_attention_heads") is not None:
            heads = _cfg_int(cfg, "swa_num_attention_heads", MAX_HEADS)
        kv = _cfg_int(src, "num_attention_groups", MAX_HEADS)
        if src.get("head_dim"):
            head_dim = _cfg_int(src, "head_dim", MAX_HEAD_DIM)
        elif hidden % heads:
            raise InvalidConfig(
                "head_dim", f"absent, and hidden_size {hidden} is not a multiple of {heads} heads"
            )
        else:
            head_dim = hidden // heads
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
            # A DSA layer: its KV (Step5DSAAttentionBackend), the summaries, the ring.
            if not cfg.get("use_head_wise_attn_gate"):
                raise InvalidConfig("use_head_wise_attn_gate", "vLLM's Step5 DSA layers require true")
            if head_dim != STEP5_DSA_HEAD_DIM:
                raise InvalidConfig("head_dim", f"vLLM's Step5 DSA kernels take head dim 192, got {head_dim}")
            index_tp = sparse.get("index_tp_size") or sparse.get("num_provider_groups") or 4
            idx_heads = sparse.get("sparse_indexer_num_heads") or 16
            idx_heads = pos_int(idx_heads, "sparse_config.sparse_indexer_num_heads", MAX_HEADS, InvalidConfig)
            if index_tp != kv:
                raise InvalidConfig(
                    "sparse_config.index_tp_size",
                    f"must equal the DSA layers' {kv} KV groups, got {index_tp}",
                )
            if idx_heads % index_tp or idx_heads // index_tp not in (2, 4):
                raise InvalidConfig(
                    "sparse_config.sparse_indexer_num_heads",
                    f"÷ index_tp_size must be 2 or 4, got {idx_heads} ÷ {index_tp}",
                )
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
    try:
        return make_geometry(
            name=name,
            model_type=_STEP5,
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
    except InvalidConfig:
        raise
    except InvalidInput as e:
        raise _config_error(e) from None


def _inkling(config: Mapping[str, Any], name: str) -> Geometry:
    """Inkling (vllm/models/inkling): every decoder layer keeps a short-convolution state (an
    SCONV entry) ahead of its attention, sliding (sliding_window_size) on local_layer_ids with the
    swa_ heads and dims, full elsewhere. vLLM reads neither layer_types nor sliding_window here."""
    cfg = _text_of(config, _INKLING_MM)
    cfg = {**with_defaults({}, _INKLING), **{k: v for k, v in cfg.items() if v is not None}}
    n = _cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    q_heads = _cfg_int(cfg, "num_attention_heads", MAX_HEADS)
    hidden = _cfg_int(cfg, "hidden_size", MAX_HIDDEN_SIZE)
    kv = _cfg_int(cfg, "num_key_value_heads", MAX_HEADS)
    head = _cfg_int(cfg, "head_dim", MAX_HEAD_DIM) if "head_dim" in cfg else hidden // q_heads
    swa_kv = _cfg_int(cfg, "swa_num_key_value_heads", MAX_HEADS) if "swa_num_key_value_heads" in cfg else kv
    swa_head = _cfg_int(cfg, "swa_head_dim", MAX_HEAD_DIM) if "swa_head_dim" in cfg else head
    kernel_key = "sconv_kernel_size" if "sconv_kernel_size" in cfg else "conv_kernel_size"
    kernel = _cfg_int(cfg, kernel_key, MAX_TOKENS) if kernel_key in cfg else 4
    local_ids = cfg.get("local_layer_ids") or []
    if not isinstance(local_ids, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in local_ids
    ):
        raise InvalidConfig("local_layer_ids", "must be a list of layer indices")
    local = set(local_ids)
    window = _cfg_int(cfg, "sliding_window_size", MAX_TOKENS) if local & set(range(n)) else None
    raw_dtype = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
    dtype = MODEL_DTYPE_ALIASES.get(str(raw_dtype), str(raw_dtype))
    if dtype not in ("bfloat16", "float32"):  # float32 checkpoints are served in bfloat16
        raise InvalidConfig(
            "torch_dtype",
            f"Inkling runs in bfloat16 only (its short-conv state asserts it; "
            f"vllm/models/inkling/nvidia/sconv_swa_attn.py), got {raw_dtype!r}",
        )
    types: list[str] = []
    for i in range(n):
        types += ["sconv", "sliding_attention" if i in local else "full_attention"]
    try:
        return make_geometry(
            name=name,
            model_type=_INKLING,
            num_layers=2 * n,
            num_attention_heads=q_heads,
            num_kv_heads=swa_kv,
            head_dim=swa_head,
            layer_types=tuple(types),
            sliding_window=window,
            max_position_embeddings=derived_max_model_len(cfg, _INKLING),
            full_head_dim=head,
            full_kv_heads=kv,
            sconv_kernel_size=kernel,
            sconv_hidden_size=hidden,
            decoder_layers=tuple(i // 2 for i in range(2 * n)),
            num_decoder_layers=n,
            prefix="",
        )
    except InvalidConfig:
        raise
    except InvalidInput as e:
        raise _config_error(e) from None


def _text_of(config: Mapping[str, Any], wrapper: str) -> dict[str, Any]:
    """A multimodal wrapper's text_config (absent: every default) with the top level's dtype,
    as vLLM reads families whose config class builds the text config itself; else the config."""
    if config.get("model_type") != wrapper:
        return dict(config)
    text = config.get("text_config")
    if text is not None and not isinstance(text, Mapping):
        raise InvalidConfig("text_config", "must be an object")
    dtypes = {k: config[k] for k in ("torch_dtype", "dtype") if config.get(k) is not None}
    return {**(text or {}), **dtypes}


def _minimax_m3_indexer(cfg: Mapping[str, Any], n: int) -> tuple[tuple[int, ...] | None, int | None]:
    """MiniMax-M3's sparse layers (each keeps an indexer cache beside its K/V) and the indexer's
    key width: layer i is sparse when sparse_attention_config.sparse_attention_freq[i] != 0
    (vllm/models/minimax_m3/nvidia/model.py _sparse_attention_layer_ids). A null
    sparse_attention_config is the config class's default; an empty one has no sparse layer."""
    sparse = cfg.get(_MINIMAX_M3_SPARSE)
    if sparse is None:
        sparse = with_defaults({}, _MINIMAX_M3)[_MINIMAX_M3_SPARSE]
    if not isinstance(sparse, Mapping):
        raise InvalidConfig(_MINIMAX_M3_SPARSE, "must be an object")
    freq = sparse.get("sparse_attention_freq") if sparse else None
    if freq is None:
        return None, None
    field = f"{_MINIMAX_M3_SPARSE}.sparse_attention_freq"
    if not isinstance(freq, list) or not all(isinstance(f, (int, float)) for f in freq):
        raise InvalidConfig(field, "must be a list of numbers, one a layer (non-zero: sparse)")
    layers = tuple(i for i, f in enumerate(freq[:n]) if f != 0)
    if not layers:
        return None, None
    for key in ("sparse_num_index_heads", "sparse_topk_blocks", "sparse_block_size"):
        if sparse.get(key) is None:  # the model reads them for every sparse layer
            raise InvalidConfig(f"{_MINIMAX_M3_SPARSE}.{key}", "required when a layer is sparse")
    dim = sparse.get("sparse_index_dim")
    if dim is None:
        raise InvalidConfig(f"{_MINIMAX_M3_SPARSE}.sparse_index_dim", "required when a layer is sparse")
    return layers, pos_int(dim, f"{_MINIMAX_M3_SPARSE}.sparse_index_dim", MAX_HEAD_DIM, InvalidConfig)


def _quant_dtypes(cfg: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(weight dtype, expert weight dtype) implied by `quantization_config`, if any."""
    q = cfg.get("quantization_config")
    if not isinstance(q, Mapping):
        return None, None
    method = str(q.get("quant_method", "")).lower()
    if method == "fp8":
        return "fp8", None
    if method == "mxfp4":
        return None, "mxfp4"
    if method in ("awq", "gptq") and q.get("bits") == 4:
        return "int4", None
    return None, None


def from_hf_config(config: Mapping[str, Any], name: str = "custom", quantization: bool = True) -> Geometry:
    """Derive the geometry from a Hugging Face config.json (multi-modal: from `text_config`),
    with parameter counts estimated from the architecture. `quantization=False` when the
    weights are known otherwise (the checkpoint's tensors): its quantization_config is not read."""
    geo = _geometry_from_config(config, name)
    base = config
    if _KIMI_K3 in _architectures(config):  # its text_config is a KimiLinearConfig, defaults and all
        base = {**config, "model_type": "kimi_linear"}
    cfg = dict(language_config(base))
    geo = replace(geo, shape=model_shape(with_defaults(cfg, str(cfg.get("model_type") or ""))))
    states = geo.layer_pattern.count(MAMBA)
    if geo.dsv4 is not None:  # DeepSeek-V4: one attention a decoder layer
        attention = geo.decoder_layer_count
    else:
        attention = len(geo.layer_pattern) - states - geo.layer_pattern.count(SCONV)  # Inkling's conv states
    est = estimate_params(base, attention, geo.mamba, states)
    if est is None:
        return geo
    scheme = quant_scheme(language_config(config)) if quantization else None
    return replace(
        geo,
        params_total=est.total,
        params_active=est.active,
        params_expert=est.expert or None,
        params_estimated=True,
        quant=scheme,
        params_unquantized=est.unquantized,
    )


def language_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields the attention geometry is read from: a multi-modal config's `text_config` over
    its top level, else the config itself."""
    text = config.get("text_config")
    return {**config, **text} if isinstance(text, Mapping) else config


def _architectures(top: Mapping[str, Any]) -> tuple[str, ...]:
    archs = top.get("architectures")
    if archs is None:
        return ()
    if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
        raise InvalidConfig("architectures", "must be a list of class names")
    return tuple(archs)


# DeepSeek-V4 (vllm/models/deepseek_v4; transformers' DeepseekV4Config): the layer types and what
# the legacy per-layer compress_ratios of the Hub files become (DeepseekV4Config.__post_init__).
_DSV4 = "deepseek_v4"
# DeepSeek-V4.1 (vllm/models/deepseek_v41; vLLM's DeepseekV41Config lays text_config flat).
_DSV41_ARCH = "DeepseekV41ForCausalLM"
_DSV4_ARCHS = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration"})
_DSV4_TYPES = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
_DSV4_TYPE_OF_RATIO = {0: _DSV4_TYPES[0], 4: _DSV4_TYPES[1], 128: _DSV4_TYPES[2]}
_DSV4_RATES = {_DSV4_TYPES[1]: 4, _DSV4_TYPES[2]: 128}


def _dsv4_layer_types(cfg: Mapping[str, Any], n: int) -> list[str]:
    """DeepseekV4Config.__post_init__ (transformers 5.20.2): layer_types as given, else from the
    legacy compress_ratios (0, 4 or 128 a layer, the MTP layer's entry past the last dropped), else
    2 heavily compressed layers then compressed sparse and heavily compressed alternating."""
    types = cfg.get("layer_types")
    legacy = cfg.get("compress_ratios")
    if types is None and legacy is not None:
        if not isinstance(legacy, list):
            raise InvalidConfig("compress_ratios", "must be a list of per-layer ratios")
        for i, r in enumerate(legacy):
            if isinstance(r, bool) or not isinstance(r, int) or r not in _DSV4_TYPE_OF_RATIO:
                raise InvalidConfig(f"compress_ratios[{i}]", f"must be 0, 4 or 128, got {r!r}")
        types = [_DSV4_TYPE_OF_RATIO[r] for r in legacy]
    if types is None:
        types = [_DSV4_TYPES[2]] * min(n, 2) + [
            _DSV4_TYPES[1] if i % 2 else _DSV4_TYPES[2] for i in range(n - 2)
        ]
    if not isinstance(types, list):
        raise InvalidConfig("layer_types", "must be a list of layer types")
    field = "layer_types" if cfg.get("layer_types") is not None else "compress_ratios"
    if len(types) < n:
        raise InvalidConfig(field, f"has {len(types)} entries for {n} layers")
    for i, t in enumerate(types[:n]):
        if t not in _DSV4_TYPES:
            raise InvalidConfig(f"layer_types[{i}]", f"must be one of {', '.join(_DSV4_TYPES)}, got {t!r}")
    return list(types[:n])


def _dsv4_ratios(cfg: Mapping[str, Any], n: int) -> tuple[int, ...]:
    """Each layer's compression ratio as DeepseekV4Attention takes it: compress_rates of its layer
    type (0 for none), the rates defaulting to 4 and 128 (legacy compress_rate_csa /
    compress_rate_hca override them)."""
    rates_raw = cfg.get("compress_rates")
    if rates_raw is not None and not isinstance(rates_raw, Mapping):
        raise InvalidConfig("compress_rates", "must map layer types to ratios")
    rates = dict(_DSV4_RATES if rates_raw is None else rates_raw)
    source = dict.fromkeys(rates, "compress_rates")  # the key a rate was read from, for a 4xx
    for key, t in (("compress_rate_csa", _DSV4_TYPES[1]), ("compress_rate_hca", _DSV4_TYPES[2])):
        if cfg.get(key) is not None:
            rates[t], source[t] = cfg[key], key
    out = []
    for t in _dsv4_layer_types(cfg, n):
        r = rates.get(t, 0)
        if isinstance(r, bool) or not isinstance(r, int) or max(1, r) not in (1, 4, 128):
            # CompressorStateCache (vllm/models/deepseek_v4/compressor.py) asserts 4 or 128.
            raise InvalidConfig(
                source.get(t, "compress_rates"),
                f"{t}: vLLM's compressor takes ratios 4 and 128 (0 for none), got {r!r}",
            )
        out.append(max(1, r))
    if 128 in out and 4 not in out:
        raise InvalidConfig(
            "layer_types",
            "heavily compressed layers with no compressed sparse (ratio 4) layer: vLLM 0.33.0 cannot "
            "unify their pages (NotImplementedError) and does not start",
        )
    return tuple(out)


def _model_dtype(cfg: Mapping[str, Any], top: Mapping[str, Any]) -> str:
    """The dtype a config states (the text config's, else the top level's; bfloat16 when none)."""
    raw = cfg.get("torch_dtype") or cfg.get("dtype") or top.get("torch_dtype") or "bfloat16"
    dtype = MODEL_DTYPE_ALIASES.get(str(raw), str(raw))
    if dtype == "float32":
        # vLLM's dtype="auto" serves float32 checkpoints in 16-bit (vllm/config/model.py).
        dtype = "bfloat16"
    if dtype not in MODEL_DTYPES:
        raise InvalidConfig("torch_dtype", f"unsupported dtype {raw!r}")
    return dtype


def _deepseek_v4_geometry(cfg: Mapping[str, Any], top: Mapping[str, Any], name: str) -> Geometry:
    """DeepSeek-V4 (core/kv/dsv4.py) from its config: the ratios, dims and window it keeps."""
    n = _cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    dtype = _model_dtype(cfg, top)
    weight_dtype, expert_dtype = _quant_dtypes(cfg)
    return make_dsv4_geometry(
        name=name,
        compress_ratios=_dsv4_ratios(cfg, n),
        num_attention_heads=_cfg_int(cfg, "num_attention_heads", MAX_HEADS),
        head_dim=_cfg_int(cfg, "head_dim", MAX_HEAD_DIM),
        index_head_dim=_cfg_int(cfg, "index_head_dim", MAX_HEAD_DIM),
        sliding_window=_cfg_int(cfg, "sliding_window", MAX_TOKENS),
        dtype=dtype,
        # DeepseekV4Config nests its RoPE parameters by kind (main / compress): vLLM applies no
        # scaling factor to max_position_embeddings.
        max_position_embeddings=_cfg_int(cfg, "max_position_embeddings", MAX_TOKENS),
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_dtype,
        err=InvalidConfig,
        prefix="",
    )


def _layer_ids(cfg: Mapping[str, Any], key: str) -> tuple[int, ...]:
    ids = cfg.get(key) or []
    if not isinstance(ids, list):
        raise InvalidConfig(key, "must be a list of layer indices")
    return tuple(ids)


def _deepseek_v41_geometry(cfg: Mapping[str, Any], top: Mapping[str, Any], name: str) -> Geometry:
    """DeepSeek-V4.1 (core/kv/dsv4.py): each layer's compress_ratios entry (0 past the list, as
    DeepseekV4Attention reads it), the kv and index source layers, the dims and the window."""
    n = _cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    raw = cfg.get("compress_ratios") or []
    if not isinstance(raw, list):
        raise InvalidConfig("compress_ratios", "must be a list of per-layer ratios")
    ratios = tuple(raw[:n]) + (0,) * max(0, n - len(raw))
    dtype = _model_dtype(cfg, top)
    weight_dtype, expert_dtype = _quant_dtypes(cfg)
    return make_dsv41_geometry(
        name=name,
        compress_ratios=ratios,
        kv_sources=_layer_ids(cfg, "kv_source_layer_ids"),
        index_sources=_layer_ids(cfg, "index_source_layer_ids"),
        num_attention_heads=_cfg_int(cfg, "num_attention_heads", MAX_HEADS),
        head_dim=_cfg_int(cfg, "head_dim", MAX_HEAD_DIM),
        index_head_dim=_cfg_int(cfg, "index_head_dim", MAX_HEAD_DIM),
        sliding_window=_cfg_int(cfg, "sliding_window", MAX_TOKENS),
        dtype=dtype,
        max_position_embeddings=derived_max_model_len(cfg, "deepseek_v41"),
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_dtype,
        err=InvalidConfig,
        prefix="",
    )


def _geometry_from_config(config: Mapping[str, Any], name: str) -> Geometry:
    if not isinstance(config, Mapping):
        raise InvalidConfig("config", "must be a JSON object")
    top = config
    cfg = language_config(config)
    model_type = str(cfg.get("model_type") or top.get("model_type") or "unknown")
    model_type = _MODEL_TYPE_ALIASES.get(model_type, model_type)
    cfg = dict(cfg)
    for alias, key in _ATTRIBUTE_MAP:  # transformers' attribute_map (FalconConfig and the like)
        if alias in cfg and key not in cfg:
            cfg[key] = cfg[alias]
    archs = _architectures(top)
    if _ALICE_AI in archs:
        model_type = _ALICE_AI_FAMILY
    if _DSV41_ARCH in archs:
        if top.get("model_type") != "deepseek_v41":  # vLLM's DeepseekV41Config reads the model
            raise InvalidConfig(
                "architectures",
                f"{_DSV41_ARCH} is DeepSeek-V4.1 (vllm/models/deepseek_v41), read from a deepseek_v41 "
                f"config; this one says model_type {top.get('model_type')!r}",
            )
        return _deepseek_v41_geometry(cfg, top, name)
    if _STEP5_ARCHS & set(archs):
        model_type = _STEP5  # vLLM builds Step5's layers whatever else the config calls itself
    if _KIMI_K3 in archs:
        model_type = _kimi_k3_text_model_type(config)
    if _GLM5_NEXT_ARCHS & set(archs):
        model_type = _GLM5_NEXT
        cfg = _glm5_next_linear_keys(cfg)
    # Known by the top level's model_type or the architecture: a text_config may name the
    # family otherwise (transformers' minimax_m3_vl_text), which vLLM's own config class ignores.
    families = {str(top.get("model_type") or ""), model_type}
    if families & {_MINIMAX_M3, _MINIMAX_M3_VL} or set(archs) & _MINIMAX_M3_ARCHS:
        cfg, model_type = _text_of(config, _MINIMAX_M3_VL), _MINIMAX_M3
    if families & {_INKLING, _INKLING_MM} or set(archs) & _INKLING_ARCHS:
        return _inkling(config, name)
    cfg = with_defaults(cfg, model_type)
    dsv4_arch = next((a for a in archs if a in _DSV4_ARCHS), None)
    if dsv4_arch is not None and model_type != _DSV4:
        raise InvalidConfig(
            "architectures",
            f"{dsv4_arch} is DeepSeek-V4 (vllm/models/deepseek_v4), read from a deepseek_v4 config; "
            f"this one says model_type {model_type!r}",
        )
    if model_type == _DSV4:
        return _deepseek_v4_geometry(cfg, top, name)
    if model_type == "zamba2" and cfg.get("use_long_context"):
        cfg["max_position_embeddings"] = 16384  # Zamba2Config.__post_init__

    n = _cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    if model_type in _MUSE_SPARK:
        _muse_spark_text(cfg, n)
    if model_type in _PURE_MAMBA and cfg.get("num_attention_heads") is None:
        # No attention: placeholder heads (the layout checks skip attention-free models; the
        # state's own widths are checked against TP in core/model/mamba.py).
        cfg = {"head_dim": 1, **cfg, "num_attention_heads": 1}
    q_heads = _cfg_int(cfg, "num_attention_heads", MAX_HEADS)
    is_mla = model_type in MLA_MODEL_TYPES and cfg.get("kv_lora_rank") is not None

    dtype = _model_dtype(cfg, top)

    max_pos = derived_max_model_len(cfg, model_type)
    if model_type == _STEP5:
        weight_dtype, expert_dtype = _quant_dtypes(cfg)
        return _step5_geometry(cfg, name, n, dtype, max_pos, weight_dtype, expert_dtype)
    if model_type in _QWEN4_EXP:
        cfg = _qwen4_exp_config(cfg, n)
    if model_type == _DOTS3:
        return _dots3_geometry(cfg, name, n, q_heads, dtype, max_pos)

    window_raw = cfg.get("sliding_window")
    if cfg.get("use_sliding_window") is False:
        window_raw = None
    window = None if not window_raw else pos_int(window_raw, "sliding_window", MAX_TOKENS, InvalidConfig)
    if model_type == "falcon" and cfg.get("n_head_kv") is None:
        falcon_kv = _falcon_kv_heads(cfg, q_heads)
        if falcon_kv is not None:
            cfg = {**cfg, "num_kv_heads": falcon_kv}
    if model_type == "bailing_hybrid" and not {_BAILING_LINEAR, _BAILING_KDA} & set(archs):
        # Two models share the model_type; the multimodal V3 wraps it in a config of its own.
        raise InvalidConfig(
            "architectures",
            f"kvplan reads model_type 'bailing_hybrid' as {_BAILING_LINEAR} or {_BAILING_KDA}; "
            "send other Bailing hybrids as inline geometry",
        )
    if model_type in _UNREAD_HYBRIDS or (
        model_type not in _READ_HYBRIDS and any(k.startswith(_STATE_KEY_PREFIXES) for k in cfg)
    ):
        raise InvalidConfig(
            "model_type",
            f"{model_type!r} keeps a recurrent (Mamba or linear-attention) state beside its attention "
            "that kvplan does not read from config.json yet; send the model as inline geometry "
            "(layer_types with mamba layers and their state)",
        )
    if model_type == "nemotron-nas":
        cfg = {**cfg, "num_key_value_heads": _deci_kv_heads(cfg, n, q_heads)}
    kv_slots, n_decoder = _kv_slots(cfg, model_type, n)
    slots: tuple[int, ...] | None
    if kv_slots is not None:
        layer_types: tuple[str, ...] | None = tuple(t for t, _ in kv_slots)
        slots = tuple(i for _, i in kv_slots)
        n = len(slots)
    else:
        layer_types, slots = _layer_types(cfg, model_type, n, window, archs), None
    if layer_types is not None and len(layer_types) != n:
        raise InvalidConfig("layer_types", f"has {len(layer_types)} entries for {n} layers")
    gemma4_types = None
    if model_type.startswith("gemma4") and layer_types:
        # Gemma4TextConfig: the last layer is full attention whatever layer_types says.
        layer_types = gemma4_types = (*layer_types[:-1], "full_attention")
    shared = _kv_shared_layers(cfg, model_type, n)
    if shared:
        # Gemma-3n / Gemma-4 (vllm/model_executor/models/gemma3n.py, gemma4.py): the last
        # num_kv_shared_layers read the KV cache of an earlier layer of their kind and keep none.
        keep = n - shared
        layer_types = (layer_types or ("full_attention",) * n)[:keep]
        slots, n_decoder, n = tuple(range(keep)), n, keep
    mamba = chunk = None
    if layer_types is not None:
        for i, t in enumerate(layer_types):
            if t not in LAYER_TYPE_CODES:
                raise InvalidConfig(f"layer_types[{i}]", f"unknown layer type {t!r}")
        if any(LAYER_TYPE_CODES[t] == MAMBA for t in layer_types):
            mamba = _mamba_state(cfg, model_type, dtype, archs)
        if "chunked_attention" in layer_types:
            chunk = _cfg_int(cfg, "attention_chunk_size", MAX_TOKENS)
        if model_type == "cohere2" and window:
            window += 1  # vllm/model_executor/models/commandr.py: the window plus the current token
        if all(LAYER_TYPE_CODES[t] == FULL for t in layer_types):
            # Uniform full attention: vLLM applies a model-wide window only when layer_types is
            # absent or all sliding (vllm/engine/arg_utils.py create_engine_config).
            layer_types, window = None, None
    weight_dtype, expert_dtype = _quant_dtypes(cfg)

    if is_mla:
        rank = _cfg_int(cfg, "kv_lora_rank", MAX_HEAD_DIM)
        if model_type == _GLM5_NEXT:  # NoPE: the latent alone (Glm5NextTextConfig: 0)
            rope = non_neg_int(cfg.get("qk_rope_head_dim"), "qk_rope_head_dim", MAX_HEAD_DIM)
        else:
            rope = _cfg_int(cfg, "qk_rope_head_dim", MAX_HEAD_DIM)
        idx = cfg.get("index_head_dim")
        kpool = None
        sparse_layers = dsa_indexer_layers = None
        if model_type == _HY_V4:
            indexed, sparse_layers, dsa_indexer_layers = _hy_v4_sparse(cfg, n)
        elif model_type == _GLM5_NEXT:
            kpool, indexed = _glm5_next_kpool_indexer(cfg, q_heads), False
        else:
            indexed = cfg.get("index_topk") is not None or idx is not None
        return make_geometry(
            name=name,
            model_type=model_type,
            num_layers=n,
            num_attention_heads=q_heads,
            kv_lora_rank=rank,
            qk_rope_head_dim=rope,
            qk_nope_head_dim=cfg.get("qk_nope_head_dim"),
            mla_v_head_dim=cfg.get("v_head_dim"),
            index_head_dim=idx if indexed else None,
            kpool_indexer=kpool,
            sparse_mla_layers=sparse_layers,
            mla_indexer_layers=dsa_indexer_layers,
            dtype=dtype,
            max_position_embeddings=max_pos,
            layer_types=layer_types,
            mamba=mamba,
            weight_dtype=weight_dtype,
            expert_weight_dtype=expert_dtype,
            prefix="",
        )

    kv_heads, head_dim = _attention_dims(cfg, model_type, q_heads)
    indexer_layers, indexer_dim = _minimax_m3_indexer(cfg, n) if model_type == _MINIMAX_M3 else (None, None)
    full_dim = full_kv = None
    if gemma4_types is not None:
        full_dim, full_kv = _gemma4_full_heads(cfg, gemma4_types, head_dim, kv_heads)
    try:
        return make_geometry(
            name=name,
            model_type=model_type,
            num_layers=n,
            num_attention_heads=q_heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            layer_types=layer_types,
            sliding_window=window,
            dtype=dtype,
            max_position_embeddings=max_pos,
            mamba=mamba,
            attention_chunk_size=chunk,
            full_head_dim=full_dim,
            full_kv_heads=full_kv,
            qsa=_qwen4_exp_qsa(cfg, dtype, archs) if model_type in _QWEN4_EXP else None,
            indexer_layers=indexer_layers,
            indexer_dim=indexer_dim,
            decoder_layers=slots,
            num_decoder_layers=n_decoder if slots is not None else None,
            weight_dtype=weight_dtype,
            expert_weight_dtype=expert_dtype,
            prefix="",
        )
    except InvalidConfig:
        raise
    except InvalidInput as e:
        raise _config_error(e) from None
