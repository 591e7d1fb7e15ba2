"""Engine profiles: the vLLM rules that differ between versions (VLLM_FACTS §9)."""

from __future__ import annotations

import msgspec

from .errors import UnknownName


class EngineProfile(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    title: str
    description: str
    default_block_size: int
    default_gpu_memory_utilization: float
    # Utilization when extensible KV cache is on (capacity follows profiled free memory).
    extensible_kv_cache_utilization: float | None
    # Sliding-window in-flight bound F: "batches" = max_concurrent_batches × mnbt, "mnbt" = mnbt.
    sliding_inflight_rule: str
    async_scheduling_default: bool
    # "concurrency_x_tokens" = int(X × T); "blocks_per_group" = num_blocks // groups × block_size.
    kv_cache_size_rule: str
    null_block_in_fit_check: bool
    # GPUs with at least this much memory default to max_num_batched_tokens 16384 (None: no tier).
    large_gpu_batched_tokens_min_bytes: int | None
    mla_block_size: int


_GIB = 1024**3

PROFILES: dict[str, EngineProfile] = {
    p.id: p
    for p in (
        EngineProfile(
            id="vllm@e740bad",
            title="vLLM commit e740bad (the seed's)",
            description=(
                "The rules of the commit the seed document reads: block 64, utilization 0.92 "
                "(1.0 with extensible KV cache), in-flight sliding bound with async scheduling."
            ),
            default_block_size=64,
            default_gpu_memory_utilization=0.92,
            extensible_kv_cache_utilization=1.0,
            sliding_inflight_rule="batches",
            async_scheduling_default=True,
            kv_cache_size_rule="concurrency_x_tokens",
            null_block_in_fit_check=True,
            large_gpu_batched_tokens_min_bytes=160 * _GIB,
            mla_block_size=64,
        ),
        EngineProfile(
            id="vllm@0.33",
            title="vLLM upstream 2026-08",
            description=(
                "Upstream vLLM of August 2026: block 16, utilization 0.92, sliding bound "
                "max_concurrent_batches × max_num_batched_tokens (2× with async scheduling)."
            ),
            default_block_size=16,
            default_gpu_memory_utilization=0.92,
            extensible_kv_cache_utilization=None,
            sliding_inflight_rule="batches",
            async_scheduling_default=True,
            kv_cache_size_rule="concurrency_x_tokens",
            null_block_in_fit_check=True,
            large_gpu_batched_tokens_min_bytes=160 * _GIB,
            mla_block_size=64,
        ),
        EngineProfile(
            id="vllm@0.10",
            title="vLLM 0.9–0.11 (2025)",
            description=(
                "vLLM of 2025: block 16, utilization 0.90, sliding bound = max_num_batched_tokens, "
                "'GPU KV cache size' printed as num_blocks // groups × block_size, no null block "
                "in the start-up fit check."
            ),
            default_block_size=16,
            default_gpu_memory_utilization=0.90,
            extensible_kv_cache_utilization=None,
            sliding_inflight_rule="mnbt",
            async_scheduling_default=False,
            kv_cache_size_rule="blocks_per_group",
            null_block_in_fit_check=False,
            large_gpu_batched_tokens_min_bytes=None,
            mla_block_size=64,
        ),
    )
}

DEFAULT_PROFILE_ID = "vllm@e740bad"


def get_profile(profile_id: str | None, field: str = "engine") -> EngineProfile:
    if profile_id is None:
        return PROFILES[DEFAULT_PROFILE_ID]
    try:
        return PROFILES[profile_id]
    except KeyError:
        raise UnknownName(field, "engine profile", profile_id, tuple(PROFILES)) from None
