"""Bytes one token of KV costs in each layer, on one GPU and unsharded: the per-layer figures
every KV answer is built from (docs/vllm-rules.md §1, §5, §6; page sizes as
vllm/v1/kv_cache_interface.py). The per-token answer and its ledger are pertoken.py."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import msgspec

from .. import warnings as w
from ..engine.dtypes import (
    FP8_PER_TENSOR,
    INDEXER_SCALE_BYTES,
    MODEL_DTYPES,
    attention_cell_bytes,
    check_kv_dtype,
    mla_cell_bytes,
    resolve_kv_dtype,
)
from ..errors import InvalidInput
from ..memo import memo_bounded
from ..model.geometry import (
    CHUNKED,
    CIRCULAR_BUFFER,
    COMPRESSED_MLA,
    FULL,
    KIND_NAMES,
    MAMBA,
    MAMBA_REPLICATED,
    MLA,
    SCONV,
    SLIDING,
    SLIDING_MLA,
    SUMMARY,
    Geometry,
    QsaCaches,
)
from ..model.mamba import state_bytes
from ..units import cdiv
from . import dsv4
from .parallel import Parallel, check_sizes, kv_heads_per_gpu, kv_stage_ranges, validate

SRC_PAGE = "vllm/v1/kv_cache_interface.py (page_size_bytes)"
SRC_TP = "vllm/v1/kv_cache_interface.py, vllm/config/model.py (get_num_kv_heads)"

SKIP_SLIDING = "sliding_window"
# Step5's summary cache: one 256-byte FP8 summary per 8 tokens, one head whatever the TP
# (vllm/models/step5/nvidia/sparse_summary_cache.py, FullAttentionSpec tokens_per_state=8).
SUMMARY_STATE_BYTES = 256
SUMMARY_TOKENS_PER_STATE = 8
SRC_SUMMARY = "vllm/models/step5/nvidia/sparse_summary_cache.py (FullAttentionSpec, tokens_per_state=8)"
# MiniMax-M3's indexer cache: one key of indexer_dim a token, in bf16 whatever the KV dtype
# (attention_config.indexer_kv_dtype "auto"; vllm/models/minimax_m3/common/indexer.py).
INDEXER_CACHE_DTYPE = "bfloat16"
SRC_INDEXER = "vllm/models/minimax_m3/common/indexer.py (MiniMaxM3IndexerCache)"
# The KV dtypes MiniMax-M3's sparse attention takes on CUDA before Blackwell (Triton:
# vllm/models/minimax_m3/common/sparse_attention.py MiniMaxM3SparseBackend); nvfp4 needs SM100.
SPARSE_FULL_KV_DTYPES = frozenset({"bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"})
# Inkling keeps its short-convolution state in bf16 (the model dtype, which it requires), and its
# attention spec carries no quantization mode: scaled KV dtypes have no page it describes
# (vllm/models/inkling/nvidia/attention.py, sconv_swa_attn.py).
SCONV_DTYPE = "bfloat16"
SRC_SCONV = "vllm/models/inkling/nvidia/sconv_swa_attn.py (InklingConvState)"
# Qwen4-exp QSA's compressed keys and the rings (Step5's CSA tail, QSA's raw keys): one page a
# request, sized in core/kv/groups.py.
SRC_QSA = "vllm/models/qwen4_exp/common/qsa_cache.py (QSACompressedKeyCache, MLAAttentionSpec)"
SRC_RING = (
    "vllm/models/step5/nvidia/csa_tail_ring.py, vllm/models/qwen4_exp/common/qsa_cache.py "
    "(CircularBufferSpec)"
)
INKLING_KV_DTYPES = frozenset({"bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2"})


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class KindBytes(msgspec.Struct, frozen=True, gc=False):
    kind: str
    layers: int
    kv_dtype: str
    bytes_per_token_per_layer: int
    bytes_per_token: int


@dataclass(frozen=True, slots=True, eq=False)
class LayerBytes:
    """Per-layer KV cost on one GPU (after TP) and unsharded, with every figure that does not
    depend on the context precomputed. Identity-hashed: instances are memoised per input."""

    kinds: str
    gpu: tuple[int, ...]
    model: tuple[int, ...]
    dtypes: tuple[str, ...]
    kv_heads_per_gpu: int
    stages: tuple[tuple[int, int], ...]
    mamba_state_gpu: int
    by_stage: tuple[int, ...]
    worst_stage: int
    model_total: int
    # Per stage: bytes/token of layers that keep every token (full, MLA), of sliding layers,
    # and the number of Mamba layers. The same for the whole unsharded model.
    stage_full: tuple[int, ...]
    stage_sliding: tuple[int, ...]
    stage_mamba: tuple[int, ...]
    # Bytes/token of chunked-local layers per stage and unsharded, and their chunk (0: none).
    stage_chunked: tuple[int, ...]
    model_chunked: int
    chunk: int
    model_full: int
    model_sliding: int
    by_kind: tuple[KindBytes, ...]
    mha_bytes: int
    warnings: tuple[w.Warning, ...]
    # The state page the attention block is sized for: the layers' state, or a larger replicated
    # one the platform also counts (MambaState.replicated_state_bytes).
    mamba_align_gpu: int = 0
    mamba_replicated_gpu: int = 0
    # Qwen4-exp QSA's side caches (their pages do not follow bytes per token × block).
    qsa: QsaCaches | None = None
    # A backend that lays blocks out block-outermost (Dots3's padded sparse MLA, BLHNC): the bytes
    # of one padded sparse row (its block stride alignment) and of one indexer row; 0 otherwise.
    packed_row_bytes: int = 0
    packed_indexer_bytes: int = 0
    # Inkling's short-convolution states: bytes/token per stage and unsharded, their window and
    # block (the kernel), and per entry what tells spec-distinct states of equal bytes apart
    # (their KV heads per GPU; 0 elsewhere).
    stage_sconv: tuple[int, ...] = ()
    model_sconv: int = 0
    sconv_kernel: int = 0
    variants: tuple[int, ...] = ()
    # GLM-5-next's kpool indexer (index_head_dim, index_kpool) beside its MLA layers: its pages
    # are not per token, and vLLM packs them block-outermost (groups.py _packed_kpool).
    kpool_indexer: tuple[int, int] | None = None


def _skip_set(geometry: Geometry, skip: tuple[int | str, ...]) -> frozenset[int]:
    out: set[int] = set()
    for i, s in enumerate(skip):
        field = f"kv_cache_dtype_skip_layers[{i}]"
        if s == SKIP_SLIDING:
            out.update(j for j, k in enumerate(geometry.layer_pattern) if k in (SLIDING, SLIDING_MLA))
        elif isinstance(s, int) and not isinstance(s, bool):
            if not 0 <= s < geometry.decoder_layer_count:
                raise InvalidInput(field, f"layer {s} is outside 0..{geometry.decoder_layer_count - 1}")
            owners = geometry.decoder_layers
            out.update([s] if owners is None else (j for j, o in enumerate(owners) if o == s))
        else:
            raise InvalidInput(field, f"must be a layer index or {SKIP_SLIDING!r}, got {s!r}")
    return frozenset(out)


def layer_bytes(
    geometry: Geometry,
    kv_cache_dtype: str,
    skip_layers: tuple[int | str, ...],
    par: Parallel,
) -> LayerBytes:
    """Validated, then cached. Types are checked before the cache: True == 1 as a key."""
    check_sizes(par)
    for i, s in enumerate(skip_layers):
        if isinstance(s, bool) or not isinstance(s, (int, str)):
            raise InvalidInput(
                f"kv_cache_dtype_skip_layers[{i}]", f"must be a layer index or {SKIP_SLIDING!r}, got {s!r}"
            )
    return _layer_bytes(geometry, kv_cache_dtype, skip_layers, par)


@memo_bounded(4096, lambda geometry, *_: geometry.num_layers)
def _per_layer(
    geometry: Geometry, kv_cache_dtype: str, skip_layers: tuple[int | str, ...], tensor: int
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[str, ...], int, tuple[KindBytes, ...], int]:
    """Per-layer bytes per token on one GPU and unsharded, each layer's dtype, the per-kind sums
    and the MHA-equivalent bytes. Independent of pipeline and context parallel, so their layouts
    share it."""
    check_kv_dtype(kv_cache_dtype)
    skip = _skip_set(geometry, skip_layers)
    base = resolve_kv_dtype(kv_cache_dtype, geometry.dtype)
    model_dtype = geometry.dtype
    hkv_gpu = kv_heads_per_gpu(geometry, tensor)
    indexed = _check_indexer(geometry, base, skip)
    _check_sconv(geometry, base, skip)
    cell_cache: dict[tuple[str, str, bool, bool], int] = {}
    sparse_set = None if geometry.sparse_mla_layers is None else frozenset(geometry.sparse_mla_layers)
    dsa_indexer_set = None if geometry.mla_indexer_layers is None else frozenset(geometry.mla_indexer_layers)

    def cell(kind: str, dtype: str, sparse: bool = False, own_indexer: bool = False) -> int:
        key = (kind, dtype, sparse, own_indexer)
        v = cell_cache.get(key)
        if v is None:
            if kind == SLIDING_MLA:
                v = mla_cell_bytes(dtype, geometry.sliding_mla_dim or 0, False)
            elif kind == MLA:
                # Rows padded to mla_row_dim (Dots3NotePaddedMLAAttention's physical_head_size).
                row = geometry.mla_row_dim or geometry.mla_latent_dim
                v = mla_cell_bytes(dtype, row, sparse)
                if own_indexer:  # DeepseekV32IndexerCache beside the layer
                    v += (geometry.index_head_dim or 0) + INDEXER_SCALE_BYTES
            elif kind == FULL and geometry.full_head_dim is not None:
                v = attention_cell_bytes(dtype, geometry.full_head_dim, geometry.full_head_dim)
            else:
                v = attention_cell_bytes(dtype, geometry.head_dim, geometry.v_head_dim)
            cell_cache[key] = v
        return v

    # Full layers with KV heads of their own (Gemma-4): vLLM shards them as any heads, max(1, H // TP).
    full_kv = geometry.full_kv_heads or geometry.num_kv_heads
    full_kv_gpu = max(1, full_kv // tensor)

    gpu, model, dtypes = [], [], []
    for i, kind in enumerate(geometry.layer_pattern):
        dtype = model_dtype if i in skip else base
        if geometry.dsv4 is not None:  # DeepSeek-V4: every cache fp8_ds_mla (core/kv/dsv4.py)
            c = dsv4_token_bytes(geometry, i, kv_cache_dtype)
            gpu.append(c)
            model.append(c)
            dtypes.append("fp8_ds_mla")
            continue
        if kind == SCONV:
            heads, width = sconv_head(geometry, i)
            per_head = width * MODEL_DTYPES[SCONV_DTYPE]
            gpu.append(heads // tensor * per_head)
            model.append(heads * per_head)
            dtypes.append(SCONV_DTYPE)
            continue
        if kind in (MAMBA, MAMBA_REPLICATED):
            gpu.append(0)
            model.append(0)
            dtypes.append(model_dtype)
            continue
        if kind == SUMMARY:
            gpu.append(SUMMARY_STATE_BYTES // SUMMARY_TOKENS_PER_STATE)
            model.append(SUMMARY_STATE_BYTES // SUMMARY_TOKENS_PER_STATE)
            dtypes.append("uint8")
            continue
        if kind == COMPRESSED_MLA and geometry.qsa is not None:
            # One key per compress_ratio tokens, one head on every TP rank (qsa_cache.py).
            q = geometry.qsa
            gpu.append(cdiv(q.key_bytes, q.compress_ratio))
            model.append(cdiv(q.key_bytes, q.compress_ratio))
            dtypes.append("bfloat16")
            continue
        if kind == CIRCULAR_BUFFER:
            # One page a request, the page of the full-attention layer it serves
            # (csa_tail_ring.py): no cost per token; core/kv/groups.py sizes its page.
            gpu.append(0)
            model.append(0)
            dtypes.append(dtype)
            continue
        # Checked on the base dtype: the skip list's interplay with these backends is not planned.
        if kind == MLA and geometry.mla_row_dim is not None and base not in MODEL_DTYPES:
            # vllm/models/dots3_note/nvidia/model.py: the padded sparse layers run
            # FlashAttnMLASparseImpl, which raises on any but a 16-bit KV cache.
            raise InvalidInput(
                "kv_cache_dtype",
                f"{base} on a sparse MLA layer with padded rows (Dots3): its backend "
                "(FlashAttnMLASparseImpl) takes only a 16-bit KV cache and vLLM refuses to start",
            )
        dsa = kind == MLA and geometry.index_head_dim is not None
        sparse = dsa and (sparse_set is None or i in sparse_set)
        if dsa and not sparse and base not in MODEL_DTYPES:
            # vllm/models/hy_v4/nvidia/attention.py: the first sparse layer's MLAAttention rewrites
            # the shared cache_config to fp8_ds_mla, which the dense layers built after it cannot
            # take (no dense MLA backend does): vLLM refuses to start.
            raise InvalidInput(
                "kv_cache_dtype",
                f"{base} with dense MLA layers beside sparse ones (HY-V4): the sparse layers turn the "
                "shared KV cache dtype into fp8_ds_mla, which no dense MLA backend takes",
            )
        if sparse and dtype in FP8_PER_TENSOR:
            dtype = "fp8_ds_mla"
        c = cell(kind, dtype, sparse, sparse and (dsa_indexer_set is None or i in dsa_indexer_set))
        if kind in (MLA, SLIDING_MLA):
            gpu.append(c)
            model.append(c)
        elif kind == FULL and geometry.full_kv_heads is not None:
            gpu.append(full_kv_gpu * c)
            model.append(full_kv * c)
        else:
            gpu.append(hkv_gpu * c)
            model.append(geometry.num_kv_heads * c)
        if i in indexed:  # one key-only head, kept whole on every TP rank
            gpu[-1] += indexed[i]
            model[-1] += indexed[i]
        dtypes.append(dtype)
    g, d = tuple(gpu), tuple(dtypes)
    kinds = _by_kind(geometry.layer_pattern, d, g)
    return g, tuple(model), d, hkv_gpu, kinds, mha_equivalent_bytes(geometry, kv_cache_dtype)


def sconv_head(geometry: Geometry, i: int) -> tuple[int, int]:
    """(KV heads, packed head width) of the short-conv state at entry i: its layer's attention
    heads, each packing K, V and a hidden / H chunk of the attention- and MLP-output streams,
    padded to a power of two (vllm/models/inkling/nvidia/sconv_swa_attn.py InklingConvState)."""
    full = geometry.layer_pattern[i + 1] == FULL
    heads = (geometry.full_kv_heads or geometry.num_kv_heads) if full else geometry.num_kv_heads
    dim = (geometry.full_head_dim or geometry.head_dim) if full else geometry.head_dim
    raw = 2 * dim + 2 * ((geometry.sconv_hidden_size or 0) // heads)
    return heads, 1 << (raw - 1).bit_length()


def _check_sconv(geometry: Geometry, kv_dtype: str, skip: frozenset[int]) -> None:
    """The KV settings vLLM serves Inkling with (its attention and conv state ignore the skip list
    and take no scaled KV dtype)."""
    if geometry.sconv_kernel_size is None:
        return
    if kv_dtype not in INKLING_KV_DTYPES:
        raise InvalidInput(
            "kv_cache_dtype",
            f"Inkling's attention builds its KV spec without a quantization mode, so {kv_dtype} is not a "
            "KV cache dtype kvplan can size for it (vllm/models/inkling/nvidia/attention.py): use auto, "
            + ", ".join(sorted(INKLING_KV_DTYPES)),
        )
    if skip:
        raise InvalidInput(
            "kv_cache_dtype_skip_layers",
            "Inkling's attention keeps the KV cache dtype whatever the skip list says; kvplan does not "
            "model the mix vLLM would plan",
        )


def _check_indexer(geometry: Geometry, kv_dtype: str, skip: frozenset[int]) -> dict[int, int]:
    """Layer → its indexer cache's bytes per token (MiniMax-M3's sparse layers), once the KV
    settings are ones vLLM serves those layers with."""
    if not geometry.indexer_layers or geometry.indexer_dim is None:
        return {}
    if kv_dtype not in SPARSE_FULL_KV_DTYPES:
        raise InvalidInput(
            "kv_cache_dtype",
            f"{kv_dtype} is not a KV cache dtype MiniMax-M3's sparse attention takes on this platform "
            f"(vllm/models/minimax_m3/common/sparse_attention.py): use auto, "
            + ", ".join(sorted(SPARSE_FULL_KV_DTYPES)),
        )
    if skip:
        raise InvalidInput(
            "kv_cache_dtype_skip_layers",
            "MiniMax-M3's sparse layers keep the KV cache dtype whatever the skip list says, and vLLM "
            "realigns the block for skipped layers; kvplan does not model the mix",
        )
    per_token = geometry.indexer_dim * MODEL_DTYPES[INDEXER_CACHE_DTYPE]
    return dict.fromkeys(geometry.indexer_layers, per_token)


@memo_bounded(4096, lambda geometry, *_: geometry.num_layers)
def _layer_bytes(
    geometry: Geometry,
    kv_cache_dtype: str,
    skip_layers: tuple[int | str, ...],
    par: Parallel,
) -> LayerBytes:
    """Every layer's KV bytes a token, on one GPU and in the whole model, with their sums by kind
    and pipeline stage and the layout's warnings: what the group plan, the per-token ledger and
    the memory checks all read, computed once a (geometry, dtype, skip list, layout) (memoised)."""
    validate(geometry, par)
    gpu, model, dtypes, hkv_gpu, kinds, mha = _per_layer(geometry, kv_cache_dtype, skip_layers, par.tensor)
    mamba_gpu = mamba_state_per_gpu(geometry, par.tensor)
    stages = kv_stage_ranges(geometry, par.pipeline)
    pattern = geometry.layer_pattern

    def split(a: int, b: int, values: tuple[int, ...]) -> tuple[int, int, int, int, int]:
        full = sliding = mamba = chunked = sconv = 0
        for i in range(a, b):
            k = pattern[i]
            if k in (SLIDING, SLIDING_MLA):
                sliding += values[i]
            elif k == SCONV:
                sconv += values[i]
            elif k == MAMBA:
                mamba += 1
            elif k == CHUNKED:
                chunked += values[i]
            else:
                full += values[i]
        return full, sliding, mamba, chunked, sconv

    per_stage = [split(a, b, gpu) for a, b in stages]
    by_stage = tuple(sum(gpu[a:b]) for a, b in stages)
    worst = max(range(len(by_stage)), key=lambda i: (by_stage[i], -i))
    model_full, model_sliding, _, model_chunked, model_sconv = split(0, len(pattern), model)
    return LayerBytes(
        kinds=pattern,
        gpu=gpu,
        model=model,
        dtypes=dtypes,
        kv_heads_per_gpu=hkv_gpu,
        stages=stages,
        mamba_state_gpu=mamba_gpu,
        by_stage=by_stage,
        worst_stage=worst,
        model_total=sum(model),
        stage_full=tuple(x[0] for x in per_stage),
        stage_sliding=tuple(x[1] for x in per_stage),
        stage_mamba=tuple(x[2] for x in per_stage),
        stage_chunked=tuple(x[3] for x in per_stage),
        model_chunked=model_chunked,
        chunk=geometry.attention_chunk_size or 0,
        model_full=model_full,
        model_sliding=model_sliding,
        by_kind=kinds,
        mha_bytes=mha,
        warnings=tuple(layout_warnings(geometry, frozenset(dtypes), par)),
        mamba_align_gpu=max(mamba_gpu, geometry.mamba.replicated_state_bytes if geometry.mamba else 0),
        mamba_replicated_gpu=geometry.mamba.replicated_state_bytes if geometry.mamba else 0,
        qsa=geometry.qsa,
        packed_row_bytes=_packed_row_bytes(geometry, dtypes),
        packed_indexer_bytes=(geometry.index_head_dim or 0) + INDEXER_SCALE_BYTES
        if geometry.mla_row_dim is not None
        else 0,
        stage_sconv=tuple(x[4] for x in per_stage),
        model_sconv=model_sconv,
        sconv_kernel=geometry.sconv_kernel_size or 0,
        variants=tuple(
            sconv_head(geometry, i)[0] // par.tensor if k == SCONV else 0 for i, k in enumerate(pattern)
        ),
        kpool_indexer=geometry.kpool_indexer,
    )


def dsv4_token_bytes(geometry: Geometry, entry: int, kv_dtype: str) -> int:
    """A DeepSeek-V4 entry's bytes a token: its sliding-window cache's 584 B (kept for the window),
    or a compressed layer's MLA state (and indexer K state at ratio 4) spread over the `ratio`
    tokens it stands for, rounded up. The pages the budget uses are exact (core/kv/dsv4.py)."""
    assert geometry.dsv4 is not None and geometry.decoder_layers is not None
    dsv4.check_kv_dtype(kv_dtype, geometry.dsv4)
    if geometry.layer_pattern[entry] == SLIDING_MLA:
        return dsv4.TOKEN_BYTES
    layout = geometry.dsv4
    layer = geometry.decoder_layers[entry]
    ratio = layout.ratios[layer]
    # index_sources is sorted (make_dsv41_geometry): a lookup, not a scan, for each of the layers.
    at = bisect_left(layout.index_sources, layer)
    indexed = (
        at < len(layout.index_sources) and layout.index_sources[at] == layer if layout.v41 else ratio == 4
    )
    state = dsv4.TOKEN_BYTES + (layout.index_cell_bytes if indexed else 0)
    return cdiv(state, ratio)


def _packed_row_bytes(geometry: Geometry, dtypes: tuple[str, ...]) -> int:
    """One padded sparse row (vllm/v1/attention/backends/mla/sparse_utils.py align_blocks_to_rows:
    the block stride is a whole number of rows); the layers are 16-bit (checked in _per_layer)."""
    if geometry.mla_row_dim is None:
        return 0
    i = geometry.layer_pattern.index(MLA)
    return geometry.mla_row_dim * MODEL_DTYPES[dtypes[i]]


def _by_kind(kinds: str, dtypes: tuple[str, ...], gpu: tuple[int, ...]) -> tuple[KindBytes, ...]:
    """Per-GPU bytes grouped by (layer kind, dtype), whole model after TP."""
    acc: dict[tuple[str, str, int], int] = {}
    for k, d, b in zip(kinds, dtypes, gpu, strict=True):
        key = (k, d, b)
        acc[key] = acc.get(key, 0) + 1
    return tuple(KindBytes(KIND_NAMES[k], n, d, b, n * b) for (k, d, b), n in acc.items())


def mha_equivalent_bytes(geometry: Geometry, kv_cache_dtype: str) -> int:
    """Per-token bytes with KV heads set back to the query heads (f = 2), TP = 1.
    MLA's MHA form is q_heads × (qk_nope_head_dim + v_head_dim)."""
    dtype = resolve_kv_dtype(kv_cache_dtype, geometry.dtype)
    if dtype == "fp8_ds_mla":
        dtype = "fp8"
    total = 0
    for kind in geometry.layer_pattern:
        if kind in (MAMBA, MAMBA_REPLICATED, SUMMARY, CIRCULAR_BUFFER, COMPRESSED_MLA, SCONV):
            continue
        if kind in (MLA, SLIDING_MLA):
            dk = geometry.qk_nope_head_dim or geometry.qk_rope_head_dim or 0
            dv = geometry.mla_v_head_dim or dk
            total += geometry.num_attention_heads * attention_cell_bytes(dtype, dk, dv)
        else:
            total += geometry.num_attention_heads * attention_cell_bytes(
                dtype, geometry.head_dim, geometry.v_head_dim
            )
    return total


