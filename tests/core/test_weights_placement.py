"""Weights that do not stay on the GPU or are split differently, as vLLM 0.33 places them: the
routed experts over TP × DP ranks (whole experts under --enable-expert-parallel), weights offloaded
to CPU memory by --cpu-offload-gb, and the dtype --dtype serves the model in."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from msgspec.structs import replace

from kvplan.core.errors import InvalidInput
from kvplan.core.model.weights import loaded_weights
from kvplan.core.units import GiB
from tests.core.budgets import budget_033

H200 = 141 * 10**9
# Sized by a GPU's memory (the ledger's weights steps show there), the weights alone subtracted.
ON_H200 = {"kv_cache_memory_bytes": None, "gpu_memory_bytes": H200, "non_kv_bytes": 0}


def _step(b, name):
    (step,) = [s for s in b.ledger if s.name == name]
    return step


@pytest.mark.parametrize(
    ("model", "experts", "per_gpu", "dense", "expert"),
    [
        # DeepSeek-V3, fp8: 256 experts / 8 ranks = 32 a GPU; 653,908,770,816 expert params × 1 B × 32/256.
        ("deepseek-v3", 32, 90_297_420_544, 8_558_824_192, 81_738_596_352),
        # Qwen3-30B-A3B, bf16: 128 / 8 = 16 a GPU; 28,991,029,248 × 2 B × 16/128.
        ("qwen3-30b-a3b", 16, 8_788_850_688, 1_541_093_376, 7_247_757_312),
        # Mixtral-8x7B, bf16: 8 / 8 = 1 a GPU; 45,097,156,608 × 2 B / 8.
        ("mixtral-8x7b", 1, 12_879_925_248, 1_605_636_096, 11_274_289_152),
    ],
)
def test_expert_parallel_places_whole_experts_over_tp_times_dp_and_dense_weights_over_tp(
    registry, model, experts, per_gpu, dense, expert
):
    """vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make: ep_size = TP × DP;
    expert_map_manager.py determine_expert_map: E // ep_size each, the first E % ep_size one more."""
    b = budget_033(
        registry.model(model).geometry, explain=True, tensor_parallel_size=2, data_parallel_size=4,
        enable_expert_parallel=True, **ON_H200,
    )  # fmt: skip
    assert b.weights_bytes_per_gpu == per_gpu == dense + expert
    assert _step(b, "dense_weights_bytes_per_gpu").value == dense
    assert _step(b, "expert_weights_bytes_per_gpu").value == expert
    assert _step(b, "expert_weights_bytes_per_gpu").inputs["experts_per_gpu"] == experts


def test_experts_that_do_not_divide_the_ranks_put_one_more_on_the_first_ranks(registry):
    """Mixtral's 8 experts over TP 2 × DP 3 = 6 ranks: ranks 0 and 1 hold 2, the fullest GPU
    plans 2 (determine_expert_map: base 8 // 6 = 1, remainder 2; run on CPU with vLLM 0.33.0 it gives
    [2, 2, 1, 1, 1, 1] over the six ranks)."""
    b = budget_033(
        registry.model("mixtral-8x7b").geometry, explain=True, tensor_parallel_size=2, data_parallel_size=3,
        enable_expert_parallel=True, **ON_H200,
    )  # fmt: skip
    assert _step(b, "expert_weights_bytes_per_gpu").inputs["experts_per_gpu"] == 2
    assert b.weights_bytes_per_gpu == 1_605_636_096 + 45_097_156_608 * 2 * 2 // 8


def test_plain_data_parallel_splits_each_experts_tensors_over_tp_times_dp(registry):
    """Without expert parallelism vLLM's MoE layers still flatten TP over DP (FusedMoEParallelConfig.make:
    tp_size = TP × DP), so an expert's tensors are split over all 8 GPUs; dense weights over TP."""
    g = registry.model("mixtral-8x7b").geometry
    b = budget_033(g, explain=True, tensor_parallel_size=2, data_parallel_size=4, **ON_H200)
    assert b.weights_bytes_per_gpu == 1_605_636_096 + 45_097_156_608 * 2 // 8
    assert "expert_parallel" in _step(b, "expert_weights_bytes_per_gpu").inputs


