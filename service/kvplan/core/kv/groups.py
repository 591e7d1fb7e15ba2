"""KV-cache groups: how vLLM lays layers of different kinds into one block pool
(docs/vllm-rules.md §8; vllm/v1/core/kv_cache_utils.py get_kv_cache_groups and friends)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import InvalidInput, InvalidLayout
from ..memo import memo_bounded
from ..model.geometry import (
    CHUNKED,
    CIRCULAR_BUFFER,
    COMPRESSED_MLA,
    FULL,
    MAMBA,
    MAMBA_REPLICATED,
    MLA,
    SCONV,
    SLIDING,
    SLIDING_MLA,
    SUMMARY,
    Dsv4Layout,
)
from ..units import cdiv
from . import dsv4
from .layers import LayerBytes
from .packing import PackedSpec, Packing, pack

# Recurrent states (Mamba, and Qwen4-exp's TP-replicated PLE state): pages not per token.
RECURRENT = (MAMBA, MAMBA_REPLICATED)

# The smallest kernel block of the attention backends (FlashAttention: multiples of 16), and the
# alignment MLA decode kernels need in a Mamba hybrid (vllm/platforms/interface.py
# Platform._align_hybrid_block_size).
KERNEL_BLOCK_ALIGNMENT = 16
MLA_HYBRID_BLOCK_ALIGNMENT = 128
# Layers with side caches whose backends take block-outermost layouts only, so vLLM packs the
# groups (Step5's DSA: BLNHC; Qwen4-exp's QSAStateBackend: BLNHC/BLHNC).
PACKED_KINDS = frozenset({CIRCULAR_BUFFER, SUMMARY, COMPRESSED_MLA})
# Qwen4-exp QSA's main KV is bf16 or fp8 e4m3 (vllm/models/qwen4_exp/nvidia/qsa.py).
QSA_KV_DTYPES = frozenset({"bfloat16", "fp8", "fp8_e4m3"})
# Step5's DSA layers read eight-token pages (block_stride_alignment MultipleOf(8)) and its ring is
# addressed in 1 KiB rows (vllm/models/step5/nvidia/sparse_attention.py, csa_tail_ring.py).
DSA_KERNEL_BLOCK = 8
RING_ROW_BYTES = 1024
# The ring holds the open region's rows: 7 + speculative tokens (none modelled); summaries cover
# eight-token regions (sparse_summary_cache.py).
RING_MIN_ROWS = 7
SUMMARY_REGION = 8
# The DeepSeek-V3.2 indexer kernel's block (vllm/v1/attention/backends/mla/indexer.py
# DeepseekV32IndexerBackend.get_supported_kernel_block_sizes on CUDA).
INDEXER_KERNEL_BLOCK = 64


@dataclass(frozen=True, slots=True)
class KvGroup:
    kind: str
    block_size: int
    layers: tuple[int, ...]
    # A group's own window where its kind's window is not the model's (DeepSeek-V4's compressor
    # rings), and its caches where a layer keeps several (DeepSeek-V4: core/kv/dsv4.py).
    window: int | None = None
    caches: int = 0


@dataclass(frozen=True, slots=True)
class GroupPlan:
    groups: tuple[KvGroup, ...]
    group_size: int
    padding_slots: int
    page_bytes: int
    stage_bytes_per_block: tuple[int, ...]
    raised_block_sizes: tuple[tuple[str, int, int], ...]
    uniform: bool
    # (kind, block_size, number of groups) in first-seen order: groups of one shape need the
    # same blocks per request. class_windows: each class's own window (None: the kind's).
    classes: tuple[tuple[str, int, int], ...] = ()
    class_layers: tuple[int, ...] = ()
    min_block_size: int = 0
    class_windows: tuple[int | None, ...] = ()
    # Block-outermost packing (core/kv/packing.py): the packed groups, their caches and pages.
    packing: Packing | None = None

    def __post_init__(self) -> None:
        counts: dict[tuple[str, int, int | None], list[int]] = {}
        for g in self.groups:
            c = counts.setdefault((g.kind, g.block_size, g.window), [0, 0])
            c[0] += 1
            c[1] += g.caches or len(g.layers)
        object.__setattr__(self, "classes", tuple((k, bs, c[0]) for (k, bs, _), c in counts.items()))
        object.__setattr__(self, "class_layers", tuple(c[1] for c in counts.values()))
        object.__setattr__(self, "class_windows", tuple(w for (_, _, w) in counts))
        object.__setattr__(self, "min_block_size", min(g.block_size for g in self.groups))


@memo_bounded(4096, lambda lb, *_: len(lb.kinds))
def plan_groups(lb: LayerBytes, block_size: int, hybrid_manager: bool) -> GroupPlan:
    """The KV cache groups vLLM's manager makes of these layers at this block size: the packed
    plan for the families whose backends lay blocks out block-outermost, one group when every
    layer is of one kind (windowed ones counted full without the hybrid manager), else the
    hybrid plan. The one entry from layer bytes to groups (DeepSeek-V4 has plan_dsv4); it refuses
    the layouts kvplan does not model, naming the field."""
    if block_size < 1:
        raise InvalidInput("block_size", "must be at least 1")
    if SCONV in lb.kinds and not hybrid_manager:
        raise InvalidInput(
            "hybrid_kv_cache_manager",
            "Inkling's short-conv states are sliding windows of their own block size; kvplan does not model "
            "how vLLM plans them without the hybrid KV cache manager",
        )
    family = packed_family(lb)
    if family:
        # kvplan models the packed layouts (§8.6) with vLLM's defaults only.
        if not hybrid_manager:
            raise InvalidInput(
                "hybrid_kv_cache_manager",
                f"{family}'s block-outermost packed layout is modelled with the hybrid KV cache manager "
                "only (vLLM's default)",
            )
        if len(lb.stages) > 1:  # InvalidLayout: a fleet marks a staged layout infeasible, not the fleet
            raise InvalidLayout(
                "pipeline_parallel_size",
                f"{family}'s block-outermost packed layout is modelled on one stage only",
            )
        if lb.kpool_indexer is not None:
            return _packed_kpool(lb, block_size)
        if lb.packed_row_bytes:
            return _packed(lb, block_size)
        return _packed_side_caches(lb, block_size)
    # Without the hybrid manager, windowed layers keep every token (unify_hybrid_kv_cache_specs).
    kinds = lb.kinds if hybrid_manager else lb.kinds.replace(SLIDING, FULL).replace(CHUNKED, FULL)
    if len(set(kinds)) == 1:
        return _uniform(lb, kinds, block_size)
    return _hybrid(lb, kinds, block_size)


def packed_family(lb: LayerBytes) -> str:
    """The family whose backends lay blocks out block-outermost only, so that vLLM packs its
    groups (docs/vllm-rules.md §8.6), or "" (DeepSeek-V4 is planned by core/kv/dsv4.py)."""
    if lb.kpool_indexer is not None:
        return "GLM-5-next"
    if lb.packed_row_bytes:
        return "Dots3"
    if PACKED_KINDS & set(lb.kinds):
        return "Step5 / Qwen4-exp"
    return ""


def _uniform(lb: LayerBytes, kinds: str, bs: int) -> GroupPlan:
    """One group; a block holds every layer's page, pages may differ (UniformTypeKVCacheSpecs)."""
    if kinds[0] == MAMBA:
        stage_bpb = tuple(lb.mamba_state_gpu * (b - a) for a, b in lb.stages)
    else:
        stage_bpb = tuple(sum(lb.gpu[a:b]) * bs for a, b in lb.stages)
    group = KvGroup(kinds[0], bs, tuple(range(len(kinds))))
    return GroupPlan((group,), len(kinds), 0, 0, stage_bpb, (), True)


