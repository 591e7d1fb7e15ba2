"""The settings a scenario runs with: what the caller gave, else the engine profile's default.
Budget, fleet, sweep and simulate all resolve through here, so one scenario gets one
block size, one max_num_seqs and one max_num_batched_tokens whichever endpoint asks."""

from __future__ import annotations

import msgspec

from ..engine.profiles import EngineProfile
from ..errors import InvalidInput
from ..kv import dsv4
from ..limits import MAX_TOKENS
from ..model.geometry import Geometry
from ..validate import utilization
from .types import BudgetInput


# gc=False here and below: a value that cannot be in a cycle (see core/budget/types.py).
class Settings(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """One scenario's engine settings, each with whether it was given or defaulted."""

    gpu_memory_utilization: float
    block_size: int
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    async_scheduling: bool
    # The tier of vllm serve's batch defaults that applied (for the ledger).
    batch_tier: str
    given: frozenset[str]


# Sparse MLA with an indexer (DeepSeek-V3.2, GLM-5): the FlashMLA sparse kernel takes blocks in
# multiples of 64 and the indexer's exactly 64, which a larger manager block splits into
# (vllm/v1/attention/backends/mla/flashmla_sparse.py, indexer.py get_supported_kernel_block_sizes).
SPARSE_MLA_BLOCK_MULTIPLE = 64


def check_sparse_mla_block(block_size: int) -> None:
    if block_size % SPARSE_MLA_BLOCK_MULTIPLE:
        raise InvalidInput(
            "block_size",
            f"sparse MLA with an indexer (DeepSeek-V3.2, GLM-5) needs a block size that is a multiple "
            f"of {SPARSE_MLA_BLOCK_MULTIPLE}: vLLM finds no attention backend for block {block_size} "
            f"(leave block_size out for the default {SPARSE_MLA_BLOCK_MULTIPLE})",
        )


# MiniMax-M3's sparse layers: the sparse attention and indexer kernels take blocks of exactly
# 128 tokens (get_supported_kernel_block_sizes in vllm/models/minimax_m3/common/sparse_attention.py
# and indexer.py), so vLLM picks 128 when --block-size is not given (vllm/platforms/interface.py
# _preferred_block_size_for_backends) and splits a larger multiple of it into kernel blocks.
SPARSE_FULL_BLOCK_MULTIPLE = 128


def check_sparse_full_block(block_size: int) -> None:
    if block_size % SPARSE_FULL_BLOCK_MULTIPLE:
        raise InvalidInput(
            "block_size",
            f"MiniMax-M3's sparse attention and indexer kernels take blocks of "
            f"{SPARSE_FULL_BLOCK_MULTIPLE} tokens: vLLM finds no common kernel block for block "
            f"{block_size} (use a multiple of {SPARSE_FULL_BLOCK_MULTIPLE}, or leave block_size out "
            "for its default)",
        )


def default_block_size(geometry: Geometry | None, profile: EngineProfile) -> int:
    if geometry is not None and geometry.indexer_layers:
        return SPARSE_FULL_BLOCK_MULTIPLE
    return profile.default_block_size_for(geometry is not None and geometry.is_mla)


def resolve_settings(inp: BudgetInput) -> Settings:
    return settings_for(
        inp.geometry,
        inp.profile,
        gpu_memory_bytes=inp.gpu_memory_bytes,
        gpu_name=inp.gpu_name,
        gpu_memory_utilization=inp.gpu_memory_utilization,
        extensible_kv_cache=inp.extensible_kv_cache,
        block_size=inp.block_size,
        max_model_len=inp.max_model_len,
        max_num_batched_tokens=inp.max_num_batched_tokens,
        max_num_seqs=inp.max_num_seqs,
        async_scheduling=inp.async_scheduling,
    )


def settings_for(
    geometry: Geometry | None,
    profile: EngineProfile,
    *,
    gpu_memory_bytes: int | None = None,
    gpu_name: str = "",
    gpu_memory_utilization: float | None = None,
    extensible_kv_cache: bool = False,
    block_size: int | None = None,
    max_model_len: int | None = None,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    async_scheduling: bool | None = None,
) -> Settings:
    """The settings for a model (None: a bare block pool) on a GPU under a profile. The numbers
    given were checked where they entered (the wire schema, or compute_budget's check_settings);
    the utilization is checked here, where a sweep's values reach it."""
    given = frozenset(
        name
        for name, value in (
            ("gpu_memory_utilization", gpu_memory_utilization),
            ("block_size", block_size),
            ("max_model_len", max_model_len),
            ("max_num_batched_tokens", max_num_batched_tokens),
            ("max_num_seqs", max_num_seqs),
            ("async_scheduling", async_scheduling),
        )
        if value is not None
    )
    if gpu_memory_utilization is not None:
        util = utilization(gpu_memory_utilization)
    elif extensible_kv_cache and profile.extensible_kv_cache_utilization is not None:
        util = profile.extensible_kv_cache_utilization
    else:
        util = profile.default_gpu_memory_utilization
    batch = profile.batch_defaults(gpu_memory_bytes, gpu_name)
    if max_model_len is not None:
        mml = max_model_len
    else:
        mml = geometry.max_position_embeddings if geometry is not None else MAX_TOKENS
    if block_size is not None:
        if geometry is not None and geometry.index_head_dim is not None:
            check_sparse_mla_block(block_size)
        if geometry is not None and geometry.indexer_layers:
            check_sparse_full_block(block_size)
        if geometry is not None and geometry.dsv4 is not None:
            dsv4.check_block_size(block_size, geometry.dsv4)
    if block_size is None and geometry is not None and geometry.dsv4 is not None:
        block_size = dsv4.kernel_block(geometry.dsv4)  # the block vLLM picks for DeepSeek-V4's backends
    return Settings(
        gpu_memory_utilization=util,
        block_size=default_block_size(geometry, profile) if block_size is None else block_size,
        max_model_len=mml,
        max_num_batched_tokens=batch.max_num_batched_tokens
        if max_num_batched_tokens is None
        else max_num_batched_tokens,
        max_num_seqs=batch.max_num_seqs if max_num_seqs is None else max_num_seqs,
        async_scheduling=profile.async_scheduling_default if async_scheduling is None else async_scheduling,
        batch_tier=batch.tier,
        given=given,
    )