def test_data_parallel_of_a_dense_model_repeats_the_engine(registry):
    g = registry.model("llama-3.1-8b").geometry
    one = budget_033(g, tensor_parallel_size=2, kv_cache_memory_bytes=None, gpu_memory_bytes=80 * GiB)
    four = budget_033(
        g, explain=True, tensor_parallel_size=2, data_parallel_size=4, kv_cache_memory_bytes=None,
        gpu_memory_bytes=80 * GiB,
    )  # fmt: skip
    assert four.weights_bytes_per_gpu == one.weights_bytes_per_gpu
    assert four.num_blocks == one.num_blocks
    dp = four.data_parallel
    assert dp is not None and (dp.engines, dp.gpus) == (4, 8)
    assert dp.concurrency == 4 * one.concurrency.schedulable
    assert dp.kv_cache_size_tokens == 4 * one.kv_cache_size_tokens
    assert "data_parallel_engines" in {w.code for w in four.warnings}
    assert _step(four, "data_parallel.concurrency").value == dp.concurrency


def test_expert_parallel_on_a_model_without_experts_is_refused_as_vllm_refuses_it(registry):
    """vllm/config/model.py _verify_with_expert_parallelism: 'Number of experts in the model must be
    greater than 0 when expert parallelism is enabled.'"""
    with pytest.raises(InvalidInput) as e:
        budget_033(registry.model("llama-3.1-8b").geometry, enable_expert_parallel=True)
    assert e.value.field == "enable_expert_parallel" and "no experts" in e.value.reason


def test_cpu_offload_gb_takes_exactly_its_bytes_off_a_70b_per_gpu(registry):
    """--cpu-offload-gb 10 → int(10 × 1024³) bytes (vllm/model_executor/offloader/base.py
    create_offloader); UVAOffloader moves parameters of the decoder layers until that is reached
    (vllm/model_executor/offloader/uva.py), freeing their GPU memory before the KV cache is sized."""
    g = registry.model("llama-3-70b").geometry
    kw = {
        "tensor_parallel_size": 2,
        "kv_cache_memory_bytes": None,
        "gpu_memory_bytes": 80 * GiB,
        "non_kv_bytes": 0,
    }
    plain = budget_033(g, **kw)
    b = budget_033(g, explain=True, cpu_offload_bytes=10 * GiB, **kw)
    assert plain.weights_bytes_per_gpu == 70_553_706_496  # 70,553,706,496 params × 2 B / 2
    assert b.weights_bytes_per_gpu == 70_553_706_496 - 10 * GiB == 59_816_288_256
    assert b.weights_offloaded_bytes == 10 * GiB
    assert b.available_kv_bytes == plain.available_kv_bytes + 10 * GiB
    assert _step(b, "weights_loaded_bytes_per_gpu").value == 70_553_706_496
    assert _step(b, "weights_bytes_per_gpu").value == 59_816_288_256
    assert "weights_offloaded" in {w.code for w in b.warnings}


def test_an_offload_larger_than_the_weights_offloads_them_all(registry):
    b = budget_033(registry.model("llama-3.1-8b").geometry, cpu_offload_bytes=100 * GiB)
    assert b.weights_bytes_per_gpu == 0 and b.weights_offloaded_bytes == b.weights_bytes


_FP32_LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
    "torch_dtype": "float32", "tie_word_embeddings": False,
}  # fmt: skip


