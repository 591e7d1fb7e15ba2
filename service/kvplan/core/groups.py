"""KV-cache groups: how vLLM lays layers of different kinds into one block pool
(docs/vllm-rules.md §8; vllm/v1/core/kv_cache_utils.py get_kv_cache_groups and friends)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .errors import InvalidInput
from .geometry import (
    CHUNKED,
    CIRCULAR,
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
)
from .memo import memo_bounded
from .pertoken import LayerBytes
from .units import cdiv

STATES = (MAMBA, MAMBA_REPLICATED)

# The smallest kernel block of the attention backends (FlashAttention: multiples of 16), and the
# alignment MLA decode kernels need in a Mamba hybrid (vllm/platforms/interface.py
# Platform._align_hybrid_block_size).
KERNEL_BLOCK_ALIGNMENT = 16
MLA_HYBRID_BLOCK_ALIGNMENT = 128
# Layers with side caches whose backends take block-outermost layouts only, so vLLM packs the
# groups (Step5's DSA: BLNHC; Qwen4-exp's QSAStateBackend: BLNHC/BLHNC).
PACKED_KINDS = frozenset({CIRCULAR, SUMMARY, COMPRESSED_MLA})
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
    # rings), and its caches where a layer keeps several (DeepSeek-V4: core/dsv4.py).
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
    # Block-outermost packing (Step5 DSA): each group's page bytes (the sum of its layers' pages),
    # and the block stride alignment, the lcm of every layer's.
    packed_pages: tuple[int, ...] = ()
    block_alignment: int = 0

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
    if block_size < 1:
        raise InvalidInput("block_size", "must be at least 1")
    if SCONV in lb.kinds and not hybrid_manager:
        raise InvalidInput(
            "hybrid_kv_cache_manager",
            "Inkling's short-conv states are sliding windows of their own block size; kvplan does not model "
            "how vLLM plans them without the hybrid KV cache manager",
        )
    if lb.kpool_indexer is not None:
        return _packed_kpool(lb, block_size, hybrid_manager)
    if PACKED_KINDS & set(lb.kinds):
        if not hybrid_manager:
            raise InvalidInput(
                "hybrid_kv_cache_manager",
                "layers with side caches packed block-outermost (Step5's DSA, Qwen4-exp's QSA) are "
                "planned with the hybrid KV cache manager only",
            )
        if len(lb.stages) > 1:
            raise InvalidInput(
                "pipeline_parallel_size",
                "block-outermost packed KV groups (Step5's DSA, Qwen4-exp's QSA) are modelled for "
                "one pipeline stage only",
            )
        return _packed_side_caches(lb, block_size)
    # Without the hybrid manager, windowed layers keep every token (unify_hybrid_kv_cache_specs).
    kinds = lb.kinds if hybrid_manager else lb.kinds.replace(SLIDING, FULL).replace(CHUNKED, FULL)
    if lb.packed_row_bytes:
        if not hybrid_manager:
            raise InvalidInput(
                "hybrid_kv_cache_manager",
                "kvplan plans Dots3's sliding-window MLA beside its padded sparse layers only with "
                "vLLM's hybrid KV cache manager (its default)",
            )
        return _packed(lb, kinds, block_size)
    if len(set(kinds)) == 1:
        return _uniform(lb, kinds, block_size)
    return _hybrid(lb, kinds, block_size)


def _uniform(lb: LayerBytes, kinds: str, bs: int) -> GroupPlan:
    """One group; a block holds every layer's page, pages may differ (UniformTypeKVCacheSpecs)."""
    if kinds[0] == MAMBA:
        stage_bpb = tuple(lb.mamba_state_gpu * (b - a) for a, b in lb.stages)
    else:
        stage_bpb = tuple(sum(lb.gpu[a:b]) * bs for a, b in lb.stages)
    group = KvGroup(kinds[0], bs, tuple(range(len(kinds))))
    return GroupPlan((group,), len(kinds), 0, 0, stage_bpb, (), True)


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """The repeats per group that pad the buckets least, ties to the larger (vllm/v1/core/
    kv_cache_planning.py _approximate_gcd)."""
    best, best_pad = lower_bound, -1
    for d in range(lower_bound, max(values) + 1):
        pad = sum((d - x % d) % d for x in values)
        if best_pad < 0 or pad < best_pad or (pad == best_pad and d > best):
            best, best_pad = d, pad
    return best


