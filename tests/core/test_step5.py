"""Step5 read from config.json (vllm/models/step5): which layers slide, which are DSA with a
summary cache and a ring beside them, and what vLLM 0.33.0 refuses, named by field."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from kvplan.core.errors import InvalidInput, InvalidLayout
from kvplan.core.hf.reader import from_hf_config
from tests.core.budgets import budget_033, config_refusal

DATA = Path(__file__).resolve().parent / "data" / "hf-configs"


def shaped(**changes: Any) -> dict[str, Any]:
    cfg = json.loads((DATA / "synthetic--step5-shaped.json").read_text())
    return {**cfg, **changes}


def sparse(**changes: Any) -> dict[str, Any]:
    return shaped(sparse_config={**shaped()["sparse_config"], **changes})


budget = partial(budget_033, max_model_len=65536)


def test_each_dsa_layer_keeps_its_kv_a_summary_cache_and_a_ring_and_the_rest_slide():
    g = from_hf_config(shaped())
    assert g.layer_counts() == {
        "full_attention": 12,
        "sliding_attention": 33,
        "sparse_summary": 12,
        "circular_buffer": 12,
    }
    assert g.layer_pattern.startswith("FZBSSSFZB")
    assert (g.full_kv_heads, g.full_head_dim) == (8, 192)  # the DSA layers
    assert (g.num_kv_heads, g.head_dim) == (8, 128)  # attention_other_setting's sliding layers
    assert g.decoder_layer_count == 45
    assert g.decoder_layers is not None and g.decoder_layers[:4] == (0, 0, 0, 1)


def test_the_multimodal_architecture_reads_its_text_config_alike():
    text = shaped()
    vl = {"architectures": ["Step5ForConditionalGeneration"], "model_type": "step5_vl", "text_config": text}
    assert from_hf_config(vl).layer_pattern == from_hf_config(text).layer_pattern


def test_without_layer_types_a_window_makes_the_even_layers_slide_and_the_odd_ones_dsa():
    cfg = {k: v for k, v in shaped().items() if k not in ("layer_types", "layer_types_with_mtp")}
    cfg["attention_other_setting"] = None
    g = from_hf_config(cfg)
    assert g.layer_pattern.startswith("SFZBSFZB")
    assert g.layer_counts()["sliding_attention"] == 23


def test_a_disabled_sparse_config_plans_plain_attention_but_a_missing_one_is_refused():
    dense = from_hf_config(sparse(enabled=False))
    assert set(dense.layer_pattern) == {"F", "S"}
    assert config_refusal({k: v for k, v in shaped().items() if k != "sparse_config"}) == "sparse_config"


@pytest.mark.parametrize(
    ("cfg", "field"),
    [
        (sparse(proxy_dim=128), "sparse_config.proxy_dim"),
        (sparse(apply_to_layer_types=["sliding_attention"]), "sparse_config.apply_to_layer_types"),
        (sparse(index_tp_size=4), "sparse_config.index_tp_size"),
        (sparse(sparse_indexer_num_heads=64), "sparse_config.sparse_indexer_num_heads"),
        (sparse(enabled="yes"), "sparse_config.enabled"),
        (shaped(head_dim=128), "head_dim"),
        (shaped(use_head_wise_attn_gate=False), "use_head_wise_attn_gate"),
        (shaped(step5_sparse_config={}), "step5_sparse_config"),
        (shaped(att_impl_type="MLA"), "att_impl_type"),
    ],
)
def test_a_sparse_layout_vllm_refuses_is_refused_naming_the_field(cfg, field):
    assert config_refusal(cfg) == field


def test_a_block_whose_page_cannot_hold_the_ring_rows_is_refused_naming_block_size():
    """TP 8 in fp8 leaves one KV head: 16 tokens × 384 B = 6 KiB, 6 ring rows where 7 are needed."""
    with pytest.raises(InvalidInput) as e:
        budget(shaped(), tensor_parallel_size=8, kv_cache_dtype="fp8", block_size=16)
    assert e.value.field == "block_size" and "7 rows" in e.value.reason
    assert budget(shaped(), tensor_parallel_size=8, kv_cache_dtype="fp8", block_size=32).num_blocks > 0


def test_a_tp_leaving_the_dsa_kernels_too_few_query_heads_per_kv_group_is_refused():
    with pytest.raises(InvalidLayout) as e:
        budget(shaped(), tensor_parallel_size=32)
    assert e.value.field == "tensor_parallel_size"
    assert budget(shaped(), tensor_parallel_size=16).num_blocks > 0


def test_the_packed_layout_is_refused_without_the_hybrid_manager_or_with_pipeline_stages():
    with pytest.raises(InvalidInput) as e:
        budget(shaped(), hybrid_kv_cache_manager=False)
    assert e.value.field == "hybrid_kv_cache_manager"
    with pytest.raises(InvalidInput) as e:
        budget(shaped(), pipeline_parallel_size=3)
    assert e.value.field == "pipeline_parallel_size"


def test_the_ledger_names_every_packed_group_and_the_block_alignment():
    b = budget(shaped(), explain=True)
    pages = [s for s in b.ledger if s.name.startswith("kv_cache_group[")]
    assert [s.value for s in pages[:2]] == [1_185_792, 1_179_648]
    step = next(s for s in b.ledger if s.name == "bytes_per_block")
    assert step.value == 1_228_800 and "alignment" in step.formula
    assert any(s.name.startswith("blocks_per_request[circular_buffer") and s.value == 1 for s in b.ledger)