def request_bytes(lb: LayerBytes, stage: int, tokens: int, window: int | None, dcp: int) -> int:
    """KV bytes one request of `tokens` holds on one GPU of `stage` (tokens actually kept:
    all for full/MLA layers, split by DCP; the window for sliding layers; the current chunk for
    chunked-local layers; the state for Mamba)."""
    kept_sliding = min(tokens, window) if window else tokens
    return (
        lb.stage_full[stage] * cdiv(tokens, dcp)
        + lb.stage_sliding[stage] * kept_sliding
        + lb.stage_chunked[stage] * min(tokens, lb.chunk)
        + lb.stage_mamba[stage] * lb.mamba_state_gpu
        # Replicated states (Qwen4-exp's PLE) run on one pipeline stage only.
        + lb.kinds.count(MAMBA_REPLICATED) * lb.mamba_replicated_gpu
        + (lb.stage_sconv[stage] * min(tokens, lb.sconv_kernel) if lb.stage_sconv else 0)
    )


def mamba_state_per_gpu(geometry: Geometry, tensor: int) -> int:
    """One Mamba layer's state on one GPU: from the mixer's dims (as vLLM shards them), or the
    inline total split evenly."""
    if geometry.mamba is not None:
        return state_bytes(geometry.mamba, tensor)
    return cdiv(geometry.mamba_state_bytes, tensor) if geometry.mamba_state_bytes else 0