def packed_plan(
    packing: Packing, stages: Sequence[tuple[int, int]] = (), raised: tuple[tuple[str, int, int], ...] = ()
) -> GroupPlan:
    """The GroupPlan of packed groups (docs/vllm-rules.md §8.6): a KvGroup a packed group, its
    layers those of its caches (a side cache not counted as a layer); per pipeline stage the
    bytes a block takes there. No common slot count (group_size 0), no padded slots."""
    groups = tuple(
        KvGroup(
            g.kind,
            g.block_size,
            tuple(sorted({s.layer for s in g.specs})),
            g.window,
            sum(not s.side for s in g.specs),
        )
        for g in packing.groups
    )
    by_stage = packing.stages_bytes_per_block(stages) if stages else (packing.bytes_per_block,)
    return GroupPlan(groups, 0, 0, packing.widest, by_stage, raised, False, packing=packing)


def _packed(lb: LayerBytes, bs: int) -> GroupPlan:
    """Dots3's caches for the packed layout its padded sparse backend asks for (BLHNC; docs/
    vllm-rules.md §8.7): a sliding-window MLA layer one page; a sparse layer its padded latent
    (whole rows: align_blocks_to_rows) and, unless it reuses another's top-k, its indexer (whole
    64-token kernel blocks when the block is larger: KVCacheSpec.get_block_stride_alignment)."""
    row, idx = lb.packed_row_bytes * bs, lb.packed_indexer_bytes * bs
    kernel = math.gcd(INDEXER_KERNEL_BLOCK, bs)
    index_align = 1 if kernel == bs else kernel * lb.packed_indexer_bytes
    specs: list[PackedSpec] = []
    for i, k in enumerate(lb.kinds):
        if k == SLIDING_MLA:
            specs.append(PackedSpec(i, k, bs, lb.gpu[i] * bs))
        elif k == MLA:
            specs.append(PackedSpec(i, k, bs, row, lb.packed_row_bytes))
            if lb.gpu[i] * bs > row:
                specs.append(PackedSpec(i, k, bs, idx, index_align, side=True, role="indexer"))
        else:
            raise InvalidInput("model", "a packed layout holds sliding-window MLA and sparse MLA layers only")
    return packed_plan(pack(specs))


