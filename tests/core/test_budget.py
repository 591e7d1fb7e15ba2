"""Budget knobs beyond the seed: overrides, reserved memory, targets, warnings."""

from __future__ import annotations

import math

from kvplan.core.units import GiB
from tests.seed import W_LLAMA_3_8B_BF16, A
from tests.seed import W_LLAMA_3_70B_BF16 as W


def test_non_kv_and_cudagraph_memory_are_deducted(budget):
    b = budget("llama-3-70b", gpu="pool-160gib", weights_bytes=W, non_kv_bytes=GiB, cudagraph_bytes=GiB // 2)
    assert b.available_kv_bytes == 158054796493 - W - GiB - GiB // 2


def test_kv_cache_memory_bytes_replaces_the_whole_budget(budget):
    b = budget("llama-3-70b", gpu="pool-160gib", kv_cache_memory_bytes=20 * 1024**2 * 100)
    assert b.available_kv_bytes == 20 * 1024**2 * 100
    assert b.num_blocks == 100
    assert b.requested_bytes is None


def test_num_gpu_blocks_override_replaces_num_blocks_and_warns(budget):
    b = budget(**A, num_gpu_blocks_override=129)
    assert b.num_blocks_computed == 880
    assert b.num_blocks == 129
    assert b.usable_blocks == 128
    assert b.concurrency.guaranteed == 1
    assert "num_gpu_blocks_overridden" in {w.code for w in b.warnings}


def test_weights_come_from_preset_params_and_weight_dtype(budget, registry):
    params = registry.model("llama-3-70b").geometry.params_total
    assert budget("llama-3-70b", gpu="pool-160gib").weights_bytes == params * 2
    assert budget("llama-3-70b", gpu="pool-160gib", weight_dtype="fp8").weights_bytes == params
    assert (
        budget("deepseek-v3", gpu="pool-141gib").weights_bytes
        == registry.model("deepseek-v3").geometry.params_total
    )  # native fp8


def test_weights_above_the_budget_leave_no_blocks_and_warn(budget):
    b = budget("llama-3-70b", gpu="pool-80gib")
    # vLLM's figure is negative (it refuses to start); the answer says 0 and how much is missing.
    assert b.available_kv_bytes == 0
    assert b.kv_memory_shortfall_bytes == b.weights_bytes_per_gpu - b.requested_bytes > 0
    assert b.num_blocks == 0
    assert b.usable_blocks == 0
    assert b.concurrency.guaranteed == 0
    codes = {w.code for w in b.warnings}
    assert {"budget_insufficient", "max_model_len_does_not_fit"} <= codes


def test_largest_context_for_n_requests(budget):
    b = budget("llama-3-70b", gpu="pool-160gib", weights_bytes=W, context_tokens=8192, target_concurrency=10)
    assert b.max_context_for_target == 879 // 10 * 64
    big = budget("llama-3-70b", gpu="pool-160gib", weights_bytes=W, context_tokens=b.max_context_for_target)
    assert big.concurrency.guaranteed >= 10


def test_smallest_utilization_that_holds_the_target(budget):
    b = budget("llama-3-70b", gpu="pool-160gib", weights_bytes=W, context_tokens=8192, target_concurrency=10)
    u = b.min_gpu_memory_utilization
    assert u is not None and 0.92 < u <= 1.0
    assert (
        budget(
            "llama-3-70b", gpu="pool-160gib", weights_bytes=W, context_tokens=8192, gpu_memory_utilization=u
        ).concurrency.guaranteed
        >= 10
    )
    below = round(u - 0.0001, 4)
    assert (
        budget(
            "llama-3-70b",
            gpu="pool-160gib",
            weights_bytes=W,
            context_tokens=8192,
            gpu_memory_utilization=below,
        ).concurrency.guaranteed
        < 10
    )


def test_impossible_target_has_no_utilization(budget):
    b = budget(
        "llama-3-70b", gpu="pool-160gib", weights_bytes=W, context_tokens=8192, target_concurrency=1000
    )
    assert b.min_gpu_memory_utilization is None


def test_vllm_reported_concurrency_counts_the_null_block(budget):
    b = budget("llama-3-8b", gpu="pool-80gib", weights_bytes=W_LLAMA_3_8B_BF16, context_tokens=8192)
    assert b.concurrency.vllm_reported == b.num_blocks / 128
    assert b.concurrency.guaranteed == math.floor((b.num_blocks - 1) / 128)
    # Above, 7,500 blocks hold 58 requests with or without the null block. Here the pool is exactly
    # two requests' blocks (2 × 128 of 20 MiB): vLLM's log says 2, but block 0 is the null block.
    exact = budget(
        "llama-3-70b", gpu="pool-160gib", kv_cache_memory_bytes=256 * 20 * 1024**2, context_tokens=8192
    )
    assert (exact.num_blocks, exact.usable_blocks, exact.blocks_per_request) == (256, 255, 128)
    assert exact.concurrency.vllm_reported == 2.0
    assert exact.concurrency.guaranteed == 1


def test_tail_waste_is_the_unused_part_of_the_last_block(budget):
    b = budget("llama-3-8b", gpu="pool-80gib", weights_bytes=W_LLAMA_3_8B_BF16, context_tokens=8000)
    assert b.tail_waste_tokens == 125 * 64 - 8000


def test_nominal_gpu_memory_is_flagged(budget):
    assert "nominal_gpu_memory" in {
        w.code for w in budget("llama-3-8b", gpu="gb200-186gb", gpu_memory_nominal=True).warnings
    }


def test_cpu_offload_is_not_concurrency(budget):
    b = budget("llama-3-8b", gpu="pool-80gib", kv_offloading_bytes=100 * GiB)
    plain = budget("llama-3-8b", gpu="pool-80gib")
    assert b.num_blocks == plain.num_blocks
    assert "offload_is_not_concurrency" in {w.code for w in b.warnings}


def test_mamba_hybrid_costs_two_state_blocks_per_mamba_group():
    from kvplan.core.budget import BudgetInput, compute_budget
    from kvplan.core.engine.profiles import get_profile
    from tests.core.budgets import mamba_hybrid

    geo = mamba_hybrid(6, 2, max_position_embeddings=8192)
    b = compute_budget(
        BudgetInput(
            geometry=geo, profile=get_profile("vllm@0.33"), kv_cache_memory_bytes=GiB, context_tokens=4096
        )
    )
    # attention token-layer = 8 × 128 × 2 = 2 KiB; 1 MiB state forces block 16 × cdiv(1 MiB, 32 KiB)
    assert b.groups[0].block_size == 512 or b.groups[-1].block_size == 512
    assert {g.kind: g.groups for g in b.groups} == {"mamba": 3, "full_attention": 1}
    # Prefix caching (on for hybrids) keeps the running and the last cached state: 2 blocks a
    # group (MambaSpec.max_memory_usage_bytes in align mode; vLLM 0.33.0).
    assert b.blocks_per_request == 3 * 2 + 4096 // 512
    assert "block_size_raised" in {w.code for w in b.warnings}


def test_vllm_runs_at_most_max_num_seqs_even_when_the_kv_cache_holds_more(budget):
    b = budget("llama-3.1-8b", gpu="b200-180gb", context_tokens=1024)
    assert b.max_num_seqs == 1024  # ≥ 70 GiB, not an A100
    assert b.concurrency.guaranteed > 1024
    assert b.concurrency.schedulable == 1024
    assert "max_num_seqs_limits" in {w.code for w in b.warnings}
    assert budget("llama-3.1-8b", gpu="a100-80gb", context_tokens=1024).max_num_seqs == 256
    mine = budget("llama-3.1-8b", gpu="b200-180gb", context_tokens=1024, max_num_seqs=4096)
    assert mine.concurrency.schedulable == mine.concurrency.guaranteed
    assert "max_num_seqs_limits" not in {w.code for w in mine.warnings}


def test_schedulable_equals_guaranteed_for_the_seed(budget):
    b = budget(**A)
    assert b.concurrency.schedulable == b.concurrency.guaranteed == 6


def test_a_max_model_len_above_the_derived_maximum_is_flagged_as_vllm_refuses_it(budget):
    """vLLM 0.33 refuses max_model_len above the derived maximum unless
    VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: the figures are given as "if overridden"."""
    b = budget("llama-3-70b", gpu_memory_bytes=640 << 30, tensor_parallel_size=8, max_model_len=16384)
    codes = {w.code: w.message for w in b.warnings}
    assert "max_model_len_exceeds_derived" in codes
    assert "8,192" in codes["max_model_len_exceeds_derived"]
    assert "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" in codes["max_model_len_exceeds_derived"]
    within = budget("llama-3-70b", gpu_memory_bytes=640 << 30, tensor_parallel_size=8, max_model_len=8192)
    assert "max_model_len_exceeds_derived" not in {w.code for w in within.warnings}
