"""A model's attention geometry: the value every KV figure is computed from, and its inline form
(`make_geometry`). Reading it from a config.json is core/hf/reader.py."""

from __future__ import annotations

from enum import StrEnum
from itertools import pairwise
from typing import Any

import msgspec

from ..engine.dtypes import MODEL_DTYPE_ALIASES, MODEL_DTYPES
from ..engine.nonkv import ModelShape
from ..errors import InvalidConfig, InvalidInput
from ..limits import (
    MAX_HEAD_DIM,
    MAX_HEADS,
    MAX_HIDDEN_SIZE,
    MAX_LAYERS,
    MAX_PARAMS,
    MAX_STATE_BYTES,
    MAX_TOKENS,
)
from ..validate import COUNT, Wording, integer
from .lora import LoraModules
from .mamba import MambaState, Mixer
from .quant import QuantScheme
from .weights import LoadedWeights


class LayerKind(StrEnum):
    """A layer's KV kind. `layer_pattern` stores one character a layer (a compact, hashable key
    for the memo caches), so kinds are compared by equality on purpose: a character read from
    the pattern equals its member."""

    FULL = "F"
    SLIDING = "S"
    MLA = "M"
    MAMBA = "R"
    CHUNKED = "C"
    # Step5's sparse summary cache: a FullAttentionSpec of one 256-byte state per 8 tokens.
    SUMMARY = "Z"
    # An MLAAttentionSpec of one key per compress_ratio tokens: Qwen4-exp QSA's compressed key cache;
    # DeepSeek-V4's compressed MLA cache of a compressed layer (core/kv/dsv4.py).
    COMPRESSED_MLA = "K"
    # A TP-replicated recurrent state (MambaSpec tp_replicated): Qwen4-exp's PLE short conv, its
    # own group beside the sharded Mamba states.
    MAMBA_REPLICATED = "P"
    # SlidingWindowMLASpec: an MLA latent per token, kept within the window (Dots3's sliding layers;
    # DeepSeek-V4's window caches, core/kv/dsv4.py).
    SLIDING_MLA = "W"
    # Inkling's short-convolution state: a sliding window of sconv_kernel_size tokens in blocks of
    # that size (vLLM keeps it as a SlidingWindowSpec of its own), ahead of its layer's attention.
    SCONV = "V"
    # A per-request ring of one block (vLLM's CircularBufferSpec): GLM-5-next's indexer rings (a
    # group kind only, never in its layer_pattern); Step5's CSA tail ring (the page of the
    # full-attention layer it serves) and Qwen4-exp QSA's raw-key ring, layers of their own;
    # DeepSeek-V4.1's compressor rings (a group kind only).
    CIRCULAR_BUFFER = "B"


FULL = LayerKind.FULL
SLIDING = LayerKind.SLIDING
MLA = LayerKind.MLA
MAMBA = LayerKind.MAMBA
CHUNKED = LayerKind.CHUNKED
SUMMARY = LayerKind.SUMMARY
COMPRESSED_MLA = LayerKind.COMPRESSED_MLA
MAMBA_REPLICATED = LayerKind.MAMBA_REPLICATED
SLIDING_MLA = LayerKind.SLIDING_MLA
SCONV = LayerKind.SCONV
CIRCULAR_BUFFER = LayerKind.CIRCULAR_BUFFER
KIND_NAMES: dict[str, str] = {
    FULL: "full_attention",
    SLIDING: "sliding_attention",
    MLA: "mla",
    MAMBA: "mamba",
    CHUNKED: "chunked_attention",
    SUMMARY: "sparse_summary",
    COMPRESSED_MLA: "compressed_mla",
    MAMBA_REPLICATED: "mamba_replicated",
    SLIDING_MLA: "sliding_window_mla",
    SCONV: "sconv",
    CIRCULAR_BUFFER: "circular_buffer",
}
LAYER_TYPE_CODES = {
    "full_attention": FULL,
    "attention": FULL,
    "sliding_attention": SLIDING,
    "mla": MLA,
    "mamba": MAMBA,
    "linear_attention": MAMBA,
    "chunked_attention": CHUNKED,
    "conv": MAMBA,  # LFM2's short-convolution layers keep a state, no KV
    "circular_buffer": CIRCULAR_BUFFER,
    "sparse_summary": SUMMARY,
    "compressed_mla": COMPRESSED_MLA,
    "mamba_replicated": MAMBA_REPLICATED,
    "sliding_window_mla": SLIDING_MLA,
    "sconv": SCONV,
}