def align_hybrid_block_size(requested: int, attn_page_per_token: int, mamba_page: int, mla: bool) -> int:
    """The smallest attention block whose page holds a Mamba state, in multiples of the larger of
    the requested block and the kernel's (vllm/platforms/interface.py
    Platform._align_hybrid_block_size; prefill checkpoints align to 1 token on these mixers)."""
    align = max(KERNEL_BLOCK_ALIGNMENT, requested)
    if mla:
        align = max(align, MLA_HYBRID_BLOCK_ALIGNMENT)
    block = align * cdiv(mamba_page, align * attn_page_per_token)
    return KERNEL_BLOCK_ALIGNMENT * cdiv(block, KERNEL_BLOCK_ALIGNMENT)


def _hybrid(lb: LayerBytes, kinds: str, bs: int) -> GroupPlan:
    """Groups of layers of several kinds (vLLM's hybrid KV cache manager): the attention block
    raised so its page holds a Mamba state, one class a spec (kind, page, variant) with blocks
    raised until every page is the largest, the classes cut into groups of one common size (the
    rest padding), and per pipeline stage the bytes a block takes there."""
    raised: list[tuple[str, int, int]] = []
    attn_tok = max((b for k, b in zip(kinds, lb.gpu, strict=True) if k not in RECURRENT), default=0)
    if MAMBA in kinds and attn_tok:
        state = max(lb.mamba_state_gpu, lb.mamba_align_gpu)
        new_bs = align_hybrid_block_size(bs, attn_tok, state, MLA in kinds)
        if bs < new_bs:
            raised.append(("attention", bs, new_bs))
            bs = new_bs
    # Spec classes in first-seen order: (kind, bytes per token, what else tells specs apart).
    classes: dict[tuple[str, int, int], list[int]] = {}
    for i, k in enumerate(kinds):
        key = (k, 0 if k in RECURRENT else lb.gpu[i], lb.variants[i] if lb.variants else 0)
        classes.setdefault(key, []).append(i)
    # An sconv state's block is its kernel, whatever the requested block (vllm/models/inkling).
    own: dict[str, int] = {SCONV: lb.sconv_kernel}
    pages = {key: (key[1] * own.get(key[0], bs) if key[0] not in RECURRENT else 0) for key in classes}
    max_page = max(pages.values()) or lb.mamba_state_gpu
    block_sizes: dict[tuple[str, int, int], int] = {}
    for key, page in pages.items():
        if key[0] in RECURRENT:
            if (lb.mamba_replicated_gpu if key[0] == MAMBA_REPLICATED else lb.mamba_state_gpu) > max_page:
                raise InvalidInput("model", "Mamba state larger than the attention page")
            block_sizes[key] = bs
            continue
        if page and max_page % page and key[0] in (FULL, SLIDING, CHUNKED):
            # A non-MLA attention page that does not divide the largest is padded to it, its
            # block kept (unify_kv_cache_spec_page_size).
            block_sizes[key] = bs
            continue
        if page == 0 or max_page % page:
            raise InvalidInput(
                "block_size" if SCONV in kinds else "kv_cache_dtype_skip_layers",
                f"page sizes {page} and {max_page} bytes cannot be unified by "
                "raising the block size (vLLM raises NotImplementedError)",
            )
        ratio = max_page // page
        base = own.get(key[0], bs)
        block_sizes[key] = base * ratio
        if ratio > 1:
            raised.append((key[0], base, base * ratio))
    counts = [len(v) for v in classes.values()]
    lo, hi = min(counts), max(counts)
    group_size = hi if hi < lo * 1.5 else lo
    groups: list[KvGroup] = []
    padding = 0
    for key, layers in classes.items():
        n_groups = cdiv(len(layers), group_size)
        padding += n_groups * group_size - len(layers)
        for j in range(n_groups):
            groups.append(KvGroup(key[0], block_sizes[key], tuple(layers[j::n_groups])))
    # Per stage, the most layers any one group has there: O(layers), not O(stages × layers).
    stage_of = [0] * len(kinds)
    for stage, (a, b) in enumerate(lb.stages):
        stage_of[a:b] = [stage] * (b - a)
    most = [0] * len(lb.stages)
    for g in groups:
        per_stage: dict[int, int] = {}
        for i in g.layers:
            per_stage[stage_of[i]] = per_stage.get(stage_of[i], 0) + 1
        for stage, n in per_stage.items():
            most[stage] = max(most[stage], n)
    stage_bpb = [m * max_page for m in most]
    return GroupPlan(tuple(groups), group_size, padding, max_page, tuple(stage_bpb), tuple(raised), False)


