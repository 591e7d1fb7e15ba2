"""A model's geometry given inline (`model: {geometry: …}`, schemas.GeometrySpec) and the core's
Geometry, each way: `POST /v1/models/resolve` and GET /v1/models/{id} answer a spec that
`model: {geometry: …}` takes back.

The two share their field names where they mean the same: such a field is copied as it is. Every
other field is listed below with what it becomes, so each field of either side is accounted for
(tests/services/test_inline_geometry.py fails when a field of one has no place in the other)."""

from __future__ import annotations

from typing import Any

import msgspec

from kvplan.core.engine.dtypes import MODEL_DTYPE_ALIASES
from kvplan.core.errors import InvalidInput
from kvplan.core.hf.defaults import DEFAULTS
from kvplan.core.model.geometry import (
    FULL,
    KIND_NAMES,
    MLA,
    Geometry,
    QsaCaches,
    make_dsv4_geometry,
    make_geometry,
)
from kvplan.core.model.mamba import MambaState, Mixer
from kvplan.schemas import GeometrySpec, MambaStateSpec, QsaSpec

# Fields of both, read otherwise: the name (a request's own wins), the attention dims (MLA reads
# its own), the nested Mamba state and QSA caches, and layer lists (a tuple in the core).
CONVERTED = frozenset({
    "name", "num_kv_heads", "head_dim", "v_head_dim", "mamba", "qsa", "decoder_layers",
    "sparse_mla_layers", "mla_indexer_layers", "indexer_layers",
})  # fmt: skip
# Core fields the wire spells otherwise, and the wire fields that carry them.
SPELLED_OTHERWISE: dict[str, tuple[str, ...]] = {
    "layer_pattern": ("layer_types",),
    "kpool_indexer": ("index_head_dim", "index_kpool"),
    "dsv4": ("compress_ratios", "kv_source_layer_ids", "index_source_layer_ids"),
}
# Core fields read from a config.json or a Hub checkpoint, never given inline.
NOT_INLINE: dict[str, str] = {
    "model_type": "the config's model_type (an inline geometry is its own)",
    "expert_weight_dtype": "a quantized checkpoint's experts (weight_dtype covers an inline model)",
    "params_estimated": "whether the parameters were estimated from the config",
    "loaded_weights": "the checkpoint's safetensors headers (Hub models)",
    "quant": "the config's quantization_config",
    "params_unquantized": "the parameters a quantized checkpoint keeps in the model dtype",
    "shape": "what the profiling run's activations scale with (estimated from the config)",
    "mtp": "the config's MTP layers (num_nextn_predict_layers), which speculative decoding loads",
    "lora": "the modules vLLM's LoRA manager wraps (from the config's architecture)",
    "tower_params": "a multimodal config's vision tower (an inline geometry has none)",
    "tower_modalities": "the modalities a multimodal config's vision tower serves",
}
# Same name and meaning: copied as they are, both ways.
SAME: tuple[str, ...] = tuple(
    f for f in GeometrySpec.__struct_fields__ if f in Geometry.__struct_fields__ and f not in CONVERTED
)
# A Mamba state's dims: the same names in MambaState and MambaStateSpec (the mixer and the dtypes
# are read otherwise).
STATE_CONVERTED = frozenset({"mixer", "conv_dtype", "ssm_dtype"})
STATE_DIMS: tuple[str, ...] = tuple(
    f
    for f in MambaStateSpec.__struct_fields__
    if f in MambaState.__struct_fields__ and f not in STATE_CONVERTED
)


def _dtype(name: str) -> str:
    return MODEL_DTYPE_ALIASES.get(name, name)


def geometry_from_spec(g: GeometrySpec, name: str | None = None) -> Geometry:
    """The core's Geometry of an inline one, checked by the core's own entry (make_geometry)."""
    if g.compress_ratios is not None:
        return _dsv4_from_spec(g, name)
    mamba = None
    if g.mamba is not None:
        mamba = MambaState(
            mixer=Mixer(g.mamba.mixer),
            conv_dtype=_dtype(g.mamba.conv_dtype),
            ssm_dtype=_dtype(g.mamba.ssm_dtype),
            **{f: getattr(g.mamba, f) for f in STATE_DIMS},
        )
    same = {f: getattr(g, f) for f in SAME}
    kpool = None
    if g.index_kpool is not None:  # GLM-5-next: index_head_dim is its kpool indexer's
        if g.index_head_dim is None:
            raise InvalidInput("model.geometry.index_head_dim", "required with index_kpool")
        kpool, same["index_head_dim"] = (g.index_head_dim, g.index_kpool), None
    return make_geometry(
        name=name or g.name,
        num_kv_heads=g.num_kv_heads,
        head_dim=g.head_dim,
        v_head_dim=g.v_head_dim,
        layer_types=tuple(g.layer_types) if g.layer_types is not None else None,
        mamba=mamba,
        decoder_layers=tuple(g.decoder_layers) if g.decoder_layers is not None else None,
        sparse_mla_layers=None if g.sparse_mla_layers is None else tuple(g.sparse_mla_layers),
        mla_indexer_layers=None if g.mla_indexer_layers is None else tuple(g.mla_indexer_layers),
        indexer_layers=tuple(g.indexer_layers) if g.indexer_layers is not None else None,
        qsa=None if g.qsa is None else QsaCaches(**msgspec.structs.asdict(g.qsa)),
        kpool_indexer=kpool,
        **same,
    )


