"""Engine profiles: every vLLM rule and default that differs between versions, in one place
(docs/vllm-rules.md §9). Nothing else in kvplan states a vLLM default: budget, fleet, sweep and
simulate all read them from here, and the ledger's wording is generated from the same values."""

from __future__ import annotations

import re
from enum import StrEnum

import msgspec

from ..errors import UnknownName
from ..units import GiB
from .nonkv import MemoryRules


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


class ConcurrencyRule(StrEnum):
    """How vLLM prints "Maximum concurrency for T tokens per request"."""

    # num_blocks / Σ groups' blocks a request (vllm/v1/core/kv_cache_utils.py).
    BLOCKS_PER_REQUEST = "blocks_per_request"
    # num_gpu_blocks × block_size / T (V0: vllm/executor/executor_base.py initialize_cache).
    TOKENS = "tokens"


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
    # What the profiling run, non-torch memory and CUDA graphs take (core/engine/nonkv.py).
    memory: MemoryRules
    # V1 keeps block 0 as the null block (vllm/v1/core/block_pool.py); V0 has none.
    null_block: bool = True
    concurrency_rule: ConcurrencyRule = ConcurrencyRule.BLOCKS_PER_REQUEST
    # V1's hybrid KV cache manager (a group per window); V0 sizes every layer for the whole context.
    hybrid_manager: bool = True
    # Whether `memory` is fitted to this engine's own logs or the nearest's stand in unchecked
    # (reconcile then gives no verdict on the non-KV figures).
    memory_modelled: bool = True
    # The OpenAI server's micro-batching tokenizer: how long a batch waits for more prompts (0: none,
    # a prompt at a time). AsyncMicrobatchTokenizer (vllm/utils/__init__.py, later
    # vllm/utils/async_utils.py), vLLM 0.10.0 (PR #19334) to 0.22 (removed by PR #45759).
    tokenizer_batch_wait_s: float = 0.0
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

# Non-KV memory, fitted on real start-up logs by tests/calibration/memory.py (docs/memory-model.md);
# a test checks these are what the fit gives.
_MEMORY_0_19 = MemoryRules(
    calibration="42 vLLM 0.19 start-up logs",
    activation_floor_bytes=141971030,
    sampler_bytes_per_logit=15,
    moe_bytes_per_token_expert_column=7,
    non_torch_single_bytes=268435456,
    non_torch_parallel_bytes=2254857830,
    cudagraph_floor_bytes=491084810,
    cudagraph_bytes_per_layer=16110423,
    cudagraph_subtracted=False,
    band_low_bytes=-252387354,
    band_high_bytes=197386174,
)
# 0.11: a sampler pass of about 9½ fp32 copies of the logits where 0.19 keeps under 4; too few
# logs to fit more than that and the non-torch figures, so the rest is 0.19's.
_MEMORY_0_10 = msgspec.structs.replace(
    _MEMORY_0_19,
    calibration="4 vLLM 0.11 start-up logs",
    sampler_bytes_per_logit=38,
    non_torch_single_bytes=139586437,
    non_torch_parallel_bytes=590558003,
    band_low_bytes=-55651992,
    band_high_bytes=2954100868,
)
# The seed's commit and 0.33 estimate graph memory before the KV cache is sized and subtract it
# (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on by default); no logs of theirs: 0.19's constants.
# Their graph estimate follows the graphs captured (core/engine/cudagraphs.py, 0.33's rules): the
# calibration logs all ran max_num_seqs 1024 and max_num_batched_tokens 8192 at -O2, which captures
# 51 sizes (1 … 512) in FULL_AND_PIECEWISE: 51 piecewise and 51 full decode graphs.
CALIBRATION_CAPTURED_GRAPHS = 102
_MEMORY_0_19_SUBTRACTED = msgspec.structs.replace(
    _MEMORY_0_19,
    calibration=_MEMORY_0_19.calibration + ", the nearest calibrated version, with graphs subtracted",
    cudagraph_subtracted=True,
    cudagraph_calibration_graphs=CALIBRATION_CAPTURED_GRAPHS,
)