def _packed_side_caches(lb: LayerBytes, bs: int) -> GroupPlan:
    """Step5's and Qwen4-exp's caches for the packed layout their backends ask for (docs/
    vllm-rules.md §8.7): the attention block raised for a Mamba state (padded to the attention
    page), each entry's page at its block (a Step5 ring: its full-attention layer's page; QSA's
    ring compress_ratio rows in a block of as many tokens, its compressed keys one a
    compress_ratio tokens), then packed (§8.6)."""
    kinds, qsa = lb.kinds, lb.qsa
    step5 = SUMMARY in kinds
    raised: list[tuple[str, int, int]] = []
    attn_tok = max((b for k, b in zip(kinds, lb.gpu, strict=True) if k == FULL), default=0)
    mamba_page = replicated_page = 0
    if MAMBA in kinds and attn_tok:
        # Platform._align_hybrid_block_size sizes the attention block for the largest state, and
        # pads the states to the attention page unless it already equals that largest state.
        largest = max(lb.mamba_state_gpu, lb.mamba_align_gpu)
        new_bs = align_hybrid_block_size(bs, attn_tok, largest, False)
        if bs < new_bs:
            raised.append(("attention", bs, new_bs))
            bs = new_bs
        mamba_page = lb.mamba_state_gpu if bs * attn_tok == largest else bs * attn_tok
        replicated_page = lb.mamba_replicated_gpu if bs * attn_tok == largest else bs * attn_tok
    specs: list[PackedSpec] = []
    served = 0
    for i, k in enumerate(kinds):
        block = bs
        if k not in (FULL, SLIDING, SUMMARY, CIRCULAR_BUFFER, COMPRESSED_MLA, *RECURRENT):
            raise InvalidInput("model", f"a {k!r} layer beside packed KV groups is not modelled")
        if k == FULL:
            served = lb.gpu[i]
        if k == MAMBA:
            page = mamba_page
        elif k == MAMBA_REPLICATED:
            page = replicated_page
        elif qsa is not None and k in (CIRCULAR_BUFFER, COMPRESSED_MLA):
            if k == COMPRESSED_MLA and lb.dtypes[i + 1] not in QSA_KV_DTYPES:
                raise InvalidInput(
                    "kv_cache_dtype",
                    f"Qwen4-exp QSA keeps its KV in bf16 or fp8 (e4m3), not {lb.dtypes[i + 1]}",
                )
            # qsa_cache.py: the ring holds compress_ratio rows in a block of as many tokens, the
            # compressed cache one key per compress_ratio tokens of the attention block.
            if bs % qsa.compress_ratio:
                raise InvalidInput(
                    "block_size",
                    f"{bs}: QSA's compress ratio {qsa.compress_ratio} must divide the block size",
                )
            block = qsa.compress_ratio if k == CIRCULAR_BUFFER else bs
            page = (
                qsa.compress_ratio * qsa.ring_row_bytes
                if k == CIRCULAR_BUFFER
                else bs // qsa.compress_ratio * qsa.key_bytes
            )
        else:
            # A Step5 ring's page is the page of the full-attention layer it follows (csa_tail_ring.py).
            page = (served if k == CIRCULAR_BUFFER else lb.gpu[i]) * bs
        if k == SUMMARY and bs % SUMMARY_REGION:
            raise InvalidInput("block_size", f"{bs}: Step5's KV blocks must align to eight-token regions")
        if (
            k == CIRCULAR_BUFFER
            and qsa is None
            and (page % RING_ROW_BYTES or page // RING_ROW_BYTES < RING_MIN_ROWS)
        ):
            raise InvalidInput(
                "block_size",
                f"{bs}: Step5's CSA tail ring needs {RING_MIN_ROWS} rows of {RING_ROW_BYTES} B in one "
                f"{page}-byte KV page (vLLM refuses: increase --block-size)",
            )
        # Block stride alignments: Step5's DSA layers read 8-token kernel pages (none when that is
        # the block), its ring 1 KiB rows (sparse_attention.py, csa_tail_ring.py).
        align = 1
        if step5 and k == FULL and math.gcd(DSA_KERNEL_BLOCK, bs) != bs:
            align = math.gcd(DSA_KERNEL_BLOCK, bs) * lb.gpu[i]
        elif step5 and k == CIRCULAR_BUFFER:
            align = RING_ROW_BYTES
        # The summaries and the compressed keys are full-attention specs of the attention block.
        bucket = FULL if k in (SUMMARY, COMPRESSED_MLA) else ""
        specs.append(PackedSpec(i, k, block, page, align, bucket=bucket))
    return packed_plan(pack(specs), raised=tuple(raised))


# GLM-5-next's caches beside its sparse MLA latent: an indexer state of index_head_dim fp8 bytes and
# a 4-byte scale a 128 (DeepseekV32IndexerCache), a pool of index_kpool tokens to a state; the
# ring keeps the open pool's raw keys and gate scores, 2 bf16 rows of index_head_dim a token
# (vllm/models/glm5next/common/attention.py Glm5NextIndexerCache, Glm5NextTailCache).
_PAGED_MQA_STATES = (32, 64)  # DeepGEMM's paged-MQA pages (vllm/utils/deep_gemm.py), SM 9.x
_SPARSE_MLA_KERNEL_BLOCK = 64  # FLASHINFER_MLA_SPARSE_SM90: multiples of 64
_RING_ROW_BYTES = 2 * 2  # [K, gate score] × bf16


def _kpool_specs(lb: LayerBytes, bs: int) -> list[PackedSpec]:
    """GLM-5-next's caches at block size bs, in layer order: a KDA layer's state padded to the
    latent page (mamba_page_size_padded); an MLA layer's latent (whole rows:
    align_blocks_to_rows), its indexer (whole kernel blocks of up to index_kpool × 64 tokens:
    vllm/v1/worker/utils.py customize_attention_spec) and its ring of index_kpool tokens
    (Glm5NextTailCache, no speculative tokens)."""
    assert lb.kpool_indexer is not None
    head, kpool = lb.kpool_indexer
    latent = next(b for k, b in zip(lb.kinds, lb.gpu, strict=True) if k == MLA)
    state_bytes = head + head // 128 * 4
    kernel_block = math.gcd(kpool * _PAGED_MQA_STATES[-1], bs)
    index_align = 1 if kernel_block == bs else kernel_block // kpool * state_bytes
    specs: list[PackedSpec] = []
    for i, k in enumerate(lb.kinds):
        if k == MAMBA:
            specs.append(PackedSpec(i, MAMBA, bs, bs * latent))
        elif k == MLA:
            specs.append(PackedSpec(i, MLA, bs, bs * latent, latent))
            specs.append(
                PackedSpec(i, MLA, bs, bs // kpool * state_bytes, index_align, side=True, role="indexer")
            )
            specs.append(PackedSpec(i, CIRCULAR_BUFFER, kpool, kpool * head * _RING_ROW_BYTES, role="ring"))
        else:
            raise InvalidInput("model", f"a {k!r} layer beside GLM-5-next's packed layout is not modelled")
    return specs


def _packed_kpool(lb: LayerBytes, requested: int) -> GroupPlan:
    """GLM-5-next on an SM 9.x GPU (docs/vllm-rules.md §8.7): KDA layers (Mamba states), sparse MLA
    layers each with a kpool indexer and a ring, whose backend reads the block-outermost layout
    only: its block rule, then packed (§8.6)."""
    assert lb.kpool_indexer is not None
    kpool = lb.kpool_indexer[1]
    latent = next(b for k, b in zip(lb.kinds, lb.gpu, strict=True) if k == MLA)  # one latent row
    # Platform.update_block_size_for_backend (vllm/platforms/interface.py): the indexer backend,
    # registered first, takes index_kpool × 32 or 64 tokens; the block holds a KDA state
    # (_align_hybrid_block_size, MLA: at least 128) in multiples of every backend's smallest block.
    kernel = kpool * _PAGED_MQA_STATES[0]
    align = max(kernel, requested, MLA_HYBRID_BLOCK_ALIGNMENT)
    bs = align * cdiv(lb.mamba_state_gpu, align * latent)
    backends = math.lcm(kernel, _SPARSE_MLA_KERNEL_BLOCK)
    bs = backends * cdiv(bs, backends)
    raised = (("attention", requested, bs),) if requested < bs else ()
    return packed_plan(pack(_kpool_specs(lb, bs)), raised=raised)


def plan_dsv4(layout: Dsv4Layout, block_size: int, stages: Sequence[tuple[int, int]] = ()) -> GroupPlan:
    """The KV groups of a DeepSeek-V4 model: its caches packed (docs/vllm-rules.md §8.6), a group's
    layers the decoder layers of its caches, its window the ring's or the sliding window. With
    pipeline `stages` (decoder layer ranges), vLLM groups the whole model once and each stage's
    worker holds its layers' share (kv_cache_planning.py _project_kv_cache_groups_to_worker)."""
    return packed_plan(pack(dsv4.cache_specs(layout, block_size)), stages or ((0, len(layout.ratios)),))
