"""Tensor, pipeline and decode context parallel (docs/vllm-rules.md §6)."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InvalidLayout
from kvplan.core.kv.parallel import Parallel, pp_stage_ranges, valid_tensor_sizes
from kvplan.core.kv.pertoken import per_token


def test_tp_divides_kv_heads_per_gpu(registry):
    geo = registry.model("llama-3-70b").geometry
    assert [per_token(geo, par=Parallel(tp)).bytes_per_token for tp in (1, 2, 4, 8)] == [
        327680,
        163840,
        81920,
        40960,
    ]


def test_tp_beyond_kv_heads_replicates_one_head_and_warns(registry):
    geo = registry.model("qwen3-30b-a3b").geometry  # 4 KV heads
    pt = per_token(geo, par=Parallel(8))
    assert pt.kv_heads_per_gpu == 1
    assert "kv_heads_replicated" in {w.code for w in pt.warnings}


def test_mla_per_gpu_bytes_do_not_shrink_with_tp(registry):
    geo = registry.model("deepseek-v3").geometry
    assert {per_token(geo, par=Parallel(tp)).bytes_per_token for tp in (1, 2, 4, 8, 16)} == {70272}


def test_qwen25_7b_allows_tp_1_2_4_28_only(registry):
    geo = registry.model("qwen2.5-7b").geometry
    assert valid_tensor_sizes(geo, 64) == [1, 2, 4, 28]


@pytest.mark.parametrize("tp", [3, 7, 14])
def test_tp_that_does_not_divide_heads_is_refused(registry, tp):
    with pytest.raises(InvalidLayout) as e:
        per_token(registry.model("qwen2.5-7b").geometry, par=Parallel(tp))
    assert e.value.field == "tensor_parallel_size"
    assert "1, 2, 4, 28" in e.value.reason


def test_pp_gives_remainder_layers_to_stages_before_the_last():
    assert pp_stage_ranges(61, 4) == ((0, 15), (15, 30), (30, 46), (46, 61))
    assert pp_stage_ranges(62, 4) == ((0, 15), (15, 31), (31, 47), (47, 62))
    assert pp_stage_ranges(20, 4) == ((0, 5), (5, 10), (10, 15), (15, 20))


def test_pp_stage_bytes_count_only_their_layers(registry):
    pt = per_token(registry.model("deepseek-v3").geometry, par=Parallel(1, 4))
    assert pt.by_stage == (15 * 1152, 15 * 1152, 16 * 1152, 15 * 1152)
    assert pt.bytes_per_token == 16 * 1152


def test_engine_uses_the_fewest_blocks_over_pp_stages(budget):
    b = budget(
        "deepseek-v3", gpu="h200-141gb", weights_bytes=0, pipeline_parallel_size=4, context_tokens=32768
    )
    worst = max(b.bytes_per_block_by_stage)
    assert b.bytes_per_block == worst == 16 * 1152 * 64
    assert b.num_blocks == b.available_kv_bytes // worst


def test_dcp_shards_full_attention_blocks_per_request(budget):
    one = budget(
        "deepseek-v3", gpu="h200-141gb", weights_bytes=0, tensor_parallel_size=8, context_tokens=131072
    )
    four = budget(
        "deepseek-v3",
        gpu="h200-141gb",
        weights_bytes=0,
        tensor_parallel_size=8,
        decode_context_parallel_size=4,
        context_tokens=131072,
    )
    assert one.blocks_per_request == 131072 // 64
    assert four.blocks_per_request == 131072 // 64 // 4
    assert four.concurrency.guaranteed >= 4 * one.concurrency.guaranteed


def test_dcp_must_divide_tp(registry):
    with pytest.raises(InvalidLayout) as e:
        per_token(registry.model("deepseek-v3").geometry, par=Parallel(8, 1, 3))
    assert e.value.field == "decode_context_parallel_size"


def test_more_stages_than_layers_is_refused(registry):
    with pytest.raises(InvalidLayout) as e:
        per_token(registry.model("llama-3-8b").geometry, par=Parallel(1, 33))
    assert e.value.field == "pipeline_parallel_size"