def _packed(lb: LayerBytes, kinds: str, bs: int) -> GroupPlan:
    """A block-outermost layout (BLHNC, the only one Dots3's padded sparse backend takes): pages are
    packed side by side in a block, not unified (vllm/v1/core/kv_cache_planning.py
    _get_packed_kv_cache_groups). Layers are bucketed by spec type; a sparse layer is two pages, its
    padded latent and (unless it reuses another's top-k) its indexer. A bucket with as many pages
    of each size is a repeating pattern; the largest such mixed bucket stays whole and bounds the
    repeats per group from below (_approximate_gcd picks them), the others split into groups of
    about that many repeats. Without a mixed pattern the sliding bucket is a state bucket: split
    into as many groups as the widest group needs to hold its pages. A block holds the widest
    group's pages, rounded to every layer's block stride alignment (_get_kv_cache_bytes_per_block)."""
    if len(lb.stages) > 1:
        raise InvalidInput(
            "pipeline_parallel_size",
            "kvplan plans the packed (block-outermost) layout of Dots3's padded sparse MLA on one "
            "pipeline stage only",
        )
    row, idx = lb.packed_row_bytes * bs, lb.packed_indexer_bytes * bs
    # Per bucket: its layers and, per page size, how many pages (first seen first).
    buckets: dict[str, tuple[list[int], dict[int, int]]] = {}
    for i, k in enumerate(kinds):
        if k not in (SLIDING_MLA, MLA):
            raise InvalidInput("model", "a packed layout holds sliding-window MLA and sparse MLA layers only")
        layers, pages = buckets.setdefault(k, ([], {}))
        layers.append(i)
        parts = [lb.gpu[i] * bs] if k == SLIDING_MLA else [row] + ([idx] if lb.gpu[i] * bs > row else [])
        for page in parts:
            pages[page] = pages.get(page, 0) + 1
    balanced = {k: len(set(pages.values())) == 1 for k, (_, pages) in buckets.items()}
    most = {k: max(pages.values()) for k, (_, pages) in buckets.items()}
    floor = max((most[k] for k, (_, pages) in buckets.items() if balanced[k] and len(pages) > 1), default=0)
    repeats = approximate_gcd([most[k] for k in buckets if balanced[k]], floor) if floor else 0

    def n_groups(k: str) -> int:
        return -(-most[k] // repeats) if balanced[k] and repeats else 1

    def widest(k: str, n: int) -> int:
        return sum(-(-count // n) * page for page, count in buckets[k][1].items())

    def state(k: str) -> bool:  # vLLM: sliding buckets when no repeat pattern sets the split
        return not repeats and k == SLIDING_MLA

    anchor = max(widest(k, len(buckets[k][0]) if state(k) else n_groups(k)) for k in buckets)
    groups: list[KvGroup] = []
    for k, (layers, pages) in buckets.items():
        n = n_groups(k)
        if state(k):
            n = max(n, -(-len(layers) // max(anchor // next(iter(pages)), 1)))
        groups.extend(KvGroup(k, bs, tuple(layers[j::n])) for j in range(n))
    bytes_needed = max(sum(lb.gpu[i] for i in g.layers) * bs for g in groups)
    # Block stride alignments: the padded sparse rows' (align_blocks_to_rows); the indexer's whole
    # kernel blocks when the block splits into several (KVCacheSpec.get_block_stride_alignment).
    align = lb.packed_row_bytes if MLA in buckets else 1
    kernel = math.gcd(INDEXER_KERNEL_BLOCK, bs)
    if MLA in buckets and kernel != bs and len(buckets[MLA][1]) > 1:  # an indexer among them
        align = math.lcm(align, kernel * lb.packed_indexer_bytes)
    bpb = cdiv(bytes_needed, align) * align
    size = repeats or max(len(g.layers) for g in groups)
    return GroupPlan(tuple(groups), size, 0, bpb, (bpb,), (), len(buckets) == 1)


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
    raised: list[tuple[str, int, int]] = []
    attn_tok = max((b for k, b in zip(kinds, lb.gpu, strict=True) if k not in STATES), default=0)
    if MAMBA in kinds and attn_tok:
        state = max(lb.mamba_state_gpu, lb.mamba_align_gpu)
        new_bs = align_hybrid_block_size(bs, attn_tok, state, MLA in kinds)
        if bs < new_bs:
            raised.append(("attention", bs, new_bs))
            bs = new_bs
    # Spec classes in first-seen order: (kind, bytes per token, what else tells specs apart).
    classes: dict[tuple[str, int, int], list[int]] = {}
    for i, k in enumerate(kinds):
        key = (k, 0 if k in STATES else lb.gpu[i], lb.variants[i] if lb.variants else 0)
        classes.setdefault(key, []).append(i)
    # An sconv state's block is its kernel, whatever the requested block (vllm/models/inkling).
    own: dict[str, int] = {SCONV: lb.sconv_kernel}
    pages = {key: (key[1] * own.get(key[0], bs) if key[0] not in STATES else 0) for key in classes}
    max_page = max(pages.values()) or lb.mamba_state_gpu
    block_sizes: dict[tuple[str, int, int], int] = {}
    for key, page in pages.items():
        if key[0] in STATES:
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
    """Groups packed block-outermost (docs/vllm-rules.md §8.7; vllm/v1/core/kv_cache_planning.py
    _get_packed_kv_cache_groups): no page unification. Layers are bucketed by spec type in layer
    order (full attention with the summary caches or compressed keys beside it, as one type; the
    rings; the sliding layers; the Mamba states); a bucket holding each page size as often is a
    repeating pattern, and every such bucket splits into groups of the same number of repeats
    (approximate_gcd, no fewer than the largest mixed bucket's); ring, Mamba and (when nothing
    repeats) sliding buckets are split to fit the widest group. A block is the widest group's
    pages, rounded up to every layer's stride alignment."""
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
    pages: list[int] = []
    blocks: list[int] = []
    served = 0
    for i, k in enumerate(kinds):
        block = bs
        if k not in (FULL, SLIDING, SUMMARY, CIRCULAR, COMPRESSED_MLA, *STATES):
            raise InvalidInput("model", f"a {k!r} layer beside packed KV groups is not modelled")
        if k == FULL:
            served = lb.gpu[i]
        if k == MAMBA:
            page = mamba_page
        elif k == MAMBA_REPLICATED:
            page = replicated_page
        elif qsa is not None and k in (CIRCULAR, COMPRESSED_MLA):
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
            block = qsa.compress_ratio if k == CIRCULAR else bs
            page = (
                qsa.compress_ratio * qsa.ring_row_bytes
                if k == CIRCULAR
                else bs // qsa.compress_ratio * qsa.key_bytes
            )
        else:
            # A Step5 ring's page is the page of the full-attention layer it follows (csa_tail_ring.py).
            page = (served if k == CIRCULAR else lb.gpu[i]) * bs
        if k == SUMMARY and bs % SUMMARY_REGION:
            raise InvalidInput("block_size", f"{bs}: Step5's KV blocks must align to eight-token regions")
        if (
            k == CIRCULAR
            and qsa is None
            and (page % RING_ROW_BYTES or page // RING_ROW_BYTES < RING_MIN_ROWS)
        ):
            raise InvalidInput(
                "block_size",
                f"{bs}: Step5's CSA tail ring needs {RING_MIN_ROWS} rows of {RING_ROW_BYTES} B in one "
                f"{page}-byte KV page (vLLM refuses: increase --block-size)",
            )
        pages.append(page)
        blocks.append(block)
    # Buckets of one uniform type (UniformTypeKVCacheSpecs.is_uniform_type), named by their first
    # layer's kind: full attention, the summaries and the compressed keys are all full-attention
    # specs of one block size.
    buckets: dict[str, dict[int, list[int]]] = {}
    first: dict[str, str] = {}
    for i, k in enumerate(kinds):
        key = FULL if k in (SUMMARY, COMPRESSED_MLA) else k
        first.setdefault(key, k)
        buckets.setdefault(key, {}).setdefault(pages[i], []).append(i)
    # (kind, layers by page, balanced, most layers of one page size)
    info = [
        (key, by_page, len({len(v) for v in by_page.values()}) == 1, max(len(v) for v in by_page.values()))
        for key, by_page in buckets.items()
    ]
    floor = max((most for _, by_page, bal, most in info if bal and len(by_page) > 1), default=0)
    repeats = approximate_gcd([most for *_, bal, most in info if bal], floor) if floor else None

    def n_groups(balanced: bool, most: int) -> int:
        return cdiv(most, repeats) if balanced and repeats is not None else 1

    def state(key: str) -> bool:
        return key in (CIRCULAR, *STATES) or (repeats is None and key == SLIDING)

    def widest(by_page: dict[int, list[int]], n: int) -> int:
        return sum(cdiv(len(v), n) * page for page, v in by_page.items())

    anchor = max(
        widest(by_page, sum(map(len, by_page.values())) if state(key) else n_groups(bal, most))
        for key, by_page, bal, most in info
    )
    groups: list[KvGroup] = []
    for key, by_page, bal, most in info:
        layers = sorted(i for v in by_page.values() for i in v)
        n = n_groups(bal, most)
        if state(key):
            n = max(n, cdiv(len(layers), max(anchor // pages[layers[0]], 1)))
        if n == 1:
            groups.append(KvGroup(first[key], blocks[layers[0]], tuple(layers)))
            continue
        repeat = list(zip(*by_page.values(), strict=False))
        for j in range(n):
            members = tuple(sorted(i for r in repeat[j::n] for i in r))
            groups.append(KvGroup(first[key], blocks[layers[0]], members))
    group_pages = tuple(sum(pages[i] for i in g.layers) for g in groups)
    align = 1
    if step5:
        kernel = math.gcd(DSA_KERNEL_BLOCK, bs)
        for i, k in enumerate(kinds):
            if k == FULL and kernel != bs:
                align = math.lcm(align, kernel * lb.gpu[i])
            elif k == CIRCULAR:
                align = math.lcm(align, RING_ROW_BYTES)
    bpb = cdiv(max(group_pages), align) * align
    return GroupPlan(
        tuple(groups),
        repeats or max(len(g.layers) for g in groups),  # as Dots3's packed groups report it
        0,
        max(group_pages),
        (bpb,),
        tuple(raised),
        False,
        packed_pages=group_pages,
        block_alignment=align,
    )


# GLM-5-next's caches beside its sparse MLA latent: an indexer state of index_head_dim fp8 bytes and
# a 4-byte scale a 128 (DeepseekV32IndexerCache), a pool of index_kpool tokens to a state; the
# ring keeps the open pool's raw keys and gate scores, 2 bf16 rows of index_head_dim a token
# (vllm/models/glm5next/common/attention.py Glm5NextIndexerCache, Glm5NextTailCache).
_PAGED_MQA_STATES = (32, 64)  # DeepGEMM's paged-MQA pages (vllm/utils/deep_gemm.py), SM 9.x
_SPARSE_MLA_KERNEL_BLOCK = 64  # FLASHINFER_MLA_SPARSE_SM90: multiples of 64
_RING_ROW_BYTES = 2 * 2  # [K, gate score] × bf16


def packed_pages(lb: LayerBytes, bs: int) -> tuple[int, int, int, int]:
    """(latent page, indexer page, ring page, block-stride step) of one GLM-5-next MLA layer at
    block size bs. The sparse MLA reads whole latent rows (align_blocks_to_rows); the indexer whole
    kernel blocks of up to index_kpool × 64 tokens (vllm/v1/worker/utils.py
    customize_attention_spec); a block's bytes are a multiple of both."""
    assert lb.kpool_indexer is not None
    head, kpool = lb.kpool_indexer
    latent = next(b for k, b in zip(lb.kinds, lb.gpu, strict=True) if k == MLA)
    state_bytes = head + head // 128 * 4
    kernel_block = math.gcd(kpool * _PAGED_MQA_STATES[-1], bs)
    index_align = 1 if kernel_block == bs else kernel_block // kpool * state_bytes
    return (
        bs * latent,
        bs // kpool * state_bytes,
        kpool * head * _RING_ROW_BYTES,
        math.lcm(latent, index_align),
    )


def _packed_kpool(lb: LayerBytes, requested: int, hybrid_manager: bool) -> GroupPlan:
    """GLM-5-next on an SM 9.x GPU: KDA layers (Mamba states), sparse MLA layers each with a kpool
    indexer and a ring. The ring's backend reads the block-outermost layout only, so vLLM packs the
    unequal pages of its groups side by side in each block (vllm/v1/core/kv_cache_planning.py
    _get_packed_kv_cache_groups, _get_kv_cache_bytes_per_block)."""
    assert lb.kpool_indexer is not None
    if len(lb.stages) > 1:
        raise InvalidInput("pipeline_parallel_size", "GLM-5-next's packed layout is modelled without stages")
    if not hybrid_manager:
        raise InvalidInput("hybrid_kv_cache_manager", "GLM-5-next's packed layout needs the hybrid manager")
    kpool = lb.kpool_indexer[1]
    mla_layers = tuple(i for i, k in enumerate(lb.kinds) if k == MLA)
    mamba_layers = tuple(i for i, k in enumerate(lb.kinds) if k == MAMBA)
    latent = lb.gpu[mla_layers[0]]  # bytes a token of one MLA layer (one latent row)
    # Platform.update_block_size_for_backend (vllm/platforms/interface.py): the indexer backend,
    # registered first, takes index_kpool × 32 or 64 tokens; the block holds a KDA state
    # (_align_hybrid_block_size, MLA: at least 128) in multiples of every backend's smallest block.
    kernel = kpool * _PAGED_MQA_STATES[0]
    align = max(kernel, requested, MLA_HYBRID_BLOCK_ALIGNMENT)
    bs = align * cdiv(lb.mamba_state_gpu, align * latent)
    backends = math.lcm(kernel, _SPARSE_MLA_KERNEL_BLOCK)
    bs = backends * cdiv(bs, backends)
    # Glm5NextTailCache: a ring of index_kpool tokens (no speculative tokens); it must divide the block.
    ring = kpool
    page, index_page, ring_page, step = packed_pages(lb, bs)
    m, k = len(mla_layers), len(mamba_layers)
    # Buckets: the KDA states; the latents with their indexers (a 1:1 pattern, kept whole); the rings.
    repeats = approximate_gcd([c for c in (k, m, m) if c], lower_bound=m)
    anchor = max(page if k else 0, m * (page + index_page), ring_page)
    mamba_groups = max(cdiv(k, repeats), cdiv(k, max(anchor // page, 1))) if k else 0
    ring_groups = max(cdiv(m, repeats), cdiv(m, max(anchor // ring_page, 1)))
    groups: list[KvGroup] = [KvGroup(MAMBA, bs, mamba_layers[j::mamba_groups]) for j in range(mamba_groups)]
    groups.append(KvGroup(MLA, bs, mla_layers))
    groups += [KvGroup(CIRCULAR_BUFFER, ring, mla_layers[j::ring_groups]) for j in range(ring_groups)]
    widest = max(
        m * (page + index_page),
        max((cdiv(k, mamba_groups) * page for _ in (0,) if mamba_groups), default=0),
        cdiv(m, ring_groups) * ring_page,
    )
    bytes_per_block = step * cdiv(widest, step)
    raised = (("attention", requested, bs),) if requested < bs else ()
    return GroupPlan(tuple(groups), m, 0, page, (bytes_per_block,), raised, False)
