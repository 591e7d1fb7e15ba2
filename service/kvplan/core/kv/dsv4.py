"""DeepSeek-V4's KV caches and how vLLM 0.33.0 packs them into groups (docs/vllm-rules.md §8.8).

Every decoder layer keeps a sliding-window cache of its last `sliding_window` tokens; a compressed
layer (ratio r = compress_rates[layer_types[i]] > 1) also keeps its compressed MLA cache (one
state per r tokens) and its compressor's ring of pending states, and a ratio-4 layer an indexer
K cache with a compressor ring of its own. vLLM sizes each of them as a spec of its own, with a
fixed block for the rings and the window, and packs them into block-outermost groups. The CUDA
path is modelled (DeepseekV4FlashMLAAttention, SM 9x / 10x), whose cache is fp8_ds_mla."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import InvalidInput, InvalidLayout
from ..ledger import LedgerBuilder
from ..model.geometry import CIRCULAR_BUFFER, MLA, SLIDING_MLA, Dsv4Layout
from ..model.gpu_arch import sm_major
from .packing import PackedSpec, Packing

SRC_ATTN = "vllm/models/deepseek_v4/attention.py"

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
# Compute-capability majors (core/model/gpu_arch.py, by the GPU's name) whose layout kvplan plans: V4's
# FlashMLA layout is one on 9.x and 10.x (its backends support those only; 12.x takes FlashInfer,
# AMD the ROCm code), V4.1's 9.x (10.x runs mega attention with other records).
V4_SM = (9, 10)
V41_SM = 9
SRC_V41 = "vllm/models/deepseek_v41/attention.py"
# kv_cache_dtype values vLLM runs as fp8_ds_mla (attention.py _resolve_dsv4_kv_cache_dtype): V4 any
# fp8 (and auto); V4.1 auto, fp8 and fp8_ds_mla itself (nvfp4_ds_mla needs SM100's records).
V41_KV_DTYPES = ("auto", "fp8", "fp8_ds_mla")


def _spec(
    layer: int, role: str, kind: str, block: int, page: int, window: int | None, align: int
) -> PackedSpec:
    """One cache as the packer sees it (core/kv/packing.py): its kind (MLA grows with the context,
    SLIDING_MLA keeps a window), block, page (padded), window and block stride alignment."""
    return PackedSpec(layer, kind, block, page, align, window, role=role)


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
    are one on SM90 and SM100. Where the GPU is not named (or its name says nothing kvplan knows)
    that plan is assumed, as for the other GPU-dependent layouts (core/model/gpu_arch.py); another named
    GPU is refused (InvalidLayout: a fleet plan marks that GPU infeasible)."""
    sm = sm_major(gpu_name) if gpu_name else None
    if not layout.v41:
        if sm is not None and sm not in V4_SM:
            raise InvalidLayout(
                "gpu",
                f"DeepSeek-V4's FlashMLA caches are planned for SM90 and SM100 GPUs (H100, H200, B200); "
                f"{gpu_name!r} runs another backend or none (SM120: FlashInfer; ROCm: its own)",
            )
        return
    if sm is not None and sm != V41_SM:
        raise InvalidLayout(
            "gpu",
            "DeepSeek-V4.1's caches follow the GPU (SM100 runs FlashMLA mega attention with NVFP4 and MXFP8 "
            f"records, SM120 FlashInfer); kvplan plans SM90 (H100, H200, H20), not {gpu_name!r}",
        )


