"""Reading a Hugging Face config.json into a Geometry as vLLM reads it through transformers
(docs/vllm-rules.md §2; vllm/config/model.py, vllm/transformers_utils/config.py): the standard
reader. It walks the family table (core/hf/families/) for the families that claim the config,
then reads the layout in vLLM's order, asking the config's family (core/hf/family.py) for each
piece it has a rule of its own for: its layer kinds, KV slots, recurrent state, attention dims."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from msgspec.structs import replace

from ..engine.nonkv import model_shape
from ..errors import InvalidConfig
from ..limits import MAX_HEAD_DIM, MAX_LAYERS, MAX_TOKENS
from ..model.geometry import (
    FULL,
    LAYER_TYPE_CODES,
    MAMBA,
    SCONV,
    SLIDING,
    Geometry,
    MtpHead,
    make_geometry,
    pos_int,
)
from ..model.mamba import MambaState
from ..model.quant import quant_scheme
from ..model.towers import vision_modalities
from .defaults import with_defaults
from .families import FAMILIES
from .family import NO_EXTRAS, STANDARD, AttentionReading, Family, MlaReading, Reading
from .fields import (
    architectures,
    attention_dims,
    cfg_int,
    config_geometry,
    language_config,
    leading_fields,
    quant_dtypes,
)
from .layers import standard_layer_types
from .lora import lora_modules
from .mla import MLA_MODEL_TYPES
from .params import estimate_params, mtp_layers, mtp_params

__all__ = ["family_of", "from_hf_config", "language_config"]

# Old model type names transformers maps to their current ones, so the current defaults apply.
_MODEL_TYPE_ALIASES = {old: new for fam in FAMILIES for old, new in fam.aliases.items()}
_ATTRIBUTE_MAP = (("n_layer", "num_hidden_layers"), ("n_head", "num_attention_heads"))
# Keys that only a recurrent (Mamba or linear-attention) layer reads.
_STATE_KEY_PREFIXES = ("mamba_", "ssm_", "linear_num_", "linear_key_", "linear_value_")
_BY_MODEL_TYPE = {model_type: fam for fam in FAMILIES for model_type in fam.model_types}
_BY_PREFIX = tuple((prefix, fam) for fam in FAMILIES for prefix in fam.model_type_prefixes)


def family_of(model_type: str) -> Family:
    """The family that reads a model type (the table's row declaring it, else one whose prefix it
    starts with), or STANDARD, whose rules are the standard reader's alone."""
    fam = _BY_MODEL_TYPE.get(model_type)
    if fam is not None:
        return fam
    return next((fam for prefix, fam in _BY_PREFIX if model_type.startswith(prefix)), STANDARD)


def from_hf_config(config: Mapping[str, Any], name: str = "custom", quantization: bool = True) -> Geometry:
    """Derive the geometry from a Hugging Face config.json (multi-modal: from `text_config`),
    with parameter counts estimated from the architecture. `quantization=False` when the
    weights are known otherwise (the checkpoint's tensors): its quantization_config is not read."""
    geo = _geometry_from_config(config, name)
    base = config
    archs = set(architectures(config))
    for fam in FAMILIES:
        if fam.shape_config is not None and archs & fam.architectures:
            base = fam.shape_config(base)
    cfg = dict(language_config(base))
    geo = replace(
        geo,
        shape=model_shape(with_defaults(cfg, str(cfg.get("model_type") or ""))),
        lora=lora_modules(config, geo.num_layers, geo.num_attention_heads, geo.num_kv_heads, geo.head_dim)
        if set(geo.layer_pattern) <= {FULL, SLIDING}
        else None,
    )
    states = geo.layer_pattern.count(MAMBA)
    if geo.dsv4 is not None:  # DeepSeek-V4: one attention a decoder layer
        attention = geo.decoder_layer_count
    else:
        attention = len(geo.layer_pattern) - states - geo.layer_pattern.count(SCONV)  # Inkling's conv states
    geo = replace(geo, tower_modalities=vision_modalities(config))
    n_mtp = mtp_layers(base)
    if n_mtp:
        found = mtp_params(base, n_mtp)
        geo = replace(
            geo,
            mtp=MtpHead(
                layers=n_mtp, params=found[0] if found else None, expert_params=found[1] if found else 0
            ),
        )
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
        tower_params=est.tower,
    )


def _geometry_from_config(config: Mapping[str, Any], name: str) -> Geometry:
    """The geometry alone: the config named (its model type, aliases, architectures), claimed by
    the families whose architectures it names, completed with its config class's defaults, then
    read whole by its family or by the standard reader with its family's pieces."""
    if not isinstance(config, Mapping):
        raise InvalidConfig("config", "must be a JSON object")
    claimed = _claim(_named(config, name))
    if isinstance(claimed, Geometry):
        return claimed
    r = claimed._replace(cfg=with_defaults(claimed.cfg, claimed.model_type))
    archs = set(r.archs)
    for fam in FAMILIES:
        if fam.check is not None and archs & fam.architectures:
            fam.check(r)
    fam = family_of(r.model_type)
    if fam.read is not None:
        return fam.read(r)
    return _standard(r, fam)


