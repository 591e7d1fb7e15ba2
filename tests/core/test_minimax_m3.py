"""MiniMax-M3 (vllm/models/minimax_m3): sparse layers keep an indexer cache beside their K/V, all
in one group with blocks of 128 tokens. The figures are asserted against vLLM in
test_oracle_cases.py; these tests pin the reader and the refusals."""

from __future__ import annotations

from functools import partial

import pytest

from kvplan.core.errors import InvalidInput, InvalidLayout
from kvplan.core.hf.reader import from_hf_config
from kvplan.core.kv.pertoken import per_token
from tests.core.budgets import budget_033, config_refusal

VL = {"architectures": ["MiniMaxM3SparseForConditionalGeneration"], "model_type": "minimax_m3_vl"}
SPARSE = {
    "sparse_index_dim": 128,
    "sparse_num_index_heads": 4,
    "sparse_topk_blocks": 16,
    "sparse_block_size": 128,
}


def text(**changes: object) -> dict[str, object]:
    return {**VL, "text_config": {"num_hidden_layers": 6, **changes}}


budget = partial(budget_033, kv_cache_memory_bytes=40 << 30)


def test_the_config_class_defaults_give_57_sparse_layers_after_3_dense_ones():
    g = from_hf_config(VL)
    assert (g.num_layers, g.num_kv_heads, g.head_dim, g.max_position_embeddings) == (60, 4, 128, 524288)
    assert g.indexer_layers == tuple(range(3, 60)) and g.indexer_dim == 128
    assert g.layer_counts() == {"full_attention": 60}


def test_a_sparse_layer_costs_its_k_v_plus_one_bf16_index_key_whatever_the_tp_and_kv_dtype():
    g = from_hf_config(text(sparse_attention_config={**SPARSE, "sparse_attention_freq": [0, 1, 1, 0, 1, 1]}))
    assert g.indexer_layers == (1, 2, 4, 5)
    pt = per_token(g, "fp8")
    # 4 KV heads × (128 + 128) fp8 = 1024 B a layer; + 256 B of index key on the 4 sparse layers.
    assert pt.bytes_per_token == 6 * 1024 + 4 * 256
    from kvplan.core.kv.parallel import Parallel

    assert per_token(g, "fp8", par=Parallel(tensor=4)).bytes_per_token == 6 * 256 + 4 * 256


def test_the_text_config_alone_is_read_not_the_top_level():
    g = from_hf_config({**text(), "num_hidden_layers": 99, "max_position_embeddings": 1024})
    assert g.num_layers == 6 and g.max_position_embeddings == 524288


def test_the_family_is_known_by_its_architecture_whatever_the_text_config_calls_itself():
    g = from_hf_config({**VL, "text_config": {"model_type": "minimax_m3_vl_text", "num_hidden_layers": 6}})
    assert g.indexer_layers == (3, 4, 5)


def test_a_null_sparse_attention_config_is_the_class_default_and_an_empty_one_has_no_sparse_layer():
    assert from_hf_config(text(sparse_attention_config=None)).indexer_layers == (3, 4, 5)
    assert from_hf_config(text(sparse_attention_config={})).indexer_layers is None
    assert from_hf_config(text(sparse_attention_config={**SPARSE})).indexer_layers is None


def test_without_sparse_layers_it_is_plain_full_attention_with_the_usual_block():
    g = from_hf_config(text(sparse_attention_config={}))
    assert budget(g, max_model_len=8192).block_size == 16


def test_vllm_picks_a_128_token_block_and_takes_only_multiples_of_it():
    g = from_hf_config(text())
    assert budget(g, max_model_len=8192).block_size == 128
    assert budget(g, max_model_len=8192, block_size=384).block_size == 384
    with pytest.raises(InvalidInput) as e:
        budget(g, max_model_len=8192, block_size=64)
    assert e.value.field == "block_size" and "128" in e.value.reason


@pytest.mark.parametrize(
    "sparse, field",
    [
        ({"sparse_attention_freq": [1] * 6}, "sparse_attention_config.sparse_num_index_heads"),
        ({**SPARSE, "sparse_index_dim": None, "sparse_attention_freq": [1] * 6},
         "sparse_attention_config.sparse_index_dim"),
        ({**SPARSE, "sparse_attention_freq": "all"}, "sparse_attention_config.sparse_attention_freq"),
        ([1, 2], "sparse_attention_config"),
    ],
)  # fmt: skip
def test_a_sparse_attention_config_vllm_cannot_build_is_refused_naming_the_field(sparse, field):
    assert config_refusal(text(sparse_attention_config=sparse)) == field


@pytest.mark.parametrize(
    "kw, error, field",
    [
        ({"kv_cache_dtype": "nvfp4"}, InvalidInput, "kv_cache_dtype"),
        ({"kv_cache_dtype": "int8_per_token_head"}, InvalidInput, "kv_cache_dtype"),
        ({"kv_cache_dtype": "fp8", "kv_cache_dtype_skip_layers": (0,)}, InvalidInput,
         "kv_cache_dtype_skip_layers"),
        ({"tensor_parallel_size": 2, "decode_context_parallel_size": 2}, InvalidLayout,
         "decode_context_parallel_size"),
    ],
)  # fmt: skip
def test_settings_vllm_refuses_for_the_sparse_layers_are_refused_naming_the_field(kw, error, field):
    with pytest.raises(error) as e:
        budget(from_hf_config(text()), max_model_len=8192, **kw)
    assert e.value.field == field


def test_the_ledger_names_the_indexer_cache_of_the_sparse_layers():
    b = budget(text(), max_model_len=8192, explain=True)
    step = next(s for s in b.ledger if s.name == "indexer_bytes_per_token_per_layer")
    assert step.value == 256 and step.inputs["sparse_layers"] == 3
