"""DeepSeek-V4 and V4.1 (vllm/models/deepseek_v4, vllm/models/deepseek_v41; transformers'
DeepseekV4Config, vLLM's DeepseekV41Config, which lays its text_config flat): one reader for both,
V4.1 a variant of V4 (its ratios listed per layer, its kv and index source layers), building the
layout with core/model/geometry.py make_dsv4_geometry (caches: core/kv/dsv4.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import InvalidConfig
from ...limits import MAX_HEAD_DIM, MAX_HEADS, MAX_LAYERS, MAX_TOKENS
from ...model.geometry import Geometry, make_dsv4_geometry
from ..family import Reading
from ..fields import cfg_int, derived_max_model_len, model_dtype, quant_dtypes

MODEL_TYPE = "deepseek_v4"
V41_MODEL_TYPE = "deepseek_v41"
_V41_ARCH = "DeepseekV41ForCausalLM"
_V4_ARCHS = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForConditionalGeneration"})
# The layer types and what the legacy per-layer compress_ratios of the Hub files become
# (DeepseekV4Config.__post_init__).
_TYPES = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
_TYPE_OF_RATIO = {0: _TYPES[0], 4: _TYPES[1], 128: _TYPES[2]}
_RATES = {_TYPES[1]: 4, _TYPES[2]: 128}


def claim(r: Reading) -> Reading | Geometry:
    """DeepseekV41ForCausalLM is read by vLLM's DeepseekV41Config, from a deepseek_v41 config; the
    V4 architectures are checked once the model type is read (`check`)."""
    if _V41_ARCH not in r.archs:
        return r
    if r.top.get("model_type") != V41_MODEL_TYPE:
        raise InvalidConfig(
            "architectures",
            f"{_V41_ARCH} is DeepSeek-V4.1 (vllm/models/deepseek_v41), read from a deepseek_v41 "
            f"config; this one says model_type {r.top.get('model_type')!r}",
        )
    return _geometry(r.cfg, r.top, r.name, v41=True)


def check(r: Reading) -> None:
    """A DeepSeek-V4 architecture is read from a deepseek_v4 config only."""
    arch = next((a for a in r.archs if a in _V4_ARCHS), None)
    if arch is not None and r.model_type != MODEL_TYPE:
        raise InvalidConfig(
            "architectures",
            f"{arch} is DeepSeek-V4 (vllm/models/deepseek_v4), read from a deepseek_v4 config; "
            f"this one says model_type {r.model_type!r}",
        )


def read(r: Reading) -> Geometry:
    """DeepSeek-V4 from its deepseek_v4 config."""
    return _geometry(r.cfg, r.top, r.name, v41=False)


def _geometry(cfg: Mapping[str, Any], top: Mapping[str, Any], name: str, v41: bool) -> Geometry:
    """DeepSeek-V4 (V4.1 with v41) from its config: each layer's compression ratio (V4: by layer
    type, `_ratios`; V4.1: its compress_ratios entry, 0 past the list, as DeepseekV4Attention
    reads it, with the kv and index source layers), the dims and the window. V4's context is
    max_position_embeddings as given (DeepseekV4Config nests its RoPE parameters by kind, main /
    compress, and vLLM applies no scaling factor); V4.1's is derived as for any config."""
    n = cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    listed = _v41_ratios(cfg, n) if v41 else None
    dtype = model_dtype(cfg, top)
    weight_dtype, expert_dtype = quant_dtypes(cfg)
    ratios = _ratios(cfg, n) if listed is None else listed
    kv_sources = _layer_ids(cfg, "kv_source_layer_ids") if v41 else None
    index_sources = _layer_ids(cfg, "index_source_layer_ids") if v41 else ()
    return make_dsv4_geometry(
        name=name,
        compress_ratios=ratios,
        kv_sources=kv_sources,
        index_sources=index_sources,
        num_attention_heads=cfg_int(cfg, "num_attention_heads", MAX_HEADS),
        head_dim=cfg_int(cfg, "head_dim", MAX_HEAD_DIM),
        index_head_dim=cfg_int(cfg, "index_head_dim", MAX_HEAD_DIM),
        sliding_window=cfg_int(cfg, "sliding_window", MAX_TOKENS),
        dtype=dtype,
        max_position_embeddings=derived_max_model_len(cfg, V41_MODEL_TYPE)
        if v41
        else cfg_int(cfg, "max_position_embeddings", MAX_TOKENS),
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_dtype,
        err=InvalidConfig,
        prefix="",
    )