@pytest.mark.parametrize(
    ("dtype", "weights", "kv_per_token"),
    [
        # vllm/config/model.py _resolve_auto_dtype: a float32 config is served in bfloat16 (the
        # first of CUDA's supported dtypes on SM ≥ 8.0).
        ("auto", 8_030_261_248 * 2, 32 * 8 * 128 * 2 * 2),
        ("float32", 8_030_261_248 * 4, 32 * 8 * 128 * 2 * 4),
        ("float", 8_030_261_248 * 4, 32 * 8 * 128 * 2 * 4),
        ("half", 8_030_261_248 * 2, 32 * 8 * 128 * 2 * 2),
    ],
)
def test_dtype_sets_the_weights_and_the_kv_cache_under_auto(dtype, weights, kv_per_token):
    b = budget_033(_FP32_LLAMA, dtype=dtype)
    assert b.weights_bytes == weights
    assert b.per_token.bytes_per_token == kv_per_token


def test_an_explicit_kv_cache_dtype_does_not_follow_dtype():
    b = budget_033(_FP32_LLAMA, dtype="float32", kv_cache_dtype="fp8")
    assert b.per_token.bytes_per_token == 32 * 8 * 128 * 2


def test_float16_is_refused_for_the_models_vllm_refuses_it_for(registry):
    """vllm/config/model.py _FLOAT16_NOT_SUPPORTED_MODELS (gemma2, gemma3, gemma3_text, glm4)."""
    with pytest.raises(InvalidInput) as e:
        budget_033(registry.model("gemma-3-27b").geometry, dtype="float16")
    assert e.value.field == "dtype"


@given(tp=st.sampled_from([1, 2, 4]), dp=st.integers(1, 48))
def test_whole_experts_weigh_at_least_an_even_split_and_less_than_one_expert_more(registry, tp, dp):
    g = registry.model("qwen3-30b-a3b").geometry  # bf16, 128 experts
    assert g.params_total is not None and g.params_expert is not None
    dense, expert = (g.params_total - g.params_expert) * 2, g.params_expert * 2
    even = -(-dense // tp) + -(-expert // (tp * dp))
    ep = budget_033(g, tensor_parallel_size=tp, data_parallel_size=dp, enable_expert_parallel=True)
    assert even <= ep.weights_bytes_per_gpu < even + expert // 128


def test_a_checkpoints_expert_tensors_are_placed_whole_and_its_dense_tensors_sharded_over_tp(registry):
    """A Hub checkpoint's tensors (core/model/weights.py): the 8 experts of one layer over TP 2 × DP 2
    = 4 ranks, 2 a GPU; the router replicated, the attention split over TP."""
    tensors = [
        ("model.embed_tokens.weight", "BF16", 32000 * 4096),
        ("model.layers.0.self_attn.q_proj.weight", "BF16", 4096 * 4096),
        ("model.layers.0.block_sparse_moe.gate.weight", "BF16", 8 * 4096),
        *((f"model.layers.0.block_sparse_moe.experts.{e}.w1.weight", "BF16", 14336 * 4096) for e in range(8)),
    ]
    g = replace(registry.model("mixtral-8x7b").geometry, loaded_weights=loaded_weights(tensors, 32, "test"))
    b = budget_033(g, tensor_parallel_size=2, data_parallel_size=2, enable_expert_parallel=True)
    dense = (32000 * 4096 + 4096 * 4096) * 2 // 2 + 8 * 4096 * 2  # sharded / TP + the router whole
    assert b.weights_bytes_per_gpu == dense + 2 * 14336 * 4096 * 2


def test_plain_data_parallel_that_does_not_divide_an_experts_width_is_refused(registry):
    """Qwen3-30B-A3B's experts are 768 wide: TP 2 × DP 5 = 10 does not divide them, and vLLM's
    FusedMoEConfig asserts intermediate_size % tp_size == 0 (tp_size = TP × DP without EP,
    vllm/model_executor/layers/fused_moe/config.py); with expert parallelism experts stay whole."""
    g = registry.model("qwen3-30b-a3b").geometry
    with pytest.raises(InvalidInput) as e:
        budget_033(g, tensor_parallel_size=2, data_parallel_size=5)
    assert e.value.field == "data_parallel_size" and "768" in e.value.reason
    assert budget_033(g, tensor_parallel_size=2, data_parallel_size=5, enable_expert_parallel=True).num_blocks