def cache_specs(layout: Dsv4Layout, block_size: int) -> tuple[PackedSpec, ...]:
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
            out.append(_spec(i, "indexer", MLA, block_size, _page(block_size // 4, cell), None,
                                 stride(KERNEL_BLOCK // 4, cell)))  # fmt: skip
            ring = 2 * 2 * layout.index_head_dim * STATE_BYTES
            out.append(_spec(i, "indexer_compressor", SLIDING_MLA, 4, _page(4, ring), 8, 1))
        out.append(_spec(i, "swa", SLIDING_MLA, SWA_BLOCK, _page(SWA_BLOCK, TOKEN_BYTES),
                             layout.sliding_window, 1))  # fmt: skip
        if r > 1:
            coff = 1 + (r == 4)  # the ratio-4 compressor overlaps two windows
            out.append(_spec(i, "compressed", MLA, block_size, _page(block_size // r, TOKEN_BYTES), None,
                                 stride(KERNEL_BLOCK // r, TOKEN_BYTES)))  # fmt: skip
            b = COMPRESSOR_BLOCK[r]
            out.append(_spec(i, "compressor", SLIDING_MLA, b, _page(b, 2 * coff * hd * STATE_BYTES),
                                 coff * r, 1))  # fmt: skip
    return tuple(out)


def check_stages(layout: Dsv4Layout, stages: Sequence[tuple[int, int]]) -> None:
    """DeepSeek-V4.1: a stage must hold the kv source of every compressed layer it has (attention.py
    raises NotImplementedError for a pipeline split inside a kv-sharing group)."""
    if not layout.v41:
        return
    latest = [-1] * len(layout.ratios)  # each layer's latest kv source at or below it
    for s in layout.kv_sources:
        latest[s] = s
    for i in range(1, len(latest)):
        latest[i] = max(latest[i], latest[i - 1])
    for a, b in stages:
        for i in range(a, b):
            if layout.ratios[i] and latest[i] < a:
                raise InvalidLayout(
                    "pipeline_parallel_size",
                    f"the stage from layer {a} splits a DeepSeek-V4.1 kv-sharing group (layer {i} reads the "
                    "caches of a layer on the stage before): vLLM raises NotImplementedError",
                )


def _v41_cache_specs(layout: Dsv4Layout, block_size: int) -> tuple[PackedSpec, ...]:
    """DeepSeek-V4.1 on SM90, in registration order: a kv source's compressed MLA cache (the
    attention layer registers first), its indexer K cache when it is an index source too, every
    layer's window cache, and at ratio 2 the compressor ring (CircularBufferSpec: one block a
    request, no page padding)."""
    out = []
    kv_sources, index_sources = set(layout.kv_sources), set(layout.index_sources)

    def stride(states_at_kernel_block: int, cell: int) -> int:
        return 1 if block_size == V41_KERNEL_BLOCK else _page(states_at_kernel_block, cell)

    for i, r in enumerate(layout.ratios):
        if i in kv_sources:
            out.append(_spec(i, "compressed", MLA, block_size, _page(block_size // r, TOKEN_BYTES), None,
                                 stride(V41_KERNEL_BLOCK // r, TOKEN_BYTES)))  # fmt: skip
            if i in index_sources:
                cell = layout.index_cell_bytes
                out.append(_spec(i, "indexer", MLA, block_size, _page(block_size // r, cell), None,
                                     stride(V41_KERNEL_BLOCK // r, cell)))  # fmt: skip
        out.append(_spec(i, "swa", SLIDING_MLA, V41_SWA_BLOCK, _page(V41_SWA_BLOCK, TOKEN_BYTES),
                             layout.sliding_window, 1))  # fmt: skip
        if i in kv_sources and r > 1:
            ring = V41_RING_ROWS * 2 * layout.head_dim * STATE_BYTES
            out.append(_spec(i, "ring", CIRCULAR_BUFFER, V41_RING_ROWS, ring, None, 1))
    return tuple(out)


def explain(led: LedgerBuilder, layout: Dsv4Layout, packing: Packing) -> None:
    """The ledger step naming DeepSeek-V4's caches; its packed groups follow (budget/explain.py)."""
    caches = sum(len(g.specs) for g in packing.groups)
    if layout.v41:
        led.add(
            "kv_cache_groups[dsv4.1]",
            "every layer a sliding-window cache; a kv-source layer its compressed MLA cache (r tokens a "
            "state), an indexer K cache if also an index source, at r = 2 a compressor ring; the layers "
            "after a source read its caches; SM90 records; packed block-outermost",
            len(packing.groups),
            "groups",
            SRC_V41,
            layers=len(layout.ratios),
            kv_source_layers=len(layout.kv_sources),
            index_source_layers=len(layout.index_sources),
            caches=caches,
            kv_cache_dtype="fp8_ds_mla",
        )
    else:
        led.add(
            "kv_cache_groups[dsv4]",
            "every layer a sliding-window cache; ratio r > 1 a compressed MLA cache (r tokens a state) and "
            "a compressor ring; r = 4 an indexer K cache and its ring; packed block-outermost",
            len(packing.groups),
            "groups",
            SRC_ATTN,
            layers=len(layout.ratios),
            ratio_4_layers=layout.ratios.count(4),
            ratio_128_layers=layout.ratios.count(128),
            caches=caches,
            kv_cache_dtype="fp8_ds_mla",
        )