def _v41_ratios(cfg: Mapping[str, Any], n: int) -> tuple[int, ...]:
    """V4.1's compress_ratios, one a layer, 0 past the list (the maker checks the values)."""
    raw = cfg.get("compress_ratios") or []
    if not isinstance(raw, list):
        raise InvalidConfig("compress_ratios", "must be a list of per-layer ratios")
    return tuple(raw[:n]) + (0,) * max(0, n - len(raw))


def _layer_ids(cfg: Mapping[str, Any], key: str) -> tuple[int, ...]:
    ids = cfg.get(key) or []
    if not isinstance(ids, list):
        raise InvalidConfig(key, "must be a list of layer indices")
    return tuple(ids)


def _layer_types(cfg: Mapping[str, Any], n: int) -> list[str]:
    """DeepseekV4Config.__post_init__ (transformers 5.20.2): layer_types as given, else from the
    legacy compress_ratios (0, 4 or 128 a layer, the MTP layer's entry past the last dropped), else
    2 heavily compressed layers then compressed sparse and heavily compressed alternating."""
    types = cfg.get("layer_types")
    legacy = cfg.get("compress_ratios")
    if types is None and legacy is not None:
        if not isinstance(legacy, list):
            raise InvalidConfig("compress_ratios", "must be a list of per-layer ratios")
        for i, r in enumerate(legacy):
            if isinstance(r, bool) or not isinstance(r, int) or r not in _TYPE_OF_RATIO:
                raise InvalidConfig(f"compress_ratios[{i}]", f"must be 0, 4 or 128, got {r!r}")
        types = [_TYPE_OF_RATIO[r] for r in legacy]
    if types is None:
        types = [_TYPES[2]] * min(n, 2) + [_TYPES[1] if i % 2 else _TYPES[2] for i in range(n - 2)]
    if not isinstance(types, list):
        raise InvalidConfig("layer_types", "must be a list of layer types")
    field = "layer_types" if cfg.get("layer_types") is not None else "compress_ratios"
    if len(types) < n:
        raise InvalidConfig(field, f"has {len(types)} entries for {n} layers")
    for i, t in enumerate(types[:n]):
        if t not in _TYPES:
            raise InvalidConfig(f"layer_types[{i}]", f"must be one of {', '.join(_TYPES)}, got {t!r}")
    return list(types[:n])


def _ratios(cfg: Mapping[str, Any], n: int) -> tuple[int, ...]:
    """Each layer's compression ratio as DeepseekV4Attention takes it: compress_rates of its layer
    type (0 for none), the rates defaulting to 4 and 128 (legacy compress_rate_csa /
    compress_rate_hca override them)."""
    rates_raw = cfg.get("compress_rates")
    if rates_raw is not None and not isinstance(rates_raw, Mapping):
        raise InvalidConfig("compress_rates", "must map layer types to ratios")
    rates = dict(_RATES if rates_raw is None else rates_raw)
    source = dict.fromkeys(rates, "compress_rates")  # the key a rate was read from, for a 4xx
    for key, t in (("compress_rate_csa", _TYPES[1]), ("compress_rate_hca", _TYPES[2])):
        if cfg.get(key) is not None:
            rates[t], source[t] = cfg[key], key
    out = []
    for t in _layer_types(cfg, n):
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