def _named(config: Mapping[str, Any], name: str) -> Reading:
    """The config as the reader starts on it: its text config over its top level, transformers'
    attribute names (FalconConfig's n_layer and the like), its model type (an old name mapped to
    the current one) and its architectures."""
    cfg = language_config(config)
    model_type = str(cfg.get("model_type") or config.get("model_type") or "unknown")
    model_type = _MODEL_TYPE_ALIASES.get(model_type, model_type)
    cfg = dict(cfg)
    for alias, key in _ATTRIBUTE_MAP:
        if alias in cfg and key not in cfg:
            cfg[key] = cfg[alias]
    return Reading(top=config, cfg=cfg, model_type=model_type, archs=architectures(config), name=name)


def _claim(r: Reading) -> Reading | Geometry:
    """The config after the families claiming it have had their say, in table order: first the
    ones its architectures name, then the ones its architectures or the model types it goes by
    (its top level's, and its own once renamed above) name. A claim renames the model type,
    rewrites the fields, or reads the whole layout (the geometry returned)."""
    archs = set(r.archs)
    for fam in FAMILIES:
        if fam.claim is not None and not fam.claim_by_name and archs & fam.architectures:
            out = fam.claim(r)
            if isinstance(out, Geometry):
                return out
            r = out
    named = {str(r.top.get("model_type") or ""), r.model_type}
    for fam in FAMILIES:
        if (
            fam.claim is not None
            and fam.claim_by_name
            and (archs & fam.architectures or named & fam.model_types)
        ):
            out = fam.claim(r)
            if isinstance(out, Geometry):
                return out
            r = out
    return r


def _standard(r: Reading, fam: Family) -> Geometry:
    """The standard reader, in vLLM's order, its family's hooks in place of its own rules where the
    family has them: the layer count and the config class's completion, heads, dtype and context,
    the decoder's layers, the window, the recurrent-state refusal, the attention's config, the
    layers and their kinds, then an MLA or a plain attention layout."""
    cfg, model_type = r.cfg, r.model_type
    n = cfg_int(cfg, "num_hidden_layers", MAX_LAYERS)
    if fam.config_class is not None:
        cfg = fam.config_class(cfg, n)
    q_heads, dtype, max_pos = leading_fields(cfg, r.top, model_type)
    is_mla = model_type in MLA_MODEL_TYPES and cfg.get("kv_lora_rank") is not None
    if fam.decoder_config is not None:
        cfg = fam.decoder_config(cfg, n)
    window_raw = cfg.get("sliding_window")
    if cfg.get("use_sliding_window") is False:
        window_raw = None
    window = None if not window_raw else pos_int(window_raw, "sliding_window", MAX_TOKENS, InvalidConfig)
    if fam.refuses_state or (fam.state is None and any(k.startswith(_STATE_KEY_PREFIXES) for k in cfg)):
        raise InvalidConfig(
            "model_type",
            f"{model_type!r} keeps a recurrent (Mamba or linear-attention) state beside its attention "
            "that kvplan does not read from config.json yet; send the model as inline geometry "
            "(layer_types with mamba layers and their state)",
        )
    if fam.attention_config is not None:
        cfg = fam.attention_config(cfg, n, q_heads)
    layers = _layers(cfg, model_type, n, window, r.archs, fam)
    kinds = _kinds(cfg, layers.types, window, dtype, r, fam)
    weight_dtype, expert_dtype = quant_dtypes(cfg)
    common: dict[str, Any] = {
        "name": r.name,
        "model_type": model_type,
        "num_layers": layers.n,
        "num_attention_heads": q_heads,
        "dtype": dtype,
        "max_position_embeddings": max_pos,
        "layer_types": kinds.types,
        "mamba": kinds.mamba,
        "weight_dtype": weight_dtype,
        "expert_weight_dtype": expert_dtype,
        "prefix": "",
    }
    if is_mla:
        return _mla_geometry(cfg, layers.n, q_heads, fam, common)
    kv_heads, head_dim = (fam.attention_dims or attention_dims)(cfg, q_heads)
    extras = NO_EXTRAS
    if fam.attention_extras is not None:
        extras = fam.attention_extras(
            AttentionReading(
                cfg, model_type, layers.n, layers.decoder_types, head_dim, kv_heads, dtype, r.archs
            )
        )
    return config_geometry(
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        sliding_window=kinds.window,
        attention_chunk_size=kinds.chunk,
        full_head_dim=extras.full_head_dim,
        full_kv_heads=extras.full_kv_heads,
        qsa=extras.qsa,
        indexer_layers=extras.indexer_layers,
        indexer_dim=extras.indexer_dim,
        decoder_layers=layers.slots,
        num_decoder_layers=layers.num_decoder_layers if layers.slots is not None else None,
        **common,
    )


class _Layers(NamedTuple):
    """The KV layers' kinds (None: uniform), the decoder layers' kinds as the family gave them,
    the decoder layer of each KV layer when they are not one a decoder layer, the decoder's
    layer count and the KV layer count."""

    types: tuple[str, ...] | None
    decoder_types: tuple[str, ...] | None
    slots: tuple[int, ...] | None
    num_decoder_layers: int
    n: int


