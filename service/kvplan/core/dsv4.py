"""DeepSeek-V4's KV caches and how vLLM 0.33.0 packs them into groups (docs/vllm-rules.md §8.8).

Every decoder layer keeps a sliding-window cache of its last `sliding_window` tokens; a compressed
layer (ratio r = compress_rates[layer_types[i]] > 1) also keeps its compressed MLA cache (one
state per r tokens) and its compressor's ring of pending states, and a ratio-4 layer an indexer
K cache with a compressor ring of its own. vLLM sizes each of them as a spec of its own, with a
fixed block for the rings and the window, and packs them into block-outermost groups. The CUDA
path is modelled (DeepseekV4FlashMLAAttention, SM 9x / 10x), whose cache is fp8_ds_mla."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .concurrency import blocks_for_shape
from .errors import InvalidInput, InvalidLayout
from .geometry import CIRCULAR_BUFFER, MLA, SLIDING_MLA, Dsv4Layout
from .gpu_arch import sm_major
from .ledger import LedgerBuilder
from .units import cdiv

if TYPE_CHECKING:  # groups imports pertoken, which reads this module's token bytes
    from .groups import GroupPlan

SRC_ATTN = "vllm/models/deepseek_v4/attention.py"
SRC_SWA = "vllm/v1/attention/backends/mla/sparse_swa.py (DeepseekV4SWACache)"
SRC_COMPRESSOR = "vllm/models/deepseek_v4/compressor.py (CompressorStateCache)"
SRC_PACKING = "vllm/v1/core/kv_cache_planning.py (_get_packed_kv_cache_groups)"

# DeepseekV4Attention: 448 B NoPE + 128 B RoPE + 8 B scale a token in fp8_ds_mla, pages padded to
# 576 B (MLAAttentionSpec / SlidingWindowMLASpec alignment).
TOKEN_BYTES = 584
PAGE_ALIGNMENT = 576
SWA_BLOCK = 64  # DeepseekV4SWACache's fixed block
# FLASHMLA_SPARSE_DSV4 and DEEPSEEK_V4_INDEXER take kernel blocks of 256 tokens: the manager block
# must be a multiple (vllm/v1/worker/utils.py select_common_block_size), and 256 is what vLLM picks
# when none is given (vllm/platforms/interface.py _preferred_block_size_for_backends).
KERNEL_BLOCK = 256
COMPRESSOR_BLOCK = {4: 4, 128: 8}  # CompressorStateCache: ratio 4 → 4, ratio 128 → 8
STATE_BYTES = 4  # compressor states are float32
# DeepSeek-V4.1 on SM90 (vllm/models/deepseek_v41): FlashMLA and the V4.1 indexer take 64-token
# kernel blocks there (sparse_mla.py, backends/mla/indexer.py), the window cache 32-token blocks
# (attention.py), the ratio-2 compressor a ring of 8 rows without speculative tokens
# (compressor.py CompressorStateCache: max(8, next power of two of drafts + 2)).
V41_KERNEL_BLOCK = 64
V41_SWA_BLOCK = 32
V41_RING_ROWS = 8
# Compute-capability majors (core/gpu_arch.py, by the GPU's name) whose layout kvplan plans: V4's
# FlashMLA layout is one on 9.x and 10.x (its backends support those only; 12.x takes FlashInfer,
# AMD the ROCm code), V4.1's 9.x (10.x runs mega attention with other records).
V4_SM = (9, 10)
V41_SM = 9
SRC_V41 = "vllm/models/deepseek_v41/attention.py"
# kv_cache_dtype values vLLM runs as fp8_ds_mla (attention.py _resolve_dsv4_kv_cache_dtype): V4 any
# fp8 (and auto); V4.1 auto, fp8 and fp8_ds_mla itself (nvfp4_ds_mla needs SM100's records).
V41_KV_DTYPES = ("auto", "fp8", "fp8_ds_mla")


@dataclass(frozen=True, slots=True)
class CacheSpec:
    """One layer's cache as vLLM specs it: kind (MLA grows with the context, SLIDING_MLA keeps a
    window), block, page bytes (padded), window and the stride a block must be a multiple of."""

    layer: int
    role: str
    kind: str
    block_size: int
    page_bytes: int
    window: int | None
    stride_alignment: int


def _page(states: int, cell: int) -> int:
    """_apply_alignment_padding in vllm/v1/kv_cache_interface.py: the page rounded up to 576 B."""
    return -(-states * cell // PAGE_ALIGNMENT) * PAGE_ALIGNMENT


def check_kv_dtype(kv_cache_dtype: str, layout: Dsv4Layout) -> str:
    """The cache dtype DeepSeek-V4 runs with: fp8_ds_mla, for auto and every fp8 (V4.1: auto, fp8
    and fp8_ds_mla); attention.py _resolve_dsv4_kv_cache_dtype raises for anything else."""
    ok = (
        kv_cache_dtype in V41_KV_DTYPES
        if layout.v41
        else kv_cache_dtype == "auto" or kv_cache_dtype.startswith("fp8")
    )
    if not ok:
        raise InvalidInput(
            "kv_cache_dtype",
            f"DeepSeek-V4{'.1' if layout.v41 else ''}'s FlashMLA cache is fp8_ds_mla only: vLLM refuses "
            f"{kv_cache_dtype!r} (use auto or fp8)",
        )
    return "fp8_ds_mla"


def kernel_block(layout: Dsv4Layout) -> int:
    """The kernel block of the sparse MLA and indexer backends, and the block vLLM picks."""
    return V41_KERNEL_BLOCK if layout.v41 else KERNEL_BLOCK


def check_block_size(block_size: int, layout: Dsv4Layout) -> None:
    k = kernel_block(layout)
    if block_size % k:
        raise InvalidInput(
            "block_size",
            f"DeepSeek-V4{'.1' if layout.v41 else ''}'s sparse MLA and indexer kernels take blocks of {k} "
            f"tokens: vLLM finds no kernel block for {block_size} (use a multiple of {k})",
        )


def check_gpu(layout: Dsv4Layout, gpu_name: str) -> None:
    """DeepSeek-V4.1's records and kernels follow the GPU: kvplan plans the SM90 one. DeepSeek-V4's
    are one on SM90 and SM100 (assumed where the GPU is not named); another named GPU is refused
    (InvalidLayout: a fleet plan marks that GPU infeasible)."""
    sm = sm_major(gpu_name) if gpu_name else None
    if not layout.v41:
        if sm is not None and sm not in V4_SM:
            raise InvalidLayout(
                "gpu",
                f"DeepSeek-V4's FlashMLA caches are planned for SM90 and SM100 GPUs (H100, H200, B200); "
                f"{gpu_name!r} runs another backend or none (SM120: FlashInfer; ROCm: its own)",
            )
        return
    if sm != V41_SM:
        raise InvalidLayout(
            "gpu",
            "DeepSeek-V4.1's caches follow the GPU (SM100 runs FlashMLA mega attention with NVFP4 and MXFP8 "
            "records, SM120 FlashInfer); kvplan plans SM90 (H100, H200, H20): name one as the gpu"
            + (f", not {gpu_name!r}" if gpu_name else ""),
        )


def cache_specs(layout: Dsv4Layout, block_size: int) -> tuple[CacheSpec, ...]:
    """Every cache, in the order the layers register them (indexer K cache, its compressor, the
    sliding-window cache, the compressed MLA cache, the compressor): vLLM buckets them in it."""
    check_block_size(block_size, layout)
    if layout.v41:
        return _v41_cache_specs(layout, block_size)
    hd, out = layout.head_dim, []

    def stride(states_at_kernel_block: int, cell: int) -> int:
        # KVCacheSpec.get_block_stride_alignment: blocks split into 256-token kernel blocks keep a
        # whole kernel page each.
        return 1 if block_size == KERNEL_BLOCK else _page(states_at_kernel_block, cell)

    for i, r in enumerate(layout.ratios):
        if r == 4:
            cell = layout.index_cell_bytes
            out.append(CacheSpec(i, "indexer", MLA, block_size, _page(block_size // 4, cell), None,
                                 stride(KERNEL_BLOCK // 4, cell)))  # fmt: skip
            ring = 2 * 2 * layout.index_head_dim * STATE_BYTES
            out.append(CacheSpec(i, "indexer_compressor", SLIDING_MLA, 4, _page(4, ring), 8, 1))
        out.append(CacheSpec(i, "swa", SLIDING_MLA, SWA_BLOCK, _page(SWA_BLOCK, TOKEN_BYTES),
                             layout.sliding_window, 1))  # fmt: skip
        if r > 1:
            coff = 1 + (r == 4)  # the ratio-4 compressor overlaps two windows
            out.append(CacheSpec(i, "compressed", MLA, block_size, _page(block_size // r, TOKEN_BYTES), None,
                                 stride(KERNEL_BLOCK // r, TOKEN_BYTES)))  # fmt: skip
            b = COMPRESSOR_BLOCK[r]
            out.append(CacheSpec(i, "compressor", SLIDING_MLA, b, _page(b, 2 * coff * hd * STATE_BYTES),
                                 coff * r, 1))  # fmt: skip
    return tuple(out)


def check_stages(layout: Dsv4Layout, stages: Sequence[tuple[int, int]]) -> None:
    """DeepSeek-V4.1: a stage must hold the kv source of every compressed layer it has (attention.py
    raises NotImplementedError for a pipeline split inside a kv-sharing group)."""
    if not layout.v41:
        return
    for a, b in stages:
        for i in range(a, b):
            if layout.ratios[i] and max(s for s in layout.kv_sources if s <= i) < a:
                raise InvalidLayout(
                    "pipeline_parallel_size",
                    f"the stage from layer {a} splits a DeepSeek-V4.1 kv-sharing group (layer {i} reads the "
                    "caches of a layer on the stage before): vLLM raises NotImplementedError",
                )


def _v41_cache_specs(layout: Dsv4Layout, block_size: int) -> tuple[CacheSpec, ...]:
    """DeepSeek-V4.1 on SM90, in registration order: a kv source's compressed MLA cache (the
    attention layer registers first), its indexer K cache when it is an index source too, every
    layer's window cache, and at ratio 2 the compressor ring (CircularBufferSpec: one block a
    request, no page padding)."""
    out = []

    def stride(states_at_kernel_block: int, cell: int) -> int:
        return 1 if block_size == V41_KERNEL_BLOCK else _page(states_at_kernel_block, cell)

    for i, r in enumerate(layout.ratios):
        if i in layout.kv_sources:
            out.append(CacheSpec(i, "compressed", MLA, block_size, _page(block_size // r, TOKEN_BYTES), None,
                                 stride(V41_KERNEL_BLOCK // r, TOKEN_BYTES)))  # fmt: skip
            if i in layout.index_sources:
                cell = layout.index_cell_bytes
                out.append(CacheSpec(i, "indexer", MLA, block_size, _page(block_size // r, cell), None,
                                     stride(V41_KERNEL_BLOCK // r, cell)))  # fmt: skip
        out.append(CacheSpec(i, "swa", SLIDING_MLA, V41_SWA_BLOCK, _page(V41_SWA_BLOCK, TOKEN_BYTES),
                             layout.sliding_window, 1))  # fmt: skip
        if i in layout.kv_sources and r > 1:
            ring = V41_RING_ROWS * 2 * layout.head_dim * STATE_BYTES
            out.append(CacheSpec(i, "ring", CIRCULAR_BUFFER, V41_RING_ROWS, ring, None, 1))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class PackedGroup:
    kind: str
    block_size: int
    window: int | None
    specs: tuple[CacheSpec, ...]

    @property
    def page_bytes(self) -> int:
        return sum(s.page_bytes for s in self.specs)


def bytes_per_block(groups: Sequence[PackedGroup], first: int = 0, end: int | None = None) -> int:
    """_get_kv_cache_bytes_per_block over the caches of decoder layers [first, end) (a pipeline
    stage's worker holds its own layers' share of every group): the widest group's pages, rounded
    up to the lcm of the caches' block-stride alignments."""
    mine = [[s for s in g.specs if first <= s.layer and (end is None or s.layer < end)] for g in groups]
    widest = max(sum(s.page_bytes for s in specs) for specs in mine)
    align = math.lcm(*(s.stride_alignment for specs in mine for s in specs))
    return -(-widest // align) * align


def pack(specs: Sequence[CacheSpec]) -> tuple[tuple[PackedGroup, ...], int]:
    """The groups and the bytes a block takes (get_kv_cache_groups: one group when every cache is
    the same, else _get_packed_kv_cache_groups for the block-outermost layout the indexer asks
    for; then _get_kv_cache_bytes_per_block)."""
    from .groups import approximate_gcd  # groups reads pertoken, which reads this module

    first = specs[0]
    key = (first.kind, first.block_size, first.window, first.page_bytes)
    if all((s.kind, s.block_size, s.window, s.page_bytes) == key for s in specs):
        group = PackedGroup(first.kind, first.block_size, first.window, tuple(specs))
        return (group,), group.page_bytes
    # Buckets of one type (UniformTypeKVCacheSpecs.is_uniform_type: one block size; all growing,
    # or all sliding with one window), in first-seen order.
    buckets: dict[tuple[str, int, int | None], list[CacheSpec]] = {}
    for s in specs:
        buckets.setdefault((s.kind, s.block_size, s.window), []).append(s)
    info = []
    for bucket in buckets.values():
        by_page: dict[int, list[CacheSpec]] = {}
        for s in bucket:
            by_page.setdefault(s.page_bytes, []).append(s)
        balanced = len({len(v) for v in by_page.values()}) == 1
        most = max(len(v) for v in by_page.values())
        info.append((bucket, by_page, balanced, most))
    floor = max((most for _, by_page, balanced, most in info if balanced and len(by_page) > 1), default=0)
    repeats = approximate_gcd([most for _, _, balanced, most in info if balanced], floor) if floor else None

    def n_groups(balanced: bool, most: int) -> int:
        return cdiv(most, repeats) if balanced and repeats is not None else 1

    def is_state(bucket: list[CacheSpec]) -> bool:
        # Rings (and Mamba, not here) may go down to one layer a group; so may unsplit sliding
        # buckets.
        return bucket[0].kind == CIRCULAR_BUFFER or (repeats is None and bucket[0].kind == SLIDING_MLA)

    def widest(by_page: dict[int, list[CacheSpec]], n: int) -> int:
        return sum(cdiv(len(v), n) * page for page, v in by_page.items())

    anchor = max(
        widest(by_page, len(bucket) if is_state(bucket) else n_groups(balanced, most))
        for bucket, by_page, balanced, most in info
    )
    groups: list[PackedGroup] = []
    for bucket, by_page, balanced, most in info:
        n = n_groups(balanced, most)
        if anchor and is_state(bucket):
            n = max(n, cdiv(len(bucket), max(anchor // bucket[0].page_bytes, 1)))
        s0 = bucket[0]
        if n == 1:
            groups.append(PackedGroup(s0.kind, s0.block_size, s0.window, tuple(bucket)))
            continue
        pattern = list(zip(*by_page.values(), strict=False))
        for j in range(n):
            members = tuple(s for repeat in pattern[j::n] for s in repeat)
            groups.append(PackedGroup(s0.kind, s0.block_size, s0.window, members))
    return tuple(groups), bytes_per_block(groups)


def plan(layout: Dsv4Layout, block_size: int, stages: Sequence[tuple[int, int]] = ()) -> GroupPlan:
    """The KV groups of a DeepSeek-V4 model as a GroupPlan: one KvGroup a packed group, its layers
    the decoder layers of its caches, its window the ring's or the sliding window. With pipeline
    `stages` (decoder layer ranges), vLLM groups the whole model once and each stage's worker
    holds its layers' share (kv_cache_planning.py _project_kv_cache_groups_to_worker)."""
    from .groups import GroupPlan, KvGroup

    specs = cache_specs(layout, block_size)
    groups, _ = pack(specs)
    by_stage = tuple(bytes_per_block(groups, a, b) for a, b in stages or ((0, len(layout.ratios)),))
    kv_groups = tuple(
        KvGroup(g.kind, g.block_size, tuple(sorted({s.layer for s in g.specs})), g.window, len(g.specs))
        for g in groups
    )
    # No layer slots are padded (group_size 0 marks packed groups); each group's bytes short of
    # the widest are in the ledger (explain).
    page = max(g.page_bytes for g in groups)
    return GroupPlan(kv_groups, 0, 0, page, by_stage, (), False)


_ROLE_NAMES = {
    "ring": "compressor ring",
    "swa": "sliding-window cache",
    "compressed": "compressed MLA cache",
    "indexer": "indexer K cache",
    "compressor": "compressor ring",
    "indexer_compressor": "indexer compressor ring",
}


def explain(
    led: LedgerBuilder, layout: Dsv4Layout, block_size: int, bytes_per_block: int, inflight: int, tokens: int
) -> None:
    """Ledger steps: what the caches are, each packed group (its caches, page, padding to the
    widest group, blocks a request of `tokens` needs) and the bytes a block takes."""
    specs = cache_specs(layout, block_size)
    groups, _ = pack(specs)
    widest = max(g.page_bytes for g in groups)
    if layout.v41:
        led.add(
            "kv_cache_groups[dsv4.1]",
            "every layer a sliding-window cache; a kv-source layer its compressed MLA cache (r tokens a "
            "state), an indexer K cache if also an index source, at r = 2 a compressor ring; the layers "
            "after a source read its caches; SM90 records; packed block-outermost",
            len(groups),
            "groups",
            SRC_PACKING,
            layers=len(layout.ratios),
            kv_source_layers=len(layout.kv_sources),
            index_source_layers=len(layout.index_sources),
            caches=len(specs),
            kv_cache_dtype="fp8_ds_mla",
        )
    else:
        led.add(
            "kv_cache_groups[dsv4]",
            "every layer a sliding-window cache; ratio r > 1 a compressed MLA cache (r tokens a state) and "
            "a compressor ring; r = 4 an indexer K cache and its ring; packed block-outermost",
            len(groups),
            "groups",
            SRC_PACKING,
            layers=len(layout.ratios),
            ratio_4_layers=layout.ratios.count(4),
            ratio_128_layers=layout.ratios.count(128),
            caches=len(specs),
            kv_cache_dtype="fp8_ds_mla",
        )
    for j, g in enumerate(groups):
        bound = None if g.window is None else g.window - 1 + inflight
        blocks = blocks_for_shape(g.kind, g.block_size, bound or 0, tokens, 1)
        rule = (
            "cdiv(min(W − 1 + F, T), block) + 1"
            if g.window is not None
            else "1 (a ring)"
            if g.kind == CIRCULAR_BUFFER
            else "cdiv(T, block)"
        )
        led.add(
            f"kv_cache_group[{j}]",
            f"Σ its caches' pages (576-B aligned, a ring's unpadded); blocks a request: {rule}"
            if g.kind == CIRCULAR_BUFFER
            else f"Σ its caches' pages (576-B aligned); blocks a request: {rule}",
            g.page_bytes,
            "B",
            SRC_V41 if layout.v41 else SRC_SWA if g.window is not None else SRC_ATTN,
            caches=len(g.specs),
            of=", ".join(_ROLE_NAMES[r] for r in dict.fromkeys(s.role for s in g.specs)),
            layers=len({s.layer for s in g.specs}),
            block_size=g.block_size,
            window=g.window,
            F=inflight if g.window is not None else None,
            T=tokens,
            padding_to_widest=widest - g.page_bytes,
            blocks_per_request=blocks,
        )
    led.add(
        "bytes_per_block",
        "the widest group's pages (a pipeline stage: its own layers' share), rounded up to the lcm of "
        "the compressed caches' 256-token pages; the widest stage",
        bytes_per_block,
        "B",
        "vllm/v1/core/kv_cache_planning.py (_get_kv_cache_bytes_per_block, "
        "_project_kv_cache_groups_to_worker)",
        block_size=block_size,
        widest_group_page=widest,
    )