class QsaCaches(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Qwen4-exp QSA's side caches beside each indexed layer's KV, one head on every TP rank
    (vllm/models/qwen4_exp/common/qsa_cache.py): a ring of compress_ratio raw-key rows
    (CircularBufferSpec, block compress_ratio) and one compressed key per compress_ratio tokens
    (MLAAttentionSpec, tokens_per_state compress_ratio)."""

    compress_ratio: int
    ring_row_bytes: int
    key_bytes: int


class MtpHead(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A checkpoint's multi-token-prediction layers (DeepSeek-V3 num_nextn_predict_layers, Qwen3.5
    mtp_num_hidden_layers): each a decoder layer of the target's kind with its projections; their
    parameters without the embedding and LM head they share with the target (vLLM frees the
    draft's copies: vllm/v1/worker/gpu/spec_decode/eagle/utils.py load_eagle_model)."""

    layers: int
    params: int | None = None
    expert_params: int = 0


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class Dsv4Layout(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """DeepSeek-V4's caches (core/kv/dsv4.py): per decoder layer its compression ratio (1: the
    sliding-window cache alone, 4: with an indexer, 128), the window, the latent and indexer
    head dims. DeepSeek-V4.1 (v41): the ratios as its config gives them (0: sliding only, 1, 2),
    compressed caches only on kv_sources, indexer K caches on kv sources that are index_sources."""

    ratios: tuple[int, ...]
    sliding_window: int
    head_dim: int
    index_head_dim: int
    v41: bool = False
    kv_sources: tuple[int, ...] = ()
    index_sources: tuple[int, ...] = ()

    @property
    def index_cell_bytes(self) -> int:
        """The indexer's fp8 K and its fp32 scales a state (DeepseekV4Indexer, FP8 cache)."""
        return self.index_head_dim + self.index_head_dim // 128 * 4


class Geometry(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """Everything about a model that KV sizing needs. Immutable and hashable."""

    name: str
    model_type: str
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    layer_pattern: str
    sliding_window: int | None
    dtype: str
    max_position_embeddings: int
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    mla_v_head_dim: int | None = None
    index_head_dim: int | None = None
    mamba_state_bytes: int | None = None
    mamba: MambaState | None = None
    attention_chunk_size: int | None = None
    # GLM-5-next's kpool indexer beside each sparse MLA layer: (index_head_dim, index_kpool), one
    # indexer state a pool of index_kpool tokens and a ring of the open pool's raw keys
    # (vllm/models/glm5next/common/attention.py); vLLM packs its pages block-outermost.
    kpool_indexer: tuple[int, int] | None = None
    # Full-attention layers with a head dim and KV heads of their own beside sliding ones (Gemma-4:
    # per_layer_config, global_head_dim); None where every attention layer has the same.
    full_head_dim: int | None = None
    full_kv_heads: int | None = None
    qsa: QsaCaches | None = None
    # Sliding-window MLA layers' latent width (Dots3: swa_kv_lora_rank + swa_qk_rope_head_dim), and
    # the width the sparse MLA layers pad their latent rows to (Dots3's physical_head_size), whose
    # backend lays blocks out block-outermost; None where there are none / rows are the latent.
    sliding_mla_dim: int | None = None
    mla_row_dim: int | None = None
    # With an indexer (index_head_dim): the MLA layers that are sparse, when not all (HY-V4's
    # dense layers beside sparse ones), and the sparse layers that keep an indexer cache of their
    # own, when not all (the others reuse an earlier layer's top-k). Indices into layer_pattern.
    sparse_mla_layers: tuple[int, ...] | None = None
    mla_indexer_layers: tuple[int, ...] | None = None
    # Full-attention layers that also keep a key-only indexer cache of indexer_dim per token, in
    # bf16 (MiniMax-M3's sparse layers): the entries of layer_pattern that carry one.
    indexer_layers: tuple[int, ...] | None = None
    indexer_dim: int | None = None
    # Inkling's short-convolution states (SCONV entries): the kernel (block and window) and the
    # hidden size its four packed streams are cut from.
    sconv_kernel_size: int | None = None
    sconv_hidden_size: int | None = None
    # When KV-carrying layers are not one per decoder layer (Falcon-H1 keeps an attention and a
    # Mamba layer in each; Nemotron-H has MLP-only layers with none): the decoder layer of each
    # entry of layer_pattern, and the decoder's layer count. Pipeline stages split decoder layers.
    decoder_layers: tuple[int, ...] | None = None
    num_decoder_layers: int | None = None
    params_total: int | None = None
    params_active: int | None = None
    params_expert: int | None = None
    weight_dtype: str | None = None
    expert_weight_dtype: str | None = None
    params_estimated: bool = False
    # The checkpoint's own bytes (safetensors headers of a Hub repo), when known: vLLM loads them.
    loaded_weights: LoadedWeights | None = None
    # Else, a quantized checkpoint's linear layers by its quantization_config, and the parameters
    # it keeps in the model dtype (embeddings, LM head, norms).
    quant: QuantScheme | None = None
    params_unquantized: int | None = None
    # A multimodal model's vision tower and projector (counted in params_total and in the loaded
    # weights), and the modalities it serves: vLLM leaves it unbuilt when all are off (towers.py).
    tower_params: int = 0
    tower_modalities: tuple[str, ...] = ()
    # What the profiling run's activations scale with (None for inline geometries).
    shape: ModelShape | None = None
    # The modules vLLM's LoRA manager wraps, for the Llama layout (core/model/lora.py; else None).
    lora: LoraModules | None = None
    # DeepSeek-V4's caches (core/kv/dsv4.py); its layer_pattern has a SLIDING_MLA entry a decoder
    # layer and a COMPRESSED_MLA entry a compressed layer (decoder_layers maps them).
    dsv4: Dsv4Layout | None = None
    # The checkpoint's multi-token-prediction layers, which only speculative decoding loads
    # (core/model/speculative.py); None when its config names none.
    mtp: MtpHead | None = None

    @property
    def is_mla(self) -> bool:
        return MLA in self.layer_pattern or SLIDING_MLA in self.layer_pattern or self.dsv4 is not None

    @property
    def is_hybrid(self) -> bool:
        return len(set(self.layer_pattern)) > 1

    @property
    def mla_latent_dim(self) -> int:
        if self.dsv4 is not None:
            return self.dsv4.head_dim
        return (self.kv_lora_rank or 0) + (self.qk_rope_head_dim or 0)

    @property
    def attention_free(self) -> bool:
        return set(self.layer_pattern) == {MAMBA}

    @property
    def decoder_layer_count(self) -> int:
        return self.num_decoder_layers or self.num_layers

    def layer_counts(self) -> dict[str, int]:
        return {
            KIND_NAMES[k]: self.layer_pattern.count(k)
            for k in (
                FULL,
                SLIDING,
                CHUNKED,
                MLA,
                SLIDING_MLA,
                MAMBA,
                SCONV,
                MAMBA_REPLICATED,
                SUMMARY,
                COMPRESSED_MLA,
                CIRCULAR_BUFFER,
            )
            if k in self.layer_pattern
        }

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            return "MLA"
        if MAMBA in self.layer_pattern:
            return "hybrid-mamba"
        if self.num_kv_heads == self.num_attention_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"


def pos_int(value: Any, field: str, maximum: int, err: type[InvalidInput] = InvalidInput) -> int:
    """A count of a config or an inline geometry, from 1 to maximum, by the one integer rule
    (core/validate.py: an int, so not 8192.0, which vLLM would not take as a count either)."""
    return integer(value, field, maximum, 1, err, COUNT)


def _kpool_indexer(value: tuple[int, int] | None, pattern: str, p: str) -> tuple[int, int] | None:
    """GLM-5-next's kpool indexer: vLLM packs it beside MLA and KDA layers (groups.py _packed_kpool)."""
    if value is None:
        return None
    if MLA not in pattern or MAMBA not in pattern:
        raise InvalidInput(p + "index_kpool", "modelled beside MLA and Mamba (KDA) layers only")
    head = pos_int(value[0], p + "index_head_dim", MAX_HEAD_DIM)
    kpool = pos_int(value[1], p + "index_kpool", MAX_HEAD_DIM)
    if kpool < 2:
        raise InvalidInput(p + "index_kpool", "must be at least 2")
    return head, kpool


def non_neg_int(value: Any, field: str, maximum: int) -> int:
    """A config count that may be 0 (meaning "derive it"), as InvalidConfig when it is not."""
    return integer(value, field, maximum, 0, InvalidConfig, COUNT)


def _opt_pos_int(value: Any, field: str, maximum: int, err: type[InvalidInput] = InvalidInput) -> int | None:
    return None if value is None else pos_int(value, field, maximum, err)


def make_geometry(
    *,
    name: str,
    num_layers: int,
    num_attention_heads: int,
    num_kv_heads: int | None = None,
    head_dim: int | None = None,
    v_head_dim: int | None = None,
    layer_types: tuple[str, ...] | None = None,
    sliding_window: int | None = None,
    dtype: str = "bfloat16",
    max_position_embeddings: int = 131072,
    kv_lora_rank: int | None = None,
    qk_rope_head_dim: int | None = None,
    qk_nope_head_dim: int | None = None,
    mla_v_head_dim: int | None = None,
    index_head_dim: int | None = None,
    mamba_state_bytes: int | None = None,
    mamba: MambaState | None = None,
    attention_chunk_size: int | None = None,
    kpool_indexer: tuple[int, int] | None = None,
    full_head_dim: int | None = None,
    full_kv_heads: int | None = None,
    qsa: QsaCaches | None = None,
    sliding_mla_dim: int | None = None,
    mla_row_dim: int | None = None,
    sparse_mla_layers: tuple[int, ...] | None = None,
    mla_indexer_layers: tuple[int, ...] | None = None,
    indexer_layers: tuple[int, ...] | None = None,
    indexer_dim: int | None = None,
    sconv_kernel_size: int | None = None,
    sconv_hidden_size: int | None = None,
    decoder_layers: tuple[int, ...] | None = None,
    num_decoder_layers: int | None = None,
    params_total: int | None = None,
    params_active: int | None = None,
    params_expert: int | None = None,
    weight_dtype: str | None = None,
    expert_weight_dtype: str | None = None,
    model_type: str = "custom",
    prefix: str = "model.geometry.",
) -> Geometry:
    """Build a validated geometry from explicit values (the inline form of `model`)."""
    p = prefix
    num_layers = pos_int(num_layers, p + "num_layers", MAX_LAYERS)
    num_attention_heads = pos_int(num_attention_heads, p + "num_attention_heads", MAX_HEADS)
    mla = kv_lora_rank is not None
    if mla:
        kv_lora_rank = pos_int(kv_lora_rank, p + "kv_lora_rank", MAX_HEAD_DIM)
        if qk_rope_head_dim is None:
            raise InvalidInput(p + "qk_rope_head_dim", "required for MLA (with kv_lora_rank)")
        # 0: NoPE MLA (GLM-5-next), the latent alone.
        nope = qk_rope_head_dim == 0 and not isinstance(qk_rope_head_dim, bool)
        qk_rope_head_dim = 0 if nope else pos_int(qk_rope_head_dim, p + "qk_rope_head_dim", MAX_HEAD_DIM)
        num_kv_heads = 1
        head_dim = kv_lora_rank + qk_rope_head_dim
        v_head_dim = 0
    else:
        if head_dim is None:
            raise InvalidInput(p + "head_dim", "required (or give kv_lora_rank for MLA)")
        head_dim = pos_int(head_dim, p + "head_dim", MAX_HEAD_DIM)
        num_kv_heads = pos_int(
            num_kv_heads if num_kv_heads is not None else num_attention_heads, p + "num_kv_heads", MAX_HEADS
        )
        v_head_dim = head_dim if v_head_dim is None else pos_int(v_head_dim, p + "v_head_dim", MAX_HEAD_DIM)
    if dtype not in MODEL_DTYPES:
        dtype = MODEL_DTYPE_ALIASES.get(dtype, "")
        if not dtype:
            raise InvalidInput(p + "dtype", f"must be one of {', '.join(MODEL_DTYPES)}")
    sliding_window = _opt_pos_int(sliding_window or None, p + "sliding_window", MAX_TOKENS)
    if layer_types is None:
        pattern = (MLA if mla else (SLIDING if sliding_window else FULL)) * num_layers
    else:
        if len(layer_types) != num_layers:
            raise InvalidInput(p + "layer_types", f"has {len(layer_types)} entries for {num_layers} layers")
        chars = []
        for i, t in enumerate(layer_types):
            c = LAYER_TYPE_CODES.get(t)
            if c is None:
                raise InvalidInput(
                    f"{p}layer_types[{i}]", f"unknown layer type {t!r}; valid: {', '.join(LAYER_TYPE_CODES)}"
                )
            if mla and c in (FULL, MLA):
                c = MLA
            elif c == MLA or (c == SLIDING_MLA and not mla):
                raise InvalidInput(f"{p}layer_types[{i}]", "an MLA layer needs kv_lora_rank")
            chars.append(c)
        pattern = "".join(chars)
    if (
        CIRCULAR_BUFFER in pattern or SUMMARY in pattern or COMPRESSED_MLA in pattern
    ) and FULL not in pattern:
        raise InvalidInput(
            p + "layer_types",
            "circular_buffer and sparse_summary layers serve full_attention layers; give one",
        )
    if MAMBA_REPLICATED in pattern and (
        MAMBA not in pattern or mamba is None or not mamba.replicated_state_bytes
    ):
        raise InvalidInput(
            p + "mamba", "mamba_replicated layers need the Mamba state's replicated_state_bytes"
        )
    if COMPRESSED_MLA in pattern and qsa is None:
        raise InvalidInput(p + "qsa", "required with compressed_mla layers")
    if (SLIDING in pattern or SLIDING_MLA in pattern) and not sliding_window:
        raise InvalidInput(p + "sliding_window", "required when some layers use sliding attention")
    if SLIDING_MLA in pattern:
        sliding_mla_dim = pos_int(sliding_mla_dim, p + "sliding_mla_dim", MAX_HEAD_DIM)
    if mla_row_dim is not None:
        mla_row_dim = pos_int(mla_row_dim, p + "mla_row_dim", MAX_HEAD_DIM)
        if mla_row_dim < head_dim:
            raise InvalidInput(p + "mla_row_dim", f"pads the {head_dim}-wide latent: must be at least that")
    if MAMBA in pattern:
        if mamba is None:
            mamba_state_bytes = pos_int(mamba_state_bytes, p + "mamba_state_bytes", MAX_STATE_BYTES)
        else:
            check_mamba(mamba, p + "mamba.")
            mamba_state_bytes = None
    if CHUNKED in pattern:
        attention_chunk_size = pos_int(attention_chunk_size, p + "attention_chunk_size", MAX_TOKENS)
    indexer_layers, indexer_dim = _indexer(indexer_layers, indexer_dim, pattern, p)
    if SCONV in pattern:
        sconv_kernel_size = pos_int(sconv_kernel_size, p + "sconv_kernel_size", MAX_TOKENS)
        sconv_hidden_size = pos_int(sconv_hidden_size, p + "sconv_hidden_size", MAX_HIDDEN_SIZE)
        for i, k in enumerate(pattern):
            if k == SCONV and (i + 1 == len(pattern) or pattern[i + 1] not in (FULL, SLIDING)):
                raise InvalidInput(
                    f"{p}layer_types[{i}]",
                    "an sconv state goes just before its layer's full or sliding attention",
                )
    own_full = not mla and FULL in pattern and (full_head_dim is not None or full_kv_heads is not None)
    max_position_embeddings = pos_int(max_position_embeddings, p + "max_position_embeddings", MAX_TOKENS)
    indexed = mla and index_head_dim is not None
    for field, subset, within in (
        ("sparse_mla_layers", sparse_mla_layers, [i for i, c in enumerate(pattern) if c == MLA]),
        ("mla_indexer_layers", mla_indexer_layers, sparse_mla_layers),
    ):
        if subset is not None and not indexed:
            raise InvalidInput(p + field, "only for MLA with an indexer (index_head_dim)")
        if subset is not None and (
            list(subset) != sorted(set(subset))
            or not set(subset) <= set(within if within is not None else range(num_layers))
        ):
            raise InvalidInput(p + field, "must list, in order, MLA layers (the indexer's: sparse ones)")
    if decoder_layers is not None:
        num_decoder_layers = pos_int(num_decoder_layers, p + "num_decoder_layers", MAX_LAYERS)
        ordered = all(a <= b for a, b in pairwise(decoder_layers))
        if (
            len(decoder_layers) != num_layers
            or not ordered
            or not 0 <= decoder_layers[0] <= decoder_layers[-1] < num_decoder_layers
        ):
            raise InvalidInput(
                p + "decoder_layers",
                f"must give, in order, the decoder layer (0..{num_decoder_layers - 1}) of each of the "
                f"{num_layers} KV layers",
            )
    return Geometry(
        name=name,
        model_type=model_type,
        num_layers=num_layers,
        num_attention_heads=num_attention_heads,
        num_kv_heads=num_kv_heads,
        head_dim=head_dim,
        v_head_dim=v_head_dim,
        layer_pattern=pattern,
        sliding_window=sliding_window if SLIDING in pattern or SLIDING_MLA in pattern else None,
        dtype=dtype,
        max_position_embeddings=max_position_embeddings,
        kv_lora_rank=kv_lora_rank if mla else None,
        qk_rope_head_dim=qk_rope_head_dim if mla else None,
        qk_nope_head_dim=_opt_pos_int(qk_nope_head_dim, p + "qk_nope_head_dim", MAX_HEAD_DIM)
        if mla
        else None,
        mla_v_head_dim=_opt_pos_int(mla_v_head_dim, p + "mla_v_head_dim", MAX_HEAD_DIM) if mla else None,
        index_head_dim=_opt_pos_int(index_head_dim, p + "index_head_dim", MAX_HEAD_DIM) if mla else None,
        mamba_state_bytes=mamba_state_bytes if MAMBA in pattern else None,
        mamba=mamba if MAMBA in pattern else None,
        attention_chunk_size=attention_chunk_size if CHUNKED in pattern else None,
        kpool_indexer=_kpool_indexer(kpool_indexer, pattern, p) if mla else None,
        full_head_dim=_opt_pos_int(full_head_dim, p + "full_head_dim", MAX_HEAD_DIM) if own_full else None,
        full_kv_heads=_opt_pos_int(full_kv_heads, p + "full_kv_heads", MAX_HEADS) if own_full else None,
        qsa=qsa if COMPRESSED_MLA in pattern else None,
        sliding_mla_dim=sliding_mla_dim if SLIDING_MLA in pattern else None,
        mla_row_dim=mla_row_dim if mla and MLA in pattern else None,
        sparse_mla_layers=sparse_mla_layers,
        mla_indexer_layers=mla_indexer_layers,
        indexer_layers=indexer_layers,
        indexer_dim=indexer_dim,
        sconv_kernel_size=sconv_kernel_size if SCONV in pattern else None,
        sconv_hidden_size=sconv_hidden_size if SCONV in pattern else None,
        decoder_layers=decoder_layers,
        num_decoder_layers=num_decoder_layers if decoder_layers is not None else None,
        params_total=_opt_pos_int(params_total, p + "params_total", MAX_PARAMS),
        params_active=_opt_pos_int(params_active, p + "params_active", MAX_PARAMS),
        params_expert=None
        if params_expert is None or params_expert == 0
        else pos_int(params_expert, p + "params_expert", MAX_PARAMS),
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_weight_dtype,
    )


def make_dsv4_geometry(
    *,
    name: str,
    compress_ratios: tuple[int, ...],
    num_attention_heads: int,
    head_dim: int,
    index_head_dim: int,
    sliding_window: int,
    dtype: str,
    max_position_embeddings: int,
    kv_sources: tuple[int, ...] | None = None,
    index_sources: tuple[int, ...] = (),
    weight_dtype: str | None = None,
    expert_weight_dtype: str | None = None,
    err: type[InvalidInput] = InvalidInput,
    prefix: str = "model.geometry.",
) -> Geometry:
    """DeepSeek-V4 (core/kv/dsv4.py), or DeepSeek-V4.1 when its kv source layers are given: a
    SLIDING_MLA entry a decoder layer (its sliding-window cache) with a COMPRESSED_MLA entry after
    each layer that keeps compressed caches (V4: a layer of ratio 4 or 128, 0 or 1 being sliding
    only; V4.1: a kv-source layer, whose caches the layers after it read). The one maker of both,
    for the config reader (core/hf/families/deepseek_v4.py) and the inline form alike."""
    p, n = prefix, len(compress_ratios)
    if not 1 <= n <= MAX_LAYERS:
        raise err(p + "compress_ratios", f"must give 1 to {MAX_LAYERS} layers")
    if kv_sources is None:
        layout = _dsv4_layout(compress_ratios, sliding_window, head_dim, index_head_dim, err, p)
        compressed = tuple(r > 1 for r in layout.ratios)
    else:
        layout = _dsv41_layout(
            compress_ratios, kv_sources, index_sources, sliding_window, head_dim, index_head_dim, err, p
        )
        kv_set = set(layout.kv_sources)
        compressed = tuple(i in kv_set for i in range(n))
    family = "DeepSeek-V4.1" if layout.v41 else "DeepSeek-V4"
    if layout.head_dim != 512:  # DeepseekV4SparseMLABackend.get_supported_head_sizes
        raise err(p + "head_dim", f"{family}'s sparse MLA kernels take 512, got {layout.head_dim}")
    if layout.index_head_dim != 128:  # DeepseekCompressor's fused indexer store (compressor.py)
        raise err(p + "index_head_dim", f"{family}'s indexer takes 128, got {layout.index_head_dim}")
    pos_int(num_attention_heads, p + "num_attention_heads", MAX_HEADS, err)
    pos_int(layout.sliding_window, p + "sliding_window", MAX_TOKENS, err)
    pos_int(max_position_embeddings, p + "max_position_embeddings", MAX_TOKENS, err)
    if dtype not in MODEL_DTYPES:
        raise err(p + "dtype", f"must be one of {', '.join(MODEL_DTYPES)}")
    pattern, owners = [], []
    for i, c in enumerate(compressed):
        pattern.append(SLIDING_MLA)
        owners.append(i)
        if c:
            pattern.append(COMPRESSED_MLA)
            owners.append(i)
    return Geometry(
        name=name,
        model_type="deepseek_v41" if layout.v41 else "deepseek_v4",
        num_layers=len(pattern),
        num_attention_heads=num_attention_heads,
        num_kv_heads=1,
        head_dim=layout.head_dim,
        v_head_dim=layout.head_dim,
        layer_pattern="".join(pattern),
        sliding_window=layout.sliding_window,
        dtype=dtype,
        max_position_embeddings=max_position_embeddings,
        decoder_layers=tuple(owners),
        num_decoder_layers=n,
        weight_dtype=weight_dtype,
        expert_weight_dtype=expert_weight_dtype,
        dsv4=layout,
    )


def _dsv4_layout(
    compress_ratios: tuple[int, ...],
    sliding_window: int,
    head_dim: int,
    index_head_dim: int,
    err: type[InvalidInput],
    p: str,
) -> Dsv4Layout:
    """DeepSeek-V4's ratios, checked as its compressor takes them (0 read as 1, sliding only)."""
    ratios = tuple(max(1, r) for r in compress_ratios)
    for i, r in enumerate(compress_ratios):
        if isinstance(r, bool) or r not in (0, 1, 4, 128):
            # CompressorStateCache (vllm/models/deepseek_v4/compressor.py) asserts 4 or 128.
            raise err(f"{p}compress_ratios[{i}]", f"vLLM's compressor takes 4 and 128 (0: none), got {r!r}")
    if 128 in ratios and 4 not in ratios:
        # No indexer: the layout is not block-outermost and vLLM cannot unify the compressed MLA
        # pages (kv_cache_planning.py unify_kv_cache_spec_page_size raises NotImplementedError).
        raise err(
            p + "compress_ratios",
            "ratio-128 layers with no ratio-4 layer: vLLM 0.33.0 cannot unify their pages and does not start",
        )
    return Dsv4Layout(
        ratios=ratios, sliding_window=sliding_window, head_dim=head_dim, index_head_dim=index_head_dim
    )


def _dsv41_layout(
    compress_ratios: tuple[int, ...],
    kv_sources: tuple[int, ...],
    index_sources: tuple[int, ...],
    sliding_window: int,
    head_dim: int,
    index_head_dim: int,
    err: type[InvalidInput],
    p: str,
) -> Dsv4Layout:
    """DeepSeek-V4.1's ratios and source layers, as vllm/models/deepseek_v41/attention.py checks
    them: ratios 0 (sliding window), 1 and 2; a compressed layer reads the latest kv and index
    source at or below it; the sources kept are those within the layers, sorted."""
    n = len(compress_ratios)
    for i, r in enumerate(compress_ratios):
        if isinstance(r, bool) or r not in (0, 1, 2):
            raise err(
                f"{p}compress_ratios[{i}]", f"DeepSeek-V4.1 takes 0 (sliding window), 1 and 2, got {r!r}"
            )
    for field, ids in (("kv_source_layer_ids", kv_sources), ("index_source_layer_ids", index_sources)):
        for j, i in enumerate(ids):
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i:
                raise err(f"{p}{field}[{j}]", f"must be a layer index, got {i!r}")
    for i in kv_sources:
        if i < n and compress_ratios[i] == 0:
            raise err(p + "kv_source_layer_ids", f"layer {i} is a kv source with compress ratio 0")
    # The first source of each kind, once: a source list may hold many ids past the layers.
    first_kv, first_index = min(kv_sources, default=n), min(index_sources, default=n)
    for i, r in enumerate(compress_ratios):
        if r and max(first_kv, first_index) > i:
            # DeepseekV4Attention.__init__ raises: a compressed layer reads the latest source below it.
            field = "kv_source_layer_ids" if first_kv > i else "index_source_layer_ids"
            raise err(p + field, f"compressed layer {i} has no kv and index source at or below it")
    return Dsv4Layout(
        ratios=tuple(compress_ratios),
        sliding_window=sliding_window,
        head_dim=head_dim,
        index_head_dim=index_head_dim,
        v41=True,
        kv_sources=tuple(sorted({i for i in kv_sources if i < n})),
        index_sources=tuple(sorted({i for i in index_sources if i < n})),
    )


def _indexer(
    layers: tuple[int, ...] | None, dim: int | None, pattern: str, p: str
) -> tuple[tuple[int, ...] | None, int | None]:
    """The full-attention layers with an indexer cache, checked (None when there are none)."""
    if not layers:
        return None, None
    dim = pos_int(dim, p + "indexer_dim", MAX_HEAD_DIM)
    said = "must list, in order and once each, full-attention layers (0-based)"
    listed = Wording(said, said, said, said)
    for i in layers:
        if pattern[integer(i, p + "indexer_layers", len(pattern) - 1, 0, InvalidInput, listed)] != FULL:
            raise InvalidInput(p + "indexer_layers", said)
    if list(layers) != sorted(set(layers)):
        raise InvalidInput(p + "indexer_layers", said)
    return tuple(layers), dim


def check_mamba(m: MambaState, p: str) -> None:
    """Every dimension the mixer's shape formula reads is a positive integer in bounds."""
    needed = {
        Mixer.MAMBA1: ("intermediate_size", "state_size"),
        Mixer.MAMBA2: ("intermediate_size", "state_size", "n_groups", "num_heads", "head_dim"),
        Mixer.GATED_DELTA_NET: ("num_k_heads", "num_v_heads", "head_k_dim", "head_v_dim"),
        Mixer.SHORT_CONV: ("intermediate_size",),
        Mixer.LINEAR_ATTENTION: ("num_heads", "head_dim"),
    }[m.mixer]
    pos_int(m.conv_kernel, p + "conv_kernel", MAX_HEAD_DIM)
    for f in needed:
        pos_int(getattr(m, f), p + f, MAX_HIDDEN_SIZE)
    for f in ("conv_dtype", "ssm_dtype"):
        if getattr(m, f) not in MODEL_DTYPES:
            raise InvalidInput(p + f, f"must be one of {', '.join(MODEL_DTYPES)}")
    if m.checkpoint_blocks not in (0, 1):
        raise InvalidInput(p + "checkpoint_blocks", "must be 0 or 1")