def _layers(
    cfg: Mapping[str, Any], model_type: str, n: int, window: int | None, archs: tuple[str, ...], fam: Family
) -> _Layers:
    """The layers as the family lays them out: its KV slots (several KV layers a decoder layer, or
    none), else its layer types (the standard rule without one), each listed layer counted, and
    the last layers that share an earlier layer's KV cache dropped."""
    kv_slots, n_decoder = fam.kv_slots(cfg, model_type, n) if fam.kv_slots is not None else (None, n)
    slots: tuple[int, ...] | None
    if kv_slots is not None:
        layer_types: tuple[str, ...] | None = tuple(t for t, _ in kv_slots)
        slots = tuple(i for _, i in kv_slots)
        n = len(slots)
    else:
        layer_types, slots = (
            (fam.layer_types or standard_layer_types)(cfg, model_type, n, window, archs),
            None,
        )
    if layer_types is not None and len(layer_types) != n:
        raise InvalidConfig("layer_types", f"has {len(layer_types)} entries for {n} layers")
    decoder_types = layer_types
    shared = fam.kv_shared_layers(cfg, model_type, n) if fam.kv_shared_layers is not None else 0
    if shared:
        keep = n - shared
        layer_types = (layer_types or ("full_attention",) * n)[:keep]
        slots, n_decoder, n = tuple(range(keep)), n, keep
    return _Layers(layer_types, decoder_types, slots, n_decoder, n)


class _Kinds(NamedTuple):
    """The KV layers' kinds (None: uniform full attention), the window vLLM applies, the recurrent
    state and the attention chunk."""

    types: tuple[str, ...] | None
    window: int | None
    mamba: MambaState | None
    chunk: int | None


def _kinds(
    cfg: Mapping[str, Any],
    types: tuple[str, ...] | None,
    window: int | None,
    dtype: str,
    r: Reading,
    fam: Family,
) -> _Kinds:
    """Each listed kind known; the state of recurrent layers and the chunk of chunked ones read;
    the window as the family's attention applies it; and uniform full attention read as no
    layer_types and no window, as vLLM applies a model-wide window only when layer_types is absent
    or all sliding (vllm/engine/arg_utils.py create_engine_config)."""
    if types is None:
        return _Kinds(None, window, None, None)
    for i, t in enumerate(types):
        if t not in LAYER_TYPE_CODES:
            raise InvalidConfig(f"layer_types[{i}]", f"unknown layer type {t!r}")
    mamba = None
    if any(LAYER_TYPE_CODES[t] == MAMBA for t in types):
        mamba = _state(cfg, r.model_type, dtype, r.archs, fam)
    chunk = cfg_int(cfg, "attention_chunk_size", MAX_TOKENS) if "chunked_attention" in types else None
    if window and fam.window is not None:
        window = fam.window(window)
    if all(LAYER_TYPE_CODES[t] == FULL for t in types):
        return _Kinds(None, None, mamba, chunk)
    return _Kinds(types, window, mamba, chunk)


def _state(
    cfg: Mapping[str, Any], model_type: str, dtype: str, archs: tuple[str, ...], fam: Family
) -> MambaState:
    """The recurrent state a family keeps, read as its vLLM model class reads it
    (get_mamba_state_shape_from_config in vllm/model_executor/models/<family>.py), in the model
    dtype unless the family says (mamba_cache_dtype "auto"); refused for a family without one."""
    if fam.state is None:
        raise InvalidConfig(
            "model_type",
            f"{model_type!r} has Mamba or linear-attention layers whose state layout kvplan does not "
            "read yet; send the model as inline geometry with mamba (state dims) or mamba_state_bytes",
        )
    return fam.state(cfg, model_type, dtype, archs)


def _mla_geometry(
    cfg: Mapping[str, Any], n: int, q_heads: int, fam: Family, common: dict[str, Any]
) -> Geometry:
    """An MLA layout (vllm/config/model.py is_deepseek_mla): the latent (kv_lora_rank) and RoPE
    dims, and the indexer of sparse layers, DeepSeek-V3.2's when the config has index_topk or
    index_head_dim, unless the family reads its MLA otherwise."""
    rank = cfg_int(cfg, "kv_lora_rank", MAX_HEAD_DIM)
    if fam.mla is not None:
        mla = fam.mla(cfg, n, q_heads)
    else:
        idx = cfg.get("index_head_dim")
        indexed = cfg.get("index_topk") is not None or idx is not None
        mla = MlaReading(cfg_int(cfg, "qk_rope_head_dim", MAX_HEAD_DIM), idx if indexed else None)
    return make_geometry(
        kv_lora_rank=rank,
        qk_rope_head_dim=mla.qk_rope_head_dim,
        qk_nope_head_dim=cfg.get("qk_nope_head_dim"),
        mla_v_head_dim=cfg.get("v_head_dim"),
        index_head_dim=mla.index_head_dim,
        kpool_indexer=mla.kpool_indexer,
        sparse_mla_layers=mla.sparse_mla_layers,
        mla_indexer_layers=mla.mla_indexer_layers,
        **common,
    )