# The inline fields a DeepSeek-V4 / V4.1 geometry reads (what `POST /v1/models/resolve` gives back).
_DSV4_SPEC_FIELDS = frozenset({
    "name", "num_layers", "num_attention_heads", "head_dim", "index_head_dim", "sliding_window", "dtype",
    "max_position_embeddings", "weight_dtype", "params_total", "params_active",
    "params_expert", "compress_ratios", "kv_source_layer_ids", "index_source_layer_ids", "layer_types",
    "decoder_layers",
})  # fmt: skip


def _dsv4_from_spec(g: GeometrySpec, name: str | None) -> Geometry:
    """DeepSeek-V4 inline: its decoder layers' ratios (core/kv/dsv4.py)."""
    p = "model.geometry."
    assert g.compress_ratios is not None
    if len(g.compress_ratios) != g.num_layers:
        raise InvalidInput(
            p + "compress_ratios", f"has {len(g.compress_ratios)} entries for {g.num_layers} layers"
        )
    if g.layer_types is not None or g.decoder_layers is not None:
        raise InvalidInput(
            p + "layer_types", "DeepSeek-V4's layers follow from compress_ratios: give no layer_types"
        )
    for f in msgspec.structs.fields(GeometrySpec):  # a field it does not read is not dropped silently
        if f.name not in _DSV4_SPEC_FIELDS and getattr(g, f.name) != f.default:
            raise InvalidInput(
                p + f.name, "DeepSeek-V4's caches follow from compress_ratios; it takes no such field"
            )
    defaults = DEFAULTS["deepseek_v4"]  # DeepseekV4Config's, as a config.json that leaves them out
    common: dict[str, Any] = {
        "name": name or g.name,
        "compress_ratios": tuple(g.compress_ratios),
        "num_attention_heads": g.num_attention_heads,
        "head_dim": g.head_dim or defaults["head_dim"],
        "index_head_dim": g.index_head_dim or defaults["index_head_dim"],
        "sliding_window": g.sliding_window or defaults["sliding_window"],
        "dtype": _dtype(g.dtype),
        "max_position_embeddings": g.max_position_embeddings,
        "weight_dtype": g.weight_dtype,
    }
    geometry = make_dsv4_geometry(
        # DeepSeek-V4.1 when its kv source layers are given.
        kv_sources=None if g.kv_source_layer_ids is None else tuple(g.kv_source_layer_ids),
        index_sources=tuple(g.index_source_layer_ids or ()),
        **common,
    )
    return msgspec.structs.replace(
        geometry,
        params_total=g.params_total,
        params_active=g.params_active,
        params_expert=g.params_expert,
    )


def spec_from_geometry(g: Geometry) -> GeometrySpec:
    """The inline form of a geometry, which `model: {geometry: …}` accepts back."""
    if g.dsv4 is not None:
        return GeometrySpec(
            name=g.name,
            num_layers=g.decoder_layer_count,
            num_attention_heads=g.num_attention_heads,
            head_dim=g.dsv4.head_dim,
            index_head_dim=g.dsv4.index_head_dim,
            sliding_window=g.dsv4.sliding_window,
            dtype=g.dtype,  # type: ignore[arg-type]
            max_position_embeddings=g.max_position_embeddings,
            compress_ratios=list(g.dsv4.ratios)
            if g.dsv4.v41
            else [0 if r == 1 else r for r in g.dsv4.ratios],
            kv_source_layer_ids=list(g.dsv4.kv_sources) if g.dsv4.v41 else None,
            index_source_layer_ids=list(g.dsv4.index_sources) if g.dsv4.v41 else None,
            params_total=g.params_total,
            params_active=g.params_active,
            params_expert=g.params_expert,
            weight_dtype=g.weight_dtype,  # type: ignore[arg-type]
        )
    # layer_types left out reads back as every layer full attention (MLA with kv_lora_rank): a
    # uniform pattern of another kind (every layer KDA, sliding MLA) is listed.
    uniform = len(set(g.layer_pattern)) == 1 and g.layer_pattern[0] in (FULL, MLA)
    # MLA dims come from kv_lora_rank, as make_geometry reads them, even with no MLA layer left
    # (a Kimi-K3 whose every layer is KDA).
    mla = g.is_mla or g.kv_lora_rank is not None
    return GeometrySpec(
        name=g.name,
        num_kv_heads=None if mla else g.num_kv_heads,
        head_dim=None if mla else g.head_dim,
        v_head_dim=None if mla or g.v_head_dim == g.head_dim else g.v_head_dim,
        layer_types=None if uniform else [KIND_NAMES[k] for k in g.layer_pattern],  # type: ignore[misc]
        decoder_layers=None if g.decoder_layers is None else list(g.decoder_layers),
        sparse_mla_layers=None if g.sparse_mla_layers is None else list(g.sparse_mla_layers),
        mla_indexer_layers=None if g.mla_indexer_layers is None else list(g.mla_indexer_layers),
        indexer_layers=None if g.indexer_layers is None else list(g.indexer_layers),
        qsa=None if g.qsa is None else QsaSpec(**msgspec.structs.asdict(g.qsa)),
        mamba=None
        if g.mamba is None
        else MambaStateSpec(
            mixer=g.mamba.mixer.value,  # type: ignore[arg-type]
            conv_dtype=g.mamba.conv_dtype,  # type: ignore[arg-type]
            ssm_dtype=g.mamba.ssm_dtype,  # type: ignore[arg-type]
            **{f: getattr(g.mamba, f) for f in STATE_DIMS},
        ),
        index_kpool=None if g.kpool_indexer is None else g.kpool_indexer[1],
        **{f: getattr(g, f) for f in SAME}
        | ({} if g.kpool_indexer is None else {"index_head_dim": g.kpool_indexer[0]}),
    )
