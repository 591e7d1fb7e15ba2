"""Weights as vLLM loads them, from a checkpoint's tensor list."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.weights import loaded_weights


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
