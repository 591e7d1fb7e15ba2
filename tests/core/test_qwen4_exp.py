"""Qwen4-exp read from config.json (vllm/models/qwen4_exp): gated delta nets beside full
attention, QSA's side caches when the config has an indexer, and what is refused, by field."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kvplan.core.errors import InvalidInput
from kvplan.core.hf.reader import from_hf_config
from tests.core.budgets import budget_033, config_refusal

DATA = Path(__file__).resolve().parent / "data" / "hf-configs"


def config(name: str, **changes: Any) -> dict[str, Any]:
    return {**json.loads((DATA / f"synthetic--qwen4-exp-{name}.json").read_text()), **changes}


budget = partial(budget_033, max_model_len=32768)


def test_without_an_indexer_the_indexed_layers_are_plain_full_attention_beside_gated_delta_nets():
    g = from_hf_config(config("defaults"))
    assert g.layer_counts() == {"full_attention": 10, "mamba": 30}
    assert g.qsa is None


def test_a_config_without_layer_types_takes_every_fourth_layer_as_attention():
    cfg = {k: v for k, v in config("defaults").items() if k != "layer_types"}
    assert from_hf_config(cfg).layer_pattern == from_hf_config(config("defaults")).layer_pattern


def test_the_platform_sizes_the_block_for_the_replicated_ple_state_even_without_ple_layers():
    """TP 16: the GDN state is 68,608 B, the PLE short conv's 147,456 B: block 144, not 80."""
    b = budget(config("defaults"), tensor_parallel_size=16)
    assert {g.block_size for g in b.groups} == {144}


def test_with_an_indexer_each_attention_layer_keeps_a_ring_and_compressed_keys_beside_its_kv():
    g = from_hf_config(config("qsa-shaped"))
    assert g.layer_pattern.startswith("RRRBKF")
    assert g.layer_counts() == {
        "full_attention": 12,
        "mamba": 36,
        "compressed_mla": 12,
        "circular_buffer": 12,
    }
    assert g.qsa is not None and (g.qsa.compress_ratio, g.qsa.ring_row_bytes, g.qsa.key_bytes) == (
        4,
        256,
        256,
    )
    b = budget(config("qsa-shaped"))
    assert {(x.kind, x.block_size, x.blocks_per_request) for x in b.groups} == {
        ("mamba", 1056, 2),
        ("circular_buffer", 4, 1),
        ("compressed_mla", 1056, 32),
    }


def test_transformers_full_attention_is_read_as_indexed_attention():
    cfg = config("qsa-shaped")
    cfg["layer_types"] = ["full_attention" if t == "indexed_attention" else t for t in cfg["layer_types"]]
    assert from_hf_config(cfg).layer_pattern == from_hf_config(config("qsa-shaped")).layer_pattern


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"ple_layer_ids": [0, 8]}, "ple_layer_ids"),
        ({"hc_count": 1}, "hc_count"),
        ({"indexer_kv_heads": 2}, "indexer_kv_heads"),
        ({"indexer_budget": 2050}, "indexer_budget"),
        ({"indexer_head_dim": None}, "indexer_head_dim"),
        ({"torch_dtype": "float16", "dtype": "float16"}, "torch_dtype"),
    ],
)
def test_a_layout_vllm_refuses_or_kvplan_does_not_model_is_refused_naming_the_field(changes, field):
    assert config_refusal(config("qsa-shaped", **changes)) == field


def test_an_unknown_layer_type_is_refused_naming_its_entry():
    cfg = config("defaults")
    cfg["layer_types"] = ["sliding_attention", *cfg["layer_types"][1:]]
    assert config_refusal(cfg) == "layer_types[0]"


def test_qsa_refuses_a_kv_dtype_other_than_bf16_or_fp8_e4m3():
    with pytest.raises(InvalidInput) as e:
        budget(config("qsa-shaped"), kv_cache_dtype="fp8_e5m2")
    assert e.value.field == "kv_cache_dtype"
    assert budget(config("qsa-shaped"), kv_cache_dtype="fp8_e4m3").num_blocks > 0


def test_the_multimodal_model_keeps_mrope_positions_in_each_ring_row():
    """qsa_cache.py QSAKeyStateCache: 128 bf16 key words, then 3 int64 positions (12 words)."""
    g = from_hf_config(config("qsa-vl-shaped"))
    assert g.qsa is not None and g.qsa.ring_row_bytes == 280


def test_each_ple_layer_keeps_a_replicated_state_in_a_group_of_its_own():
    g = from_hf_config(config("ple-defaults"))
    assert g.layer_counts() == {"full_attention": 10, "mamba": 30, "mamba_replicated": 10}
    assert g.layer_pattern.startswith("RPR")  # layer 1's PLE state registers before its GDN
    b = budget(config("ple-defaults"))
    kinds = {(x.kind, x.groups, x.blocks_per_request) for x in b.groups}
    assert ("mamba_replicated", 1, 2) in kinds and ("mamba", 3, 2) in kinds


def test_ple_layers_are_refused_with_pipeline_stages():
    from kvplan.core.errors import InvalidLayout

    with pytest.raises(InvalidLayout) as e:
        budget(config("ple-defaults"), pipeline_parallel_size=2)
    assert e.value.field == "pipeline_parallel_size"


def test_qsa_is_refused_with_decode_context_parallelism_as_vllm_refuses_it():
    from kvplan.core.errors import InvalidLayout

    with pytest.raises(InvalidLayout) as e:
        budget(config("qsa-shaped"), tensor_parallel_size=2, decode_context_parallel_size=2)
    assert e.value.field == "decode_context_parallel_size"
