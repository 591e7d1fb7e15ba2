"""Engine profiles: every vLLM rule and default that differs between versions, in one place
(docs/vllm-rules.md §9). Nothing else in kvplan states a vLLM default: budget, fleet, sweep and
simulate all read them from here, and the ledger's wording is generated from the same values."""

from __future__ import annotations

from enum import StrEnum

import msgspec

from .errors import UnknownName
from .units import GiB


class InflightRule(StrEnum):
    """How many tokens a sliding-window layer may have in flight beyond its window (F)."""

    # F = max_concurrent_batches × max_num_batched_tokens (vllm/v1/core/sched/scheduler.py).
    BATCHES = "batches"
    # F = max_num_batched_tokens (vLLM 2025).
    BATCHED_TOKENS = "mnbt"


class KvCacheSizeRule(StrEnum):
    """How vLLM prints "GPU KV cache size: N tokens" (vllm/v1/core/kv_cache_utils.py)."""

    CONCURRENCY_X_TOKENS = "concurrency_x_tokens"  # int(max_concurrency × max_model_len)
    BLOCKS_PER_GROUP = "blocks_per_group"  # num_blocks // num_groups × block_size


class BatchTier(msgspec.Struct, frozen=True, kw_only=True):
    """`vllm serve`'s batch defaults for one class of GPU (vllm/engine/arg_utils.py
    get_batch_defaults): GPUs with at least `min_memory_bytes` whose name does not contain
    `excluded_name` (lower case) get these values. Tiers are tried in order; the last has no floor."""

    label: str
    min_memory_bytes: int
    excluded_name: str | None = None
    max_num_batched_tokens: int
    max_num_seqs: int

    def matches(self, memory_bytes: int | None, gpu_name: str) -> bool:
        if self.min_memory_bytes and (memory_bytes is None or memory_bytes < self.min_memory_bytes):
            return False
        return self.excluded_name is None or self.excluded_name not in gpu_name.lower()


class BatchDefaults(msgspec.Struct, frozen=True):
    max_num_batched_tokens: int
    max_num_seqs: int
    tier: str


class EngineProfile(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    title: str
    description: str
    default_block_size: int
    # MLA attention backends force their own block (FlashMLA 64).
    mla_block_size: int
    default_gpu_memory_utilization: float
    # Utilization when extensible KV cache is on (capacity follows profiled free memory).
    extensible_kv_cache_utilization: float | None
    sliding_inflight_rule: InflightRule
    async_scheduling_default: bool
    # Batches in flight with async scheduling on and no pipeline parallel.
    async_inflight_batches: int
    # Model Runner V2 (vLLM's default from 0.33) keeps one more batch than the pipeline has
    # stages in flight under async scheduling: PP + 1, not PP.
    async_pipeline_extra_batch: bool
    # The scheduler admits a waiting request only when its whole sequence fits the free blocks
    # (SchedulerConfig.scheduler_reserve_full_isl, on by default in 0.33), not its first chunk.
    admit_full_sequence: bool
    kv_cache_size_rule: KvCacheSizeRule
    null_block_in_fit_check: bool
    batch_tiers: tuple[BatchTier, ...]
    # v1's name for the largest tier's floor (None: no 16384-token tier); derived from batch_tiers.
    large_gpu_batched_tokens_min_bytes: int | None = None

    def __post_init__(self) -> None:
        large = [t.min_memory_bytes for t in self.batch_tiers if t.max_num_batched_tokens >= 16384]
        msgspec.structs.force_setattr(self, "large_gpu_batched_tokens_min_bytes", min(large, default=None))

    def batch_defaults(self, memory_bytes: int | None, gpu_name: str) -> BatchDefaults:
        """max_num_batched_tokens and max_num_seqs when the caller gives neither."""
        for tier in self.batch_tiers:
            if tier.matches(memory_bytes, gpu_name):
                return BatchDefaults(tier.max_num_batched_tokens, tier.max_num_seqs, tier.label)
        last = self.batch_tiers[-1]
        return BatchDefaults(last.max_num_batched_tokens, last.max_num_seqs, last.label)

    def batch_rule_text(self) -> str:
        """The tiers in words, for the ledger."""
        return "; ".join(
            f"{t.max_num_batched_tokens} tokens / {t.max_num_seqs} seqs on {t.label}"
            for t in self.batch_tiers
        )

    def inflight_batches(self, pipeline_parallel_size: int, async_scheduling: bool) -> int:
        """max_concurrent_batches: the PP size under pipeline parallel (PP + 1 with async
        scheduling on Model Runner V2), else 2 with async scheduling, else 1
        (vllm/config/vllm.py VllmConfig.max_concurrent_batches)."""
        if async_scheduling and self.async_pipeline_extra_batch:
            return pipeline_parallel_size + 1
        if pipeline_parallel_size > 1:
            return pipeline_parallel_size
        return self.async_inflight_batches if async_scheduling else 1

    def default_block_size_for(self, is_mla: bool) -> int:
        return self.mla_block_size if is_mla else self.default_block_size


# vllm serve (UsageContext.OPENAI_API_SERVER) in vllm/engine/arg_utils.py get_batch_defaults.
_BIG_GPU = BatchTier(
    label="GPUs ≥ 70 GiB other than A100",
    min_memory_bytes=70 * GiB,
    excluded_name="a100",
    max_num_batched_tokens=8192,
    max_num_seqs=1024,
)
_LARGEST_GPU = BatchTier(
    label="GPUs ≥ 160 GiB", min_memory_bytes=160 * GiB, max_num_batched_tokens=16384, max_num_seqs=1024
)
_OTHER_GPU = BatchTier(
    label="other GPUs (or memory unknown)", min_memory_bytes=0, max_num_batched_tokens=2048, max_num_seqs=256
)

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
            sliding_inflight_rule=InflightRule.BATCHES,
            async_scheduling_default=True,
            async_inflight_batches=2,
            async_pipeline_extra_batch=False,
            admit_full_sequence=False,
            kv_cache_size_rule=KvCacheSizeRule.CONCURRENCY_X_TOKENS,
            null_block_in_fit_check=True,
            batch_tiers=(_LARGEST_GPU, _BIG_GPU, _OTHER_GPU),
            mla_block_size=64,
        ),
        EngineProfile(
            id="vllm@0.33",
            title="vLLM upstream 2026-08",
            description=(
                "Upstream vLLM of August 2026 (0.33): block 16, utilization 0.92, sliding and "
                "chunked bound max_concurrent_batches × max_num_batched_tokens (2× with async "
                "scheduling; PP + 1 batches under pipeline parallel with async scheduling)."
            ),
            default_block_size=16,
            default_gpu_memory_utilization=0.92,
            extensible_kv_cache_utilization=None,
            sliding_inflight_rule=InflightRule.BATCHES,
            async_scheduling_default=True,
            async_inflight_batches=2,
            async_pipeline_extra_batch=True,
            admit_full_sequence=True,
            kv_cache_size_rule=KvCacheSizeRule.CONCURRENCY_X_TOKENS,
            null_block_in_fit_check=True,
            batch_tiers=(_LARGEST_GPU, _BIG_GPU, _OTHER_GPU),
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
            sliding_inflight_rule=InflightRule.BATCHED_TOKENS,
            async_scheduling_default=False,
            async_inflight_batches=2,
            async_pipeline_extra_batch=False,
            admit_full_sequence=False,
            kv_cache_size_rule=KvCacheSizeRule.BLOCKS_PER_GROUP,
            null_block_in_fit_check=False,
            batch_tiers=(_BIG_GPU, _OTHER_GPU),
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