def layout_warnings(geometry: Geometry, dtypes: frozenset[str], par: Parallel) -> list[w.Warning]:
    """The warnings the KV bytes themselves call for: a latent or KV heads replicated under TP,
    fp8 scales left at 1.0, nvfp4's one backend. They ride on LayerBytes so that every budget on
    this layout carries them without recomputing."""
    out = []
    if geometry.is_mla and par.tensor > 1:
        width = geometry.mla_row_dim or geometry.mla_latent_dim  # Dots3 pads its rows
        out.append(
            w.Warning(
                w.MLA_REPLICATED_UNDER_TP,
                f"MLA keeps the full {width}-wide latent on each of "
                f"the {par.tensor} TP ranks: per-GPU KV does not shrink with TP "
                "(use decode context parallel or data-parallel attention).",
            )
        )
    elif not geometry.is_mla and par.tensor > geometry.num_kv_heads:
        out.append(
            w.Warning(
                w.KV_HEADS_REPLICATED,
                f"TP {par.tensor} exceeds the {geometry.num_kv_heads} KV heads: each "
                "GPU holds one replicated KV head.",
            )
        )
    # DeepSeek-V4's fp8_ds_mla keeps a scale a token (block-scaled), not a default of 1.0.
    if geometry.dsv4 is None and dtypes & {"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"}:
        out.append(
            w.Warning(
                w.FP8_DEFAULT_SCALES,
                "fp8 KV cache sets every scale to 1.0 unless calibrated "
                "(llm-compressor); keep sensitive layers at the model dtype with "
                "kv_cache_dtype_skip_layers.",
            )
        )
    if "nvfp4" in dtypes:
        out.append(
            w.Warning(
                w.NVFP4_FLASHINFER_ONLY, "nvfp4 KV cache runs only on the FlashInfer attention backend."
            )
        )
    return out
