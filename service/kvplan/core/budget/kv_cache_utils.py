"""vLLM's planning steps, one function each under vLLM's own name; each mirrors the function of
the same name in vllm/v1/core/kv_cache_utils.py unless it says otherwise."""

from __future__ import annotations

from collections.abc import Sequence

from ..engine.profiles import ConcurrencyRule, EngineProfile, KvCacheSizeRule
from ..kv.concurrency import GroupShape, largest_context, total_blocks

SRC_BLOCKS = "vllm/v1/core/kv_cache_utils.py (get_num_blocks)"
SRC_GROUPS = "vllm/v1/core/kv_cache_utils.py (_get_kv_cache_groups_uniform_page_size)"
SRC_CONC = "vllm/v1/core/kv_cache_utils.py (get_max_concurrency_for_kv_cache_config)"
SRC_FIT = "vllm/v1/core/kv_cache_utils.py (check_enough_kv_cache_memory, estimate_max_model_len)"
SRC_REPORT = "vllm/v1/core/kv_cache_utils.py (_report_kv_cache_config)"
SRC_POOL = "vllm/v1/core/block_pool.py (null block 0)"
SRC_V0_POOL = "vllm/core/block_manager.py (V0: every block holds tokens)"
SRC_V0_CONC = (
    "vllm/executor/executor_base.py (V0 initialize_cache: num_gpu_blocks × block_size / max_model_len)"
)


def get_num_blocks(available_memory: int, bytes_per_block_by_stage: Sequence[int]) -> int:
    """available // bytes_per_block on each worker; the engine takes the minimum over workers
    (get_kv_cache_configs). No memory left gives 0 blocks, not a negative count."""
    return min(max(0, available_memory // b) if b else 0 for b in bytes_per_block_by_stage)


def may_override_num_blocks(num_blocks: int, num_gpu_blocks_override: int | None) -> int:
    return num_blocks if num_gpu_blocks_override is None else num_gpu_blocks_override


def usable_blocks(num_blocks: int, profile: EngineProfile) -> int:
    """Blocks requests can hold: all but V1's null block 0 (vllm/v1/core/block_pool.py)."""
    return max(0, num_blocks - (1 if profile.null_block else 0))


def fit_check_blocks(num_blocks: int, profile: EngineProfile) -> int:
    """Blocks the start-up fit check may use: the null block is reserved where the profile says."""
    return num_blocks - (1 if profile.null_block_in_fit_check else 0)


def check_enough_kv_cache_memory(
    shapes: Sequence[GroupShape], fit_blocks: int, max_model_len: int, dcp: int
) -> bool:
    """Whether one request of max_model_len fits; vLLM refuses to start otherwise."""
    return total_blocks(shapes, max_model_len, dcp) <= fit_blocks


def estimate_max_model_len(shapes: Sequence[GroupShape], fit_blocks: int, cap: int, dcp: int) -> int:
    """The largest context ≤ cap whose blocks fit (vLLM binary-searches; concurrency.py solves it)."""
    return largest_context(shapes, fit_blocks, cap, dcp)


def get_max_concurrency_for_kv_cache_config(
    profile: EngineProfile, num_blocks: int, blocks_per_request: int, block_size: int, tokens: int
) -> float:
    """ "Maximum concurrency for T tokens per request": num_blocks / Σ groups' blocks (V1, no null
    block), or num_gpu_blocks × block_size / T (V0, vllm/executor/executor_base.py)."""
    if profile.concurrency_rule is ConcurrencyRule.TOKENS:
        return num_blocks * block_size / tokens
    return num_blocks / blocks_per_request


def get_kv_cache_capacity(
    profile: EngineProfile,
    max_concurrency: float,
    tokens: int,
    num_blocks: int,
    num_groups: int,
    block_size: int,
    dcp: int,
) -> int:
    """ "GPU KV cache size: N tokens" as the profile's vLLM prints it (_report_kv_cache_config)."""
    if profile.kv_cache_size_rule is KvCacheSizeRule.CONCURRENCY_X_TOKENS:
        return int(max_concurrency * tokens)
    return num_blocks // num_groups * block_size * dcp
