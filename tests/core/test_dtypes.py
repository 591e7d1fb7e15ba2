"""Every kv_cache_dtype of docs/vllm-rules.md §5, with its exact cell bytes."""

from __future__ import annotations

import pytest

from kvplan.core.engine.dtypes import attention_cell_bytes, weight_bytes
from kvplan.core.errors import InvalidInput, UnknownName
from kvplan.core.kv.pertoken import per_token
from kvplan.core.model.geometry import make_geometry
from tests.seed import W_LLAMA_3_70B_BF16

CELLS = [  # dtype, (Dk + Dv) = 128 + 128 cell bytes
    ("bfloat16", 512),
    ("float16", 512),
    ("fp8", 256),
    ("fp8_e4m3", 256),
    ("fp8_e5m2", 256),
    ("fp8_inc", 256),
    ("int8_per_token_head", 264),
    ("fp8_per_token_head", 264),
    ("int4_per_token_head", 136),
    ("nvfp4", 2 * (64 + 8)),
]


@pytest.mark.parametrize(("dtype", "cell"), CELLS)
def test_cell_bytes_for_128_dim_heads(dtype, cell):
    assert attention_cell_bytes(dtype, 128, 128) == cell


def test_nvfp4_is_0_5625_bytes_per_element():
    assert attention_cell_bytes("nvfp4", 128, 128) / 256 == 0.5625


def test_auto_means_the_model_dtype():
    geo = make_geometry(name="x", num_layers=1, num_attention_heads=1, head_dim=128, dtype="float16")
    assert per_token(geo, "auto").bytes_per_token == per_token(geo, "float16").bytes_per_token == 512


def test_skip_layers_keep_chosen_layers_at_the_model_dtype(registry):
    geo = registry.model("llama-3-70b").geometry
    skipped = per_token(geo, "fp8", skip_layers=(0, 79))
    assert skipped.bytes_per_token == 78 * 2048 + 2 * 4096


def test_skip_layers_sum_their_own_pages_in_one_group(budget):
    b = budget(
        "llama-3-70b",
        gpu="pool-160gib",
        weights_bytes=W_LLAMA_3_70B_BF16,
        kv_cache_dtype="fp8",
        kv_cache_dtype_skip_layers=(0,),
        block_size=64,
    )
    assert b.bytes_per_block == (79 * 2048 + 4096) * 64
    assert [g.groups for g in b.groups] == [1]


def test_fp8_warns_about_default_scales(registry):
    pt = per_token(registry.model("llama-3-8b").geometry, "fp8")
    assert "fp8_default_scales" in {w.code for w in pt.warnings}
    pt = per_token(registry.model("llama-3-8b").geometry, "int8_per_token_head")
    assert "fp8_default_scales" not in {w.code for w in pt.warnings}


def test_unknown_kv_dtype_lists_the_valid_ones(registry):
    with pytest.raises(UnknownName) as e:
        per_token(registry.model("llama-3-8b").geometry, "fp7")
    assert e.value.field == "kv_cache_dtype"
    assert "fp8_e4m3" in e.value.reason


def test_per_token_head_dtypes_are_refused_for_mla(registry):
    with pytest.raises(InvalidInput) as e:
        per_token(registry.model("deepseek-v3").geometry, "int8_per_token_head")
    assert e.value.field == "kv_cache_dtype"


def test_fp8_ds_mla_is_refused_for_models_without_the_indexer(registry):
    with pytest.raises(InvalidInput):
        per_token(registry.model("deepseek-v3").geometry, "fp8_ds_mla")


def test_skip_layer_outside_the_model_names_its_position(registry):
    with pytest.raises(InvalidInput) as e:
        per_token(registry.model("llama-3-8b").geometry, "fp8", skip_layers=(3, 32))
    assert e.value.field == "kv_cache_dtype_skip_layers[1]"


@pytest.mark.parametrize(("dtype", "expected"), [("bfloat16", 140), ("fp8", 70), ("int4", 35), ("mxfp4", 38)])
def test_weight_bytes_round_up_to_whole_bytes(dtype, expected):
    assert weight_bytes(70, dtype) == expected


def test_gpt_oss_weights_count_experts_in_mxfp4_and_the_rest_in_bf16(budget, registry):
    geo = registry.model("gpt-oss-120b").geometry
    b = budget("gpt-oss-120b", gpu="h100-sxm-80gb")
    expert = geo.params_expert
    assert b.weights_bytes == -(-expert * 17 // 32) + (geo.params_total - expert) * 2
    assert 60 < b.weights_bytes / 1024**3 < 62
