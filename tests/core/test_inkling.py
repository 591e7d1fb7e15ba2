"""Inkling (vllm/models/inkling): each decoder layer keeps a short-convolution state (a sliding
window of the kernel, in blocks of the kernel) before its full or sliding attention. The figures
are asserted against vLLM in test_oracle_cases.py; these tests pin the reader and the refusals."""

from __future__ import annotations

import pytest

from kvplan.core.errors import InvalidInput, InvalidLayout
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.parallel import Parallel
from kvplan.core.kv.pertoken import per_token
from tests.core.budgets import budget_033, config_refusal

MM = {"architectures": ["InklingForConditionalGeneration"], "model_type": "inkling_mm_model"}
TEXT = {"architectures": ["InklingForCausalLM"], "model_type": "inkling_model", "num_hidden_layers": 6,
        "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
        "swa_num_key_value_heads": 4, "local_layer_ids": [0, 1, 2, 3, 4],
        "sliding_window_size": 512}  # fmt: skip


budget = budget_033


def test_the_config_class_defaults_are_16_full_layers_each_with_its_conv_state():
    g = from_hf_config(MM)
    assert g.layer_counts() == {"full_attention": 16, "sconv": 16}
    assert g.layer_pattern[:4] == "VFVF" and g.decoder_layer_count == 16
    assert (g.full_kv_heads, g.full_head_dim, g.sconv_kernel_size, g.max_position_embeddings) == (
        4,
        128,
        4,
        2048,
    )
    assert g.sliding_window is None


def test_local_layers_slide_with_the_swa_heads_and_every_layer_keeps_a_conv_state():
    g = from_hf_config(TEXT)
    assert g.layer_counts() == {"sliding_attention": 5, "full_attention": 1, "sconv": 6}
    assert (g.num_kv_heads, g.full_kv_heads, g.sliding_window) == (4, 8, 512)


def test_a_conv_state_packs_k_v_and_two_hidden_chunks_per_head_padded_to_a_power_of_two():
    """Full layer: 8 heads × 2^⌈log2(2·128 + 2·512)⌉ = 2048 wide; local: 4 heads × 4096 (2·128 + 2·1024
    = 2304); bf16; split over TP by heads."""
    kinds = {
        k.bytes_per_token_per_layer: k.layers
        for k in per_token(from_hf_config(TEXT)).by_kind
        if k.kind == "sconv"
    }
    assert kinds == {8 * 2048 * 2: 6}  # both the same bytes a token, but spec-distinct states
    tp4 = per_token(from_hf_config(TEXT), par=Parallel(tensor=4)).by_kind
    assert {k.bytes_per_token_per_layer for k in tp4 if k.kind == "sconv"} == {2 * 2048 * 2}


def test_the_conv_state_keeps_its_own_block_and_the_attention_blocks_grow_to_its_page():
    b = budget(from_hf_config(TEXT), max_model_len=32768, max_num_batched_tokens=8192)
    blocks = {(g.kind, g.block_size) for g in b.groups}
    assert blocks == {("sconv", 4), ("sliding_attention", 64), ("full_attention", 32)}
    # A conv group holds min(k − 1 + F, T) tokens: F = 2 × 8192 with async scheduling.
    assert {g.blocks_per_request for g in b.groups if g.kind == "sconv"} == {-(-(3 + 16384) // 4) + 1}


def test_the_conv_kernel_and_hidden_layout_keys_of_transformers_are_read_too():
    g = from_hf_config({**TEXT, "conv_kernel_size": 3})
    assert g.sconv_kernel_size == 3
    assert from_hf_config({**TEXT, "conv_kernel_size": 3, "sconv_kernel_size": 5}).sconv_kernel_size == 5


def test_the_family_is_known_by_its_architecture_whatever_the_text_config_calls_itself():
    g = from_hf_config({**MM, "text_config": {"model_type": "inkling_text", "num_hidden_layers": 2}})
    assert g.layer_counts() == {"full_attention": 2, "sconv": 2}


def test_layer_types_and_sliding_window_are_not_read_as_vllm_does_not_read_them():
    g = from_hf_config(
        {**TEXT, "local_layer_ids": [], "layer_types": ["hybrid_sliding"] * 6, "sliding_window": 64}
    )
    assert g.layer_counts() == {"full_attention": 6, "sconv": 6} and g.sliding_window is None


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"dtype": "float16"}, "torch_dtype"),
        ({"local_layer_ids": "all"}, "local_layer_ids"),
        ({"num_key_value_heads": 0}, "num_key_value_heads"),
    ],
)
def test_a_config_vllm_cannot_serve_is_refused_naming_the_field(changes, field):
    assert config_refusal({**TEXT, **changes}) == field


@pytest.mark.parametrize(
    "kw, error, field",
    [
        ({"tensor_parallel_size": 8}, InvalidLayout, "tensor_parallel_size"),  # above the 4 local KV heads
        ({"kv_cache_dtype": "nvfp4"}, InvalidInput, "kv_cache_dtype"),
        ({"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": (0,)}, InvalidInput,
         "kv_cache_dtype_skip_layers"),
        ({"hybrid_kv_cache_manager": False}, InvalidInput, "hybrid_kv_cache_manager"),
    ],
)  # fmt: skip
def test_settings_vllm_refuses_or_kvplan_does_not_model_are_refused_naming_the_field(kw, error, field):
    with pytest.raises(error) as e:
        budget(from_hf_config(TEXT), max_model_len=8192, **kw)
    assert e.value.field == field


def test_the_ledger_explains_the_conv_state_and_its_blocks():
    b = budget(TEXT, max_model_len=8192, explain=True)
    names = {s.name: s for s in b.ledger}
    assert names["bytes_per_token_per_layer[sconv]"].value == 8 * 2048 * 2
    step = next(s for n, s in names.items() if n.startswith("blocks_per_request[sconv"))
    assert "sconv_kernel_size" in step.formula
