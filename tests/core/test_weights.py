"""Weights as vLLM loads them, from a checkpoint's tensor list."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.model.weights import bytes_per_rank, loaded_weights


def test_stored_bytes_count_packed_and_scaled_tensors_as_stored():
    w = loaded_weights(
        [
            ("model.embed_tokens.weight", "BF16", 1000),  # 2,000 B
            ("model.layers.0.mlp.down_proj.weight_packed", "I32", 100),  # int4 packed 8 a word: 400 B
            ("model.layers.0.mlp.down_proj.weight_scale", "BF16", 10),  # 20 B
            ("model.layers.0.self_attn.q_proj.weight", "F8_E4M3", 500),  # 500 B
        ],
        num_hidden_layers=1,
        source="test",
    )
    assert w.total_bytes == 2_000 + 400 + 20 + 500
    assert dict(w.bytes_by_dtype) == {"BF16": 2_020, "F8_E4M3": 500, "I32": 400}
    assert (w.tensors, w.skipped_tensors, w.expert_bytes) == (4, 0, 0)


def test_routed_experts_are_counted_apart():
    w = loaded_weights(
        [
            ("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", 4096),
            ("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", 256),
            ("model.layers.0.mlp.router.weight", "BF16", 64),
        ],
        num_hidden_layers=1,
        source="test",
    )
    assert (w.total_bytes, w.expert_bytes) == (4096 + 256 + 128, 4096 + 256)


def test_mtp_layers_past_the_language_model_are_not_loaded():
    """DeepSeek-V3 ships layer 61 (its MTP module) beside layers 0–60; vLLM loads it only for
    speculative decoding. Vision tower layers are counted whatever their index."""
    w = loaded_weights(
        [
            ("model.layers.60.mlp.gate_proj.weight", "BF16", 10),
            ("model.layers.61.mlp.gate_proj.weight", "BF16", 10),
            ("mtp.layers.0.eh_proj.weight", "BF16", 10),
            ("visual.blocks.70.attn.qkv.weight", "BF16", 10),
        ],
        num_hidden_layers=61,
        source="test",
    )
    assert (w.total_bytes, w.tensors, w.skipped_tensors) == (40, 2, 2)


def test_an_unknown_dtype_is_a_400_naming_the_model():
    with pytest.raises(InvalidInput) as e:
        loaded_weights([("x", "F4_E2M1X", 1)], None, "test")
    assert e.value.field == "model"


def one_layer(*tensors: tuple[str, int]):  # type: ignore[no-untyped-def]
    return loaded_weights([(f"model.layers.0.{n}", "BF16", k) for n, k in tensors], 1, "test")


@pytest.mark.parametrize(
    "router",
    ["block_sparse_moe.gate.weight", "mlp.gate.weight", "mlp.shared_expert_gate.weight", "mlp.router.weight"],
)
def test_moe_routers_and_shared_expert_gates_are_whole_on_every_rank(router):
    w = one_layer((router, 800), ("mlp.experts.0.up_proj.weight", 8_000))
    assert w.replicated_bytes == 1_600
    assert bytes_per_rank(w, 8, 1, 32, 8) == 1_600 + 16_000 // 8


def test_mamba2_gated_norm_is_sharded_with_its_heads_but_layer_norms_are_not():
    w = one_layer(
        ("mixer.norm.weight", 800), ("input_layernorm.weight", 100), ("mixer.in_proj.weight", 8_000)
    )
    assert w.replicated_bytes == 200
    assert bytes_per_rank(w, 4, 1, 32, 8) == 200 + (1_600 + 16_000) // 4


def test_a_fused_qkv_tensor_replicates_its_kv_rows_past_the_kv_heads():
    """Phi-3-style qkv_proj with 32 query and 8 KV heads: K and V are 16 of its 48 head rows.
    At TP 16 they split 8 ways (vLLM's QKVParallelLinear), the Q rows 16 ways."""
    w = one_layer(("self_attn.qkv_proj.weight", 48_000))  # 96,000 B
    assert w.qkv_fused_bytes == 96_000
    kv = 96_000 * 16 // 48
    assert bytes_per_rank(w, 16, 1, 32, 8) == (96_000 - kv) // 16 + kv // 8
    assert bytes_per_rank(w, 8, 1, 32, 8) == 96_000 // 8
