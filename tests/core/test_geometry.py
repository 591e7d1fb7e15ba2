"""Geometry from Hugging Face config.json (docs/vllm-rules.md §2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.pertoken import per_token
from kvplan.core.model.geometry import make_geometry
from tests.core.budgets import config_refusal, mamba_hybrid

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "hf-configs"

FACTS_10 = {
    "meta-llama--Meta-Llama-3.1-8B": 131_072,
    "meta-llama--Meta-Llama-3.1-70B": 327_680,
    "meta-llama--Meta-Llama-3.1-405B": 516_096,
    "Qwen--Qwen3-32B": 262_144,
    "Qwen--Qwen3-235B-A22B": 192_512,
    "mistralai--Mixtral-8x7B-v0.1": 131_072,
    "deepseek-ai--DeepSeek-V3": 70_272,
    "deepseek-ai--DeepSeek-R1": 70_272,
    "moonshotai--Kimi-K2-Instruct": 70_272,
    "openai--gpt-oss-120b": 73_728,
    "deepseek-ai--DeepSeek-V3.2": 78_324,
}


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared/ not beside the repo")
@pytest.mark.parametrize(("name", "expected"), sorted(FACTS_10.items()))
def test_real_config_gives_the_published_bytes_per_token(name, expected):
    cfg = json.loads((SHARED / f"{name}.json").read_text())
    assert per_token(from_hf_config(cfg)).bytes_per_token == expected


def test_preset_table_matches_vllm_facts_section_10(registry):
    expected = {
        "llama-3.1-8b": 131_072,
        "llama-3.1-70b": 327_680,
        "llama-3.1-405b": 516_096,
        "qwen2.5-7b": 57_344,
        "qwen2.5-72b": 327_680,
        "qwen3-32b": 262_144,
        "qwen3-235b-a22b": 192_512,
        "mistral-7b-v0.3": 131_072,
        "mixtral-8x7b": 131_072,
        "deepseek-v3": 70_272,
        "deepseek-r1": 70_272,
        "deepseek-v2-lite": 31_104,
        "kimi-k2": 70_272,
        "glm-4.5": 376_832,
        "gemma-3-27b": 507_904,
        "gpt-oss-120b": 73_728,
        "deepseek-v3.2": 78_324,
    }
    got = {m: per_token(registry.model(m).geometry).bytes_per_token for m in expected}
    assert got == expected


def test_deepseek_v32_fp8_uses_the_656_byte_ds_mla_layout_plus_indexer(registry):
    geo = registry.model("deepseek-v3.2").geometry
    assert per_token(geo, "fp8").bytes_per_token == 61 * (656 + 132) == 48_068
    assert per_token(geo, "fp8_ds_mla").bytes_per_token == 48_068


def test_mla_is_detected_from_model_type_and_kv_lora_rank():
    base = {
        "num_hidden_layers": 4,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "hidden_size": 2048,
        "max_position_embeddings": 4096,
        "kv_lora_rank": 512,
        "qk_rope_head_dim": 64,
    }
    assert from_hf_config({**base, "model_type": "deepseek_v3"}).is_mla
    assert not from_hf_config({**base, "model_type": "llama"}).is_mla
    assert not from_hf_config({**base, "model_type": "deepseek_v3", "kv_lora_rank": None}).is_mla


def test_kv_heads_come_from_the_first_present_key():
    cfg = {
        "num_hidden_layers": 2,
        "num_attention_heads": 32,
        "hidden_size": 4096,
        "max_position_embeddings": 2048,
        "multi_query_group_num": 2,
        "num_key_value_heads": 8,
    }
    assert from_hf_config(cfg).num_kv_heads == 8
    cfg.pop("num_key_value_heads")
    assert from_hf_config(cfg).num_kv_heads == 2
    cfg.pop("multi_query_group_num")
    assert from_hf_config(cfg).num_kv_heads == 32


def test_head_dim_falls_back_to_hidden_over_heads_and_ignores_zero():
    cfg = {
        "num_hidden_layers": 2,
        "num_attention_heads": 32,
        "hidden_size": 4096,
        "max_position_embeddings": 2048,
        "head_dim": 0,
    }
    assert from_hf_config(cfg).head_dim == 128
    assert from_hf_config({**cfg, "head_dim": 256}).head_dim == 256


def test_multimodal_config_reads_text_config():
    cfg = {
        "model_type": "gemma3",
        "torch_dtype": "bfloat16",
        "text_config": {
            "model_type": "gemma3_text",
            "num_hidden_layers": 12,
            "num_attention_heads": 8,
            "num_key_value_heads": 4,
            "head_dim": 256,
            "sliding_window": 512,
            "max_position_embeddings": 32768,
        },
    }
    geo = from_hf_config(cfg)
    assert geo.num_layers == 12
    assert geo.layer_pattern == "SSSSSFSSSSSF"  # every 6th layer global


def test_gpt_oss_rule_makes_even_layers_sliding_without_layer_types():
    cfg = {
        "model_type": "gpt_oss",
        "num_hidden_layers": 4,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "sliding_window": 128,
        "max_position_embeddings": 131072,
    }
    assert from_hf_config(cfg).layer_pattern == "SFSF"


def test_layer_types_win_over_model_rules():
    cfg = {
        "model_type": "gpt_oss",
        "num_hidden_layers": 3,
        "num_attention_heads": 8,
        "head_dim": 64,
        "sliding_window": 128,
        "max_position_embeddings": 4096,
        "layer_types": ["full_attention", "full_attention", "sliding_attention"],
    }
    assert from_hf_config(cfg).layer_pattern == "FFS"


BASE = {"num_hidden_layers": 2, "num_attention_heads": 8, "hidden_size": 512}


def test_a_config_without_a_length_key_gets_vllms_2048_tokens():
    assert from_hf_config(BASE).max_position_embeddings == 2048


def test_the_smallest_length_key_wins_and_model_max_length_overrides():
    assert (
        from_hf_config({**BASE, "max_position_embeddings": 8192, "seq_length": 4096}).max_position_embeddings
        == 4096
    )
    cohere = {**BASE, "max_position_embeddings": 8192, "model_max_length": 131072}
    assert from_hf_config(cohere).max_position_embeddings == 131072


@pytest.mark.parametrize(
    ("rope", "derived"),
    [
        ({"rope_type": "linear", "factor": 4.0}, 16384),
        ({"type": "dynamic", "factor": 2.0}, 8192),
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, 4096),
        ({"rope_type": "llama3", "factor": 8.0}, 4096),
    ],
)
def test_rope_scaling_multiplies_the_length_only_where_vllm_does(rope, derived):
    """vLLM 0.33 _get_and_verify_max_len: YaRN, llama3 and LongRoPE configs are already scaled."""
    cfg = {**BASE, "max_position_embeddings": 4096, "rope_scaling": rope}
    assert from_hf_config(cfg).max_position_embeddings == derived


def test_disabled_or_zero_sliding_window_means_none():
    cfg = {
        "model_type": "qwen2",
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "hidden_size": 512,
        "max_position_embeddings": 4096,
        "sliding_window": 4096,
        "use_sliding_window": False,
    }
    assert from_hf_config(cfg).sliding_window is None
    assert from_hf_config({**cfg, "use_sliding_window": None, "sliding_window": 0}).sliding_window is None


@pytest.mark.parametrize(
    ("cfg", "field"),
    [
        ({}, "num_hidden_layers"),
        ({"num_hidden_layers": 0, "num_attention_heads": 8}, "num_hidden_layers"),
        ({"num_hidden_layers": 2, "num_attention_heads": "8"}, "num_attention_heads"),
        (
            {
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "hidden_size": 64,
                "max_position_embeddings": 0,
            },
            "max_position_embeddings",
        ),
        (
            {
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "hidden_size": 64,
                "max_position_embeddings": 64,
                "layer_types": ["full_attention"],
            },
            "layer_types",
        ),
        (
            {
                "num_hidden_layers": 1,
                "num_attention_heads": 8,
                "hidden_size": 64,
                "max_position_embeddings": 64,
                "layer_types": ["warp_attention"],
            },
            "layer_types[0]",
        ),
        (
            {
                "num_hidden_layers": 1,
                "num_attention_heads": 8,
                "hidden_size": 64,
                "max_position_embeddings": 64,
                "layer_types": ["linear_attention"],
            },
            "model_type",  # a state layout kvplan does not know: never read as attention
        ),
        (
            {
                "num_hidden_layers": 1,
                "num_attention_heads": 8,
                "hidden_size": 64,
                "max_position_embeddings": 64,
                "torch_dtype": "int3",
            },
            "torch_dtype",
        ),
        (
            {
                "model_type": "deepseek_v3",
                "num_hidden_layers": 1,
                "num_attention_heads": 8,
                "max_position_embeddings": 64,
                "kv_lora_rank": 512,
                "qk_rope_head_dim": 0,
            },
            "qk_rope_head_dim",
        ),
        (
            {
                "model_type": "qwen2",
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "hidden_size": 512,
                "max_position_embeddings": 4096,
                "sliding_window": 1024,
                "use_sliding_window": True,
                "max_window_layers": -1,
            },
            "max_window_layers",
        ),
        (
            {
                "num_hidden_layers": 2,
                "num_attention_heads": 8,
                "hidden_size": 512,
                "max_position_embeddings": 4096,
                "head_dim": -64,
            },
            "head_dim",
        ),
    ],
)
def test_uninterpretable_config_names_the_field(cfg, field):
    assert config_refusal(cfg) == field


def test_inline_geometry_validates_its_fields():
    with pytest.raises(InvalidInput) as e:
        make_geometry(name="x", num_layers=4, num_attention_heads=8, head_dim=None)
    assert e.value.field == "model.geometry.head_dim"
    with pytest.raises(InvalidInput) as e:
        make_geometry(
            name="x",
            num_layers=2,
            num_attention_heads=8,
            head_dim=64,
            layer_types=("sliding_attention", "full_attention"),
        )
    assert e.value.field == "model.geometry.sliding_window"


def test_inline_mamba_layers_cost_one_state_block_per_request():
    geo = mamba_hybrid(3, 1)
    assert geo.layer_counts() == {"full_attention": 1, "mamba": 3}