# AsyncMicrobatchTokenizer's batch_wait_timeout_s and max_batch_size.
MICROBATCH_WAIT_S = 0.002
MICROBATCH_MAX = 32

_VLLM_0_10 = EngineProfile(
    id="vllm@0.10",
    title="vLLM 0.9–0.11 (2025)",
    description=(
        "vLLM of 2025: block 16, utilization 0.90, sliding bound = max_num_batched_tokens, "
        "'GPU KV cache size' printed as num_blocks // groups × block_size, no null block "
        "in the start-up fit check; the OpenAI server's tokenizer micro-batches (a 2 ms wait, "
        "from 0.10.0)."
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
    memory=_MEMORY_0_10,
    tokenizer_batch_wait_s=MICROBATCH_WAIT_S,
)
# 0.19 keeps 0.10's block, window and start-up rules (no oracle of 0.19's planner was run); what
# differs is the memory model, fitted on 0.19's own logs.
_VLLM_0_19 = msgspec.structs.replace(
    _VLLM_0_10,
    id="vllm@0.19",
    title="vLLM 0.14–0.22 (2026)",
    description=(
        "vLLM of 2026, calibrated on 0.19 start-up logs: the 0.10 rules for blocks, windows "
        "and the start-up checks; its own memory model (a smaller activation peak than 0.11's; "
        "CUDA graphs estimated but not subtracted from the KV budget); async scheduling on by "
        "default; the OpenAI server's tokenizer micro-batches, as until 0.22."
    ),
    # vLLM 0.14.0 turned async scheduling on by default (PR #27614).
    async_scheduling_default=True,
    memory=_MEMORY_0_19,
)


def _tokenizing_alone(base: EngineProfile, pid: str, title: str, era: str, when: str) -> EngineProfile:
    """`base`'s rules and memory model with the OpenAI server tokenizing a prompt at a time."""
    return msgspec.structs.replace(
        base,
        id=pid,
        title=title,
        description=(
            f"vLLM of {era}: {base.id}'s rules and memory model, with the OpenAI server tokenizing a "
            f"prompt at a time ({when})."
        ),
        tokenizer_batch_wait_s=0.0,
    )


# 0.23–0.29: the micro-batches went with PR #45759 (merged 2026-06-16; taken to be in 0.23.0,
# released a week later). 0.8–0.9: they came in 0.10.0.
_VLLM_0_23 = _tokenizing_alone(
    _VLLM_0_19, "vllm@0.23", "vLLM 0.23–0.29 (2026)", "mid 2026", "no micro-batches from 0.23"
)
_VLLM_0_8 = _tokenizing_alone(
    _VLLM_0_10,
    "vllm@0.8",
    "vLLM 0.8–0.9 (early 2025)",
    "early 2025 on its V1 engine",
    "micro-batches came in 0.10.0",
)
# 0.12–0.13: 0.19's rules and memory model, with async scheduling still off by default.
_VLLM_0_12 = msgspec.structs.replace(
    _VLLM_0_19,
    id="vllm@0.12",
    title="vLLM 0.12–0.13 (late 2025)",
    description=(
        "vLLM of late 2025: vllm@0.19's rules and memory model (calibrated on 0.19 start-up "
        "logs), with async scheduling off by default, as before 0.14."
    ),
    async_scheduling_default=False,
)

_VLLM_E740BAD = EngineProfile(
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
    memory=_MEMORY_0_19_SUBTRACTED,
)
# 0.33 keeps the seed commit's utilization, in-flight, start-up and batch rules and its memory
# model; it moves the block to 16, drops the extensible-cache utilization, adds a batch in flight
# under pipeline parallel and admits a request only when its whole sequence fits.
_VLLM_0_33 = msgspec.structs.replace(
    _VLLM_E740BAD,
    id="vllm@0.33",
    title="vLLM upstream 2026-08",
    description=(
        "Upstream vLLM of August 2026 (0.33): block 16, utilization 0.92, sliding and "
        "chunked bound max_concurrent_batches × max_num_batched_tokens (2× with async "
        "scheduling; PP + 1 batches under pipeline parallel with async scheduling)."
    ),
    default_block_size=16,
    extensible_kv_cache_utilization=None,
    async_pipeline_extra_batch=True,
    admit_full_sequence=True,
)

# The V0 engine (vLLM 0.4–0.10 on its V0 path, the only one before 0.8): one KV cache a layer of
# num_gpu_blocks blocks of 16 tokens (64 under FlashMLA), sized as V1 sizes a uniform model
# (vllm/worker/worker.py determine_num_available_blocks: available // cache block bytes, the
# block holding every layer's K and V, vllm/worker/cache_engine.py get_cache_block_size); no null
# block, no hybrid manager (a sliding-window layer keeps the whole context), concurrency printed as
# blocks × block size ÷ T (vllm/executor/executor_base.py); no "GPU KV cache size" line. Its
# memory is profiled like 0.11's, whose constants stand in (no V0 log calibrates them).
_VLLM_V0 = msgspec.structs.replace(
    _VLLM_0_10,
    id="vllm@v0",
    title="vLLM 0.4–0.10, V0 engine",
    description=(
        "The V0 engine (the only one before 0.8, VLLM_USE_V1=0 after): block 16, utilization "
        "0.90, one cache a layer for the whole context (no hybrid manager, no null block), "
        "concurrency printed as num_gpu_blocks × block_size ÷ T."
    ),
    batch_tiers=(_OTHER_GPU,),
    memory=msgspec.structs.replace(
        _MEMORY_0_10, calibration=_MEMORY_0_10.calibration + " (no V0 log calibrates V0's own)"
    ),
    null_block=False,
    tokenizer_batch_wait_s=0.0,
    concurrency_rule=ConcurrencyRule.TOKENS,
    hybrid_manager=False,
    memory_modelled=False,
)

PROFILES: dict[str, EngineProfile] = {
    p.id: p
    for p in (_VLLM_E740BAD, _VLLM_0_33, _VLLM_0_8, _VLLM_0_10, _VLLM_0_12, _VLLM_0_19, _VLLM_0_23, _VLLM_V0)
}

DEFAULT_PROFILE_ID = "vllm@e740bad"
V0_PROFILE_ID = _VLLM_V0.id

# Released vLLM versions (major.minor) and the profile that governs each: what `engine` accepts
# as "0.19.0", "vllm@0.11.1" or "0.33".
# 0.8 made V1 the default: its V0 logs say so (`Initializing a V0 LLM engine`), which reconcile reads.
_VERSION_RANGES: tuple[tuple[tuple[int, int], tuple[int, int], str], ...] = (
    ((0, 4), (0, 7), "vllm@v0"),
    ((0, 8), (0, 9), "vllm@0.8"),
    ((0, 10), (0, 11), "vllm@0.10"),
    ((0, 12), (0, 13), "vllm@0.12"),
    ((0, 14), (0, 22), "vllm@0.19"),
    ((0, 23), (0, 29), "vllm@0.23"),
    ((0, 30), (0, 33), "vllm@0.33"),
)
_VERSION = re.compile(r"(?:vllm@|v)?(\d{1,3})\.(\d{1,3})(?:\.\d{1,4})?(?:[.+-]?[0-9A-Za-z.+-]{0,40})?")


def profile_for_version(version: str) -> EngineProfile | None:
    """The profile governing a vLLM version as people write it, or None outside the known ones."""
    m = _VERSION.fullmatch(version.strip())
    if m is None:
        return None
    v = (int(m.group(1)), int(m.group(2)))
    for low, high, pid in _VERSION_RANGES:
        if low <= v <= high:
            return PROFILES[pid]
    return None


def get_profile(profile_id: str | None, field: str = "engine") -> EngineProfile:
    if profile_id is None:
        return PROFILES[DEFAULT_PROFILE_ID]
    found = PROFILES.get(profile_id) or profile_for_version(profile_id)
    if found is None:
        versions = ", ".join(f"{a[0]}.{a[1]}–{b[0]}.{b[1]}" for a, b, _ in _VERSION_RANGES)
        raise UnknownName(
            field, f"engine profile (or a vLLM version {versions})", profile_id, tuple(PROFILES)
        )
    return found
